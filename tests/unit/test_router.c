/* test_router.c — the broker's own ZMTP ROUTER (net/router.c) on a real
 * ipc:// socket, in this thread: libzmq DEALERs (REQ-style and worker-style
 * envelopes, the caller's credentials, a reply of megabytes that the socket
 * takes in pieces), the CLI's own client in a child process, a send to a
 * peer that hung up, and hostile peers on raw sockets (not ZMTP, ZMTP 2,
 * another mechanism, a PUB socket, a frame over the limit, two bodies in
 * one message, a PING, one that never greets) while a well-behaved peer
 * keeps being served. */
#include "net/router.h"
#include "common/error.h"
#include "common/log.h"
#include "net/proto.h"
#include "common/util.h"
#include "net/zmtp.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_FRAME 4096

typedef struct {
    char dir[64];
    char path[128];
    char ep[160];
    void *ctx;
    gf_router *r;
} fx;

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-router") != 0)
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/r.sock", f->dir);
    snprintf(f->ep, sizeof(f->ep), "ipc://%s", f->path);
    gf_log_init("test_router", GF_LOG_OFF);
    f->r = gf_router_listen(f->path, MAX_FRAME);
    if (!f->r)
        return -1;
    f->ctx = zmq_ctx_new();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    gf_router_destroy(&f->r);
    assert_null(f->r);
    gf_router_destroy(&f->r);           /* safe twice */
    assert_int_equal(access(f->path, F_OK), -1);   /* the socket file went with it */
    zmq_ctx_term(f->ctx);
    gf_test_rmtree(f->dir);
    free(f);
    return 0;
}

static void *dealer(fx *f)
{
    void *s = zmq_socket(f->ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    assert_int_equal(zmq_connect(s, f->ep), 0);
    return s;
}

/* Wait (up to 3 s) for the router's next message: gf_router_recv's code. */
static int next(fx *f, gf_peer *peer, gf_msg *m, char *err, size_t errlen)
{
    for (int i = 0; i < 300; i++) {
        zmq_pollitem_t it;
        bool held = gf_router_pollitem(f->r, &it);
        if (!held)
            zmq_poll(&it, 1, 10);
        int rc = gf_router_recv(f->r, peer, m, err, errlen);
        if (rc != GF_ETIMEDOUT)
            return rc;
    }
    return GF_ETIMEDOUT;
}

/* Let the router work for ms milliseconds (accepts, hang-ups, output). */
static void spin(fx *f, int ms)
{
    for (int i = 0; i < ms / 5; i++) {
        zmq_pollitem_t it;
        gf_router_pollitem(f->r, &it);
        zmq_poll(&it, 1, 5);
        gf_peer p;
        gf_msg m;
        char err[64];
        assert_int_equal(gf_router_recv(f->r, &p, &m, err, sizeof(err)), GF_ETIMEDOUT);
    }
}

/* Receive one message on a DEALER while the router keeps writing. */
static void dealer_recv(fx *f, void *s, gf_msg *m)
{
    for (int i = 0; i < 600; i++) {
        zmq_pollitem_t its[2] = { { s, 0, ZMQ_POLLIN, 0 } };
        gf_router_pollitem(f->r, &its[1]);
        zmq_poll(its, 2, 10);
        if (its[0].revents & ZMQ_POLLIN) {
            char err[256];
            assert_int_equal(gf_wire_recv(s, GF_WIRE_DEALER, 0, NULL, m, err, sizeof(err)), 0);
            return;
        }
        gf_peer p;
        gf_msg none;
        char err[64];
        assert_int_equal(gf_router_recv(f->r, &p, &none, err, sizeof(err)), GF_ETIMEDOUT);
    }
    fail_msg("no reply reached the DEALER");
}

static void queue_req(gf_msg *m, bool all)
{
    memset(m, 0, sizeof(*m));
    m->op = GF_OP_QUEUE;
    m->all = all;
}

static void test_dealers(void **state)
{
    fx *f = *state;
    void *client = dealer(f), *worker = dealer(f);
    gf_msg req, got, rep;
    queue_req(&req, true);
    assert_int_equal(gf_wire_send(client, NULL, true, &req), 0);     /* [empty][body] */
    gf_peer pc, pw;
    char err[256];
    assert_int_equal(next(f, &pc, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_QUEUE);
    assert_true(got.all);
    assert_true(pc.delim);
    assert_true(pc.has_cred);       /* the kernel's word, not the message's */
    assert_int_equal(pc.uid, getuid());
    assert_int_equal(pc.gid, getgid());
    assert_int_equal(pc.pid, getpid());
    gf_msg_clear(&got);

    memset(&req, 0, sizeof(req));
    req.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_wire_send(worker, NULL, false, &req), 0);   /* [body] */
    assert_int_equal(next(f, &pw, &got, err, sizeof(err)), 0);
    assert_int_equal(got.op, GF_OP_HEARTBEAT);
    assert_false(pw.delim);
    assert_true(pw.id_len > 0);
    assert_false(pw.id_len == pc.id_len && memcmp(pw.id, pc.id, pc.id_len) == 0);
    gf_msg_clear(&got);

    /* replies carry each peer's envelope back; a big one goes in pieces */
    memset(&rep, 0, sizeof(rep));
    rep.op = GF_OP_LOG;
    rep.data_len = 3u << 20;
    rep.data = gf_malloc(rep.data_len);
    for (size_t i = 0; i < rep.data_len; i++)
        rep.data[i] = (uint8_t)(i * 13 + 5);
    gf_router *r = f->r;
    assert_int_equal(gf_router_send(r, &pc, &rep), 0);
    gf_msg back;
    dealer_recv(f, client, &back);
    assert_int_equal(back.op, GF_OP_LOG);
    assert_int_equal(back.data_len, rep.data_len);
    assert_memory_equal(back.data, rep.data, rep.data_len);
    gf_msg_clear(&back);
    gf_msg_clear(&rep);
    rep.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_router_send(r, &pw, &rep), 0);
    dealer_recv(f, worker, &back);
    assert_int_equal(back.op, GF_OP_HEARTBEAT);
    gf_msg_clear(&back);

    /* the client hangs up: a reply to it is an error, not a silent drop */
    zmq_close(client);
    spin(f, 200);
    assert_int_equal(gf_router_send(r, &pc, &rep), GF_ENOENT);
    gf_peer made_up = pw;
    made_up.id[4] ^= 0x55;
    assert_int_equal(gf_router_send(r, &made_up, &rep), GF_ENOENT);
    /* and the other peer is still served */
    assert_int_equal(gf_router_send(r, &pw, &rep), 0);
    dealer_recv(f, worker, &back);
    gf_msg_clear(&back);
    zmq_close(worker);
}

