/* test_wire.c — gf_msg over real ZeroMQ ipc:// sockets: the REQ-style
 * envelope both ways, the peer's credentials from the kernel (SO_PEERCRED
 * through libzmq's Peer-Address), per connection (a child of another uid,
 * where the test runs as root), none on tcp:// whatever the address looks
 * like, refusal of bodies that do not decode with the sender still
 * answerable, and ROUTER_MANDATORY to a vanished peer. */
#include "common/config.h"
#include "common/error.h"
#include "net/proto.h"
#include "common/util.h"
#include "net/wire.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

typedef struct {
    char dir[64];
    char ep[128];
    void *ctx, *router, *dealer;
} fx;

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-wire") != 0)
        return -1;
    snprintf(f->ep, sizeof(f->ep), "ipc://%s/s.sock", f->dir);
    f->ctx = zmq_ctx_new();
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    f->dealer = zmq_socket(f->ctx, ZMQ_DEALER);
    int one = 1, zero = 0, tmo = 5000;
    zmq_setsockopt(f->router, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
    zmq_setsockopt(f->router, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(f->dealer, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(f->router, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
    zmq_setsockopt(f->dealer, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
    if (zmq_bind(f->router, f->ep) || zmq_connect(f->dealer, f->ep))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->dealer)
        zmq_close(f->dealer);
    zmq_close(f->router);
    zmq_ctx_term(f->ctx);
    gf_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* The fixture's ROUTER (ipc://: with the peer's credentials). */
static int router_recv(fx *f, int flags, gf_peer *peer, gf_msg *m, char *err, size_t errlen)
{
    return gf_wire_recv(f->router, GF_WIRE_ROUTER_IPC, flags, peer, m, err, errlen);
}

static void test_request_reply_with_credentials(void **state)
{
    fx *f = *state;
    gf_msg q, got, rep;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_SHOW;
    q.id = 42;
    assert_int_equal(gf_wire_send(f->dealer, NULL, true, &q), 0);
    gf_peer peer;
    char err[256];
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_SHOW);
    assert_int_equal(got.id, 42);
    assert_true(peer.delim);
    assert_true(peer.id_len > 0);
    /* the kernel's word on who connected, not the message's */
    assert_true(peer.has_cred);
    assert_int_equal(peer.uid, getuid());
    assert_int_equal(peer.gid, getgid());
    assert_int_equal(peer.pid, getpid());
    gf_msg_clear(&got);

    assert_int_equal(gf_wire_send_error(f->router, &peer, GF_ENOENT, "no job %d", 42), 0);
    assert_int_equal(gf_wire_recv(f->dealer, GF_WIRE_DEALER, 0, NULL, &rep, err, sizeof(err)), 0);
    assert_int_equal(rep.op, GF_OP_ERROR);
    assert_int_equal(rep.code, GF_ENOENT);
    assert_string_equal(rep.message, "no job 42");
    gf_msg_clear(&rep);

    /* a worker-style DEALER sends without the delimiter */
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_wire_send(f->dealer, NULL, false, &q), 0);
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), 0);
    assert_false(peer.delim);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    gf_msg_clear(&got);
}

static void test_garbage_is_answerable(void **state)
{
    fx *f = *state;
    zmq_send(f->dealer, "", 0, ZMQ_SNDMORE);
    zmq_send(f->dealer, "\x93\x01\x02", 3, 0);
    gf_peer peer;
    gf_msg got;
    char err[256];
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "expected a map"));
    assert_true(peer.id_len > 0);
    assert_true(peer.has_cred);
    /* two body frames */
    zmq_send(f->dealer, "", 0, ZMQ_SNDMORE);
    zmq_send(f->dealer, "a", 1, ZMQ_SNDMORE);
    zmq_send(f->dealer, "b", 1, 0);
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "more than one body frame"));
    /* and the socket still works */
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WORKERS;
    assert_int_equal(gf_wire_send(f->dealer, NULL, true, &q), 0);
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_WORKERS);
    gf_msg_clear(&got);
}

static void test_vanished_peer(void **state)
{
    fx *f = *state;
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_QUEUE;
    assert_int_equal(gf_wire_send(f->dealer, NULL, true, &q), 0);
    gf_peer peer;
    gf_msg got;
    char err[256];
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), 0);
    gf_msg_clear(&got);
    zmq_close(f->dealer);
    f->dealer = NULL;
    usleep(100000);
    q.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_wire_send(f->router, &peer, false, &q), GF_ENOENT);
    assert_int_equal(router_recv(f, ZMQ_DONTWAIT, &peer, &got, err, sizeof(err)), GF_ETIMEDOUT);
    assert_string_equal(gf_config_ipc_path("ipc:///run/x.sock"), "/run/x.sock");
    assert_null(gf_config_ipc_path("tcp://1.2.3.4:5"));
}

/* A connection of another process, of another user where we are root:
 * the ROUTER names that process and user, not ours. */
