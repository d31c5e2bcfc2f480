/* router.c — the broker's ROUTER endpoints (see router.h).
 *
 * The own ZMTP backend: a non-blocking listening unix socket and its
 * connections in one level-triggered epoll set, whose descriptor the
 * broker's zmq_poll watches beside any libzmq socket. Each connection gets
 * our greeting and READY (Socket-Type ROUTER) as soon as it is accepted;
 * it must answer with a ZMTP 3 greeting, the NULL mechanism and a READY
 * naming a DEALER or REQ socket, else it is dropped. Then each message
 * ([empty delimiter] body) is taken whole out of the connection's input
 * into a queue of received messages, which gf_router_recv hands out one at
 * a time; a frame or a message over max_frame, a command inside a message,
 * or bytes that are not ZMTP close the connection, as libzmq does. A peer's
 * routing id is five bytes, a zero and a 32-bit connection number, as
 * libzmq makes them; ids are never reused, so a reply to a connection that
 * closed finds nothing (GF_ENOENT). Output is written at once; what the
 * socket does not take waits in the connection's buffer for EPOLLOUT. */
#include "net/router.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "net/zmtp.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_CHUNK (64u << 10)
#define HANDSHAKE_MAX 8192           /* a READY command's largest size */
#define OUT_MAX ((size_t)256 << 20)  /* unsent bytes for one peer before sends fail */
#define ID_LEN 5
#define HANDSHAKE_MS 30000           /* as libzmq's ZMQ_HANDSHAKE_IVL */
#define PUMP_ROUNDS 8                /* epoll batches per receive at most */

/* One accepted connection. */
typedef struct {
    int fd;
    uint32_t key;             /* its routing id's number */
    uint64_t accepted;        /* monotonic ms, for the handshake's deadline */
    bool greeted;             /* the peer's greeting was read */
    bool ready;               /* the peer's READY was read: messages flow */
    bool has_cred;            /* SO_PEERCRED worked */
    uint32_t uid, gid;
    int32_t pid;
    uint8_t *in;              /* received bytes not yet parsed */
    size_t in_len, in_cap;
    uint8_t *out;             /* bytes the socket did not take yet */
    size_t out_off, out_len, out_cap;
    bool want_out;            /* EPOLLOUT is registered */
    bool broken;              /* to be closed at the end of the epoll batch */
    char why[96];             /* why it broke, for the debug log */
    /* the message being received */
    size_t m_frames;          /* its frames so far */
    size_t m_bytes;           /* its body bytes so far */
    bool m_delim;             /* it began with an empty delimiter */
    uint8_t *m_body;          /* its body frame (malloc'ed) */
    size_t m_body_len;
    bool m_extra;             /* more than one body frame */
} conn;

/* A whole message received, waiting for gf_router_recv. */
typedef struct {
    uint32_t key;             /* the connection it came from */
    bool delim;
    bool extra;
    bool has_cred;
    uint32_t uid, gid;
    int32_t pid;
    uint8_t *body;            /* owned */
    size_t len;
} inmsg;

typedef struct {
    void (*destroy)(gf_router *self);
    bool (*pollitem)(gf_router *self, zmq_pollitem_t *item);
    int (*recv)(gf_router *self, gf_peer *peer, gf_msg *out, char *err, size_t errlen);
    int (*send)(gf_router *self, const gf_peer *peer, const gf_msg *m);
} router_ops;

struct gf_router {
    const router_ops *ops;
    void *zsock;              /* libzmq backend: the ROUTER socket */
    /* own backend */
    char *path;               /* the socket file */
    int lfd;                  /* listening socket */
    int ep;                   /* epoll set: lfd and every connection */
    bool bound;               /* the socket file is ours to remove */
    size_t max_frame;
    int handshake_ms;         /* a peer not READY by then is dropped */
    uint64_t next_check;      /* monotonic ms of the next look for late handshakes */
    uint64_t warned;          /* monotonic ms of the last accept failure logged */
    conn **conns;             /* open connections, in no order */
    size_t n_conns, cap_conns;
    uint32_t next_key;
    inmsg *q;                 /* received messages, q_head.. q_len */
    size_t q_head, q_len, q_cap;
};

/* ------------------------------------------------------------ libzmq backend */

static void zmq_backend_destroy(gf_router *self)
{
    zmq_close(self->zsock);
}

static bool zmq_backend_pollitem(gf_router *self, zmq_pollitem_t *item)
{
    *item = (zmq_pollitem_t){ self->zsock, 0, ZMQ_POLLIN, 0 };
    return false;
}

