/* proto_encode.c — messages to msgpack bytes, driven by the tables of
 * proto.c (see proto.h). */
#include "net/proto_table.h"

#include "common/error.h"
#include "common/utf8.h"
#include "common/util.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- encode */

typedef struct {
    msgpack_packer pk;
    int rc;
    char what[160];   /* the field that broke a limit (logged by the caller) */
} enc;

static void enc_fail(enc *e, int rc, const char *key, const char *why)
{
    if (e->rc == 0) {
        e->rc = rc;
        snprintf(e->what, sizeof(e->what), "key '%s': %s", key, why);
    }
}

static void pack_cstr(enc *e, const char *s, size_t len)
{
    msgpack_pack_str(&e->pk, len);
    msgpack_pack_str_body(&e->pk, s, len);
}

static void pack_string(enc *e, const field *f, const char *s, size_t limit, bool nil_ok)
{
    if (!s) {
        if (!nil_ok)
            enc_fail(e, GF_EINVAL, f->key, "required string is NULL");
        msgpack_pack_nil(&e->pk);
        return;
    }
    size_t n = strlen(s);
    if (n > limit)
        enc_fail(e, GF_ETOOBIG, f->key, "string over the limit");
    pack_cstr(e, s, n);
}

static void pack_record(enc *e, const field *fs, const void *base);

