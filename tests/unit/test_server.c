/* test_server.c — the broker's loop in-process (a thread), on real ipc
 * sockets in a fresh folder, without workers: hostile frames on both
 * sockets get error replies and the broker keeps serving; client requests
 * on the worker socket (a submit, a drain, a queue) are refused and nothing
 * comes of them; every reply to frames full of invalid UTF-8 (and every
 * reason built from a worker's message, and every reason an older broker
 * stored unescaped) decodes under a strict decoder; a submit is in the
 * store before its ids come back; a job for a card without a worker waits
 * with that reason; a command job without an absolute cwd is refused,
 * naming spec.cwd; an ended job's log read to its end says eof on that
 * read; cancel and the stop flag. Under `make sanitize` this
 * runs the server code under ASan and UBSan. */
#include "broker/server.h"
#include "broker/store.h"
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "net/proto.h"
#include "common/util.h"
#include "net/wire.h"
#include "tests/unit/strict_msgpack.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
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
    void *socks[8];           /* closed by teardown, also after a failed check */
    int n_socks;
} fx;

static void *serve(void *arg)
{
    fx *f = arg;
    f->rc = gf_server_run(f->srv, &f->stop);
    return NULL;
}

/* A store an older gpuflockd left: job 1 failed and job 2 pending, both
 * with a reason holding bytes that are not UTF-8 (recorded before reasons
 * were escaped). */
static int old_store(const char *dir)
{
    char *state = gf_strfmt("%s/state", dir), *db = gf_strfmt("%s/state/jobs.db", dir);
    int rc = gf_mkdir_p(state, 0711, NULL);
    gf_store *st = rc ? NULL : gf_store_open(db);
    free(state);
    free(db);
    if (!st)
        return -1;
    for (int i = 0; i < 2 && rc == 0; i++) {
        gf_job j;
        gf_job_init(&j);
        j.spec.argv = gf_calloc(2, sizeof(char *));
        j.spec.argv[0] = gf_strdup("true");
        j.spec.argc = 1;
        j.state = i == 0 ? GF_STATE_FAILED : GF_STATE_PENDING;
        j.reason = gf_strdup(i == 0 ? "cannot run 'tr\xf5ue'" : "requeued: \xc0\xaf");
        j.uid = getuid();
        j.gid = getgid();
        j.submitted_ms = gf_wall_ms();
        if (i == 0)
            j.ended_ms = j.submitted_ms;   /* recent: history.keep_days keeps it */
        rc = gf_store_begin(st) || gf_store_insert(st, &j) || gf_store_commit(st);
        gf_job_clear(&j);
    }
    gf_store_destroy(&st);
    return rc ? -1 : 0;
}

static int setup_as(void **state, bool with_old_store)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-server") != 0)
        return -1;
    if (with_old_store && old_store(f->dir) != 0)
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

static int setup(void **state) { return setup_as(state, false); }

static int setup_old_store(void **state) { return setup_as(state, true); }

static int teardown(void **state)
{
    fx *f = *state;
    f->stop = 1;
    pthread_join(f->thread, NULL);
    gf_server_destroy(&f->srv);
    for (int i = 0; i < f->n_socks; i++)
        zmq_close(f->socks[i]);
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
    assert_true(f->n_socks < 8);
    f->socks[f->n_socks++] = s;
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
    assert_int_equal(gf_wire_recv(s, GF_WIRE_DEALER, 0, NULL, &m, err, sizeof(err)), 0);
    assert_int_equal(m.op, GF_OP_ERROR);
    if (!strstr(m.message, want))
        fail_msg("error '%s' does not say '%s'", m.message, want);
    gf_msg_clear(&m);
}