/* The light client (net/zmtp.c), in a child: a request, a reply; with
 * `ahead`, the request right behind our handshake, as the CLI sends it. */
static void light_client(void **state, bool ahead)
{
    fx *f = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256];
        gf_zmtp *z = ahead ? gf_zmtp_connect_ahead(f->path, 3000, err, sizeof(err))
                           : gf_zmtp_connect(f->path, 3000, err, sizeof(err));
        if (!z)
            _exit(2);
        gf_msg req;
        queue_req(&req, false);
        uint8_t *buf, *body;
        size_t len, blen, before;
        if (gf_proto_encode(&req, &buf, &len) != 0)
            _exit(3);
        const void *frames[2] = { "", buf };
        size_t lens[2] = { 0, len };
        if (gf_zmtp_send(z, frames, lens, 2, err, sizeof(err)) != 0 ||
            gf_zmtp_recv(z, 3000, 1 << 20, &body, &blen, &before, err, sizeof(err)) != 0)
            _exit(4);
        gf_msg rep;
        int ok = before == 1 && gf_proto_decode(body, blen, &rep, err, sizeof(err)) == 0 &&
                 rep.op == GF_OP_WORKERS_LIST;
        _exit(ok ? 0 : 5);
    }
    gf_peer p;
    gf_msg m;
    char err[256];
    assert_int_equal(next(f, &p, &m, err, sizeof(err)), 0);
    assert_int_equal(m.op, GF_OP_QUEUE);
    assert_true(p.delim);
    assert_int_equal(p.pid, pid);
    gf_msg_clear(&m);
    m.op = GF_OP_WORKERS_LIST;
    assert_int_equal(gf_router_send(f->r, &p, &m), 0);
    int status;
    while (waitpid(pid, &status, WNOHANG) == 0)
        spin(f, 10);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_light_client(void **state)
{
    light_client(state, false);
}

static void test_light_client_ahead(void **state)
{
    light_client(state, true);
}

