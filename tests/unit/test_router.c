/* test_router.c — the broker's ROUTER endpoint (net/router.c, libzmq's
 * ROUTER) on a real ipc:// socket, in this thread: libzmq DEALERs
 * (REQ-style and worker-style envelopes, the caller's credentials, a reply
 * of megabytes), the static front's own ZMTP client (net/zmtp.c) in a
 * child process, a send to a peer that hung up, a request written before
 * the ROUTER's READY (libzmq drops that connection: why the front waits for
 * the handshake), and hostile peers on raw sockets (not ZMTP, another
 * mechanism, a PUB socket, a frame over the limit, two bodies in one
 * message, random bytes as a body, a PING) while a well-behaved peer keeps
 * being served. */
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "net/proto.h"
#include "net/router.h"
#include "common/util.h"
#include "net/zmtp.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define MAX_FRAME ((size_t)GF_PROTO_MAX_FRAME + 1024)   /* gf_wire_socket's limit */

typedef struct {
    char dir[64];
    char path[128];
    char ep[160];
    gf_config *cfg;
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
    char *yaml = gf_strfmt("run_dir: %s/run\nstate_dir: %s/state\n", f->dir, f->dir);
    int rc = gf_config_parse("test.yaml", yaml, strlen(yaml), &f->cfg);
    free(yaml);
    if (rc)
        return -1;
    f->ctx = zmq_ctx_new();
    char err[256];
    f->r = gf_router_bind(f->ctx, f->ep, f->cfg, err, sizeof(err));
    if (!f->r)
        return -1;
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
    gf_config_destroy(&f->cfg);
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
        gf_router_pollitem(f->r, &it);
        zmq_poll(&it, 1, 10);
        int rc = gf_router_recv(f->r, peer, m, err, errlen);
        if (rc != GF_ETIMEDOUT)
            return rc;
    }
    return GF_ETIMEDOUT;
}

/* Nothing for the router within ms milliseconds. */
static void quiet(fx *f, int ms)
{
    gf_peer p;
    gf_msg m;
    char err[64];
    zmq_pollitem_t it;
    gf_router_pollitem(f->r, &it);
    zmq_poll(&it, 1, ms);
    assert_int_equal(gf_router_recv(f->r, &p, &m, err, sizeof(err)), GF_ETIMEDOUT);
}

/* Whatever the router gets within ms milliseconds is refused as not a
 * message (GF_EPROTO), with a peer to answer. */
static void only_refused(fx *f, int ms)
{
    for (int i = 0; i < ms / 10; i++) {
        gf_peer p;
        gf_msg m;
        char err[256];
        zmq_pollitem_t it;
        gf_router_pollitem(f->r, &it);
        zmq_poll(&it, 1, 10);
        int rc;
        while ((rc = gf_router_recv(f->r, &p, &m, err, sizeof(err))) != GF_ETIMEDOUT) {
            assert_int_equal(rc, GF_EPROTO);
            assert_true(p.id_len > 0);
        }
    }
}

/* Receive one message on a DEALER (up to 3 s). */
static void dealer_recv(void *s, gf_msg *m)
{
    zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
    if (zmq_poll(&it, 1, 3000) != 1)
        fail_msg("no reply reached the DEALER");
    char err[256];
    assert_int_equal(gf_wire_recv(s, GF_WIRE_DEALER, 0, NULL, m, err, sizeof(err)), 0);
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
    dealer_recv(client, &back);
    assert_int_equal(back.op, GF_OP_LOG);
    assert_int_equal(back.data_len, rep.data_len);
    assert_memory_equal(back.data, rep.data, rep.data_len);
    gf_msg_clear(&back);
    gf_msg_clear(&rep);
    rep.op = GF_OP_HEARTBEAT;
    assert_int_equal(gf_router_send(r, &pw, &rep), 0);
    dealer_recv(worker, &back);
    assert_int_equal(back.op, GF_OP_HEARTBEAT);
    gf_msg_clear(&back);

    /* the client hangs up: a reply to it is an error, not a silent drop */
    zmq_close(client);
    int rc = 0;
    for (int i = 0; i < 100 && (rc = gf_router_send(r, &pc, &rep)) == 0; i++)
        usleep(10000);
    assert_int_equal(rc, GF_ENOENT);
    gf_peer made_up = pw;
    made_up.id[4] ^= 0x55;
    assert_int_equal(gf_router_send(r, &made_up, &rep), GF_ENOENT);
    /* and the other peer is still served */
    assert_int_equal(gf_router_send(r, &pw, &rep), 0);
    dealer_recv(worker, &back);
    gf_msg_clear(&back);
    zmq_close(worker);
}

/* The static front's client (net/zmtp.c), in a child: a request, a
 * reply. */