static void call(void *s, gf_msg *req, gf_msg *rep)
{
    assert_int_equal(gf_wire_send(s, NULL, true, req), 0);
    char err[256];
    assert_int_equal(gf_wire_recv(s, GF_WIRE_DEALER, 0, NULL, rep, err, sizeof(err)), 0);
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
        assert_int_equal(gf_wire_recv(c, GF_WIRE_DEALER, 0, NULL, &m, err, sizeof(err)), 0);
        assert_int_equal(m.op, GF_OP_ERROR);
        gf_msg_clear(&m);
        assert_int_equal(gf_wire_recv(w, GF_WIRE_DEALER, 0, NULL, &m, err, sizeof(err)), 0);
        assert_int_equal(m.op, GF_OP_ERROR);
        gf_msg_clear(&m);
    }
    const uint8_t v99[] = { 0x82, 0xa1, 'v', 0x63, 0xa2, 'o', 'p', 0xa5, 'q', 'u', 'e', 'u', 'e' };
    expect_error(c, true, v99, sizeof(v99), "unsupported protocol version 99");
    expect_error(w, false, v99, sizeof(v99), "unsupported protocol version 99");
    const uint8_t huge[] = { 0x83, 0xa1, 'v', 0x01, 0xa2, 'o', 'p', 0xa6, 'c', 'a', 'n', 'c', 'e', 'l',
                             0xa3, 'i', 'd', 's', 0xdd, 0xff, 0xff, 0xff, 0xff };
    expect_error(c, true, huge, sizeof(huge), "over the limit");
    /* a worker op on the client socket (a client op on the worker socket:
     * test_client_ops_on_worker_socket) */
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
}

/* The first message off a worker's DEALER that is not a heartbeat. */
static void worker_recv(void *w, gf_msg *m);

/* A card 0 worker's registration, with no pid: a broker that finds this
 * worker silent (a failed check left its job running) kills no process, not
 * the test's own. */
static void send_ready(void *w)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_READY;
    m.device = 0;
    m.pid = 0;
    m.card.index = 0;
    m.card.kind = GF_DEVICE_CPU;
    snprintf(m.card.name, sizeof(m.card.name), "cpu");
    assert_int_equal(gf_wire_send(w, NULL, false, &m), 0);
}

/* Client requests sent on the worker socket are never acted on: from a peer
 * that has not registered the broker only asks it to register; from the
 * card's registered worker each is an error naming the operation. No job
 * comes of a submit there, a drain there leaves the card in service (the
 * test runs as root or not: either way it must not act), and the worker
 * still gets the next real client's job. */
static void test_client_ops_on_worker_socket(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    void *stranger = dealer(f, f->cfg->worker_endpoint);
    void *w = dealer(f, f->cfg->worker_endpoint);
    gf_msg sub, drain, queue, r;
    memset(&sub, 0, sizeof(sub));
    sub.op = GF_OP_SUBMIT;
    gf_job_spec_init(&sub.spec);
    sub.spec.argv = gf_calloc(2, sizeof(char *));
    sub.spec.argv[0] = gf_strdup("true");
    sub.spec.argc = 1;
    sub.spec.cwd = gf_strdup("/");
    memset(&drain, 0, sizeof(drain));
    drain.op = GF_OP_DRAIN;
    drain.device = 0;
    memset(&queue, 0, sizeof(queue));
    queue.op = GF_OP_QUEUE;
    queue.all = true;

    assert_int_equal(gf_wire_send(stranger, NULL, false, &sub), 0);
    worker_recv(stranger, &r);
    assert_int_equal(r.op, GF_OP_DISCONNECT);
    assert_non_null(strstr(r.message, "not registered"));
    gf_msg_clear(&r);

    send_ready(w);
    const struct {
        gf_msg *m;
        const char *want;
    } ops[] = {
        { &sub, "operation 'submit' is not a worker message" },
        { &drain, "operation 'drain' is not a worker message" },
        { &queue, "operation 'queue' is not a worker message" },
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        assert_int_equal(gf_wire_send(w, NULL, false, ops[i].m), 0);
        worker_recv(w, &r);
        assert_int_equal(r.op, GF_OP_ERROR);
        if (!r.message || !strstr(r.message, ops[i].want))
            fail_msg("reply '%s' does not say '%s'", r.message ? r.message : "", ops[i].want);
        gf_msg_clear(&r);
    }

    /* nothing came of them: no job, card 0 in service */
    call(c, &queue, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_int_equal(r.n_jobs, 0);
    gf_msg_clear(&r);
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WORKERS;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_WORKERS_LIST);
    assert_int_equal(r.n_workers, 1);
    assert_int_equal(r.workers[0].device, 0);
    assert_null(r.workers[0].drain);
    gf_msg_clear(&r);
    /* and the worker is still the card's: a client's job reaches it */
    call(c, &sub, &r);
    assert_int_equal(r.op, GF_OP_IDS);
    uint64_t id = r.ids[0];
    gf_msg_clear(&r);
    worker_recv(w, &r);
    assert_int_equal(r.op, GF_OP_JOB);
    assert_int_equal(r.id, id);
    int32_t attempt = r.attempt;
    gf_msg_clear(&r);
    gf_msg_clear(&sub);
    /* it ends, so the broker stops without waiting for it */
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_RESULT;
    m.id = id;
    m.attempt = attempt;
    assert_int_equal(gf_wire_send(w, NULL, false, &m), 0);
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WAIT;
    q.ids = gf_calloc(1, sizeof(uint64_t));
    q.ids[0] = id;
    q.n_ids = 1;
    call(c, &q, &r);
    gf_msg_clear(&q);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_int_equal(r.jobs[0].state, GF_STATE_DONE);
    gf_msg_clear(&r);
}

