/* wire.c — framing of gf_msg on ZeroMQ sockets (see wire.h). */
#include "net/wire.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static int zerr(void)
{
    if (errno == EAGAIN)
        return GF_ETIMEDOUT;
    if (errno == EINTR)
        return GF_EINTR;
    if (errno == EHOSTUNREACH)
        return GF_ENOENT;
    return GF_EIO;
}

/* A decimal number of at most max, all of [s, end). */
static bool number(const char *s, const char *end, unsigned long max, unsigned long *out)
{
    if (s == end || end - s > 10)
        return false;
    unsigned long v = 0;
    for (const char *c = s; c < end; c++) {
        if (*c < '0' || *c > '9')
            return false;
        v = v * 10 + (unsigned long)(*c - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

bool gf_wire_peer_cred(const char *pa, gf_peer *peer)
{
    peer->has_cred = false;
    if (!pa)
        return false;
    /* HOST:uid:gid:pid, HOST without ':' (an IPv6 address has them) */
    const char *c1 = strchr(pa, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    const char *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
    if (!c3 || c1 == pa || strchr(c3 + 1, ':'))
        return false;
    unsigned long uid, gid, pid;
    if (!number(c1 + 1, c2, UINT32_MAX, &uid) || !number(c2 + 1, c3, UINT32_MAX, &gid) ||
        !number(c3 + 1, c3 + 1 + strlen(c3 + 1), INT32_MAX, &pid))
        return false;
    peer->uid = (uint32_t)uid;
    peer->gid = (uint32_t)gid;
    peer->pid = (int32_t)pid;
    peer->has_cred = true;
    return true;
}

/* A frame after the first of a message: it is there already (libzmq
 * delivers a message whole), so a signal's EINTR is no reason to leave it
 * behind, where the next read would take it for a message's first frame. */
static int recv_more(zmq_msg_t *m, void *sock)
{
    int n;
    while ((n = zmq_msg_recv(m, sock, 0)) < 0 && errno == EINTR)
        ;
    return n;
}

/* Throw away the rest of a multipart message. */
static void drain(void *sock)
{
    int more = 1;
    size_t sz = sizeof(more);
    while (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz) == 0 && more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (recv_more(&m, sock) < 0) {
            zmq_msg_close(&m);
            return;
        }
        zmq_msg_close(&m);
    }
}

int gf_wire_recv(void *sock, gf_wire_side side, int flags, gf_peer *peer, gf_msg *out, char *err,
                 size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (errlen)
        err[0] = 0;
    gf_peer scratch;
    if (!peer)
        peer = &scratch;
    memset(peer, 0, sizeof(*peer));
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, sock, flags) < 0) {
        int rc = zerr();
        zmq_msg_close(&m);
        return rc;
    }
    if (side != GF_WIRE_DEALER) {
        size_t n = zmq_msg_size(&m);
        if (n > sizeof(peer->id))
            n = sizeof(peer->id);
        memcpy(peer->id, zmq_msg_data(&m), n);
        peer->id_len = n;
        bool more = zmq_msg_more(&m);
        zmq_msg_close(&m);
        if (!more) {
            snprintf(err, errlen, "message without a body");
            return GF_EPROTO;
        }
        zmq_msg_init(&m);
        if (recv_more(&m, sock) < 0) {
            int rc = zerr();
            zmq_msg_close(&m);
            return rc;
        }
    }
    if (zmq_msg_size(&m) == 0 && zmq_msg_more(&m)) {
        peer->delim = true;
        zmq_msg_close(&m);
        zmq_msg_init(&m);
        if (recv_more(&m, sock) < 0) {
            int rc = zerr();
            zmq_msg_close(&m);
            return rc;
        }
    }
    if (side == GF_WIRE_ROUTER_IPC)
        gf_wire_peer_cred(zmq_msg_gets(&m, "Peer-Address"), peer);
    int rc;
    if (zmq_msg_more(&m)) {
        drain(sock);
        snprintf(err, errlen, "message of more than one body frame");
        rc = GF_EPROTO;
    } else {
        rc = gf_proto_decode(zmq_msg_data(&m), zmq_msg_size(&m), out, err, errlen);
    }
    zmq_msg_close(&m);
    return rc;
}

/* CURVE on a tcp:// socket: 0, or GF_ECONFIG with err filled. */
static int secure(void *s, int type, const char *ep, const gf_config *cfg, char *err,
                  size_t errlen)
{
    if (strncmp(ep, "tcp://", 6) != 0)
        return 0;
    if (type == ZMQ_ROUTER) {
        if (!cfg->curve_secret_key || !cfg->curve_public_key) {
            snprintf(err, errlen, "endpoint %s: tcp:// needs broker.curve_public_key and "
                     "curve_secret_key", ep);
            return GF_ECONFIG;
        }
        int one = 1;
        if (zmq_setsockopt(s, ZMQ_CURVE_SERVER, &one, sizeof(one)) ||
            zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, cfg->curve_secret_key, 40)) {
            snprintf(err, errlen, "endpoint %s: CURVE keys refused: %s", ep, zmq_strerror(errno));
            return GF_ECONFIG;
        }
        return 0;
    }
    if (!cfg->curve_public_key) {
        snprintf(err, errlen, "endpoint %s: tcp:// needs broker.curve_public_key (the broker's "
                 "CURVE key)", ep);
        return GF_ECONFIG;
    }
    char pub[41], sec[41];
    if (zmq_curve_keypair(pub, sec) ||
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, cfg->curve_public_key, 40) ||
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, pub, 40) ||
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, sec, 40)) {
        snprintf(err, errlen, "endpoint %s: CURVE keys refused: %s", ep, zmq_strerror(errno));
        return GF_ECONFIG;
    }
    return 0;
}

