/* zmq_poke.c — send hostile frames to a gpuflockd endpoint (integration
 * tests). Usage: zmq_poke ENDPOINT KIND [ARG]
 *   KIND: random (ARG random frames of 0..4096 random bytes, default 1),
 *         version (a valid queue request with protocol version 99),
 *         unknown-op, truncated, oversize-string, huge-array (a header
 *         claiming 2^32-1 entries), multipart, huge-frame (over the
 *         broker's frame limit: the connection is dropped), ready (a
 *         worker's registration for card 0, to pose as its worker),
 *         submit (a client's valid submit of `touch ARG`: a client op, for
 *         the worker socket), result (a worker's result for job ARG,
 *         attempt 1, exit status 0: a worker op, from a stranger).
 * Frames go REQ-style (empty delimiter first) from a DEALER. Each reply that
 * comes back within 500 ms is printed as "reply OP CODE MESSAGE"; the exit
 * status is 0 unless the endpoint could not be used. */
#include "net/proto.h"
#include "common/util.h"
#include "net/wire.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static void send_frame(void *s, const void *buf, size_t len)
{
    zmq_send(s, "", 0, ZMQ_SNDMORE);
    zmq_send(s, buf, len, 0);
}

static void pack_header(msgpack_packer *pk, int entries, unsigned version, const char *op)
{
    msgpack_pack_map(pk, (size_t)entries);
    msgpack_pack_str_with_body(pk, "v", 1);
    msgpack_pack_unsigned_int(pk, version);
    msgpack_pack_str_with_body(pk, "op", 2);
    msgpack_pack_str_with_body(pk, op, strlen(op));
}

static int replies(void *s, int want)
{
    int got = 0;
    for (int i = 0; i < want; i++) {
        zmq_pollitem_t it = { s, 0, ZMQ_POLLIN, 0 };
        if (zmq_poll(&it, 1, 500) <= 0)
            break;
        gf_msg m;
        char err[256];
        if (gf_wire_recv(s, GF_WIRE_DEALER, 0, NULL, &m, err, sizeof(err)) == 0) {
            printf("reply %s %d %s\n", gf_proto_op_name(m.op), m.code, m.message ? m.message : "");
            gf_msg_clear(&m);
            got++;
        }
    }
    return got;
}

/* One well-formed message, encoded by the codec, sent REQ-style: 0, or -1. */
static int send_msg(void *s, const gf_msg *m)
{
    uint8_t *b;
    size_t n;
    if (gf_proto_encode(m, &b, &n) != 0)
        return -1;
    send_frame(s, b, n);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: zmq_poke ENDPOINT KIND [ARG]\n");
        return 2;
    }
    int count = argc > 3 ? atoi(argv[3]) : 1;
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
    if (zmq_connect(s, argv[1]) != 0) {
        fprintf(stderr, "zmq_poke: connect %s: %s\n", argv[1], zmq_strerror(zmq_errno()));
        return 1;
    }
    const char *kind = argv[2];
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    uint64_t x = 0x243f6a8885a308d3ull ^ (uint64_t)gf_now_ns();
    int sent = 0;
    if (strcmp(kind, "random") == 0) {
        for (int i = 0; i < count; i++) {
            size_t n = (size_t)(x % 4097);
            uint8_t *b = gf_malloc(n + 1);
            for (size_t k = 0; k < n; k++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b[k] = (uint8_t)x;
            }
            if (n && i % 3 == 0)
                b[0] = 0x80 | (b[0] & 0x0f);   /* a map header, to get further */
            send_frame(s, b, n);
            free(b);
            sent++;
        }
    } else if (strcmp(kind, "version") == 0) {
        pack_header(&pk, 3, 99, "queue");
        msgpack_pack_str_with_body(&pk, "all", 3);
        msgpack_pack_true(&pk);
    } else if (strcmp(kind, "unknown-op") == 0) {
        pack_header(&pk, 2, GF_PROTO_VERSION, "format-disk");
    } else if (strcmp(kind, "truncated") == 0) {
        pack_header(&pk, 3, GF_PROTO_VERSION, "show");
        msgpack_pack_str_with_body(&pk, "id", 2);
    } else if (strcmp(kind, "oversize-string") == 0) {
        size_t n = GF_PROTO_MAX_STR + 10;
        char *big = gf_malloc(n);
        memset(big, 'a', n);
        pack_header(&pk, 3, GF_PROTO_VERSION, "submit");
        msgpack_pack_str_with_body(&pk, "spec", 4);
        msgpack_pack_map(&pk, 1);
        msgpack_pack_str_with_body(&pk, "argv", 4);
        msgpack_pack_array(&pk, 1);
        msgpack_pack_str_with_body(&pk, big, n);
        free(big);
    } else if (strcmp(kind, "huge-array") == 0) {
        pack_header(&pk, 3, GF_PROTO_VERSION, "cancel");
        msgpack_pack_str_with_body(&pk, "ids", 3);
        msgpack_pack_array(&pk, 0xffffffffu);
    } else if (strcmp(kind, "multipart") == 0) {
        zmq_send(s, "", 0, ZMQ_SNDMORE);
        zmq_send(s, "a", 1, ZMQ_SNDMORE);
        zmq_send(s, "b", 1, 0);
        sent = 1;
    } else if (strcmp(kind, "huge-frame") == 0) {
        size_t n = (size_t)GF_PROTO_MAX_FRAME + 4096;
        uint8_t *b = gf_calloc(n, 1);
        b[0] = 0x81;
        send_frame(s, b, n);
        free(b);
        sent = 1;
    } else if (strcmp(kind, "ready") == 0) {
        gf_msg m;
        memset(&m, 0, sizeof(m));
        m.op = GF_OP_READY;
        m.device = 0;
        m.pid = 1;
        m.card.index = 0;
        m.card.kind = GF_DEVICE_CPU;
        snprintf(m.card.name, sizeof(m.card.name), "an impostor");
        if (send_msg(s, &m) != 0)
            return 2;
        sent = 1;
    } else if (strcmp(kind, "submit") == 0 && argc > 3) {
        gf_msg m;
        memset(&m, 0, sizeof(m));
        m.op = GF_OP_SUBMIT;
        gf_job_spec_init(&m.spec);
        char *args[] = { "touch", argv[3], NULL };
        m.spec.argv = args;
        m.spec.argc = 2;
        if (send_msg(s, &m) != 0)
            return 2;
        sent = 1;
    } else if (strcmp(kind, "result") == 0 && argc > 3) {
        gf_msg m;
        memset(&m, 0, sizeof(m));
        m.op = GF_OP_RESULT;
        m.id = strtoull(argv[3], NULL, 10);
        m.attempt = 1;
        m.exit_status = 0;
        m.outcome = GF_OUTCOME_ENDED;
        if (send_msg(s, &m) != 0)
            return 2;
        sent = 1;
    } else {
        fprintf(stderr, "zmq_poke: unknown kind %s\n", kind);
        return 2;
    }
    if (sb.size) {
        send_frame(s, sb.data, sb.size);
        sent = 1;
    }
    msgpack_sbuffer_destroy(&sb);
    int got = replies(s, sent);
    printf("sent %d, %d replies\n", sent, got);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