static int zmq_backend_recv(gf_router *self, gf_peer *peer, gf_msg *out, char *err,
                            size_t errlen)
{
    return gf_wire_recv(self->zsock, GF_WIRE_ROUTER, ZMQ_DONTWAIT, peer, out, err, errlen);
}

static int zmq_backend_send(gf_router *self, const gf_peer *peer, const gf_msg *m)
{
    return gf_wire_send(self->zsock, peer, peer->delim, m);
}

static const router_ops zmq_ops = {
    zmq_backend_destroy, zmq_backend_pollitem, zmq_backend_recv, zmq_backend_send,
};

gf_router *gf_router_wrap_zmq(void *sock)
{
    gf_router *self = gf_calloc(1, sizeof(*self));
    self->ops = &zmq_ops;
    self->zsock = sock;
    self->lfd = self->ep = -1;
    return self;
}

/* --------------------------------------------------------------- connections */

static conn *conn_by_key(gf_router *self, uint32_t key)
{
    for (size_t i = 0; i < self->n_conns; i++)
        if (self->conns[i]->key == key && !self->conns[i]->broken)
            return self->conns[i];
    return NULL;
}

/* Mark c for closing. Connections are closed only between epoll batches
 * (sweep), so that no event of a batch can point at a freed one. */
static void conn_fail(conn *c, const char *why)
{
    if (c->broken)
        return;
    c->broken = true;
    size_t n = strlen(why) < sizeof(c->why) - 1 ? strlen(why) : sizeof(c->why) - 1;
    memcpy(c->why, why, n);
    c->why[n] = 0;
}

static void conn_close(gf_router *self, size_t i)
{
    conn *c = self->conns[i];
    GF_DEBUG("%s: connection %u closed: %s", self->path, c->key, c->why);
    epoll_ctl(self->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    self->conns[i] = self->conns[--self->n_conns];
    free(c->in);
    free(c->out);
    free(c->m_body);
    free(c);
}

static void sweep(gf_router *self)
{
    for (size_t i = self->n_conns; i-- > 0;)
        if (self->conns[i]->broken)
            conn_close(self, i);
}

static void watch_output(gf_router *self, conn *c, bool on)
{
    if (c->want_out == on)
        return;
    struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };
    epoll_ctl(self->ep, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_out = on;
}

/* Write what waits in c's output buffer: 0, or -1 when c broke. */
static int flush_out(gf_router *self, conn *c)
{
    while (c->out_len > c->out_off) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            break;
        if (w < 0) {
            conn_fail(c, strerror(errno));
            return -1;
        }
        c->out_off += (size_t)w;
    }
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    watch_output(self, c, c->out_len > 0);
    return 0;
}

/* Send iov (n parts) to c: written now as far as the socket takes it, the
 * rest buffered. 0; GF_ENOENT when c broke (the peer is gone); GF_EIO when
 * c already has OUT_MAX bytes waiting. */
static int conn_write(gf_router *self, conn *c, struct iovec *iov, int n)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    size_t done = 0;
    if (c->out_len == 0) {
        for (;;) {
            struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
            ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && errno != EAGAIN) {
                conn_fail(c, strerror(errno));
                return GF_ENOENT;
            }
            done = w < 0 ? 0 : (size_t)w;
            break;
        }
        if (done == total)
            return 0;
    }
    if (c->out_len - c->out_off + total - done > OUT_MAX)
        return GF_EIO;
    if (c->out_len + total - done > c->out_cap) {
        if (c->out_off) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        if (c->out_len + total - done > c->out_cap) {
            c->out_cap = c->out_len + total - done + READ_CHUNK;
            c->out = gf_realloc(c->out, c->out_cap);
        }
    }
    for (int i = 0; i < n; i++) {
        size_t l = iov[i].iov_len;
        const uint8_t *b = iov[i].iov_base;
        if (done >= l) {
            done -= l;
            continue;
        }
        memcpy(c->out + c->out_len, b + done, l - done);
        c->out_len += l - done;
        done = 0;
    }
    watch_output(self, c, true);
    return 0;
}

static int send_command(gf_router *self, conn *c, const uint8_t *body, size_t len)
{
    uint8_t hdr[9];
    struct iovec iov[2] = { { hdr, gf_zmtp_frame_header(hdr, GF_ZMTP_COMMAND, len) },
                            { (void *)body, len } };
    return conn_write(self, c, iov, 2);
}