/* ---- replies a strict decoder takes */

/* A msgpack writer for hand-made frames (the encoder would not write what
 * these hold). */
typedef struct {
    uint8_t b[4096];
    size_t n;
} mp;

static void mp_raw(mp *m, const void *p, size_t n)
{
    assert_true(m->n + n <= sizeof(m->b));
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void mp_byte(mp *m, uint8_t x) { mp_raw(m, &x, 1); }

static void mp_map(mp *m, size_t n) { assert_true(n < 16); mp_byte(m, (uint8_t)(0x80 | n)); }

static void mp_arr(mp *m, size_t n) { assert_true(n < 16); mp_byte(m, (uint8_t)(0x90 | n)); }

static void mp_strn(mp *m, const void *s, size_t n)
{
    assert_true(n < 256);
    mp_byte(m, 0xd9);
    mp_byte(m, (uint8_t)n);
    mp_raw(m, s, n);
}

static void mp_str(mp *m, const char *s) { mp_strn(m, s, strlen(s)); }

/* {"v": 1, "op": op, ...n more entries} */
static void mp_head(mp *m, const char *op, size_t n, size_t oplen)
{
    mp_map(m, 2 + n);
    mp_str(m, "v");
    mp_byte(m, 1);
    mp_str(m, "op");
    mp_strn(m, op, oplen);
}

/* One raw reply off a DEALER (the delimiter of a client's envelope
 * skipped), checked the way a strict decoder reads it; returns its op. */
static gf_op recv_strict(void *s, const char *what)
{
    uint8_t *buf = gf_malloc(GF_PROTO_MAX_FRAME);
    int n;
    do
        n = zmq_recv(s, buf, GF_PROTO_MAX_FRAME, 0);
    while (n == 0);   /* the empty delimiter of a client's envelope */
    if (n < 0)
        fail_msg("%s: no reply: %s", what, zmq_strerror(errno));
    char why[256];
    if (!strict_msgpack(buf, (size_t)n, why, sizeof(why)))
        fail_msg("%s: a strict decoder refuses the reply: %s", what, why);
    gf_msg m;
    char err[256];
    assert_int_equal(gf_proto_decode(buf, (size_t)n, &m, err, sizeof(err)), 0);
    gf_op op = m.op;
    gf_msg_clear(&m);
    free(buf);
    return op;
}

/* Bytes with a high bit set half of the time: lone continuations, lead
 * bytes without their tail, 0xc0, 0xf5..0xff, surrogates by chance. */
static void hostile_bytes(uint64_t *seed, uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = gf_splitmix64(seed);
        b[i] = (uint8_t)(r & 1 ? 0x80 | (r >> 8) : 0x20 + (r >> 8) % 0x5f);
    }
}

