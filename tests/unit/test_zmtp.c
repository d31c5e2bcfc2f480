/* test_zmtp.c — our ZMTP DEALER client against a real libzmq ROUTER on an
 * ipc:// socket: the REQ-style envelope both ways, the caller's credentials
 * seen by the ROUTER (SO_PEERCRED), short and long frames, PINGs answered
 * with their context (to a hand-written peer), timeouts, a peer that goes away, an oversized frame,
 * and peers that are not ZMTP at all. */
#include "common/error.h"
#include "common/util.h"
#include "net/zmtp.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
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
    void *ctx, *router;
} fx;

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-zmtp") != 0)
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
    f->ctx = zmq_ctx_new();
    f->router = zmq_socket(f->ctx, ZMQ_ROUTER);
    int one = 1, zero = 0, tmo = 5000;
    zmq_setsockopt(f->router, ZMQ_ROUTER_MANDATORY, &one, sizeof(one));
    zmq_setsockopt(f->router, ZMQ_LINGER, &zero, sizeof(zero));
    zmq_setsockopt(f->router, ZMQ_RCVTIMEO, &tmo, sizeof(tmo));
    *state = f;
    return 0;
}

static void bind_router(fx *f)
{
    char ep[160];
    snprintf(ep, sizeof(ep), "ipc://%s", f->path);
    assert_int_equal(zmq_bind(f->router, ep), 0);
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->router)
        zmq_close(f->router);
    zmq_ctx_term(f->ctx);
    gf_test_rmtree(f->dir);
    free(f);
    return 0;
}

/* One frame from the router into buf; returns its size and *more. */
static int router_frame(fx *f, void *buf, size_t cap, int *more)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    int n = zmq_msg_recv(&m, f->router, 0);
    assert_true(n >= 0);
    assert_true((size_t)n <= cap);
    memcpy(buf, zmq_msg_data(&m), (size_t)n);
    *more = zmq_msg_more(&m);
    const char *pa = zmq_msg_gets(&m, "Peer-Address");
    if (pa && n > 0 && !*more) {
        /* ":uid:gid:pid" from the kernel, the caller's own */
        char want[64];
        snprintf(want, sizeof(want), ":%u:%u:%d", (unsigned)getuid(), (unsigned)getgid(),
                 (int)getpid());
        assert_non_null(strstr(pa, want));
    }
    zmq_msg_close(&m);
    return n;
}

static void test_round_trip(void **state)
{
    fx *f = *state;
    bind_router(f);
    char err[256];
    gf_zmtp *z = gf_zmtp_connect(f->path, 2000, err, sizeof(err));
    assert_non_null(z);
    const void *frames[2] = { "", "hello broker" };
    size_t lens[2] = { 0, 12 };
    assert_int_equal(gf_zmtp_send(z, frames, lens, 2, err, sizeof(err)), 0);

    uint8_t id[256], buf[64];
    int more;
    int idn = router_frame(f, id, sizeof(id), &more);
    assert_true(idn > 0 && more);
    assert_int_equal(router_frame(f, buf, sizeof(buf), &more), 0);
    assert_true(more);
    assert_int_equal(router_frame(f, buf, sizeof(buf), &more), 12);
    assert_false(more);
    assert_memory_equal(buf, "hello broker", 12);

    /* replies: a short frame, then a long one (over 255 bytes: 8-byte size) */
    size_t big = 3u << 20;
    uint8_t *payload = gf_malloc(big);
    for (size_t i = 0; i < big; i++)
        payload[i] = (uint8_t)(i * 7 + 1);
    zmq_send(f->router, id, (size_t)idn, ZMQ_SNDMORE);
    zmq_send(f->router, "", 0, ZMQ_SNDMORE);
    zmq_send(f->router, "ok", 2, 0);
    zmq_send(f->router, id, (size_t)idn, ZMQ_SNDMORE);
    zmq_send(f->router, "", 0, ZMQ_SNDMORE);
    zmq_send(f->router, payload, big, 0);

    uint8_t *body;
    size_t len, before;
    assert_int_equal(gf_zmtp_recv(z, 2000, 64u << 20, &body, &len, &before, err, sizeof(err)), 0);
    assert_int_equal(len, 2);
    assert_int_equal(before, 1);
    assert_memory_equal(body, "ok", 2);
    free(body);
    assert_int_equal(gf_zmtp_recv(z, 2000, 64u << 20, &body, &len, &before, err, sizeof(err)), 0);
    assert_int_equal(len, big);
    assert_memory_equal(body, payload, big);
    free(body);

    /* a large request reaches the router whole */
    frames[1] = payload;
    lens[1] = big;
    assert_int_equal(gf_zmtp_send(z, frames, lens, 2, err, sizeof(err)), 0);
    router_frame(f, id, sizeof(id), &more);
    router_frame(f, buf, sizeof(buf), &more);
    zmq_msg_t m;
    zmq_msg_init(&m);
    assert_int_equal(zmq_msg_recv(&m, f->router, 0), (int)big);
    assert_memory_equal(zmq_msg_data(&m), payload, big);
    zmq_msg_close(&m);

    /* a frame over the caller's limit is refused, not allocated */
    zmq_send(f->router, id, (size_t)idn, ZMQ_SNDMORE);
    zmq_send(f->router, "", 0, ZMQ_SNDMORE);
    zmq_send(f->router, payload, 2048, 0);
    assert_int_equal(gf_zmtp_recv(z, 2000, 1024, &body, &len, &before, err, sizeof(err)),
                     GF_ETOOBIG);
    assert_null(body);
    assert_non_null(strstr(err, "larger than 1024"));
    free(payload);
    gf_zmtp_destroy(&z);
    assert_null(z);
    gf_zmtp_destroy(&z);      /* safe twice */
}