/* ---- hostile peers on raw sockets */

static int raw_connect(fx *f)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    assert_true(strlen(f->path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, f->path, strlen(f->path) + 1);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void raw_write(int fd, const void *b, size_t n)
{
    assert_int_equal(write(fd, b, n), (ssize_t)n);
}

/* A peer that did the handshake as a `type` socket. */
static int raw_peer(fx *f, const char *type)
{
    int fd = raw_connect(f);
    uint8_t hello[GF_ZMTP_HELLO_MAX];
    raw_write(fd, hello, gf_zmtp_hello(hello, type, 0));
    return fd;
}

static void raw_frame(int fd, uint8_t flags, const void *b, size_t n)
{
    uint8_t hdr[9];
    raw_write(fd, hdr, gf_zmtp_frame_header(hdr, flags, n));
    if (n)
        raw_write(fd, b, n);
}

/* Read what the router says to fd until it hangs up (within 3 s): the
 * bytes into buf (up to cap); returns how many, or -1 if it never hung up. */
static long until_dropped(fx *f, int fd, uint8_t *buf, size_t cap)
{
    size_t got = 0;
    for (int i = 0; i < 300; i++) {
        spin(f, 5);
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 5) <= 0)
            continue;
        uint8_t tmp[4096];
        ssize_t r = read(fd, tmp, sizeof(tmp));
        if (r <= 0)
            return (long)got;
        size_t c = (size_t)r < cap - got ? (size_t)r : cap - got;
        memcpy(buf + got, tmp, c);
        got += c;
    }
    return -1;
}

static bool contains(const uint8_t *b, size_t n, const char *s)
{
    size_t l = strlen(s);
    for (size_t i = 0; i + l <= n; i++)
        if (memcmp(b + i, s, l) == 0)
            return true;
    return false;
}

static void test_hostile_peers(void **state)
{
    fx *f = *state;
    uint8_t buf[8192];
    void *good = dealer(f);

    int fd = raw_connect(f);                           /* not ZMTP at all */
    raw_write(fd, "GET / HTTP/1.1\r\n\r\n", 18);
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);

    fd = raw_connect(f);                               /* ZMTP 2 */
    uint8_t old[64] = { 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 0 };
    raw_write(fd, old, sizeof(old));
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);

    fd = raw_connect(f);                               /* another mechanism */
    uint8_t plain[64] = { 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1, 'P', 'L', 'A', 'I', 'N' };
    raw_write(fd, plain, sizeof(plain));
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);

    fd = raw_peer(f, "PUB");                           /* not a DEALER or REQ */
    long n = until_dropped(f, fd, buf, sizeof(buf));
    assert_true(n > 0);
    assert_true(contains(buf, (size_t)n, "invalid socket type"));
    close(fd);

    fd = raw_peer(f, "DEALER");                        /* a frame over the limit */
    uint8_t *big = gf_calloc(1, MAX_FRAME + 1);
    raw_frame(fd, 0, big, MAX_FRAME + 1);
    free(big);
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);

    /* two bodies in one message: refused with the peer named, so it can be
     * told; then a PING is answered with its context; then two requests in
     * one write both arrive, the second held for the next turn */
    fd = raw_peer(f, "DEALER");
    gf_msg req;
    queue_req(&req, false);
    uint8_t *enc;
    size_t len;
    assert_int_equal(gf_proto_encode(&req, &enc, &len), 0);
    raw_frame(fd, GF_ZMTP_MORE, "", 0);
    raw_frame(fd, GF_ZMTP_MORE, enc, len);
    raw_frame(fd, 0, enc, len);
    gf_peer p;
    gf_msg m;
    char err[256];
    assert_int_equal(next(f, &p, &m, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "more than one body frame"));
    assert_true(p.id_len > 0 && p.delim);
    raw_frame(fd, GF_ZMTP_COMMAND, "\4PING\0\12abc", 10);
    uint8_t two[2 * (2 + 2 + 255)];
    size_t tl = 0;
    for (int i = 0; i < 2; i++) {
        two[tl++] = GF_ZMTP_MORE, two[tl++] = 0;
        tl += gf_zmtp_frame_header(two + tl, 0, len);
        memcpy(two + tl, enc, len), tl += len;
    }
    raw_write(fd, two, tl);
    free(enc);
    assert_int_equal(next(f, &p, &m, err, sizeof(err)), 0);
    gf_msg_clear(&m);
    zmq_pollitem_t it;
    assert_true(gf_router_pollitem(f->r, &it));          /* the second is held */
    assert_int_equal(gf_router_recv(f->r, &p, &m, err, sizeof(err)), 0);
    assert_int_equal(m.op, GF_OP_QUEUE);
    gf_msg_clear(&m);
    shutdown(fd, SHUT_WR);
    n = until_dropped(f, fd, buf, sizeof(buf));
    assert_true(n > 0);
    assert_true(contains(buf, (size_t)n, "\4PONGabc"));
    close(fd);

    /* random bytes as a body: a decode error the caller can answer */
    fd = raw_peer(f, "REQ");
    uint8_t junk[200];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (uint8_t)(i * 97 + 31);
    raw_frame(fd, GF_ZMTP_MORE, "", 0);
    raw_frame(fd, 0, junk, sizeof(junk));
    assert_int_equal(next(f, &p, &m, err, sizeof(err)), GF_EPROTO);
    gf_msg e;
    memset(&e, 0, sizeof(e));
    e.op = GF_OP_ERROR;
    e.code = GF_EPROTO;
    e.message = gf_strdup("bad");
    assert_int_equal(gf_router_send(f->r, &p, &e), 0);
    gf_msg_clear(&e);
    close(fd);

    /* through all of it, a well-behaved peer is served */
    queue_req(&req, true);
    assert_int_equal(gf_wire_send(good, NULL, true, &req), 0);
    assert_int_equal(next(f, &p, &m, err, sizeof(err)), 0);
    assert_int_equal(m.op, GF_OP_QUEUE);
    gf_msg_clear(&m);
    m.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_router_send(f->r, &p, &m), 0);
    gf_msg back;
    dealer_recv(f, good, &back);
    assert_int_equal(back.op, GF_OP_HEARTBEAT);
    gf_msg_clear(&back);
    zmq_close(good);
}