/* A job spec map whose mode is the given bytes. */
static void spec_with_mode(mp *m, const uint8_t *mode, size_t n)
{
    mp_str(m, "spec");
    mp_map(m, 2);
    mp_str(m, "argv");
    mp_arr(m, 1);
    mp_str(m, "true");
    mp_str(m, "mode");
    mp_strn(m, mode, n);
}

static void test_replies_strict_utf8(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    void *w = dealer(f, f->cfg->worker_endpoint);
    uint64_t seed = 3000;
    uint8_t junk[48];
    /* 'a' and 30 two-byte characters: a cut at 40 bytes halves one */
    char accents[64] = "a";
    for (int i = 0; i < 30; i++)
        strcat(accents, "\xc3\xa9");
    for (int round = 0; round < 600; round++) {
        size_t n = 1 + (size_t)(gf_splitmix64(&seed) % sizeof(junk));
        hostile_bytes(&seed, junk, n);
        mp m = { .n = 0 };
        switch (round % 6) {
        case 0:   /* unknown operation */
            mp_head(&m, (const char *)junk, 0, n);
            break;
        case 1:   /* unknown key */
            mp_head(&m, "queue", 1, 5);
            mp_strn(&m, junk, n);
            mp_byte(&m, 1);
            break;
        case 2:   /* unknown enum value */
            mp_head(&m, "submit", 1, 6);
            spec_with_mode(&m, junk, n);
            break;
        case 3:   /* a diarize path that is not absolute, quoted by the broker */
            mp_head(&m, "submit", 1, 6);
            mp_str(&m, "spec");
            mp_map(&m, 3);
            mp_str(&m, "kind");
            mp_str(&m, "diarize");
            mp_str(&m, "argv");
            mp_arr(&m, 1);
            mp_str(&m, "diarize");
            mp_str(&m, "diar");
            mp_map(&m, 2);
            mp_str(&m, "audio");
            mp_strn(&m, junk, n);
            mp_str(&m, "rttm");
            mp_str(&m, "/tmp/x.rttm");
            break;
        case 4:   /* a key that the old 40-byte cut split inside a character */
            mp_head(&m, "queue", 1, 5);
            mp_str(&m, accents);
            mp_byte(&m, 1);
            break;
        default:  /* random bytes after a valid header */
            mp_head(&m, "cancel", 1, 6);
            mp_raw(&m, junk, n);
            break;
        }
        char what[64];
        snprintf(what, sizeof(what), "client frame %d (kind %d)", round, round % 6);
        zmq_send(c, "", 0, ZMQ_SNDMORE);
        zmq_send(c, m.b, m.n, 0);
        assert_int_equal(recv_strict(c, what), GF_OP_ERROR);
        snprintf(what, sizeof(what), "worker frame %d (kind %d)", round, round % 6);
        zmq_send(w, m.b, m.n, 0);
        recv_strict(w, what);   /* an error, or "not registered" for a frame that decodes */
    }
}

/* Receive the next message on the fake worker that is not a heartbeat. */
static void worker_recv(void *w, gf_msg *m)
{
    char err[256];
    for (;;) {
        assert_int_equal(gf_wire_recv(w, GF_WIRE_DEALER, 0, NULL, m, err, sizeof(err)), 0);
        if (m->op != GF_OP_HEARTBEAT)
            return;
        gf_msg_clear(m);
    }
}

/* The reason of a job as `show` gives it, the reply checked strictly. */
static void show_strict(void *c, uint64_t id, const char *what)
{
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SHOW;
    q.id = id;
    assert_int_equal(gf_wire_send(c, NULL, true, &q), 0);
    assert_int_equal(recv_strict(c, what), GF_OP_JOBS);
}

/* A worker's messages (a card name, a waiting message, a result's reason)
 * reach clients escaped. */
