/* test_dealer.c — the DEALER and ROUTER endpoints (net/dealer.h,
 * net/router.h) on real libzmq sockets in this thread: a worker's
 * envelope and a CLI's (REQ style) both ways with the kernel's credentials
 * on ipc://, a dealer that connects before the broker is there, a broker
 * that goes away and comes back (libzmq reconnects; a reconnect starts a
 * new peer), a body that does not decode (refused, the next one read), and
 * tcp:// with CURVE set up by gf_wire_socket: refused without keys, served
 * with them, silent to a client that has the wrong server key. */
#include "common/config.h"
#include "net/dealer.h"
#include "common/error.h"
#include "common/log.h"
#include "net/router.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

typedef struct {
    char dir[64];
    char ep[160];
    gf_config *cfg;
    void *ctx;
} fx;

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-dealer") != 0)
        return -1;
    snprintf(f->ep, sizeof(f->ep), "ipc://%s/worker.sock", f->dir);
    char *yaml = gf_strfmt("run_dir: %s/run\nstate_dir: %s/state\n", f->dir, f->dir);
    int rc = gf_config_parse("test.yaml", yaml, strlen(yaml), &f->cfg);
    free(yaml);
    if (rc)
        return -1;
    gf_log_init("test_dealer", GF_LOG_OFF);
    f->ctx = zmq_ctx_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    zmq_ctx_term(f->ctx);
    gf_config_destroy(&f->cfg);
    gf_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* The router's next message (waiting up to 3 s): gf_router_recv's code. */
static int router_next(gf_router *r, gf_peer *p, gf_msg *m)
{
    char err[256];
    for (int i = 0; i < 300; i++) {
        zmq_pollitem_t it;
        gf_router_pollitem(r, &it);
        zmq_poll(&it, 1, 10);
        int rc = gf_router_recv(r, p, m, err, sizeof(err));
        if (rc != GF_ETIMEDOUT)
            return rc;
    }
    return GF_ETIMEDOUT;
}

static void beat(gf_msg *m)
{
    memset(m, 0, sizeof(*m));
    m->op = GF_OP_HEARTBEAT;
}

static gf_router *bind_or_fail(fx *f, const char *ep, const gf_config *cfg)
{
    char err[256];
    gf_router *r = gf_router_bind(f->ctx, ep, cfg, err, sizeof(err));
    if (!r)
        fail_msg("bind %s: %s", ep, err);
    return r;
}

static gf_dealer *connect_or_fail(fx *f, const char *ep, const gf_config *cfg, bool delim)
{
    char err[256];
    gf_dealer *d = gf_dealer_connect(f->ctx, ep, cfg, delim, err, sizeof(err));
    if (!d)
        fail_msg("connect %s: %s", ep, err);
    return d;
}

