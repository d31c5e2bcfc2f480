/* test_server.c — the broker's loop in-process (a thread), on real ipc
 * sockets in a fresh folder, without workers: hostile frames on both
 * sockets get error replies and the broker keeps serving; a submit is in
 * the store before its ids come back; a job for a card without a worker
 * waits with that reason; cancel and the stop flag. Under `make sanitize`
 * this runs the server code under ASan and UBSan. */
#include "broker/server.h"
#include "broker/store.h"
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/util.h"
#include "common/wire.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

typedef struct {
    char dir[64];
    gf_config *cfg;
    gf_server *srv;
    pthread_t thread;
    volatile sig_atomic_t stop;
    int rc;
    void *ctx;
} fx;

static void *serve(void *arg)
{
    fx *f = arg;
    f->rc = gf_server_run(f->srv, &f->stop);
    return NULL;
}

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-server") != 0)
        return -1;
    char *yaml = gf_strfmt("run_dir: %s/run\nstate_dir: %s/state\nlog_level: error\n"
                           "devices:\n  - {index: 0, kind: cpu, lock: %s/gpu0.lock}\n"
                           "broker:\n  spawn_workers: false\n  heartbeat_interval_ms: 100\n",
                           f->dir, f->dir, f->dir);
    int rc = gf_config_parse("test.yaml", yaml, strlen(yaml), &f->cfg);
    free(yaml);
    if (rc)
        return -1;
    gf_log_init("test_server", GF_LOG_OFF);
    f->srv = gf_server_new(f->cfg);
    if (!f->srv)
        return -1;
    pthread_create(&f->thread, NULL, serve, f);
    f->ctx = zmq_ctx_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    f->stop = 1;
    pthread_join(f->thread, NULL);
    gf_server_destroy(&f->srv);
    zmq_ctx_term(f->ctx);
    gf_config_destroy(&f->cfg);
    gf_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void *dealer(fx *f, const char *endpoint)
{
    void *s = zmq_socket(f->ctx, ZMQ_DEALER);
    int zero = 0, tmo = 5000;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
    assert_int_equal(zmq_connect(s, endpoint), 0);
    return s;
}

/* Send raw bytes REQ-style (or worker-style) and expect an error reply. */
static void expect_error(void *s, bool delim, const void *buf, size_t len, const char *want)
{
    if (delim)
        zmq_send(s, "", 0, ZMQ_SNDMORE);
    zmq_send(s, buf, len, 0);
    gf_msg m;
    char err[256];
    assert_int_equal(gf_wire_recv(s, false, 0, NULL, &m, err, sizeof(err)), 0);
    assert_int_equal(m.op, GF_OP_ERROR);
    if (!strstr(m.message, want))
        fail_msg("error '%s' does not say '%s'", m.message, want);
    gf_msg_clear(&m);
}

static void call(void *s, gf_msg *req, gf_msg *rep)
{
    assert_int_equal(gf_wire_send(s, NULL, true, req), 0);
    char err[256];
    assert_int_equal(gf_wire_recv(s, false, 0, NULL, rep, err, sizeof(err)), 0);
}

static void test_hostile_frames(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    void *w = dealer(f, f->cfg->worker_endpoint);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 200; round++) {
        uint8_t buf[512];
        size_t n = 1 + (size_t)(x % sizeof(buf));
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        buf[0] = (uint8_t)(0x80 | (buf[0] & 0x0f));
        zmq_send(c, "", 0, ZMQ_SNDMORE);
        zmq_send(c, buf, n, 0);
        zmq_send(w, buf, n, 0);
        gf_msg m;
        char err[256];
        assert_int_equal(gf_wire_recv(c, false, 0, NULL, &m, err, sizeof(err)), 0);
        assert_int_equal(m.op, GF_OP_ERROR);
        gf_msg_clear(&m);
        assert_int_equal(gf_wire_recv(w, false, 0, NULL, &m, err, sizeof(err)), 0);
        assert_int_equal(m.op, GF_OP_ERROR);
        gf_msg_clear(&m);
    }
    const uint8_t v99[] = { 0x82, 0xa1, 'v', 0x63, 0xa2, 'o', 'p', 0xa5, 'q', 'u', 'e', 'u', 'e' };
    expect_error(c, true, v99, sizeof(v99), "unsupported protocol version 99");
    expect_error(w, false, v99, sizeof(v99), "unsupported protocol version 99");
    const uint8_t huge[] = { 0x83, 0xa1, 'v', 0x01, 0xa2, 'o', 'p', 0xa6, 'c', 'a', 'n', 'c', 'e', 'l',
                             0xa3, 'i', 'd', 's', 0xdd, 0xff, 0xff, 0xff, 0xff };
    expect_error(c, true, huge, sizeof(huge), "over the limit");
    /* a worker op on the client socket, a client op on the worker socket */
    const uint8_t hb[] = { 0x82, 0xa1, 'v', 0x01, 0xa2, 'o', 'p', 0xa9, 'h', 'e', 'a', 'r', 't', 'b',
                           'e', 'a', 't' };
    expect_error(c, true, hb, sizeof(hb), "not a client request");
    /* still serving */
    gf_msg q, r;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_QUEUE;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    gf_msg_clear(&r);
    zmq_close(c);
    zmq_close(w);
}

static void test_submit_durable_then_wait_reason(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    gf_msg q, r;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SUBMIT;
    gf_job_spec_init(&q.spec);
    q.spec.argv = gf_calloc(2, sizeof(char *));
    q.spec.argv[0] = gf_strdup("true");
    q.spec.argc = 1;
    q.array = 3;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_IDS);
    assert_int_equal(r.n_ids, 3);
    uint64_t first = r.ids[0];
    gf_msg_clear(&r);
    /* acknowledged: in the store, read by a second connection to it */
    char *db = gf_strfmt("%s/state/jobs.db", f->dir);
    gf_store *st = gf_store_open(db);
    free(db);
    assert_non_null(st);
    gf_job j;
    assert_int_equal(gf_store_get(st, first, &j), 0);
    assert_int_equal(j.state, GF_STATE_PENDING);
    assert_int_equal(j.uid, getuid());
    gf_job_clear(&j);
    gf_store_destroy(&st);
    /* no worker: the job says why it waits */
    gf_msg s;
    memset(&s, 0, sizeof(s));
    s.op = GF_OP_SHOW;
    s.id = first;
    call(c, &s, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_string_equal(r.jobs[0].reason, "no worker ready");
    gf_msg_clear(&r);
    /* a card that does not exist is refused at submit */
    q.spec.req = GF_REQ_GPU;
    q.spec.gpu = 5;
    q.array = 0;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_ERROR);
    assert_non_null(strstr(r.message, "no card 5"));
    gf_msg_clear(&r);
    gf_msg_clear(&q);
    /* cancel: own job yes, unknown id no */
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_CANCEL;
    q.ids = gf_calloc(2, sizeof(uint64_t));
    q.ids[0] = first;
    q.ids[1] = 999;
    q.n_ids = 2;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_CODES);
    assert_int_equal(r.codes[0], 0);
    assert_int_equal(r.codes[1], GF_ENOENT);
    gf_msg_clear(&r);
    gf_msg_clear(&q);
    /* wait on the cancelled job returns at once */
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WAIT;
    q.ids = gf_calloc(1, sizeof(uint64_t));
    q.ids[0] = first;
    q.n_ids = 1;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_int_equal(r.jobs[0].state, GF_STATE_CANCELLED);
    gf_msg_clear(&r);
    gf_msg_clear(&q);
    zmq_close(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hostile_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_durable_then_wait_reason, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