static void test_light_client(void **state)
{
    fx *f = *state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[256];
        gf_zmtp *z = gf_zmtp_connect(f->path, 3000, err, sizeof(err));
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
    assert_true(p.has_cred);
    assert_int_equal(p.uid, getuid());
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
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

/* send(2) with MSG_NOSIGNAL: a peer libzmq has already dropped (the point of
 * some cases) answers EPIPE, never a SIGPIPE that would end the test. */
static void raw_write(int fd, const void *b, size_t n)
{
    assert_int_equal(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* The same where the ROUTER may have dropped the peer already (after a
 * header it refuses): the bytes arrive, or the connection is gone. */
static void raw_write_late(int fd, const void *b, size_t n)
{
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    assert_true(w == (ssize_t)n || (w < 0 && (errno == EPIPE || errno == ECONNRESET)));
}

/* A peer that greets as a `type` socket and, with `wait`, reads the
 * ROUTER's greeting and READY before it goes on (libzmq drops a peer whose
 * frames come before its READY, test_request_before_ready). */
static int raw_peer(fx *f, const char *type, bool wait)
{
    int fd = raw_connect(f);
    uint8_t hello[GF_ZMTP_HELLO_MAX];
    raw_write(fd, hello, gf_zmtp_hello(hello, type, 0));
    uint8_t in[512];
    size_t got = 0, want = 0;
    while (wait) {
        struct pollfd p = { fd, POLLIN, 0 };
        assert_int_equal(poll(&p, 1, 3000), 1);
        ssize_t r = read(fd, in + got, sizeof(in) - got);
        assert_true(r > 0);
        got += (size_t)r;
        /* the greeting, then a short command frame: its flags, size, body */
        if (got >= GF_ZMTP_GREETING_LEN + 2)
            want = (size_t)GF_ZMTP_GREETING_LEN + 2 + in[GF_ZMTP_GREETING_LEN + 1];
        if (want && got >= want)
            break;
    }
    assert_int_equal(got, want);
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
    (void)f;
    for (int i = 0; i < 300; i++) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 10) <= 0)
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

    /* not ZMTP at all, and ZMTP 2: libzmq takes them for ZMTP 1.0 and 2.0
     * peers and waits for more (they hold a descriptor, as any idle
     * connection does); what it reads of them as messages (the zero bytes
     * after the ZMTP 2 greeting are empty frames) is refused, answerable */
    int http = raw_connect(f);
    raw_write(http, "GET / HTTP/1.1\r\n\r\n", 18);
    int old2 = raw_connect(f);
    uint8_t old[64] = { 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 1, 0 };
    raw_write(old2, old, sizeof(old));
    only_refused(f, 200);

    int fd;

    fd = raw_connect(f);                               /* another mechanism */
    uint8_t plain[64] = { 0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 1, 'P', 'L', 'A', 'I', 'N' };
    raw_write(fd, plain, sizeof(plain));
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);

    fd = raw_peer(f, "PUB", false);                    /* not a DEALER or REQ */
    long n = until_dropped(f, fd, buf, sizeof(buf));
    assert_true(n >= 0);
    close(fd);

    fd = raw_peer(f, "DEALER", true);                  /* a frame over the limit */
    uint8_t hdr[9];
    raw_write(fd, hdr, gf_zmtp_frame_header(hdr, 0, MAX_FRAME + 1));
    raw_write_late(fd, "0123456789abcdef", 16);
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);

    /* two bodies in one message: refused with the peer named, so it can be
     * told; then a PING is answered with its context; then two requests in
     * one write both arrive */
    fd = raw_peer(f, "DEALER", true);
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
    assert_int_equal(next(f, &p, &m, err, sizeof(err)), 0);
    assert_int_equal(m.op, GF_OP_QUEUE);
    gf_msg_clear(&m);
    shutdown(fd, SHUT_WR);
    n = until_dropped(f, fd, buf, sizeof(buf));
    assert_true(n > 0);
    assert_true(contains(buf, (size_t)n, "\4PONGabc"));
    close(fd);

    /* random bytes as a body: a decode error the caller can answer */
    fd = raw_peer(f, "REQ", true);
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
    dealer_recv(good, &back);
    assert_int_equal(back.op, GF_OP_HEARTBEAT);
    gf_msg_clear(&back);
    zmq_close(good);
    close(http);
    close(old2);
}

/* A request written right behind the peer's greeting and READY, before
 * the ROUTER's READY went out (what a client that does not wait for the
 * handshake sends): libzmq 4.3 drops the connection and the request never
 * arrives; one that waits is served. Hence gf_zmtp_connect finishes the
 * handshake before the front's request. */
static void test_request_before_ready(void **state)
{
    fx *f = *state;
    gf_msg req;
    queue_req(&req, false);
    uint8_t *enc;
    size_t len;
    assert_int_equal(gf_proto_encode(&req, &enc, &len), 0);
    uint8_t all[GF_ZMTP_HELLO_MAX + 4 + 2 + 255];
    size_t n = gf_zmtp_hello(all, "DEALER", 0);
    all[n++] = GF_ZMTP_MORE, all[n++] = 0;
    n += gf_zmtp_frame_header(all + n, 0, len);
    memcpy(all + n, enc, len), n += len;
    free(enc);
    int fd = raw_connect(f);
    raw_write(fd, all, n);               /* one write, before reading anything */
    uint8_t buf[512];
    assert_true(until_dropped(f, fd, buf, sizeof(buf)) >= 0);
    close(fd);
    quiet(f, 100);
}

static void test_bind_refused(void **state)
{
    fx *f = *state;
    char longp[200], ep[220], err[256];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = 0;
    snprintf(ep, sizeof(ep), "ipc://%s", longp);
    assert_null(gf_router_bind(f->ctx, ep, f->cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "cannot bind"));
    assert_null(gf_router_bind(f->ctx, "tcp://127.0.0.1:1", f->cfg, err, sizeof(err)));
    assert_non_null(strstr(err, "curve_secret_key"));     /* no tcp:// in the clear */
    /* the failed attempts left the working router's socket alone */
    assert_int_equal(access(f->path, F_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dealers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_light_client, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_before_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
