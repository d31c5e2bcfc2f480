/* transport_zmq.c — the CLI's libzmq backend: a DEALER socket through
 * net/wire, for every endpoint libzmq reaches, tcp:// with CURVE
 * included (see transport.h). */
#include "net/transport.h"

#include "common/error.h"
#include "common/util.h"
#include "net/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

typedef struct {
    void *ctx;                /* the zmq context, ours alone */
    void *sock;               /* DEALER to the broker */
} zconn;

static bool zmq_supports(const gf_config *cfg)
{
    (void)cfg;
    return true;
}

static void zmq_close_conn(void **conn_p)
{
    zconn *c = *conn_p;
    if (!c)
        return;
    if (c->sock)
        zmq_close(c->sock);
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    free(c);
    *conn_p = NULL;
}

static void *zmq_open_conn(const gf_config *cfg, char *err, size_t errlen)
{
    const char *ep = cfg->client_endpoint;
    zconn *c = gf_calloc(1, sizeof(*c));
    c->ctx = zmq_ctx_new();
    c->sock = zmq_socket(c->ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof(zero));
    if (strncmp(ep, "tcp://", 6) == 0 && cfg->curve_public_key) {
        char pub[41], sec[41];
        zmq_curve_keypair(pub, sec);
        zmq_setsockopt(c->sock, ZMQ_CURVE_SERVERKEY, cfg->curve_public_key, 40);
        zmq_setsockopt(c->sock, ZMQ_CURVE_PUBLICKEY, pub, 40);
        zmq_setsockopt(c->sock, ZMQ_CURVE_SECRETKEY, sec, 40);
    }
    if (zmq_connect(c->sock, ep) != 0) {
        snprintf(err, errlen, "cannot connect to %s: %s", ep, zmq_strerror(errno));
        void *p = c;
        zmq_close_conn(&p);
        return NULL;
    }
    return c;
}

static int zmq_send_msg(void *conn, const gf_msg *m, char *err, size_t errlen)
{
    zconn *c = conn;
    int rc = gf_wire_send(c->sock, NULL, true, m);
    if (rc)
        snprintf(err, errlen, "cannot send the request: %s", gf_strerror(rc));
    return rc;
}

static int zmq_recv_msg(void *conn, int timeout_ms, gf_msg *out, char *err, size_t errlen)
{
    zconn *c = conn;
    memset(out, 0, sizeof(*out));
    zmq_pollitem_t it = { c->sock, 0, ZMQ_POLLIN, 0 };
    int n = zmq_poll(&it, 1, timeout_ms);
    if (n < 0 && errno == EINTR)
        return GF_EINTR;
    if (n < 0) {
        snprintf(err, errlen, "zmq_poll: %s", zmq_strerror(errno));
        return GF_EIO;
    }
    if (n == 0)
        return GF_ETIMEDOUT;
    int rc = gf_wire_recv(c->sock, false, 0, NULL, out, err, errlen);
    return rc == GF_ETIMEDOUT ? GF_EPROTO : rc;
}

const gf_transport gf_transport_zmq = {
    .name = "zmq",
    .supports = zmq_supports,
    .open = zmq_open_conn,
    .send = zmq_send_msg,
    .recv = zmq_recv_msg,
    .close = zmq_close_conn,
};