static void test_worker_text_strict_utf8(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    void *w = dealer(f, f->cfg->worker_endpoint);
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_READY;
    m.device = 0;
    m.pid = (int32_t)getpid();
    m.card.index = 0;
    m.card.kind = GF_DEVICE_CPU;
    snprintf(m.card.name, sizeof(m.card.name), "cpu \xff\xc3");
    snprintf(m.card.uuid, sizeof(m.card.uuid), "cpu-\xed\xa0\x80");
    m.plan = gf_strdup("{\"routes\": \"\xc0\xaf\"}");
    m.supervision = gf_strdup("process group: \xff");
    assert_int_equal(gf_wire_send(w, NULL, false, &m), 0);
    gf_msg_clear(&m);
    /* a job for it */
    gf_msg q, r;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SUBMIT;
    gf_job_spec_init(&q.spec);
    q.spec.argv = gf_calloc(2, sizeof(char *));
    q.spec.argv[0] = gf_strdup("true");
    q.spec.argc = 1;
    q.spec.cwd = gf_strdup("/");
    call(c, &q, &r);
    gf_msg_clear(&q);
    assert_int_equal(r.op, GF_OP_IDS);
    uint64_t id = r.ids[0];
    gf_msg_clear(&r);
    worker_recv(w, &m);
    assert_int_equal(m.op, GF_OP_JOB);
    assert_int_equal(m.id, id);
    int32_t attempt = m.attempt;
    gf_msg_clear(&m);
    /* waiting, with foreign bytes (a holder's command line from /proc) */
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_PROGRESS;
    m.id = id;
    m.attempt = attempt;
    m.message = gf_strdup("waiting for card 0: held outside gpuflock by pid 1 (flock \xe9t\xe9)");
    assert_int_equal(gf_wire_send(w, NULL, false, &m), 0);
    gf_msg_clear(&m);
    show_strict(c, id, "show of a job waiting with a worker's message");
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WORKERS;
    assert_int_equal(gf_wire_send(c, NULL, true, &q), 0);
    assert_int_equal(recv_strict(c, "workers, with the card's name and plan"),
                     GF_OP_WORKERS_LIST);
    /* it never ran: the worker says why, quoting the command */
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_RESULT;
    m.id = id;
    m.attempt = attempt;
    m.exit_status = 127;
    m.message = gf_strdup("cannot run 'tr\xf5ue': No such file or directory");
    assert_int_equal(gf_wire_send(w, NULL, false, &m), 0);
    gf_msg_clear(&m);
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WAIT;
    q.ids = gf_calloc(1, sizeof(uint64_t));
    q.ids[0] = id;
    q.n_ids = 1;
    call(c, &q, &r);
    gf_msg_clear(&q);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_int_equal(r.jobs[0].state, GF_STATE_FAILED);
    assert_non_null(strstr(r.jobs[0].reason, "tr\\xF5ue"));
    gf_msg_clear(&r);
    show_strict(c, id, "show of a job failed with a worker's message");
}

/* Reasons an older broker recorded unescaped are escaped when read back:
 * from the store (job 1, ended) and from memory (job 2, loaded at start). */
static void test_old_reasons_strict_utf8(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    show_strict(c, 1, "show of an ended job of an older broker");
    show_strict(c, 2, "show of a pending job of an older broker");
    gf_msg q, r;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_QUEUE;
    q.all = true;
    assert_int_equal(gf_wire_send(c, NULL, true, &q), 0);
    assert_int_equal(recv_strict(c, "queue --all with an older broker's jobs"), GF_OP_JOBS);
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SHOW;
    q.id = 1;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_string_equal(r.jobs[0].reason, "cannot run 'tr\\xF5ue'");
    gf_msg_clear(&r);
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
    q.spec.cwd = gf_strdup("/");
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
    /* --yieldable from a client that skipped the CLI's checks: refused */
    q.spec.req = GF_REQ_ANY;
    const int32_t bad_sig[] = { 9, 19, -3, 65 }, bad_grace[] = { -1, 86401 };
    for (size_t i = 0; i < 6; i++) {
        q.spec.yield_sig = i < 4 ? bad_sig[i] : SIGUSR1;
        q.spec.yield_grace_s = i < 4 ? 30 : bad_grace[i - 4];
        call(c, &q, &r);
        assert_int_equal(r.op, GF_OP_ERROR);
        assert_non_null(strstr(r.message, "--yieldable"));
        gf_msg_clear(&r);
    }
    q.spec.yield_sig = 0;
    q.spec.yield_grace_s = 0;
    gf_msg_clear(&q);
    /* a drain's reason is bounded (and only root drains) */
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_DRAIN;
    q.device = 0;
    q.message = gf_calloc(4000, 1);
    memset(q.message, 'r', 3999);
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_ERROR);
    assert_non_null(strstr(r.message, getuid() == 0 ? "longer than" : "only root"));
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
}

