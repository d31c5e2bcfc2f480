/* proto_decode.c — msgpack bytes to messages, driven by the tables of
 * proto.c (see proto.h). The decoder reads the bytes with its own
 * bounds-checked cursor rather than msgpack_unpack: msgpack-c allocates a
 * container's elements from the count in its header before reading them, so
 * a 5-byte header can ask for gigabytes. Here every container count is
 * checked against the bytes that remain and against the field's limit,
 * arrays grow only as their elements actually decode, and the reader
 * descends only where a table says a nested record is, so hostile nesting
 * cannot recurse. */
#include "net/proto_table.h"

#include "common/error.h"
#include "common/utf8.h"
#include "common/util.h"

#include <math.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- decode */

/* A bounds-checked cursor over the frame, with the key path for messages. */
typedef struct {
    const uint8_t *p;
    size_t len;
    size_t pos;
    char path[192];       /* "spec.argv", for error messages */
    char *err;
    size_t errlen;
} rd;

static int rd_fail(rd *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The message is valid UTF-8 whatever it quotes (quoted() escapes outside
 * bytes) and however errlen cuts it: peers with strict decoders get it in
 * an error reply. */
static int rd_fail(rd *r, int rc, const char *fmt, ...)
{
    if (r->errlen == 0)
        return rc;
    char what[256], text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    int n = r->path[0] ? snprintf(text, sizeof(text), "key '%s': %s", r->path, what)
                       : snprintf(text, sizeof(text), "%s", what);
    gf_utf8_escape(r->err, r->errlen, text, n < (int)sizeof(text) ? (size_t)n : sizeof(text) - 1);
    return rc;
}

/* Bytes of the message for rd_fail to quote: invalid UTF-8 as \xNN, at most
 * about 40 characters, cut between characters. */
static const char *quoted(char *buf, size_t cap, const char *s, size_t n)
{
    gf_utf8_escape(buf, cap, s, n);
    return buf;
}

#define QUOTE_CAP 48

static int need(rd *r, size_t n)
{
    if (r->len - r->pos < n)
        return rd_fail(r, GF_EPROTO, "truncated message (needs %zu more bytes at offset %zu)",
                       n - (r->len - r->pos), r->pos);
    return 0;
}

static uint64_t be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Read n big-endian bytes as an unsigned value. */
static int rd_be(rd *r, size_t n, uint64_t *v)
{
    int rc = need(r, n);
    if (rc)
        return rc;
    *v = be(r->p + r->pos, n);
    r->pos += n;
    return 0;
}

static const char *type_name(uint8_t b)
{
    if (b <= 0x7f || (b >= 0xcc && b <= 0xd3) || b >= 0xe0) return "an integer";
    if (b <= 0x8f || b == 0xde || b == 0xdf) return "a map";
    if (b <= 0x9f || b == 0xdc || b == 0xdd) return "an array";
    if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) return "a string";
    switch (b) {
    case 0xc0: return "nil";
    case 0xc2: case 0xc3: return "a boolean";
    case 0xc4: case 0xc5: case 0xc6: return "binary data";
    case 0xca: case 0xcb: return "a float";
    default: return "an extension or invalid byte";
    }
}

static int wrong_type(rd *r, const char *want)
{
    return rd_fail(r, GF_EPROTO, "expected %s, found %s", want, type_name(r->p[r->pos]));
}

static bool rd_peek_nil(rd *r)
{
    return r->pos < r->len && r->p[r->pos] == 0xc0;
}

/* Any msgpack integer as a sign flag plus magnitude. */
static int rd_int(rd *r, bool *neg, uint64_t *mag)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t v;
    *neg = false;
    if (b <= 0x7f) {
        r->pos++;
        *mag = b;
        return 0;
    }
    if (b >= 0xe0) {
        r->pos++;
        *neg = true;
        *mag = (uint64_t)(256 - b);
        return 0;
    }
    if (b >= 0xcc && b <= 0xcf) {
        r->pos++;
        rc = rd_be(r, (size_t)1 << (b - 0xcc), &v);
        *mag = v;
        return rc;
    }
    if (b >= 0xd0 && b <= 0xd3) {
        size_t n = (size_t)1 << (b - 0xd0);
        r->pos++;
        rc = rd_be(r, n, &v);
        if (rc)
            return rc;
        /* sign-extend an n-byte two's complement value */
        int shift = (int)(64 - 8 * n);
        int64_t sv = (int64_t)(v << shift) >> shift;
        if (sv < 0) {
            *neg = true;
            *mag = (uint64_t)(-(sv + 1)) + 1;
        } else {
            *mag = (uint64_t)sv;
        }
        return 0;
    }
    return wrong_type(r, "an integer");
}