static void pack_field(enc *e, const field *f, const void *base)
{
    size_t n = f->count_off ? *CPTR(base, f->count_off, size_t) : 0;
    if (f->count_off && f->type != F_BIN && n > f->limit) {
        enc_fail(e, GF_ETOOBIG, f->key, "array over the limit");
        n = 0;
    }
    switch (f->type) {
    case F_STR:
        pack_string(e, f, *CPTR(base, f->off, char *), f->limit, !f->required);
        break;
    case F_CHARS: {
        const char *s = CPTR(base, f->off, char);
        pack_cstr(e, s, strnlen(s, f->limit));
        break;
    }
    case F_BOOL:
        if (*CPTR(base, f->off, bool))
            msgpack_pack_true(&e->pk);
        else
            msgpack_pack_false(&e->pk);
        break;
    case F_I32: msgpack_pack_int64(&e->pk, *CPTR(base, f->off, int32_t)); break;
    case F_I64: msgpack_pack_int64(&e->pk, *CPTR(base, f->off, int64_t)); break;
    case F_U32: msgpack_pack_uint64(&e->pk, *CPTR(base, f->off, uint32_t)); break;
    case F_U64: msgpack_pack_uint64(&e->pk, *CPTR(base, f->off, uint64_t)); break;
    case F_F64: msgpack_pack_double(&e->pk, *CPTR(base, f->off, double)); break;
    case F_SIZE: msgpack_pack_uint64(&e->pk, *CPTR(base, f->off, size_t)); break;
    case F_ENUM: {
        int v = *CPTR(base, f->off, int);
        if (v < 0 || (size_t)v >= gf_proto_enum_count(f->names)) {
            enc_fail(e, GF_EINVAL, f->key, "enum value out of range");
            v = 0;
        }
        pack_cstr(e, f->names[v], strlen(f->names[v]));
        break;
    }
    case F_STRV: {
        char *const *v = *(char **const *)CPTR(base, f->off, char);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            pack_string(e, f, v[i], f->slimit, false);
        break;
    }
    case F_U64V: {
        const uint64_t *v = *CPTR(base, f->off, uint64_t *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            msgpack_pack_uint64(&e->pk, v[i]);
        break;
    }
    case F_I32V: {
        const int32_t *v = *CPTR(base, f->off, int32_t *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            msgpack_pack_int64(&e->pk, v[i]);
        break;
    }
    case F_U32V: {
        const uint32_t *v = *CPTR(base, f->off, uint32_t *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            msgpack_pack_uint64(&e->pk, v[i]);
        break;
    }
    case F_BIN: {
        const uint8_t *v = *CPTR(base, f->off, uint8_t *);
        if (n > f->limit) {
            enc_fail(e, GF_ETOOBIG, f->key, "bytes over the limit");
            n = 0;
        }
        if (!v)
            n = 0;
        msgpack_pack_bin(&e->pk, n);
        msgpack_pack_bin_body(&e->pk, v, n);
        break;
    }
    case F_STRUCT:
        pack_record(e, f->sub, CPTR(base, f->off, char));
        break;
    case F_OPTREC:
        /* only reached when present (field_present) */
        pack_record(e, f->sub, *CPTR(base, f->off, void *));
        break;
    case F_STRUCTV: {
        const char *v = *CPTR(base, f->off, char *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            pack_record(e, f->sub, v + i * f->elem_size);
        break;
    }
    case F_STATS: {
        const gf_stat *v = *CPTR(base, f->off, gf_stat *);
        if (!v)
            n = 0;
        msgpack_pack_map(&e->pk, n);
        for (size_t i = 0; i < n; i++) {
            pack_string(e, f, v[i].key, GF_PROTO_MAX_NAME, false);
            if (v[i].is_float)
                msgpack_pack_double(&e->pk, v[i].f);
            else
                msgpack_pack_int64(&e->pk, v[i].i);
        }
        break;
    }
    }
}

/* Is the key written? Every key is, except an omittable one at its default. */
static bool field_present(const field *f, const void *base)
{
    if (f->type == F_OPTREC)
        return *CPTR(base, f->off, void *) != NULL;
    if (!f->omit)
        return true;
    switch (f->type) {
    case F_BOOL: return *CPTR(base, f->off, bool);
    case F_I32: return *CPTR(base, f->off, int32_t) != (int32_t)f->def;
    case F_I64: return *CPTR(base, f->off, int64_t) != f->def;
    case F_U32: return *CPTR(base, f->off, uint32_t) != 0;
    case F_F64: return *CPTR(base, f->off, double) != 0.0;
    case F_STR: return *CPTR(base, f->off, char *) != NULL;
    case F_ENUM: return *CPTR(base, f->off, int) != 0;
    case F_STATS: case F_STRV: case F_U64V: case F_I32V: case F_U32V:
        return *CPTR(base, f->count_off, size_t) != 0;
    default: return true;
    }
}

static size_t count_present(const field *fs, const void *base)
{
    size_t n = 0;
    for (const field *f = fs; f->key; f++)
        n += field_present(f, base);
    return n;
}

static void pack_record(enc *e, const field *fs, const void *base)
{
    msgpack_pack_map(&e->pk, count_present(fs, base));
    for (const field *f = fs; f->key; f++) {
        if (!field_present(f, base))
            continue;
        pack_cstr(e, f->key, strlen(f->key));
        pack_field(e, f, base);
    }
}

int gf_proto_encode(const gf_msg *msg, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    const char *name = gf_proto_op_name(msg->op);
    if (!name)
        return GF_EINVAL;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    enc e = { .rc = 0 };
    msgpack_packer_init(&e.pk, &sb, msgpack_sbuffer_write);
    const field *fs = gf_proto_ops[msg->op].fields;
    msgpack_pack_map(&e.pk, 2 + count_present(fs, msg));
    pack_cstr(&e, "v", 1);
    msgpack_pack_uint64(&e.pk, GF_PROTO_VERSION);
    pack_cstr(&e, "op", 2);
    pack_cstr(&e, name, strlen(name));
    for (const field *f = fs; f->key; f++) {
        if (!field_present(f, msg))
            continue;
        pack_cstr(&e, f->key, strlen(f->key));
        pack_field(&e, f, msg);
    }
    if (e.rc == 0 && sb.size > GF_PROTO_MAX_FRAME)
        enc_fail(&e, GF_ETOOBIG, name, "message over the frame limit");
    if (e.rc != 0) {
        msgpack_sbuffer_destroy(&sb);
        return e.rc;
    }
    *len = sb.size;
    *buf = (uint8_t *)msgpack_sbuffer_release(&sb);
    if (!*buf)            /* an empty buffer never happens: the map header is there */
        return GF_EINVAL;
    return 0;
}