static void test_timeout_pings_and_hangup(void **state)
{
    fx *f = *state;
    int ivl = 20;                     /* a heartbeating ROUTER: PINGs come meanwhile */
    zmq_setsockopt(f->router, ZMQ_HEARTBEAT_IVL, &ivl, sizeof(ivl));
    bind_router(f);
    char err[256];
    gf_zmtp *z = gf_zmtp_connect(f->path, 2000, err, sizeof(err));
    assert_non_null(z);
    const void *frames[2] = { "", "x" };
    size_t lens[2] = { 0, 1 };
    assert_int_equal(gf_zmtp_send(z, frames, lens, 2, err, sizeof(err)), 0);
    uint8_t id[256], buf[8];
    int more;
    int idn = router_frame(f, id, sizeof(id), &more);
    router_frame(f, buf, sizeof(buf), &more);
    router_frame(f, buf, sizeof(buf), &more);

    /* nothing to read for 300 ms; the connection still works after it */
    uint8_t *body;
    size_t len, before;
    assert_int_equal(gf_zmtp_recv(z, 300, 1024, &body, &len, &before, err, sizeof(err)),
                     GF_ETIMEDOUT);
    assert_non_null(strstr(err, "no answer"));
    /* the connection still works after the timeout */
    zmq_send(f->router, id, (size_t)idn, ZMQ_SNDMORE);
    zmq_send(f->router, "", 0, ZMQ_SNDMORE);
    zmq_send(f->router, "late", 4, 0);
    assert_int_equal(gf_zmtp_recv(z, 2000, 1024, &body, &len, &before, err, sizeof(err)), 0);
    assert_memory_equal(body, "late", 4);
    free(body);

    /* the peer goes away: the connection reports it */
    zmq_close(f->router);
    f->router = NULL;
    int rc = gf_zmtp_recv(z, 2000, 1 << 20, &body, &len, &before, err, sizeof(err));
    if (rc != GF_EIO)
        fail_msg("after the peer closed: %d (%s)", rc, err);
    assert_non_null(strstr(err, "closed"));
    gf_zmtp_destroy(&z);
}

static void test_nothing_listening(void **state)
{
    fx *f = *state;
    char err[256];
    assert_null(gf_zmtp_connect(f->path, 500, err, sizeof(err)));
    assert_non_null(strstr(err, f->path));
    assert_non_null(strstr(err, "connect"));
}

/* A unix socket server (in a child) that answers every connection with
 * `reply` and then holds the connection open a while. */
/* A unix socket server on path in a child process: returns the child's
 * pid in the parent; in the child, returns 0 with the one accepted
 * connection in *conn. */