static int rd_signed(rd *r, int64_t lo, int64_t hi, int64_t *out)
{
    bool neg;
    uint64_t mag;
    int rc = rd_int(r, &neg, &mag);
    if (rc)
        return rc;
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1 || (mag > 0 && -(int64_t)(mag - 1) - 1 < lo))
            return rd_fail(r, GF_EPROTO, "integer -%llu out of range", (unsigned long long)mag);
        *out = -(int64_t)(mag - 1) - 1;
    } else {
        if (mag > (uint64_t)hi)
            return rd_fail(r, GF_EPROTO, "integer %llu out of range", (unsigned long long)mag);
        *out = (int64_t)mag;
    }
    return 0;
}

static int rd_unsigned(rd *r, uint64_t hi, uint64_t *out)
{
    bool neg;
    uint64_t mag;
    int rc = rd_int(r, &neg, &mag);
    if (rc)
        return rc;
    if ((neg && mag) || mag > hi)
        return rd_fail(r, GF_EPROTO, "integer %s%llu out of range", neg ? "-" : "",
                       (unsigned long long)mag);
    *out = mag;
    return 0;
}

static int rd_bool(rd *r, bool *out)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    if (b != 0xc2 && b != 0xc3)
        return wrong_type(r, "a boolean");
    r->pos++;
    *out = b == 0xc3;
    return 0;
}

static int rd_double(rd *r, double *out)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t v;
    if (b == 0xca) {
        r->pos++;
        if ((rc = rd_be(r, 4, &v)))
            return rc;
        uint32_t u = (uint32_t)v;
        float fl;
        memcpy(&fl, &u, 4);
        *out = fl;
        return 0;
    }
    if (b == 0xcb) {
        r->pos++;
        if ((rc = rd_be(r, 8, &v)))
            return rc;
        memcpy(out, &v, 8);
        return 0;
    }
    return wrong_type(r, "a float");
}

/* A string in place (not NUL-terminated), at most limit bytes, no NUL. */
static int rd_strref(rd *r, size_t limit, const char **s, size_t *n)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t len;
    if (b >= 0xa0 && b <= 0xbf) {
        r->pos++;
        len = b & 0x1f;
    } else if (b >= 0xd9 && b <= 0xdb) {
        r->pos++;
        if ((rc = rd_be(r, (size_t)1 << (b - 0xd9), &len)))
            return rc;
    } else {
        return wrong_type(r, "a string");
    }
    if (len > limit)
        return rd_fail(r, GF_ETOOBIG, "string of %llu bytes over the limit of %zu",
                       (unsigned long long)len, limit);
    if ((rc = need(r, (size_t)len)))
        return rc;
    *s = (const char *)r->p + r->pos;
    *n = (size_t)len;
    if (memchr(*s, 0, *n))
        return rd_fail(r, GF_EPROTO, "string holds a NUL byte");
    r->pos += (size_t)len;
    return 0;
}

static int rd_str(rd *r, size_t limit, char **out)
{
    const char *s;
    size_t n;
    int rc = rd_strref(r, limit, &s, &n);
    if (rc)
        return rc;
    char *c = gf_malloc(n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    *out = c;
    return 0;
}

/* A container header: array (is_map false) or map; count checked against
 * the limit and against the bytes left (each element takes >= 1 byte). */
static int rd_container(rd *r, bool is_map, size_t limit, size_t *count)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t n;
    uint8_t fix = is_map ? 0x80 : 0x90;
    uint8_t b16 = is_map ? 0xde : 0xdc;
    if ((b & 0xf0) == fix) {
        r->pos++;
        n = b & 0x0f;
    } else if (b == b16 || b == b16 + 1) {
        r->pos++;
        if ((rc = rd_be(r, b == b16 ? 2 : 4, &n)))
            return rc;
    } else {
        return wrong_type(r, is_map ? "a map" : "an array");
    }
    if (n > limit)
        return rd_fail(r, GF_ETOOBIG, "%s of %llu entries over the limit of %zu",
                       is_map ? "map" : "array", (unsigned long long)n, limit);
    if (n * (is_map ? 2 : 1) > r->len - r->pos)
        return rd_fail(r, GF_EPROTO, "truncated message (%s claims %llu entries)",
                       is_map ? "map" : "array", (unsigned long long)n);
    *count = (size_t)n;
    return 0;
}