static void test_credentials_per_connection(void **state)
{
    fx *f = *state;
    uid_t uid = getuid() == 0 ? 65534 : getuid();
    gid_t gid = getuid() == 0 ? 65534 : getgid();
    assert_int_equal(chmod(f->dir, 0711), 0);
    assert_int_equal(chmod(f->ep + 6, 0777), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (getuid() == 0 && (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0))
            _exit(2);
        void *ctx = zmq_ctx_new(), *d = zmq_socket(ctx, ZMQ_DEALER);
        int zero = 0, limit_ms = 60000;
        zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof(zero));
        /* a parent that failed never tells: the child does not wait for ever */
        zmq_setsockopt(d, ZMQ_RCVTIMEO, &limit_ms, sizeof(limit_ms));
        gf_msg q;
        memset(&q, 0, sizeof(q));
        q.op = GF_OP_QUEUE;
        if (zmq_connect(d, f->ep) != 0 || gf_wire_send(d, NULL, true, &q) != 0)
            _exit(3);
        char err[64];
        gf_msg rep;
        /* until told */
        int rc = gf_wire_recv(d, GF_WIRE_DEALER, 0, NULL, &rep, err, sizeof(err));
        zmq_close(d);
        zmq_ctx_term(ctx);
        _exit(rc == 0 ? 0 : 4);
    }
    gf_peer peer;
    gf_msg got;
    char err[256];
    assert_int_equal(router_recv(f, 0, &peer, &got, err, sizeof(err)), 0);
    assert_true(peer.has_cred);
    assert_int_equal(peer.uid, uid);
    assert_int_equal(peer.gid, gid);
    assert_int_equal(peer.pid, pid);
    gf_msg_clear(&got);
    /* and this process's own connection is still this process */
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WORKERS;
    assert_int_equal(gf_wire_send(f->dealer, NULL, true, &q), 0);
    gf_peer mine;
    assert_int_equal(router_recv(f, 0, &mine, &got, err, sizeof(err)), 0);
    assert_int_equal(mine.pid, getpid());
    assert_int_equal(mine.uid, getuid());
    gf_msg_clear(&got);
    q.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_wire_send(f->router, &peer, false, &q), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Only the ipc shape is read, and only where the caller says the socket is
 * on ipc://: on tcp:// an IPv6 address of the form ...:0:5:1 would read as
 * uid 0. */
static void test_credentials_shape(void **state)
{
    (void)state;
    gf_peer p;
    memset(&p, 0, sizeof(p));
    assert_true(gf_wire_peer_cred("localhost:1000:100:4242", &p));
    assert_true(p.has_cred);
    assert_int_equal(p.uid, 1000);
    assert_int_equal(p.gid, 100);
    assert_int_equal(p.pid, 4242);
    assert_true(gf_wire_peer_cred("localhost:4294967295:0:1", &p));
    assert_int_equal(p.uid, 4294967295u);
    const char *refused[] = {
        "2001:db8:1:1:1:0:5:1",    /* IPv6: reads as uid 0 if parsed from the end */
        "fe80::0:5:1", "::0:0:1", "127.0.0.1", "", ":0:0:1", "localhost:0:0",
        "localhost:0:0:1:2", "localhost:x:0:1", "localhost:0:0:", "localhost:-1:0:1",
        "localhost:4294967296:0:1", "localhost:0:0:2147483648", "localhost: 0:0:1",
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        p.has_cred = true;
        if (gf_wire_peer_cred(refused[i], &p))
            fail_msg("'%s' was read as credentials", refused[i]);
        assert_false(p.has_cred);
    }
    assert_false(gf_wire_peer_cred(NULL, &p));

    /* a tcp:// ROUTER: a peer there has no credentials */
    void *ctx = zmq_ctx_new(), *r = zmq_socket(ctx, ZMQ_ROUTER), *d = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0, tmo = 5000;
    zmq_setsockopt(r, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(d, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(r, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
    assert_int_equal(zmq_bind(r, "tcp://127.0.0.1:*"), 0);
    char ep[64];
    size_t len = sizeof(ep);
    assert_int_equal(zmq_getsockopt(r, ZMQ_LAST_ENDPOINT, ep, &len), 0);
    assert_int_equal(zmq_connect(d, ep), 0);
    gf_msg q, got;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_QUEUE;
    assert_int_equal(gf_wire_send(d, NULL, true, &q), 0);
    char err[64];
    assert_int_equal(gf_wire_recv(r, GF_WIRE_ROUTER, 0, &p, &got, err, sizeof(err)), 0);
    assert_false(p.has_cred);
    gf_msg_clear(&got);
    zmq_close(d);
    zmq_close(r);
    zmq_ctx_term(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_request_reply_with_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_is_answerable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vanished_peer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_credentials_per_connection, setup, teardown),
        cmocka_unit_test(test_credentials_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