/* A command job's spec names the absolute directory it runs in: a submit
 * without one, or with a relative one, is refused naming spec.cwd (it would
 * run in its worker's folder, for a local worker the broker's own). A
 * diarize job runs inside the worker on absolute paths and needs none. */
static void test_submit_needs_absolute_cwd(void **state)
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
    const struct {
        const char *cwd;
        const char *want;
    } bad[] = {
        { NULL, "submit: key 'spec.cwd': missing" },
        { "", "submit: key 'spec.cwd': '' is not an absolute path" },
        { "work/data", "submit: key 'spec.cwd': 'work/data' is not an absolute path" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        free(q.spec.cwd);
        q.spec.cwd = bad[i].cwd ? gf_strdup(bad[i].cwd) : NULL;
        q.array = i == 2 ? 4 : 0;   /* an array is refused as a whole */
        call(c, &q, &r);
        assert_int_equal(r.op, GF_OP_ERROR);
        assert_int_equal(r.code, GF_EINVAL);
        if (!strstr(r.message, bad[i].want))
            fail_msg("reply '%s' does not say '%s'", r.message, bad[i].want);
        gf_msg_clear(&r);
    }
    /* nothing came of them */
    gf_msg l;
    memset(&l, 0, sizeof(l));
    l.op = GF_OP_QUEUE;
    l.all = true;
    call(c, &l, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_int_equal(r.n_jobs, 0);
    gf_msg_clear(&r);
    /* an absolute one is taken, and comes back as it was sent */
    free(q.spec.cwd);
    q.spec.cwd = gf_strdup("/var/tmp");
    q.array = 0;
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_IDS);
    assert_int_equal(r.n_ids, 1);
    memset(&l, 0, sizeof(l));
    l.op = GF_OP_SHOW;
    l.id = r.ids[0];
    gf_msg_clear(&r);
    call(c, &l, &r);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_string_equal(r.jobs[0].spec.cwd, "/var/tmp");
    gf_msg_clear(&r);
    gf_msg_clear(&q);
    /* a diarize job without a cwd is taken */
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SUBMIT;
    gf_job_spec_init(&q.spec);
    q.spec.kind = GF_JOB_DIARIZE;
    q.spec.argv = gf_calloc(3, sizeof(char *));
    q.spec.argv[0] = gf_strdup("diarize");
    q.spec.argv[1] = gf_strdup("/data/a.wav");
    q.spec.argc = 2;
    q.spec.diar = gf_calloc(1, sizeof(gf_diar_spec));
    q.spec.diar->audio = gf_strdup("/data/a.wav");
    q.spec.diar->rttm = gf_strdup("/data/a.rttm");
    call(c, &q, &r);
    assert_int_equal(r.op, GF_OP_IDS);
    gf_msg_clear(&r);
    gf_msg_clear(&q);
}

/* One `logs` read of a job. */
static void read_log(void *c, uint64_t id, gf_stream stream, uint64_t offset, gf_msg *rep)
{
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_LOGS;
    q.id = id;
    q.stream = stream;
    q.offset = offset;
    call(c, &q, rep);
    assert_int_equal(rep->op, GF_OP_LOG);
}