/* Grow-as-you-go array storage: capacity doubles as elements decode. */
static void *grow(void *v, size_t have, size_t *cap, size_t es)
{
    if (have < *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 8;
    char *nv = gf_realloc(v, nc * es);
    memset(nv + *cap * es, 0, (nc - *cap) * es);
    *cap = nc;
    return nv;
}

static int rd_record(rd *r, const field *fs, void *base);

static void path_push(rd *r, const char *key, size_t *saved)
{
    *saved = strlen(r->path);
    if (*saved)
        snprintf(r->path + *saved, sizeof(r->path) - *saved, ".%s", key);
    else
        snprintf(r->path, sizeof(r->path), "%s", key);
}

static void path_pop(rd *r, size_t saved)
{
    r->path[saved] = 0;
}

static int rd_field(rd *r, const field *f, void *base)
{
    int rc = 0;
    int64_t sv;
    uint64_t uv;
    size_t n, cap = 0;
    switch (f->type) {
    case F_STR:
        if (!f->required && rd_peek_nil(r)) {
            r->pos++;
            return 0;
        }
        return rd_str(r, f->limit, PTR(base, f->off, char *));
    case F_CHARS: {
        const char *s;
        if ((rc = rd_strref(r, f->limit, &s, &n)))
            return rc;
        char *dst = PTR(base, f->off, char);
        memcpy(dst, s, n);
        dst[n] = 0;
        return 0;
    }
    case F_BOOL:
        return rd_bool(r, PTR(base, f->off, bool));
    case F_I32:
        if ((rc = rd_signed(r, INT32_MIN, INT32_MAX, &sv)))
            return rc;
        *PTR(base, f->off, int32_t) = (int32_t)sv;
        return 0;
    case F_I64:
        return rd_signed(r, INT64_MIN, INT64_MAX, PTR(base, f->off, int64_t));
    case F_U32:
        if ((rc = rd_unsigned(r, UINT32_MAX, &uv)))
            return rc;
        *PTR(base, f->off, uint32_t) = (uint32_t)uv;
        return 0;
    case F_U64:
        return rd_unsigned(r, UINT64_MAX, PTR(base, f->off, uint64_t));
    case F_F64: {
        double d;
        if (need(r, 1) == 0 && r->p[r->pos] != 0xca && r->p[r->pos] != 0xcb) {
            if ((rc = rd_signed(r, -(INT64_C(1) << 53), INT64_C(1) << 53, &sv)))
                return rc;
            d = (double)sv;
        } else if ((rc = rd_double(r, &d))) {
            return rc;
        }
        if (!isfinite(d))
            return rd_fail(r, GF_EPROTO, "expected a finite number, found %g", d);
        *PTR(base, f->off, double) = d;
        return 0;
    }
    case F_SIZE:
        if ((rc = rd_unsigned(r, SIZE_MAX, &uv)))
            return rc;
        *PTR(base, f->off, size_t) = (size_t)uv;
        return 0;
    case F_ENUM: {
        const char *s;
        if ((rc = rd_strref(r, GF_PROTO_MAX_NAME, &s, &n)))
            return rc;
        for (int i = 0; f->names[i]; i++)
            if (strlen(f->names[i]) == n && memcmp(f->names[i], s, n) == 0) {
                *PTR(base, f->off, int) = i;
                return 0;
            }
        char q[QUOTE_CAP];
        return rd_fail(r, GF_EPROTO, "unknown value '%s'", quoted(q, sizeof(q), s, n));
    }
    case F_STRV: {
        if ((rc = rd_container(r, false, f->limit, &n)))
            return rc;
        /* one extra slot keeps argv-style vectors NULL-terminated */
        char **v = NULL;
        size_t *cnt = PTR(base, f->count_off, size_t);
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i + 1, &cap, sizeof(char *));
            *PTR(base, f->off, char **) = v;
            if ((rc = rd_str(r, f->slimit, &v[i])))
                return rc;
            *cnt = i + 1;
        }
        if (!v)
            v = gf_calloc(1, sizeof(char *));
        *PTR(base, f->off, char **) = v;
        return 0;
    }
    case F_U64V: case F_I32V: case F_U32V: {
        size_t es = f->type == F_U64V ? 8 : 4;
        if ((rc = rd_container(r, false, f->limit, &n)))
            return rc;
        char *v = NULL;
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i, &cap, es);
            *PTR(base, f->off, char *) = v;
            if (f->type == F_U64V) {
                rc = rd_unsigned(r, UINT64_MAX, &uv);
                memcpy(v + i * es, &uv, 8);
            } else if (f->type == F_U32V) {
                rc = rd_unsigned(r, UINT32_MAX, &uv);
                uint32_t u = (uint32_t)uv;
                memcpy(v + i * es, &u, 4);
            } else {
                rc = rd_signed(r, INT32_MIN, INT32_MAX, &sv);
                int32_t s32 = (int32_t)sv;
                memcpy(v + i * es, &s32, 4);
            }
            if (rc)
                return rc;
            *PTR(base, f->count_off, size_t) = i + 1;
        }
        return 0;
    }
    case F_BIN: {
        if ((rc = need(r, 1)))
            return rc;
        uint8_t b = r->p[r->pos];
        if (b < 0xc4 || b > 0xc6)
            return wrong_type(r, "binary data");
        r->pos++;
        if ((rc = rd_be(r, (size_t)1 << (b - 0xc4), &uv)))
            return rc;
        if (uv > f->limit)
            return rd_fail(r, GF_ETOOBIG, "%llu bytes over the limit of %zu",
                           (unsigned long long)uv, f->limit);
        if ((rc = need(r, (size_t)uv)))
            return rc;
        uint8_t *v = gf_malloc((size_t)uv);
        memcpy(v, r->p + r->pos, (size_t)uv);
        r->pos += (size_t)uv;
        *PTR(base, f->off, uint8_t *) = v;
        *PTR(base, f->count_off, size_t) = (size_t)uv;
        return 0;
    }
    case F_STRUCT:
        return rd_record(r, f->sub, PTR(base, f->off, char));
    case F_OPTREC: {
        /* attached before it decodes, so a failing one is freed with the rest */
        void *v = gf_calloc(1, f->elem_size);
        *PTR(base, f->off, void *) = v;
        return rd_record(r, f->sub, v);
    }
    case F_STRUCTV: {
        if ((rc = rd_container(r, false, f->limit, &n)))
            return rc;
        char *v = NULL;
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i, &cap, f->elem_size);
            *PTR(base, f->off, char *) = v;
            /* count first, so a failing element is freed with the rest */
            *PTR(base, f->count_off, size_t) = i + 1;
            if ((rc = rd_record(r, f->sub, v + i * f->elem_size)))
                return rc;
        }
        return 0;
    }
    case F_STATS: {
        if ((rc = rd_container(r, true, f->limit, &n)))
            return rc;
        gf_stat *v = NULL;
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i, &cap, sizeof(gf_stat));
            *PTR(base, f->off, gf_stat *) = v;
            *PTR(base, f->count_off, size_t) = i + 1;
            if ((rc = rd_str(r, GF_PROTO_MAX_NAME, &v[i].key)))
                return rc;
            if ((rc = need(r, 1)))
                return rc;
            uint8_t b = r->p[r->pos];
            if (b == 0xca || b == 0xcb) {
                v[i].is_float = true;
                rc = rd_double(r, &v[i].f);
            } else {
                rc = rd_signed(r, INT64_MIN, INT64_MAX, &v[i].i);
            }
            if (rc)
                return rc;
        }
        return 0;
    }
    }
    return rd_fail(r, GF_EPROTO, "internal: unknown field type");
}

