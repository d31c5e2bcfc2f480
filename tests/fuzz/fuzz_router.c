/* fuzz_router.c — libFuzzer target for the broker's own ZMTP ROUTER
 * (net/router.c): the input is what a peer sends on the ipc:// socket,
 * after a valid greeting and READY when its first byte is odd (so the
 * fuzzer reaches the frames at once), raw otherwise. The router must take
 * every whole message it can decode (each is answered), refuse the rest,
 * and close the connection once the peer has hung up; a crash, a leak, a
 * sanitizer report or a connection left open is a finding.
 *   make fuzz && build/fuzz/fuzz_router -max_total_time=60 */
#include "net/router.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "net/zmtp.h"
#include "tests/unit/tmpdir.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gf_router *router;
static struct sockaddr_un addr = { .sun_family = AF_UNIX };
static char dir[4096];                /* made by gf_test_mkdtemp, removed at exit */

static void cleanup(void)
{
    gf_router_destroy(&router);       /* removes the socket file */
    gf_test_rmtree(dir);
}

static void once(void)
{
    if (router)
        return;
    if (gf_test_mkdtemp(dir, sizeof(dir), "gf-fuzz-router") != 0)
        abort();
    atexit(cleanup);
    int n = snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/r.sock", dir);
    if (n < 0 || (size_t)n >= sizeof(addr.sun_path)) {
        fprintf(stderr, "fuzz_router: %s/r.sock is too long for a unix socket; set TMPDIR shorter\n",
                dir);
        abort();
    }
    gf_log_init("fuzz_router", GF_LOG_OFF);
    router = gf_router_listen(addr.sun_path, 1 << 16);
    if (!router)
        abort();
}

/* Let the router take what is there; answer what decodes. */
static void serve(void)
{
    for (;;) {
        gf_peer p;
        gf_msg m;
        char err[256];
        int rc = gf_router_recv(router, &p, &m, err, sizeof(err));
        if (rc == GF_ETIMEDOUT)
            return;
        if (rc == 0) {
            gf_msg_clear(&m);
            m.op = GF_OP_HEARTBEAT;
            gf_router_send(router, &p, &m);
        } else if ((rc != GF_EPROTO && rc != GF_ETOOBIG) || err[0] == 0) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    once();
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
        abort();
    uint8_t hello[GF_ZMTP_HELLO_MAX];
    size_t hl = size && (data[0] & 1) ? gf_zmtp_hello(hello, "DEALER", 0) : 0;
    size_t sent = 0, total = hl + size;
    bool closed = false;
    for (int i = 0; i < 100000 && !closed; i++) {
        while (sent < total) {
            const uint8_t *b = sent < hl ? hello + sent : data + (sent - hl);
            size_t n = sent < hl ? hl - sent : total - sent;
            ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            sent += (size_t)w;
        }
        if (sent == total)
            shutdown(fd, SHUT_WR);
        serve();
        uint8_t buf[4096];
        ssize_t r;
        while ((r = read(fd, buf, sizeof(buf))) > 0)
            ;
        if (r == 0 || (r < 0 && errno != EAGAIN))
            closed = true;             /* the router let go of the connection */
        if (!closed && sent == total)
            poll(NULL, 0, 0);
    }
    if (!closed)
        abort();
    close(fd);
    return 0;
}