static pid_t server_child(const char *path, int *conn)
{
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(s, 4), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        *conn = accept(s, NULL, NULL);
        if (*conn < 0)
            _exit(2);
        return 0;
    }
    close(s);
    return pid;
}

/* A server that answers every connection with `reply` and then holds the
 * connection open a while. */
static pid_t fake_server(const char *path, const char *reply, size_t len)
{
    int c;
    pid_t pid = server_child(path, &c);
    if (pid == 0) {
        if (len && write(c, reply, len) != (ssize_t)len)
            _exit(1);
        sleep(3);
        _exit(0);
    }
    return pid;
}

/* End a fake_server and remove its socket, for the next one. */
static void stop_fake_server(pid_t pid, const char *path)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    unlink(path);
}

static void test_not_zmtp(void **state)
{
    fx *f = *state;
    char err[256];
    pid_t pid = fake_server(f->path, "HTTP/1.1 400 Bad Request\r\n\r\n", 28);
    assert_null(gf_zmtp_connect(f->path, 2000, err, sizeof(err)));
    assert_non_null(strstr(err, "does not speak ZMTP"));
    stop_fake_server(pid, f->path);

    /* a ZMTP 2 peer (version byte 1) */
    char old[64] = { (char)0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 0 };
    pid = fake_server(f->path, old, sizeof(old));
    assert_null(gf_zmtp_connect(f->path, 2000, err, sizeof(err)));
    assert_non_null(strstr(err, "not 3"));
    stop_fake_server(pid, f->path);

    /* a peer that accepts and says nothing: the handshake times out */
    pid = fake_server(f->path, "", 0);
    assert_null(gf_zmtp_connect(f->path, 200, err, sizeof(err)));
    assert_non_null(strstr(err, "no ZMTP greeting"));
    stop_fake_server(pid, f->path);
}

/* A hand-written ZMTP 3.1 peer (in a child): greeting and READY, then a
 * PING with a context; exits 0 once the client's PONG has carried that
 * context back and the client hung up, 1 (or SIGALRM after 2 s) if not. */
static pid_t pinging_server(const char *path)
{
    int c;
    pid_t pid = server_child(path, &c);
    if (pid == 0) {
        unsigned char hello[64 + 2 + 28] = { 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0x7F, 3, 1, 'N', 'U', 'L', 'L' };
        unsigned char *r = hello + 64;
        *r++ = 4, *r++ = 28, *r++ = 5;
        memcpy(r, "READY", 5), r += 5;
        *r++ = 11;
        memcpy(r, "Socket-Type", 11), r += 11;
        *r++ = 0, *r++ = 0, *r++ = 0, *r++ = 6;
        memcpy(r, "ROUTER", 6);
        static const unsigned char ping[] = { 4, 10, 4, 'P', 'I', 'N', 'G', 0, 10, 'a', 'b', 'c' };
        if (write(c, hello, sizeof hello) != (ssize_t)sizeof hello ||
            write(c, ping, sizeof ping) != (ssize_t)sizeof ping)
            _exit(2);
        static const unsigned char pong[] = { 4, 8, 4, 'P', 'O', 'N', 'G', 'a', 'b', 'c' };
        unsigned char in[4096];
        size_t got = 0;
        alarm(2);
        while (got < sizeof in) {
            ssize_t n = read(c, in + got, sizeof in - got);
            if (n <= 0)
                _exit(1);
            got += (size_t)n;
            for (size_t i = 0; i + sizeof pong <= got; i++)
                if (memcmp(in + i, pong, sizeof pong) == 0) {
                    while (read(c, in, sizeof in) > 0)     /* until the client hangs up */
                        ;
                    _exit(0);
                }
        }
        _exit(1);
    }
    return pid;
}

static void test_ping_answered(void **state)
{
    fx *f = *state;
    pid_t pid = pinging_server(f->path);
    char err[256];
    gf_zmtp *z = gf_zmtp_connect(f->path, 2000, err, sizeof(err));
    assert_non_null(z);
    uint8_t *body = NULL;
    size_t len, before;
    assert_int_equal(gf_zmtp_recv(z, 500, 1024, &body, &len, &before, err, sizeof(err)),
                     GF_ETIMEDOUT);
    gf_zmtp_destroy(&z);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);       /* our PONG carried "abc" back */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_pings_and_hangup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_listening, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_zmtp, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ping_answered, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