static void test_envelopes_and_credentials(void **state)
{
    fx *f = *state;
    gf_router *r = bind_or_fail(f, f->ep, f->cfg);
    gf_dealer *worker = connect_or_fail(f, f->ep, f->cfg, false);
    gf_dealer *client = connect_or_fail(f, f->ep, f->cfg, true);
    gf_msg m, got;
    beat(&m);
    assert_int_equal(gf_dealer_send(worker, &m), 0);
    gf_peer pw, pc;
    assert_int_equal(router_next(r, &pw, &got), 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    assert_false(pw.delim);                      /* [body] */
    assert_true(pw.has_cred);                    /* the kernel's word */
    assert_int_equal(pw.uid, getuid());
    assert_int_equal(pw.pid, getpid());
    assert_int_equal(pw.id_len, 5);              /* libzmq's: a zero and a number */
    gf_msg_clear(&got);
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_QUEUE;
    m.all = true;
    assert_int_equal(gf_dealer_send(client, &m), 0);
    assert_int_equal(router_next(r, &pc, &got), 0);
    assert_int_equal(got.op, GF_OP_QUEUE);
    assert_true(got.all);
    assert_true(pc.delim);                       /* [empty][body] */
    assert_false(pc.id_len == pw.id_len && memcmp(pc.id, pw.id, pw.id_len) == 0);
    gf_msg_clear(&got);

    /* replies carry each envelope back; a big one whole */
    gf_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.op = GF_OP_LOG;
    rep.data_len = 3u << 20;
    rep.data = gf_malloc(rep.data_len);
    for (size_t i = 0; i < rep.data_len; i++)
        rep.data[i] = (uint8_t)(i * 13 + 5);
    assert_int_equal(gf_router_send(r, &pc, &rep), 0);
    char err[256];
    assert_int_equal(gf_dealer_recv(client, 3000, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_LOG);
    assert_int_equal(got.data_len, rep.data_len);
    assert_memory_equal(got.data, rep.data, rep.data_len);
    gf_msg_clear(&got);
    gf_msg_clear(&rep);
    beat(&rep);
    assert_int_equal(gf_router_send(r, &pw, &rep), 0);
    assert_int_equal(gf_dealer_recv(worker, 3000, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    assert_int_equal(gf_dealer_recv(worker, 0, &got, err, sizeof(err)), GF_ETIMEDOUT);

    /* the client hangs up: a reply to it is an error, not a silent drop */
    gf_dealer_destroy(&client);
    assert_null(client);
    gf_dealer_destroy(&client);                  /* safe twice */
    int rc = 0;
    for (int i = 0; i < 100 && (rc = gf_router_send(r, &pc, &rep)) == 0; i++)
        usleep(10000);
    assert_int_equal(rc, GF_ENOENT);
    gf_dealer_destroy(&worker);
    gf_router_destroy(&r);
    assert_int_equal(access(f->ep + 6, F_OK), -1);   /* the socket file went with it */
    gf_router_destroy(&r);
}

/* A worker that starts before its broker, a broker that restarts. */
static void test_broker_late_and_back(void **state)
{
    fx *f = *state;
    gf_dealer *d = connect_or_fail(f, f->ep, f->cfg, false);   /* nobody there yet */
    gf_msg m, got;
    beat(&m);
    assert_int_equal(gf_dealer_send(d, &m), 0);                /* queued */
    char err[256];
    assert_int_equal(gf_dealer_recv(d, 50, &got, err, sizeof(err)), GF_ETIMEDOUT);
    gf_router *r = bind_or_fail(f, f->ep, f->cfg);
    gf_peer p1, p2;
    assert_int_equal(router_next(r, &p1, &got), 0);           /* libzmq connected */
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    /* the broker goes and a new one comes: the same socket reaches it */
    gf_router_destroy(&r);
    r = bind_or_fail(f, f->ep, f->cfg);
    int rc = GF_ETIMEDOUT;
    for (int i = 0; i < 30 && rc == GF_ETIMEDOUT; i++) {      /* beats until one lands */
        assert_int_equal(gf_dealer_send(d, &m), 0);
        gf_msg_clear(&got);
        gf_peer tmp;
        zmq_pollitem_t it;
        gf_router_pollitem(r, &it);
        zmq_poll(&it, 1, 100);
        rc = gf_router_recv(r, &tmp, &got, err, sizeof(err));
        p2 = tmp;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    /* a reconnect is a new socket: a new peer for the broker (after the
     * old socket's last beats, which may still come) */
    assert_int_equal(gf_dealer_reconnect(d, err, sizeof(err)), 0);
    assert_int_equal(gf_dealer_send(d, &m), 0);
    gf_peer p3;
    bool fresh = false;
    while (!fresh && router_next(r, &p3, &got) == 0)
        fresh = !(p3.id_len == p2.id_len && memcmp(p3.id, p2.id, p2.id_len) == 0);
    assert_true(fresh);
    gf_router_destroy(&r);
    gf_dealer_destroy(&d);
}

/* A body that does not decode, either way: refused with a reason, the
 * sender still answerable, the next message read. */
static void test_garbage(void **state)
{
    fx *f = *state;
    gf_router *r = bind_or_fail(f, f->ep, f->cfg);
    void *raw = zmq_socket(f->ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(raw, ZMQ_LINGER, &zero, sizeof(zero));
    assert_int_equal(zmq_connect(raw, f->ep), 0);
    zmq_send(raw, "\x93\x01\x02", 3, 0);
    gf_peer p;
    gf_msg got;
    assert_int_equal(router_next(r, &p, &got), GF_EPROTO);
    assert_true(p.id_len > 0 && p.has_cred);     /* answerable */
    gf_msg e;
    memset(&e, 0, sizeof(e));
    e.op = GF_OP_ERROR;
    e.code = GF_EPROTO;
    e.message = gf_strdup("bad");
    assert_int_equal(gf_router_send(r, &p, &e), 0);
    gf_msg_clear(&e);
    zmq_close(raw);
    gf_router_destroy(&r);

    /* a broker that sends a body that does not decode, then a good one */
    raw = zmq_socket(f->ctx, ZMQ_ROUTER);
    zmq_setsockopt(raw, ZMQ_LINGER, &zero, sizeof(zero));
    assert_int_equal(zmq_bind(raw, f->ep), 0);
    gf_dealer *d = connect_or_fail(f, f->ep, f->cfg, false);
    gf_msg m;
    beat(&m);
    assert_int_equal(gf_dealer_send(d, &m), 0);
    uint8_t id[256], body[256];
    int idn = zmq_recv(raw, id, sizeof(id), 0);
    assert_true(idn > 0);
    assert_true(zmq_recv(raw, body, sizeof(body), 0) > 0);
    zmq_send(raw, id, (size_t)idn, ZMQ_SNDMORE);
    zmq_send(raw, "\x93\x01\x02", 3, 0);
    zmq_send(raw, id, (size_t)idn, ZMQ_SNDMORE);
    zmq_send(raw, body, 0, ZMQ_SNDMORE);           /* an empty frame first: skipped */
    uint8_t *enc;
    size_t len;
    assert_int_equal(gf_proto_encode(&m, &enc, &len), 0);
    zmq_send(raw, enc, len, 0);
    free(enc);
    char err[256];
    assert_int_equal(gf_dealer_recv(d, 3000, &got, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "expected a map"));
    assert_int_equal(gf_dealer_recv(d, 3000, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    gf_dealer_destroy(&d);
    zmq_close(raw);
}

/* tcp://: CURVE from the configuration, in gf_wire_socket only. */
static void test_tcp_curve(void **state)
{
    fx *f = *state;
    char pub[41], sec[41], other[41], osec[41];
    assert_int_equal(zmq_curve_keypair(pub, sec), 0);
    assert_int_equal(zmq_curve_keypair(other, osec), 0);
    int port = 20000 + (int)(getpid() % 20000);
    char ep[64];
    snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", port);
    char err[256];
    /* no keys: neither side goes on in the clear */
    assert_null(gf_router_bind(f->ctx, ep, f->cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "curve_secret_key"));
    assert_null(gf_dealer_connect(f->ctx, ep, f->cfg, true, err, sizeof(err)));
    assert_non_null(strstr(err, "curve_public_key"));

    char *yaml = gf_strfmt("run_dir: %s/run\nstate_dir: %s/state\nbroker:\n"
                           "  client_endpoint: %s\n  curve_public_key: '%s'\n"
                           "  curve_secret_key: '%s'\n", f->dir, f->dir, ep, pub, sec);
    gf_config *keyed = NULL;
    assert_int_equal(gf_config_parse("keyed.yaml", yaml, strlen(yaml), &keyed), 0);
    free(yaml);
    yaml = gf_strfmt("run_dir: %s/run\nstate_dir: %s/state\nbroker:\n"
                     "  client_endpoint: %s\n  curve_public_key: '%s'\n",
                     f->dir, f->dir, ep, other);
    gf_config *wrong = NULL;
    assert_int_equal(gf_config_parse("wrong.yaml", yaml, strlen(yaml), &wrong), 0);
    free(yaml);
    gf_router *r = bind_or_fail(f, ep, keyed);
    gf_dealer *good = connect_or_fail(f, ep, keyed, true);
    gf_dealer *bad = connect_or_fail(f, ep, wrong, true);
    gf_msg m, got;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_WORKERS;
    assert_int_equal(gf_dealer_send(bad, &m), 0);
    assert_int_equal(gf_dealer_send(good, &m), 0);
    gf_peer p;
    assert_int_equal(router_next(r, &p, &got), 0);
    assert_int_equal(got.op, GF_OP_WORKERS);
    assert_false(p.has_cred);                    /* no kernel credentials on tcp:// */
    beat(&m);
    assert_int_equal(gf_router_send(r, &p, &m), 0);
    assert_int_equal(gf_dealer_recv(good, 3000, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    /* the one with the wrong server key never got through */
    assert_int_equal(router_next(r, &p, &got), GF_ETIMEDOUT);
    gf_dealer_destroy(&bad);
    gf_dealer_destroy(&good);
    gf_router_destroy(&r);
    gf_config_destroy(&keyed);
    gf_config_destroy(&wrong);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_envelopes_and_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broker_late_and_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_curve, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
