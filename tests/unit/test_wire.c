/* test_wire.c — gf_msg over real ZeroMQ ipc:// sockets: the REQ-style
 * envelope both ways, the peer's credentials from the kernel (SO_PEERCRED
 * through libzmq's Peer-Address), refusal of bodies that do not decode
 * with the sender still answerable, and ROUTER_MANDATORY to a vanished
 * peer. */
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
    assert_int_equal(gf_wire_recv(f->router, true, 0, &peer, &got, err, sizeof(err)), 0);
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
    assert_int_equal(gf_wire_recv(f->dealer, false, 0, NULL, &rep, err, sizeof(err)), 0);
    assert_int_equal(rep.op, GF_OP_ERROR);
    assert_int_equal(rep.code, GF_ENOENT);
    assert_string_equal(rep.message, "no job 42");
    gf_msg_clear(&rep);

    /* a worker-style DEALER sends without the delimiter */
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_wire_send(f->dealer, NULL, false, &q), 0);
    assert_int_equal(gf_wire_recv(f->router, true, 0, &peer, &got, err, sizeof(err)), 0);
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
    assert_int_equal(gf_wire_recv(f->router, true, 0, &peer, &got, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "expected a map"));
    assert_true(peer.id_len > 0);
    assert_true(peer.has_cred);
    /* two body frames */
    zmq_send(f->dealer, "", 0, ZMQ_SNDMORE);
    zmq_send(f->dealer, "a", 1, ZMQ_SNDMORE);
    zmq_send(f->dealer, "b", 1, 0);
    assert_int_equal(gf_wire_recv(f->router, true, 0, &peer, &got, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "more than one body frame"));
    /* and the socket still works */
    gf_msg q;
    memset(&q, 0, sizeof(q));
    q.op = GF_OP_WORKERS;
    assert_int_equal(gf_wire_send(f->dealer, NULL, true, &q), 0);
    assert_int_equal(gf_wire_recv(f->router, true, 0, &peer, &got, err, sizeof(err)), 0);
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
    assert_int_equal(gf_wire_recv(f->router, true, 0, &peer, &got, err, sizeof(err)), 0);
    gf_msg_clear(&got);
    zmq_close(f->dealer);
    f->dealer = NULL;
    usleep(100000);
    q.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_wire_send(f->router, &peer, false, &q), GF_ENOENT);
    assert_int_equal(gf_wire_recv(f->router, true, ZMQ_DONTWAIT, &peer, &got, err, sizeof(err)),
                     GF_ETIMEDOUT);
    assert_string_equal(gf_config_ipc_path("ipc:///run/x.sock"), "/run/x.sock");
    assert_null(gf_config_ipc_path("tcp://1.2.3.4:5"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_request_reply_with_credentials, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage_is_answerable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vanished_peer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