static void on_accept(gf_router *self)
{
    for (;;) {
        int fd = accept4(self->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            /* out of descriptors (EMFILE): the connection waits in the
             * backlog, and pump's bounded rounds keep this from spinning */
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED &&
                gf_now_ms() - self->warned >= 1000) {
                GF_WARN("%s: accept: %s", self->path, strerror(errno));
                self->warned = gf_now_ms();
            }
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        conn *c = gf_calloc(1, sizeof(*c));
        c->fd = fd;
        c->key = self->next_key++;
        c->accepted = gf_now_ms();
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
            c->has_cred = true;
            c->uid = cr.uid;
            c->gid = cr.gid;
            c->pid = cr.pid;
        }
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        if (epoll_ctl(self->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
            GF_WARN("%s: epoll: %s", self->path, strerror(errno));
            close(fd);
            free(c);
            continue;
        }
        if (self->n_conns == self->cap_conns) {
            self->cap_conns = self->cap_conns ? self->cap_conns * 2 : 16;
            self->conns = gf_realloc(self->conns, self->cap_conns * sizeof(conn *));
        }
        self->conns[self->n_conns++] = c;
        uint8_t hello[GF_ZMTP_HELLO_MAX];
        struct iovec iov = { hello, gf_zmtp_hello(hello, "ROUTER", 1) };
        conn_write(self, c, &iov, 1);
    }
}

static void enqueue(gf_router *self, conn *c)
{
    if (self->q_len == self->q_cap) {
        if (self->q_head) {
            memmove(self->q, self->q + self->q_head, (self->q_len - self->q_head) * sizeof(inmsg));
            self->q_len -= self->q_head;
            self->q_head = 0;
        }
        if (self->q_len == self->q_cap) {
            self->q_cap = self->q_cap ? self->q_cap * 2 : 64;
            self->q = gf_realloc(self->q, self->q_cap * sizeof(inmsg));
        }
    }
    self->q[self->q_len++] = (inmsg){
        .key = c->key, .delim = c->m_delim, .extra = c->m_extra, .has_cred = c->has_cred,
        .uid = c->uid, .gid = c->gid, .pid = c->pid, .body = c->m_body, .len = c->m_body_len,
    };
    c->m_body = NULL;
    c->m_body_len = c->m_frames = c->m_bytes = 0;
    c->m_delim = c->m_extra = false;
}

/* The handshake: the peer's greeting, then its READY. Returns the bytes
 * used (0: more are needed), or -1 with why when the peer must go. A peer
 * of the wrong socket type hears why first, as libzmq's peers expect. */
static long handshake(gf_router *self, conn *c, const uint8_t *b, size_t n, char *why,
                      size_t whylen)
{
    if (!c->greeted) {
        if (n >= 1 && b[0] != 0xFF) {
            snprintf(why, whylen, "not ZMTP");
            return -1;
        }
        if (n < GF_ZMTP_GREETING_LEN)
            return 0;
        if (gf_zmtp_check_greeting(b, why, whylen) != 0)
            return -1;
        c->greeted = true;
        return GF_ZMTP_GREETING_LEN;
    }
    uint8_t flags;
    size_t hdr, size;
    int rc = gf_zmtp_frame_parse(b, n, HANDSHAKE_MAX, &flags, &hdr, &size);
    if (rc == 0)
        return 0;
    if (rc < 0 || !(flags & GF_ZMTP_COMMAND)) {
        snprintf(why, whylen, "no READY command");
        return -1;
    }
    char type[16];
    rc = gf_zmtp_ready_property(b + hdr, size, "Socket-Type", type, sizeof(type));
    if (rc != 1) {
        snprintf(why, whylen, rc == 0 ? "READY without a Socket-Type" : "no READY command");
        return -1;
    }
    if (strcmp(type, "DEALER") != 0 && strcmp(type, "REQ") != 0) {
        static const char reason[] = "invalid socket type";
        uint8_t refuse[6 + 1 + sizeof(reason)] = { 5, 'E', 'R', 'R', 'O', 'R', sizeof(reason) - 1 };
        memcpy(refuse + 7, reason, sizeof(reason) - 1);
        send_command(self, c, refuse, sizeof(refuse) - 1);
        snprintf(why, whylen, "a %s socket cannot talk to a ROUTER here", type);
        return -1;
    }
    c->ready = true;
    return (long)(hdr + size);
}