/* The n entries of one record, after its map header. Keys may come in
 * any order; each at most once; required keys must be there. */
static int rd_entries(rd *r, const field *fs, void *base, size_t n)
{
    uint64_t seen = 0;
    int rc;
    gf_proto_set_defaults(fs, base);
    for (size_t i = 0; i < n; i++) {
        const char *k;
        size_t kn;
        if ((rc = rd_strref(r, GF_PROTO_MAX_NAME, &k, &kn)))
            return rc;
        const field *f = NULL;
        int idx = 0;
        for (const field *g = fs; g->key; g++, idx++)
            if (strlen(g->key) == kn && memcmp(g->key, k, kn) == 0) {
                f = g;
                break;
            }
        if (!f) {
            char q[QUOTE_CAP];
            return rd_fail(r, GF_EPROTO, "unknown key '%s'", quoted(q, sizeof(q), k, kn));
        }
        if (seen & (1ull << idx))
            return rd_fail(r, GF_EPROTO, "duplicate key '%s'", f->key);
        seen |= 1ull << idx;
        size_t saved;
        path_push(r, f->key, &saved);
        rc = rd_field(r, f, base);
        if (rc)
            return rc;
        path_pop(r, saved);
    }
    int idx = 0;
    for (const field *f = fs; f->key; f++, idx++)
        if (f->required && !(seen & (1ull << idx)))
            return rd_fail(r, GF_EPROTO, "missing key '%s'", f->key);
    return 0;
}