/* A peer that connects and never greets is dropped once the handshake
 * time is over; one that greeted in time stays. */
static void test_late_handshake(void **state)
{
    fx *f = *state;
    gf_router_set_handshake_ms(f->r, 200);
    int mute = raw_connect(f);
    int fine = raw_peer(f, "DEALER");
    uint8_t buf[512];
    assert_true(until_dropped(f, mute, buf, sizeof(buf)) >= 0);
    close(mute);
    spin(f, 300);
    struct pollfd p = { fine, POLLIN, 0 };
    assert_true(poll(&p, 1, 0) == 1);                    /* the router's greeting, */
    assert_true(read(fine, buf, sizeof(buf)) > 0);       /* not a hang-up */
    assert_int_equal(poll(&p, 1, 0), 0);
    close(fine);
}

/* Out of descriptors: connections wait in the backlog, the router does
 * not spin inside a receive, and takes them once descriptors are back. */
static void test_out_of_descriptors(void **state)
{
    fx *f = *state;
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = raw_peer(f, "DEALER");
    struct rlimit old, tight;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int probe = dup(0);                  /* the lowest free descriptor */
    close(probe);
    tight = old;
    tight.rlim_cur = (rlim_t)probe;      /* no new descriptor at all */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &tight), 0);
    gf_peer p;
    gf_msg m;
    char err[64];
    assert_int_equal(gf_router_recv(f->r, &p, &m, err, sizeof(err)), GF_ETIMEDOUT);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    /* back to normal: each waiting peer is greeted */
    for (int i = 0; i < 4; i++) {
        uint8_t buf[256];
        struct pollfd pf = { fds[i], POLLIN, 0 };
        int ok = 0;
        for (int k = 0; k < 200 && !ok; k++) {
            spin(f, 5);
            ok = poll(&pf, 1, 5) == 1 && read(fds[i], buf, sizeof(buf)) > 0;
        }
        assert_true(ok);
        close(fds[i]);
    }
}

static void test_bind_refused(void **state)
{
    fx *f = *state;
    /* the path is taken (by the fixture's router) */
    assert_null(gf_router_listen(f->path, MAX_FRAME));
    char longp[200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = 0;
    assert_null(gf_router_listen(longp, MAX_FRAME));
    /* the failed attempt did not remove the working router's socket */
    assert_int_equal(access(f->path, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dealers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_light_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_light_client_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_late_handshake, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_descriptors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