/* eof: the job ended and the reply reaches the end of its file. A reader
 * of an ended job stops with the reply that brought the last bytes, not
 * one empty read later; a running job's reader never sees eof. */
static void test_logs_eof_on_last_read(void **state)
{
    fx *f = *state;
    void *c = dealer(f, f->cfg->client_endpoint);
    void *w = dealer(f, f->cfg->worker_endpoint);
    send_ready(w);
    gf_msg q, r, m;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SUBMIT;
    gf_job_spec_init(&q.spec);
    q.spec.argv = gf_calloc(2, sizeof(char *));
    q.spec.argv[0] = gf_strdup("true");
    q.spec.argc = 1;
    q.spec.cwd = gf_strdup("/");
    call(c, &q, &r);
    gf_msg_clear(&q);
    assert_int_equal(r.op, GF_OP_IDS);
    uint64_t id = r.ids[0];
    gf_msg_clear(&r);
    worker_recv(w, &m);
    assert_int_equal(m.op, GF_OP_JOB);
    assert_int_equal(m.id, id);
    int32_t attempt = m.attempt;
    /* the job's output: more than one reply's worth (LOG_CHUNK, 256 KiB),
     * bytes that tell their offset */
    size_t total = (300u << 10) + 7;
    FILE *out = fopen(m.out_path, "w");
    assert_non_null(out);
    for (size_t i = 0; i < total; i++)
        fputc('a' + (int)(i % 23), out);
    assert_int_equal(fclose(out), 0);
    gf_msg_clear(&m);

    /* running: at the end of the file, but no eof */
    read_log(c, id, GF_STREAM_OUT, total, &r);
    assert_int_equal(r.data_len, 0);
    assert_int_equal(r.offset, total);
    assert_false(r.eof);
    gf_msg_clear(&r);

    memset(&m, 0, sizeof(m));
    m.op = GF_OP_RESULT;
    m.id = id;
    m.attempt = attempt;
    assert_int_equal(gf_wire_send(w, NULL, false, &m), 0);
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WAIT;
    q.ids = gf_calloc(1, sizeof(uint64_t));
    q.ids[0] = id;
    q.n_ids = 1;
    call(c, &q, &r);
    gf_msg_clear(&q);
    assert_int_equal(r.op, GF_OP_JOBS);
    assert_int_equal(r.jobs[0].state, GF_STATE_DONE);
    gf_msg_clear(&r);

    /* ended: read to the end, eof on the reply with the last bytes */
    uint64_t at = 0;
    int replies = 0;
    for (bool eof = false; !eof; replies++) {
        assert_true(replies < 100);
        read_log(c, id, GF_STREAM_OUT, at, &r);
        assert_true(r.data_len > 0);
        assert_int_equal(r.offset, at + r.data_len);
        for (size_t i = 0; i < r.data_len; i++)
            if (r.data[i] != 'a' + (int)((at + i) % 23))
                fail_msg("byte %llu of the log is not the job's", (unsigned long long)(at + i));
        at = r.offset;
        eof = r.eof;
        assert_true(eof == (at == total));
        gf_msg_clear(&r);
    }
    assert_int_equal(at, total);
    assert_true(replies >= 2);
    /* a read past the end stays at eof, with nothing */
    read_log(c, id, GF_STREAM_OUT, total, &r);
    assert_int_equal(r.data_len, 0);
    assert_int_equal(r.offset, total);
    assert_true(r.eof);
    gf_msg_clear(&r);
    /* its stderr, never written (no file): eof at once */
    read_log(c, id, GF_STREAM_ERR, 0, &r);
    assert_int_equal(r.data_len, 0);
    assert_int_equal(r.offset, 0);
    assert_true(r.eof);
    gf_msg_clear(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hostile_frames, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_ops_on_worker_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replies_strict_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_worker_text_strict_utf8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_reasons_strict_utf8, setup_old_store, teardown),
        cmocka_unit_test_setup_teardown(test_submit_durable_then_wait_reason, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_needs_absolute_cwd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logs_eof_on_last_read, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
