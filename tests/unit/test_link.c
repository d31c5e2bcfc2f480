/* test_link.c — the worker's link to the broker (net/link.c) on a real
 * ipc:// socket, against the broker's own ROUTER (net/router.c) in this
 * thread: messages both ways without a delimiter (a worker's envelope), a
 * broker that is not there yet, one that goes away (the link says it is
 * down, sends fail, a reconnect finds the new one), and a broker that
 * sends bytes that are not a message (the link drops the connection). */
#include "net/router.h"
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "net/zmtp.h"
#include "tests/unit/tmpdir.h"
#include "net/link.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

typedef struct {
    char dir[64];
    char path[128];
    gf_config *cfg;
    void *ctx;
} fx;

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-link") != 0)
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/run/worker.sock", f->dir);
    char *yaml = gf_strfmt("run_dir: %s/run\nstate_dir: %s/state\n"
                           "devices:\n  - {index: 0, kind: cpu, lock: %s/gpu0.lock}\n",
                           f->dir, f->dir, f->dir);
    int rc = gf_config_parse("test.yaml", yaml, strlen(yaml), &f->cfg);
    free(yaml);
    if (rc || strcmp(gf_config_ipc_path(f->cfg->worker_endpoint), f->path) != 0)
        return -1;
    gf_log_init("test_link", GF_LOG_OFF);
    char *run = gf_strfmt("%s/run", f->dir);
    gf_mkdir_p(run, 0755, NULL);
    free(run);
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

/* The broker's next message (waiting up to 3 s). */
static int broker_next(gf_router *r, gf_peer *p, gf_msg *m)
{
    char err[256];
    for (int i = 0; i < 300; i++) {
        zmq_pollitem_t it;
        if (!gf_router_pollitem(r, &it))
            zmq_poll(&it, 1, 10);
        int rc = gf_router_recv(r, p, m, err, sizeof(err));
        if (rc != GF_ETIMEDOUT)
            return rc;
    }
    return GF_ETIMEDOUT;
}

/* The link's next message (waiting up to 3 s). */
static int link_next(gf_link *l, gf_msg *m)
{
    char err[256];
    for (int i = 0; i < 300; i++) {
        zmq_pollitem_t it;
        if (!gf_link_pollitem(l, &it))
            return GF_EIO;
        zmq_poll(&it, 1, 10);
        int rc = gf_link_recv(l, m, err, sizeof(err));
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

/* The broker's side runs in a child (connecting waits for its greeting),
 * the link in this process, as in a worker. */
static void test_round_trip_and_broker_restart(void **state)
{
    fx *f = *state;
    /* no broker yet: the link exists, down; sends fail without waiting */
    gf_link *l = gf_link_new(f->cfg, f->ctx);
    assert_non_null(l);
    assert_false(gf_link_up(l));
    gf_msg m;
    beat(&m);
    assert_int_equal(gf_link_send(l, &m), GF_EIO);
    char err[256];
    assert_int_equal(gf_link_recv(l, &m, err, sizeof(err)), GF_EIO);

    /* the broker comes; connecting needs it to answer, so it answers from
     * a child while this thread connects */
    gf_router *r = gf_router_listen(f->path, 1 << 20);
    assert_non_null(r);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the broker: one heartbeat in, one heartbeat and a job out */
        gf_peer p;
        gf_msg in;
        if (broker_next(r, &p, &in) != 0 || in.op != GF_OP_HEARTBEAT || p.delim)
            _exit(1);
        gf_msg out;
        beat(&out);
        if (gf_router_send(r, &p, &out) != 0)
            _exit(2);
        memset(&out, 0, sizeof(out));
        out.op = GF_OP_KILL;
        out.id = 42;
        out.attempt = 1;
        if (gf_router_send(r, &p, &out) != 0)
            _exit(3);
        _exit(0);
    }
    assert_int_equal(gf_link_reconnect(l), 0);
    assert_true(gf_link_up(l));
    beat(&m);
    assert_int_equal(gf_link_send(l, &m), 0);
    gf_msg got;
    assert_int_equal(link_next(l, &got), 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    gf_msg_clear(&got);
    assert_int_equal(link_next(l, &got), 0);       /* two in a row, both taken */
    assert_int_equal(got.op, GF_OP_KILL);
    assert_int_equal(got.id, 42);
    gf_msg_clear(&got);

    /* the broker goes away: the link says so and is down */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    gf_router_destroy(&r);
    assert_int_equal(link_next(l, &got), GF_EIO);
    assert_false(gf_link_up(l));
    assert_int_equal(gf_link_reconnect(l), GF_EIO);       /* nobody there */

    /* a new broker: a reconnect finds it */
    r = gf_router_listen(f->path, 1 << 20);
    assert_non_null(r);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gf_peer p;
        gf_msg in;
        _exit(broker_next(r, &p, &in) == 0 && in.op == GF_OP_HEARTBEAT ? 0 : 1);
    }
    assert_int_equal(gf_link_reconnect(l), 0);
    beat(&m);
    assert_int_equal(gf_link_send(l, &m), 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    gf_router_destroy(&r);
    gf_link_destroy(&l);
    assert_null(l);
    gf_link_destroy(&l);
}

/* A "broker" that greets properly and then sends a frame that is not a
 * message: the link refuses it and is down afterwards (a reconnect and a
 * READY recover from that, as from any broken stream). */
static void test_garbage_from_broker(void **state)
{
    fx *f = *state;
    int ls = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    assert_true(strlen(f->path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, f->path, strlen(f->path) + 1);
    assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(ls, 4), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int c = accept(ls, NULL, NULL);
        uint8_t hello[GF_ZMTP_HELLO_MAX], junk[2 + 40] = { 0, 40 };
        size_t hl = gf_zmtp_hello(hello, "ROUTER", 1);
        for (size_t i = 2; i < sizeof(junk); i++)
            junk[i] = (uint8_t)(i * 59 + 3);
        if (c < 0 || write(c, hello, hl) != (ssize_t)hl ||
            write(c, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
            _exit(1);
        uint8_t in[4096];
        while (read(c, in, sizeof(in)) > 0)      /* until the link hangs up */
            ;
        _exit(0);
    }
    close(ls);
    gf_link *l = gf_link_new(f->cfg, f->ctx);
    assert_non_null(l);
    assert_true(gf_link_up(l));
    gf_msg got;
    assert_int_equal(link_next(l, &got), GF_EPROTO);
    assert_false(gf_link_up(l));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);   /* it saw the link hang up */
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    gf_link_destroy(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_and_broker_restart, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_from_broker, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