void *gf_wire_socket(void *zctx, int type, const char *ep, const gf_config *cfg, char *err,
                     size_t errlen)
{
    assert(type == ZMQ_ROUTER || type == ZMQ_DEALER);
    void *s = zmq_socket(zctx, type);
    if (!s) {
        snprintf(err, errlen, "endpoint %s: no socket: %s", ep, zmq_strerror(errno));
        return NULL;
    }
    int one = 1, zero = 0;
    int64_t maxsz = (int64_t)GF_PROTO_MAX_FRAME + 1024;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxsz, sizeof(maxsz));
    if (type == ZMQ_ROUTER)
        zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
    if (secure(s, type, ep, cfg, err, errlen) != 0)
        goto out_close;
    if ((type == ZMQ_ROUTER ? zmq_bind(s, ep) : zmq_connect(s, ep)) != 0) {
        snprintf(err, errlen, "cannot %s %s: %s", type == ZMQ_ROUTER ? "bind" : "connect to", ep,
                 zmq_strerror(errno));
        goto out_close;
    }
    return s;
out_close:
    zmq_close(s);
    return NULL;
}

static void free_buf(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* One frame, sent again when a signal interrupted it. libzmq looks at its
 * command mailbox (a poll) before it queues a frame, so EINTR says the
 * frame was not queued: giving up there would leave the frames before it
 * (sent with ZMQ_SNDMORE) waiting for a body that never comes, and the
 * message (a worker's result: a job that never ends) lost. Signals reach
 * the daemons every time a job or a worker ends, and on SIGHUP. */
static int send_frame(void *sock, const void *data, size_t len, int flags)
{
    int n;
    while ((n = zmq_send(sock, data, len, flags)) < 0 && errno == EINTR)
        ;
    return n;
}

static int send_msg(zmq_msg_t *msg, void *sock, int flags)
{
    int n;
    while ((n = zmq_msg_send(msg, sock, flags)) < 0 && errno == EINTR)
        ;
    return n;
}

int gf_wire_send(void *sock, const gf_peer *peer, bool delim, const gf_msg *m)
{
    uint8_t *buf;
    size_t len;
    int rc = gf_proto_encode(m, &buf, &len);
    if (rc) {
        GF_ERROR("cannot encode a '%s' message: %s", gf_proto_op_name(m->op) ? gf_proto_op_name(m->op) : "?",
                 gf_strerror(rc));
        return rc;
    }
    if (peer) {
        if (send_frame(sock, peer->id, peer->id_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
            free(buf);
            return zerr();
        }
        delim = peer->delim;
    }
    if (delim && send_frame(sock, "", 0, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        free(buf);
        return zerr();
    }
    zmq_msg_t body;
    zmq_msg_init_data(&body, buf, len, free_buf, NULL);
    if (send_msg(&body, sock, ZMQ_DONTWAIT) < 0) {
        rc = zerr();
        zmq_msg_close(&body);
        return rc;
    }
    return 0;
}

int gf_wire_send_error(void *sock, const gf_peer *peer, int code, const char *fmt, ...)
{
    gf_msg m;
    va_list ap;
    va_start(ap, fmt);
    gf_msg_errorv(&m, code, fmt, ap);
    va_end(ap);
    int rc = gf_wire_send(sock, peer, true, &m);
    gf_msg_clear(&m);
    return rc;
}
