/* transport_zmq.c — the CLI's libzmq backend: a DEALER (net/dealer.h)
 * for every endpoint libzmq reaches, tcp:// with CURVE included (see
 * transport.h).
 *
 * With CURVE, libzmq hides a failed handshake: a broker that cannot open our
 * HELLO (a wrong curve_public_key in the client's configuration) closes the
 * connection, libzmq connects again every 100 ms, and a request would wait
 * for its whole timeout (for ever for `wait`) with nothing said. A monitor
 * on the socket's handshake events turns that into GF_EPERM naming it. */
#include "net/transport.h"

#include "common/error.h"
#include "common/util.h"
#include "net/dealer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

typedef struct {
    void *ctx;                /* the zmq context, ours alone */
    gf_dealer *d;             /* to the broker, REQ style */
    void *mon;                /* PAIR on sock's handshake events (CURVE only), or NULL */
    int failed;               /* handshakes failed in a row since the last one that succeeded */
    char *endpoint;           /* the broker's, for messages; ours */
} zconn;

/* Handshakes that must fail in a row before the broker counts as refusing
 * our keys: one may break on a broker that is stopping; a wrong server key
 * fails every time, so three take about 200 ms. */
#define HANDSHAKE_TRIES 3
#define HANDSHAKE_EVENTS (ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | \
                          ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

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
    if (c->mon) {
        zmq_pollitem_t it;
        gf_dealer_pollitem(c->d, &it);
        zmq_socket_monitor(it.socket, NULL, 0);
        zmq_close(c->mon);
    }
    gf_dealer_destroy(&c->d);
    if (c->ctx)
        zmq_ctx_term(c->ctx);
    free(c->endpoint);
    free(c);
    *conn_p = NULL;
}

static void *zmq_open_conn(const gf_config *cfg, char *err, size_t errlen)
{
    const char *ep = cfg->client_endpoint;
    zconn *c = gf_calloc(1, sizeof(*c));
    c->endpoint = gf_strdup(ep);
    c->ctx = zmq_ctx_new();
    c->d = gf_dealer_connect(c->ctx, ep, cfg, true, err, errlen);
    if (!c->d) {
        void *p = c;
        zmq_close_conn(&p);
        return NULL;
    }
    /* CURVE (gf_wire_socket set it up): without the monitor a refused
     * handshake is only a longer wait. libzmq connects in the background,
     * so events from the first handshake on reach the monitor. */
    zmq_pollitem_t it;
    gf_dealer_pollitem(c->d, &it);
    int zero = 0;
    if (strncmp(ep, "tcp://", 6) == 0 && cfg->curve_public_key &&
        zmq_socket_monitor(it.socket, "inproc://handshake", HANDSHAKE_EVENTS) == 0) {
        c->mon = zmq_socket(c->ctx, ZMQ_PAIR);
        zmq_setsockopt(c->mon, ZMQ_LINGER, &zero, sizeof(zero));
        if (zmq_connect(c->mon, "inproc://handshake") != 0) {
            zmq_close(c->mon);
            c->mon = NULL;
        }
    }
    return c;
}

static int zmq_send_msg(void *conn, const gf_msg *m, char *err, size_t errlen)
{
    zconn *c = conn;
    int rc = gf_dealer_send(c->d, m);
    if (rc)
        snprintf(err, errlen, "cannot send the request: %s", gf_strerror(rc));
    return rc;
}

/* The handshake events waiting on c->mon: 0, or GF_EPERM with err saying
 * why once the broker refused us for good (HANDSHAKE_TRIES failures in a
 * row, or a protocol or authentication failure, which libzmq does not
 * retry). */
static int read_handshakes(zconn *c, char *err, size_t errlen)
{
    for (;;) {
        zmq_msg_t ev;
        zmq_msg_init(&ev);
        if (zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&ev);
            return 0;
        }
        uint16_t id = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&ev) >= 6) {
            memcpy(&id, zmq_msg_data(&ev), 2);
            memcpy(&value, (const uint8_t *)zmq_msg_data(&ev) + 2, 4);
        }
        bool more = zmq_msg_more(&ev);
        zmq_msg_close(&ev);
        if (more) {             /* the second frame: the endpoint */
            zmq_msg_init(&ev);
            zmq_msg_recv(&ev, c->mon, ZMQ_DONTWAIT);
            zmq_msg_close(&ev);
        }
        char why[160] = "";
        if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            c->failed = 0;
        } else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && ++c->failed >= HANDSHAKE_TRIES) {
            snprintf(why, sizeof(why), "the broker closed the connection during the handshake, "
                     "%d times (%s)", c->failed, zmq_strerror((int)value));
        } else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
            snprintf(why, sizeof(why), "protocol error 0x%x", value);
        } else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
            snprintf(why, sizeof(why), "the broker refused our key (status %u)", value);
        }
        if (why[0]) {
            snprintf(err, errlen, "no CURVE handshake with the broker at %s: %s: is the "
                     "configuration's broker.curve_public_key the broker's public key?",
                     c->endpoint, why);
            return GF_EPERM;
        }
    }
}

static int zmq_recv_msg(void *conn, int timeout_ms, gf_msg *out, char *err, size_t errlen)
{
    zconn *c = conn;
    memset(out, 0, sizeof(*out));
    zmq_pollitem_t it[2] = { { 0 }, { c->mon, 0, ZMQ_POLLIN, 0 } };
    gf_dealer_pollitem(c->d, &it[0]);
    uint64_t deadline = gf_now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
    for (;;) {
        uint64_t now = gf_now_ms();
        long left = timeout_ms < 0 ? -1 : now < deadline ? (long)(deadline - now) : 0;
        int n = zmq_poll(it, c->mon ? 2 : 1, left);
        if (n < 0 && errno == EINTR)
            return GF_EINTR;
        if (n < 0) {
            snprintf(err, errlen, "zmq_poll: %s", zmq_strerror(errno));
            return GF_EIO;
        }
        if (n == 0)
            return GF_ETIMEDOUT;
        if (it[0].revents & ZMQ_POLLIN)
            break;
        int rc = read_handshakes(c, err, errlen);
        if (rc)
            return rc;
    }
    int rc = gf_dealer_recv(c->d, 0, out, err, errlen);
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