static int rd_record(rd *r, const field *fs, void *base)
{
    size_t n;
    int rc = rd_container(r, true, 64, &n);
    if (rc)
        return rc;
    return rd_entries(r, fs, base, n);
}

int gf_proto_decode(const void *buf, size_t len, gf_msg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    rd r = { .p = buf, .len = len, .err = err, .errlen = errlen };
    if (errlen)
        err[0] = 0;
    if (len > GF_PROTO_MAX_FRAME)
        return rd_fail(&r, GF_ETOOBIG, "message of %zu bytes over the limit of %u", len,
                       GF_PROTO_MAX_FRAME);
    if (len == 0)
        return rd_fail(&r, GF_EPROTO, "empty message");
    size_t n;
    int rc = rd_container(&r, true, 64, &n);
    if (rc)
        return rc;
    /* The header comes first, in this order (the encoder writes it so):
     * the version decides how the rest is read. */
    const char *k;
    size_t kn;
    uint64_t version;
    if (n < 2)
        return rd_fail(&r, GF_EPROTO, "message without the keys 'v' and 'op'");
    if ((rc = rd_strref(&r, GF_PROTO_MAX_NAME, &k, &kn)))
        return rc;
    if (kn != 1 || k[0] != 'v')
        return rd_fail(&r, GF_EPROTO, "first key is not 'v' (the protocol version)");
    if (rd_unsigned(&r, UINT64_MAX, &version))
        return rd_fail(&r, GF_EPROTO, "key 'v': not a version number");
    if (version != GF_PROTO_VERSION)
        return rd_fail(&r, GF_EPROTO, "unsupported protocol version %llu (this side speaks %d)",
                       (unsigned long long)version, GF_PROTO_VERSION);
    if ((rc = rd_strref(&r, GF_PROTO_MAX_NAME, &k, &kn)))
        return rc;
    if (kn != 2 || memcmp(k, "op", 2) != 0)
        return rd_fail(&r, GF_EPROTO, "second key is not 'op' (the operation)");
    const char *opname;
    size_t opn;
    if (rd_strref(&r, GF_PROTO_MAX_NAME, &opname, &opn))
        return rd_fail(&r, GF_EPROTO, "key 'op': not an operation name");
    gf_op op = GF_OP_NONE;
    for (int i = 1; i < GF_OP_COUNT_; i++)
        if (strlen(gf_proto_ops[i].name) == opn && memcmp(gf_proto_ops[i].name, opname, opn) == 0) {
            op = (gf_op)i;
            break;
        }
    if (op == GF_OP_NONE) {
        char q[QUOTE_CAP];
        return rd_fail(&r, GF_EPROTO, "unknown operation '%s'", quoted(q, sizeof(q), opname, opn));
    }
    rc = rd_entries(&r, gf_proto_ops[op].fields, out, n - 2);
    if (rc == 0 && r.pos != r.len)
        rc = rd_fail(&r, GF_EPROTO, "%zu bytes of trailing data after the message",
                     r.len - r.pos);
    if (rc) {
        gf_msg_clear(out);
        return rc;
    }
    out->op = op;
    return 0;
}

void gf_msg_errorv(gf_msg *msg, int code, const char *fmt, va_list ap)
{
    memset(msg, 0, sizeof(*msg));
    msg->op = GF_OP_ERROR;
    msg->code = code;
    char text[1024];
    vsnprintf(text, sizeof(text), fmt, ap);
    /* it may quote what a peer sent: valid UTF-8 for strict decoders */
    msg->message = gf_utf8_escape_dup(text);
}