/* Take every whole frame out of c's input. Returns 0, or -1 when c broke. */
static int parse(gf_router *self, conn *c)
{
    size_t off = 0;
    char why[160];
    for (;;) {
        const uint8_t *b = c->in + off;
        size_t n = c->in_len - off;
        if (!c->ready) {
            long used = handshake(self, c, b, n, why, sizeof(why));
            if (used < 0)
                goto drop;
            if (used == 0)
                break;
            off += (size_t)used;
            continue;
        }
        uint8_t flags;
        size_t hdr, size;
        int rc = gf_zmtp_frame_parse(b, n, self->max_frame, &flags, &hdr, &size);
        if (rc == GF_ETOOBIG) {
            snprintf(why, sizeof(why), "a frame over %zu bytes", self->max_frame);
            goto drop;
        }
        if (rc == 0)
            break;
        off += hdr + size;
        const uint8_t *body = b + hdr;
        if (flags & GF_ZMTP_COMMAND) {
            if (c->m_frames) {
                snprintf(why, sizeof(why), "a command inside a message");
                goto drop;
            }
            uint8_t pong[5 + 16];
            size_t pl = gf_zmtp_pong(body, size, pong);
            if (pl && send_command(self, c, pong, pl) != 0) {
                snprintf(why, sizeof(why), "its PONG could not be sent");
                goto drop;
            }
            if (gf_zmtp_is_command(body, size, "ERROR")) {
                snprintf(why, sizeof(why), "the peer sent ERROR");
                goto drop;
            }
            continue;
        }
        c->m_bytes += size;
        if (c->m_bytes > self->max_frame) {
            snprintf(why, sizeof(why), "a message over %zu bytes", self->max_frame);
            goto drop;
        }
        bool more = flags & GF_ZMTP_MORE;
        size_t index = c->m_frames++;
        if (index == 0 && size == 0 && more) {
            c->m_delim = true;
        } else if (index == (size_t)c->m_delim) {
            c->m_body = gf_malloc(size ? size : 1);
            memcpy(c->m_body, body, size);
            c->m_body_len = size;
        } else {
            c->m_extra = true;
        }
        if (!more)
            enqueue(self, c);
    }
    if (off) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
    }
    return 0;
drop:
    conn_fail(c, why);
    return -1;
}

static void on_readable(gf_router *self, conn *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < READ_CHUNK) {
            c->in_cap = c->in_len + 2 * READ_CHUNK;
            c->in = gf_realloc(c->in, c->in_cap);
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return;
        if (r <= 0) {
            conn_fail(c, r == 0 ? "the peer hung up" : strerror(errno));
            return;
        }
        c->in_len += (size_t)r;
        if (parse(self, c) != 0)
            return;
    }
}

/* Handle what epoll has, until a message is queued or nothing is left (or
 * PUMP_ROUNDS batches went by: a listening socket that stays readable
 * because accept fails must not hold the broker here). */
static void pump(gf_router *self)
{
    struct epoll_event evs[64];
    sweep(self);
    for (int round = 0; round < PUMP_ROUNDS && self->q_head == self->q_len; round++) {
        int n = epoll_wait(self->ep, evs, 64, 0);
        if (n <= 0)
            return;
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {
                on_accept(self);
                continue;
            }
            if (c->broken || ((evs[i].events & EPOLLOUT) && flush_out(self, c) != 0))
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                on_readable(self, c);
        }
        sweep(self);
    }
}

/* ------------------------------------------------------------ own backend */

static void own_destroy(gf_router *self)
{
    while (self->n_conns) {
        conn_fail(self->conns[0], "the broker stops");
        conn_close(self, 0);
    }
    free(self->conns);
    for (size_t i = self->q_head; i < self->q_len; i++)
        free(self->q[i].body);
    free(self->q);
    if (self->ep >= 0)
        close(self->ep);
    if (self->lfd >= 0)
        close(self->lfd);
    if (self->bound)
        unlink(self->path);
}

/* Drop peers that connected but did not finish the handshake in time, as
 * libzmq does: a local user cannot pile up half-open connections. */
static void late_handshakes(gf_router *self)
{
    uint64_t now = gf_now_ms();
    if (now < self->next_check)
        return;
    self->next_check = now + 1000;
    for (size_t i = 0; i < self->n_conns; i++) {
        conn *c = self->conns[i];
        if (!c->ready && now - c->accepted >= (uint64_t)self->handshake_ms)
            conn_fail(c, "no handshake in time");
    }
    sweep(self);
}

static bool own_pollitem(gf_router *self, zmq_pollitem_t *item)
{
    late_handshakes(self);
    *item = (zmq_pollitem_t){ NULL, self->ep, ZMQ_POLLIN, 0 };
    return self->q_head < self->q_len;
}

