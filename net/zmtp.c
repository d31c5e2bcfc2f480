/* zmtp.c — ZMTP 3.1 DEALER client over a unix socket (see zmtp.h), for the
 * static front.
 *
 * Wire format (rfc.zeromq.org/spec/23 and 37): a 64-byte greeting each way
 * (signature 0xFF ... 0x7F, version 3.1, mechanism "NULL", as-server 0,
 * filler), then one READY command each way (properties as name/value
 * pairs: we say Socket-Type DEALER), then frames: a flags byte (MORE 1,
 * LONG 2, COMMAND 4), a size (one byte, or eight big-endian bytes when
 * LONG), the body. Input is buffered; a message is taken out of the buffer
 * only once all its frames are there, so a timeout or a signal in the middle
 * loses nothing. */
#include "net/zmtp.h"

#include "common/error.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define GREETING_LEN GF_ZMTP_GREETING_LEN
#define FLAG_MORE GF_ZMTP_MORE
#define FLAG_LONG GF_ZMTP_LONG
#define FLAG_COMMAND GF_ZMTP_COMMAND

struct gf_zmtp {
    int fd;                   /* the connected unix stream socket */
    char *path;               /* for messages */
    uint8_t *in;              /* received bytes not yet taken */
    size_t in_len;            /* bytes in `in` */
    size_t in_cap;            /* allocated size of `in` */
    int hello;                /* the peer's handshake still to read (during the
                               * connect): 0 none, 2 greeting and READY, 1 READY */
    int64_t hello_deadline;   /* monotonic ms by which it must have come */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Write all of iov, or fail: 0 or GF_EIO. */
static int write_all(gf_zmtp *self, struct iovec *iov, int n, char *err, size_t errlen)
{
    while (n > 0) {
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t w = sendmsg(self->fd, &mh, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "%s: send: %s", self->path, strerror(errno));
            return GF_EIO;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Read what is there (waiting up to the deadline, -1: none) into the
 * buffer: 0, GF_ETIMEDOUT, GF_EINTR, or GF_EIO at end of stream. */
static int fill(gf_zmtp *self, int64_t deadline, char *err, size_t errlen)
{
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - mono_ms();
            wait = left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd p = { .fd = self->fd, .events = POLLIN };
        int n = poll(&p, 1, wait);
        if (n < 0) {
            if (errno == EINTR)
                return GF_EINTR;
            snprintf(err, errlen, "%s: poll: %s", self->path, strerror(errno));
            return GF_EIO;
        }
        if (n == 0) {
            if (deadline >= 0 && mono_ms() >= deadline)
                return GF_ETIMEDOUT;      /* with 0 ms: once looked, nothing there */
            continue;
        }
        if (self->in_cap - self->in_len < 65536) {
            self->in_cap = self->in_cap ? self->in_cap * 2 : 131072;
            self->in = gf_realloc(self->in, self->in_cap);
        }
        ssize_t r = recv(self->fd, self->in + self->in_len, self->in_cap - self->in_len, 0);
        if (r < 0) {
            if (errno == EINTR)
                return GF_EINTR;
            if (errno == EAGAIN)
                continue;
            if (errno == ECONNRESET) {   /* it closed with our bytes unread: a hang-up too */
                snprintf(err, errlen, "%s: the peer closed the connection (reset)", self->path);
                return GF_EIO;
            }
            snprintf(err, errlen, "%s: receive: %s", self->path, strerror(errno));
            return GF_EIO;
        }
        if (r == 0) {
            snprintf(err, errlen, "%s: the peer closed the connection", self->path);
            return GF_EIO;
        }
        self->in_len += (size_t)r;
        return 0;
    }
}

static void consume(gf_zmtp *self, size_t n)
{
    memmove(self->in, self->in + n, self->in_len - n);
    self->in_len -= n;
}

/* ---- the codec */

static int frame_parse(const uint8_t *buf, size_t avail, size_t max_frame, uint8_t *flags,
                        size_t *hdr, size_t *size)
{
    if (avail < 2)
        return 0;
    *flags = buf[0];
    if (*flags & FLAG_LONG) {
        if (avail < 9)
            return 0;
        uint64_t s = 0;
        for (int i = 1; i <= 8; i++)
            s = s << 8 | buf[i];
        if (s > max_frame)
            return GF_ETOOBIG;
        *size = (size_t)s;
        *hdr = 9;
    } else {
        *size = buf[1];
        if (*size > max_frame)
            return GF_ETOOBIG;
        *hdr = 2;
    }
    return avail - *hdr >= *size ? 1 : 0;
}

size_t gf_zmtp_frame_header(uint8_t hdr[9], uint8_t flags, size_t len)
{
    if (len <= 255) {
        hdr[0] = flags;
        hdr[1] = (uint8_t)len;
        return 2;
    }
    hdr[0] = flags | FLAG_LONG;
    for (int i = 0; i < 8; i++)
        hdr[1 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
    return 9;
}

size_t gf_zmtp_hello(uint8_t out[GF_ZMTP_HELLO_MAX], const char *socket_type, int as_server)
{
    static const char props[] = "Socket-Type";
    size_t tl = strlen(socket_type);
    assert(tl <= 6);
    memset(out, 0, GREETING_LEN);
    out[0] = 0xFF;
    out[9] = 0x7F;
    out[10] = 3;                  /* version 3.1: PING/PONG heartbeats */
    out[11] = 1;
    memcpy(out + 12, "NULL", 4);  /* mechanism, zero padded to 20; as-server; filler */
    out[32] = as_server ? 1 : 0;
    uint8_t *c = out + GREETING_LEN;
    size_t body = 6 + 1 + (sizeof(props) - 1) + 4 + tl;
    *c++ = FLAG_COMMAND;
    *c++ = (uint8_t)body;
    *c++ = 5;
    memcpy(c, "READY", 5), c += 5;
    *c++ = (uint8_t)(sizeof(props) - 1);
    memcpy(c, props, sizeof(props) - 1), c += sizeof(props) - 1;
    *c++ = 0, *c++ = 0, *c++ = 0, *c++ = (uint8_t)tl;
    memcpy(c, socket_type, tl), c += tl;
    return (size_t)(c - out);
}

static int check_greeting(const uint8_t *g, char *why, size_t whylen)
{
    if (g[0] != 0xFF || !(g[9] & 1)) {
        snprintf(why, whylen, "the peer does not speak ZMTP");
        return GF_EPROTO;
    }
    if (g[10] < 3) {
        snprintf(why, whylen, "the peer speaks ZMTP %u, not 3", g[10]);
        return GF_EPROTO;
    }
    if (memcmp(g + 12, "NULL\0", 5) != 0) {
        snprintf(why, whylen, "the peer wants a security mechanism other than NULL");
        return GF_EPROTO;
    }
    return 0;
}

static int is_command(const uint8_t *b, size_t n, const char *name)
{
    size_t l = strlen(name);
    return n >= 1 + l && b[0] == l && memcmp(b + 1, name, l) == 0;
}

static size_t pong_for(const uint8_t *b, size_t n, uint8_t pong[5 + 16])
{
    /* PING: its name, a 2-byte TTL, then the context to echo */
    if (n < 1 + 4 + 2 || !is_command(b, n, "PING"))
        return 0;
    size_t ctx = n - 7 > 16 ? 16 : n - 7;
    memcpy(pong, "\4PONG", 5);
    memcpy(pong + 5, b + 7, ctx);
    return 5 + ctx;
}

/* ---- the client */

/* One frame at `off` of the buffer (gf_zmtp_frame_parse). */
static int frame_at(const gf_zmtp *self, size_t off, size_t max_frame, uint8_t *flags,
                    size_t *hdr, size_t *size)
{
    return frame_parse(self->in + off, self->in_len - off, max_frame, flags, hdr, size);
}

static int send_command(gf_zmtp *self, const uint8_t *body, size_t len, char *err, size_t errlen)
{
    uint8_t hdr[9];
    size_t hl = gf_zmtp_frame_header(hdr, FLAG_COMMAND, len);
    struct iovec iov[2] = { { hdr, hl }, { (void *)body, len } };
    return write_all(self, iov, 2, err, errlen);
}

/* A command frame's body: PING is answered with PONG and its context
 * (ZMTP 3.1 heartbeats), ERROR ends the session, the rest is skipped. */
static int on_command(gf_zmtp *self, const uint8_t *b, size_t n, char *err, size_t errlen)
{
    uint8_t pong[5 + 16];
    size_t pl = pong_for(b, n, pong);
    if (pl)
        return send_command(self, pong, pl, err, errlen);
    if (n >= 6 && is_command(b, n, "ERROR")) {
        int rl = n > 6 ? b[6] : 0;
        if ((size_t)rl > n - 7)
            rl = (int)(n - 7);
        snprintf(err, errlen, "%s: the peer refused us: %.*s", self->path, rl, (const char *)b + 7);
        return GF_EPROTO;
    }
    return 0;
}

int gf_zmtp_recv(gf_zmtp *self, int timeout_ms, size_t max_frame, uint8_t **body, size_t *len,
                 size_t *n_before, char *err, size_t errlen)
{
    *body = NULL;
    *len = 0;
    *n_before = 0;
    int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
    for (;;) {
        /* a whole message (or a command) at the front of the buffer? */
        size_t off = 0, frames = 0, last_off = 0, last_size = 0;
        int whole = 0;
        for (;;) {
            uint8_t flags;
            size_t hdr, size;
            int rc = frame_at(self, off, max_frame, &flags, &hdr, &size);
            if (rc == GF_ETOOBIG) {
                snprintf(err, errlen, "%s: a frame larger than %zu bytes", self->path, max_frame);
                return GF_ETOOBIG;
            }
            if (rc == 0)
                break;
            if (flags & FLAG_COMMAND) {
                if (frames > 0) {
                    snprintf(err, errlen, "%s: a command inside a message", self->path);
                    return GF_EPROTO;
                }
                rc = on_command(self, self->in + hdr, size, err, errlen);
                consume(self, hdr + size);
                if (rc)
                    return rc;
                continue;
            }
            frames++;
            last_off = off + hdr;
            last_size = size;
            off += hdr + size;
            if (!(flags & FLAG_MORE)) {
                whole = 1;
                break;
            }
        }
        if (whole) {
            *body = gf_malloc(last_size ? last_size : 1);
            memcpy(*body, self->in + last_off, last_size);
            *len = last_size;
            *n_before = frames - 1;
            consume(self, off);
            return 0;
        }
        int rc = fill(self, deadline, err, errlen);
        if (rc) {
            if (rc == GF_ETIMEDOUT)
                snprintf(err, errlen, "%s: no answer within %d ms", self->path, timeout_ms);
            else if (rc == GF_EINTR)
                snprintf(err, errlen, "%s: interrupted", self->path);
            return rc;
        }
    }
}

int gf_zmtp_send(gf_zmtp *self, const void *const *frames, const size_t *lens, size_t n,
                 char *err, size_t errlen)
{
    struct iovec *iov = gf_calloc(2 * n + 1, sizeof(*iov));
    uint8_t (*hdr)[9] = gf_calloc(n + 1, sizeof(*hdr));
    for (size_t i = 0; i < n; i++) {
        size_t hl = gf_zmtp_frame_header(hdr[i], i + 1 < n ? FLAG_MORE : 0, lens[i]);
        iov[2 * i] = (struct iovec){ hdr[i], hl };
        iov[2 * i + 1] = (struct iovec){ (void *)frames[i], lens[i] };
    }
    int rc = write_all(self, iov, (int)(2 * n), err, errlen);
    free(iov);
    free(hdr);
    return rc;
}

int gf_zmtp_send_msg(gf_zmtp *self, const gf_msg *m, bool delim, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    int rc = gf_proto_encode(m, &buf, &len);
    if (rc) {
        snprintf(err, errlen, "cannot encode a '%s' message: %s",
                 gf_proto_op_name(m->op) ? gf_proto_op_name(m->op) : "?", gf_strerror(rc));
        return rc;
    }
    const void *frames[2] = { "", buf };
    size_t lens[2] = { 0, len };
    rc = delim ? gf_zmtp_send(self, frames, lens, 2, err, errlen)
               : gf_zmtp_send(self, frames + 1, lens + 1, 1, err, errlen);
    free(buf);
    return rc;
}

int gf_zmtp_recv_msg(gf_zmtp *self, int timeout_ms, gf_msg *out, char *err, size_t errlen)
{
    uint8_t *body;
    size_t len, before;
    memset(out, 0, sizeof(*out));
    int rc = gf_zmtp_recv(self, timeout_ms, GF_PROTO_MAX_FRAME, &body, &len, &before, err,
                          errlen);
    if (rc)
        return rc;
    if (before > 1) {
        snprintf(err, errlen, "a message of %zu frames", before + 1);
        rc = GF_EPROTO;
    } else {
        rc = gf_proto_decode(body, len, out, err, errlen);
    }
    free(body);
    return rc;
}

/* Read the peer's greeting and READY (self->hello says which are left) by
 * deadline (< 0: no limit). GF_ETIMEDOUT leaves what came buffered for the
 * next call. */
static int await_hello(gf_zmtp *self, int64_t deadline, char *err, size_t errlen)
{
    if (self->hello_deadline >= 0 && (deadline < 0 || deadline > self->hello_deadline))
        deadline = self->hello_deadline;
    while (self->hello == 2) {
        if (self->in_len >= 1 && self->in[0] != 0xFF) {
            snprintf(err, errlen, "%s: the peer does not speak ZMTP", self->path);
            return GF_EPROTO;
        }
        if (self->in_len >= GREETING_LEN) {
            char why[128];
            if (check_greeting(self->in, why, sizeof(why)) != 0) {
                snprintf(err, errlen, "%s: %s", self->path, why);
                return GF_EPROTO;
            }
            consume(self, GREETING_LEN);
            self->hello = 1;
            break;
        }
        int rc = fill(self, deadline, err, errlen);
        if (rc == GF_ETIMEDOUT)
            snprintf(err, errlen, "%s: no ZMTP greeting in time", self->path);
        if (rc)
            return rc;
    }
    while (self->hello == 1) {
        uint8_t flags;
        size_t hdr, size;
        int rc = frame_at(self, 0, 65536, &flags, &hdr, &size);
        if (rc == 1) {
            const uint8_t *b = self->in + hdr;
            if (!(flags & FLAG_COMMAND) || size < 6) {
                snprintf(err, errlen, "%s: no READY from the peer", self->path);
                return GF_EPROTO;
            }
            if (is_command(b, size, "READY")) {
                consume(self, hdr + size);
                self->hello = 0;
                return 0;
            }
            rc = on_command(self, b, size, err, errlen);
            if (rc == 0)
                snprintf(err, errlen, "%s: no READY from the peer", self->path);
            return GF_EPROTO;
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s: oversized handshake from the peer", self->path);
            return GF_EPROTO;
        }
        rc = fill(self, deadline, err, errlen);
        if (rc == GF_ETIMEDOUT)
            snprintf(err, errlen, "%s: no READY in time", self->path);
        if (rc)
            return rc;
    }
    return 0;
}

gf_zmtp *gf_zmtp_connect(const char *path, int timeout_ms, char *err, size_t errlen)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path)) {
        snprintf(err, errlen, "%s: socket path too long", path);
        return NULL;
    }
    strcpy(sa.sun_path, path);
    gf_zmtp *self = gf_calloc(1, sizeof(*self));
    self->path = gf_strdup(path);
    self->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (self->fd < 0) {
        snprintf(err, errlen, "%s: socket: %s", path, strerror(errno));
        goto fail;
    }
    if (connect(self->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        snprintf(err, errlen, "%s: connect: %s", path, strerror(errno));
        goto fail;
    }
    uint8_t out[GF_ZMTP_HELLO_MAX];
    struct iovec iov = { out, gf_zmtp_hello(out, "DEALER", 0) };
    if (write_all(self, &iov, 1, err, errlen) != 0)
        goto fail;
    self->hello = 2;
    self->hello_deadline = mono_ms() + timeout_ms;
    if (await_hello(self, -1, err, errlen) != 0)
        goto fail;
    return self;
fail:
    gf_zmtp_destroy(&self);
    return NULL;
}

void gf_zmtp_destroy(gf_zmtp **self_p)
{
    gf_zmtp *self = *self_p;
    if (!self)
        return;
    if (self->fd >= 0)
        close(self->fd);
    free(self->in);
    free(self->path);
    free(self);
    *self_p = NULL;
}