static int own_recv(gf_router *self, gf_peer *peer, gf_msg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    memset(peer, 0, sizeof(*peer));
    if (errlen)
        err[0] = 0;
    pump(self);
    if (self->q_head == self->q_len)
        return GF_ETIMEDOUT;
    inmsg m = self->q[self->q_head++];
    if (self->q_head == self->q_len)
        self->q_head = self->q_len = 0;
    peer->id[0] = 0;
    for (int i = 0; i < 4; i++)
        peer->id[1 + i] = (uint8_t)(m.key >> (24 - 8 * i));
    peer->id_len = ID_LEN;
    peer->delim = m.delim;
    peer->has_cred = m.has_cred;
    peer->uid = m.uid;
    peer->gid = m.gid;
    peer->pid = m.pid;
    int rc;
    if (m.extra) {
        snprintf(err, errlen, "message of more than one body frame");
        rc = GF_EPROTO;
    } else {
        rc = gf_proto_decode(m.body, m.len, out, err, errlen);
    }
    free(m.body);
    return rc;
}

static int own_send(gf_router *self, const gf_peer *peer, const gf_msg *m)
{
    if (peer->id_len != ID_LEN || peer->id[0] != 0)
        return GF_ENOENT;
    uint32_t key = 0;
    for (int i = 0; i < 4; i++)
        key = key << 8 | peer->id[1 + i];
    conn *c = conn_by_key(self, key);
    if (!c || !c->ready)
        return GF_ENOENT;
    uint8_t *buf;
    size_t len;
    int rc = gf_proto_encode(m, &buf, &len);
    if (rc) {
        GF_ERROR("cannot encode a '%s' message: %s",
                 gf_proto_op_name(m->op) ? gf_proto_op_name(m->op) : "?", gf_strerror(rc));
        return rc;
    }
    uint8_t delim[2] = { GF_ZMTP_MORE, 0 }, hdr[9];
    struct iovec iov[3];
    int n = 0;
    if (peer->delim)
        iov[n++] = (struct iovec){ delim, 2 };
    iov[n++] = (struct iovec){ hdr, gf_zmtp_frame_header(hdr, 0, len) };
    iov[n++] = (struct iovec){ buf, len };
    rc = conn_write(self, c, iov, n);
    free(buf);
    return rc;
}

static const router_ops own_ops = { own_destroy, own_pollitem, own_recv, own_send };

gf_router *gf_router_listen(const char *path, size_t max_frame)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path)) {
        GF_ERROR("cannot bind ipc://%s: the path is too long", path);
        return NULL;
    }
    strcpy(sa.sun_path, path);
    gf_router *self = gf_calloc(1, sizeof(*self));
    self->ops = &own_ops;
    self->max_frame = max_frame;
    self->handshake_ms = HANDSHAKE_MS;
    self->path = gf_strdup(path);
    self->ep = epoll_create1(EPOLL_CLOEXEC);
    self->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (self->ep < 0 || self->lfd < 0) {
        GF_ERROR("cannot bind ipc://%s: %s", path, strerror(errno));
        goto fail;
    }
    if (bind(self->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        GF_ERROR("cannot bind ipc://%s: %s", path, strerror(errno));
        goto fail;
    }
    self->bound = true;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    if (listen(self->lfd, SOMAXCONN) != 0 ||
        epoll_ctl(self->ep, EPOLL_CTL_ADD, self->lfd, &ev) != 0) {
        GF_ERROR("cannot listen on ipc://%s: %s", path, strerror(errno));
        goto fail;
    }
    return self;
fail:
    gf_router_destroy(&self);
    return NULL;
}

/* ------------------------------------------------------------------ common */

void gf_router_destroy(gf_router **self_p)
{
    gf_router *self = *self_p;
    if (!self)
        return;
    self->ops->destroy(self);
    free(self->path);
    free(self);
    *self_p = NULL;
}

void gf_router_set_handshake_ms(gf_router *self, int ms)
{
    self->handshake_ms = ms;
    self->next_check = 0;
}

bool gf_router_pollitem(gf_router *self, zmq_pollitem_t *item)
{
    return self->ops->pollitem(self, item);
}

int gf_router_recv(gf_router *self, gf_peer *peer, gf_msg *out, char *err, size_t errlen)
{
    return self->ops->recv(self, peer, out, err, errlen);
}

int gf_router_send(gf_router *self, const gf_peer *peer, const gf_msg *m)
{
    return self->ops->send(self, peer, m);
}
