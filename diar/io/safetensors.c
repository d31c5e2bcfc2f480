/* safetensors.c — memory-mapped safetensors files, checked on open.
 *
 * The model loaders (segmentation, embedding, `gpuflock models check`) read
 * their weights through this module. Everything that could make a tensor
 * pointer wrong is checked once in gf_safetensors_open, so that the networks
 * can take pointers into the mapping without further checks: the file is
 * outside input, the networks are not. */
#include "diar/io/safetensors.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* A header larger than this is not a model file (the safetensors format caps
 * it at 100 MB too). */
#define MAX_HEADER_BYTES (100u * 1000u * 1000u)

typedef struct {
    gf_safetensors_tensor t;   /* what callers see */
    uint64_t begin, end;       /* byte range relative to the data region */
    int used;                  /* fetched by gf_safetensors_get */
} entry;

struct gf_safetensors {
    char *path;            /* as given to open */
    void *map;             /* the whole file, read-only */
    size_t map_len;        /* file size */
    entry *entries;        /* sorted by begin offset */
    size_t count;          /* number of entries */
};

static int dtype_size(const char *dtype)
{
    static const struct { const char *name; int size; } known[] = {
        { "F64", 8 }, { "F32", 4 }, { "F16", 2 }, { "BF16", 2 }, { "I64", 8 },
        { "I32", 4 }, { "I16", 2 }, { "I8", 1 }, { "U64", 8 }, { "U32", 4 },
        { "U16", 2 }, { "U8", 1 }, { "BOOL", 1 },
    };
    for (size_t i = 0; i < GF_ARRAY_LEN(known); i++)
        if (strcmp(known[i].name, dtype) == 0)
            return known[i].size;
    return 0;
}

static int cmp_begin(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    /* Empty tensors first so that a zero-length range never hides a gap. */
    return (x->end > y->end) - (x->end < y->end);
}

static void shape_str(char *buf, size_t len, int ndim, const int64_t *shape)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%lld", i ? "," : "", (long long)shape[i]);
    if (n < len)
        snprintf(buf + n, len - n, "]");
}

/* Fill e from one header entry; 0 or GF_EINVAL after logging. */
static int parse_entry(const char *path, const char *name, json_object *val,
                       uint64_t data_len, entry *e)
{
    json_object *jd, *js, *jo;
    if (!json_object_is_type(val, json_type_object) ||
        !json_object_object_get_ex(val, "dtype", &jd) ||
        !json_object_object_get_ex(val, "shape", &js) ||
        !json_object_object_get_ex(val, "data_offsets", &jo) ||
        !json_object_is_type(jd, json_type_string) ||
        !json_object_is_type(js, json_type_array) ||
        !json_object_is_type(jo, json_type_array)) {
        GF_ERROR("%s: tensor %s: header entry needs dtype (string), shape and data_offsets (arrays)",
                 path, name);
        return GF_EINVAL;
    }
    e->t.name = name;
    e->t.dtype = json_object_get_string(jd);
    int size = dtype_size(e->t.dtype);
    if (size == 0) {
        GF_ERROR("%s: tensor %s: unknown dtype \"%s\"", path, name, e->t.dtype);
        return GF_EINVAL;
    }
    if (strcmp(e->t.dtype, "F32") != 0 && strcmp(e->t.dtype, "I64") != 0) {
        GF_ERROR("%s: tensor %s: dtype %s not supported (F32 weights, I64 counters)",
                 path, name, e->t.dtype);
        return GF_EUNSUP;
    }
    size_t nd = json_object_array_length(js);
    if (nd > GF_SAFETENSORS_MAX_DIMS) {
        GF_ERROR("%s: tensor %s: %zu dimensions (at most %d)", path, name, nd,
                 GF_SAFETENSORS_MAX_DIMS);
        return GF_EINVAL;
    }
    e->t.ndim = (int)nd;
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        json_object *d = json_object_array_get_idx(js, i);
        if (!json_object_is_type(d, json_type_int) || json_object_get_int64(d) < 0 ||
            json_object_get_int64(d) > (int64_t)1 << 40) {
            GF_ERROR("%s: tensor %s: shape entry %zu is not a sane non-negative integer",
                     path, name, i);
            return GF_EINVAL;
        }
        e->t.shape[i] = json_object_get_int64(d);
        numel *= (uint64_t)e->t.shape[i];
        if (numel > (uint64_t)1 << 40) {
            GF_ERROR("%s: tensor %s: shape too large", path, name);
            return GF_EINVAL;
        }
    }
    e->t.numel = (int64_t)numel;
    if (json_object_array_length(jo) != 2) {
        GF_ERROR("%s: tensor %s: data_offsets needs two entries", path, name);
        return GF_EINVAL;
    }
    json_object *b = json_object_array_get_idx(jo, 0), *en = json_object_array_get_idx(jo, 1);
    if (!json_object_is_type(b, json_type_int) || !json_object_is_type(en, json_type_int) ||
        json_object_get_int64(b) < 0 || json_object_get_int64(en) < json_object_get_int64(b)) {
        GF_ERROR("%s: tensor %s: data_offsets must be integers 0 <= begin <= end", path, name);
        return GF_EINVAL;
    }
    e->begin = (uint64_t)json_object_get_int64(b);
    e->end = (uint64_t)json_object_get_int64(en);
    if (e->end > data_len) {
        GF_ERROR("%s: tensor %s: data [%llu, %llu) beyond the end of the file (%llu data bytes): "
                 "truncated?", path, name, (unsigned long long)e->begin,
                 (unsigned long long)e->end, (unsigned long long)data_len);
        return GF_EINVAL;
    }
    if (e->end - e->begin != numel * (uint64_t)size) {
        char s[160];
        shape_str(s, sizeof s, e->t.ndim, e->t.shape);
        GF_ERROR("%s: tensor %s: %llu bytes for shape %s of %s (%llu expected)", path, name,
                 (unsigned long long)(e->end - e->begin), s, e->t.dtype,
                 (unsigned long long)(numel * (uint64_t)size));
        return GF_EINVAL;
    }
    return 0;
}

gf_safetensors *gf_safetensors_open(const char *path, const char *sha256_hex)
{
    gf_safetensors *self = gf_calloc(1, sizeof *self);
    json_tokener *tok = NULL;
    json_object *root = NULL;
    self->path = gf_strdup(path);

    struct stat st;
    int fd = gf_open_regular(path, 0, &st);
    if (fd == GF_ENOENT)
        GF_ERROR("%s: cannot open: %s", path, strerror(ENOENT));
    if (fd < 0)
        goto fail;
    if (st.st_size < 8) {
        GF_ERROR("%s: %lld bytes: too short for a safetensors file (truncated?)", path,
                 (long long)st.st_size);
        close(fd);
        goto fail;
    }
    self->map_len = (size_t)st.st_size;
    self->map = mmap(NULL, self->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (self->map == MAP_FAILED) {
        self->map = NULL;
        GF_ERROR("%s: cannot map: %s", path, strerror(errno));
        goto fail;
    }
    if (sha256_hex) {
        char got[GF_SHA256_HEX_LEN];
        gf_sha256_hex(self->map, self->map_len, got);
        if (strcasecmp(got, sha256_hex) != 0) {
            GF_ERROR("%s: SHA-256 %s does not match the manifest's %s", path, got, sha256_hex);
            goto fail;
        }
    }

    const unsigned char *p = self->map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = (hlen << 8) | p[i];
    if (hlen > MAX_HEADER_BYTES || hlen > self->map_len - 8) {
        GF_ERROR("%s: header length %llu does not fit in the file (%zu bytes): truncated or "
                 "not safetensors", path, (unsigned long long)hlen, self->map_len);
        goto fail;
    }
    tok = json_tokener_new();
    root = json_tokener_parse_ex(tok, (const char *)p + 8, (int)hlen);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    if (!root || jerr != json_tokener_success) {
        GF_ERROR("%s: header is not valid JSON: %s", path,
                 jerr == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(jerr));
        goto fail;
    }
    for (size_t i = json_tokener_get_parse_end(tok); i < hlen; i++)
        if (p[8 + i] != ' ') {
            GF_ERROR("%s: header has bytes after its JSON object", path);
            goto fail;
        }
    if (!json_object_is_type(root, json_type_object)) {
        GF_ERROR("%s: header is not a JSON object", path);
        goto fail;
    }
    uint64_t data_off = 8 + hlen, data_len = self->map_len - data_off;
    self->entries = gf_calloc((size_t)json_object_object_length(root) + 1, sizeof(entry));
    json_object_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0)
            continue;
        entry *e = &self->entries[self->count];
        if (parse_entry(path, key, val, data_len, e) != 0)
            goto fail;
        e->t.name = gf_strdup(key);
        e->t.dtype = gf_strdup(e->t.dtype);
        self->count++;
        e->t.data = p + data_off + e->begin;
        if ((data_off + e->begin) % (uint64_t)dtype_size(e->t.dtype) != 0) {
            GF_ERROR("%s: tensor %s: data at byte %llu is not aligned to its dtype %s", path,
                     key, (unsigned long long)(data_off + e->begin), e->t.dtype);
            goto fail;
        }
    }
    qsort(self->entries, self->count, sizeof(entry), cmp_begin);
    uint64_t at = 0;
    for (size_t i = 0; i < self->count; i++) {
        const entry *e = &self->entries[i];
        if (e->begin != at) {
            GF_ERROR("%s: tensor %s: data starts at %llu, %s at %llu", path, e->t.name,
                     (unsigned long long)e->begin,
                     e->begin < at ? "overlapping the previous tensor which ends" :
                                     "leaving a gap after the previous tensor which ends",
                     (unsigned long long)at);
            goto fail;
        }
        at = e->end;
    }
    if (at != data_len) {
        GF_ERROR("%s: %llu bytes after the last tensor's data (the data region must be covered "
                 "exactly)", path, (unsigned long long)(data_len - at));
        goto fail;
    }
    for (size_t i = 0; i < self->count; i++) {
        const entry *e = &self->entries[i];
        if (strcmp(e->t.dtype, "F32") != 0)
            continue;
        const float *f = e->t.data;
        for (int64_t k = 0; k < e->t.numel; k++)
            if (!isfinite(f[k])) {
                GF_ERROR("%s: tensor %s: element %lld is not finite (%g)", path, e->t.name,
                         (long long)k, (double)f[k]);
                goto fail;
            }
    }
    json_object_put(root);
    json_tokener_free(tok);
    return self;
fail:
    if (root)
        json_object_put(root);
    if (tok)
        json_tokener_free(tok);
    gf_safetensors_destroy(&self);
    return NULL;
}

void gf_safetensors_destroy(gf_safetensors **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_safetensors *self = *self_p;
    for (size_t i = 0; i < self->count; i++) {
        free((char *)self->entries[i].t.name);
        free((char *)self->entries[i].t.dtype);
    }
    free(self->entries);
    if (self->map)
        munmap(self->map, self->map_len);
    free(self->path);
    free(self);
    *self_p = NULL;
}

const char *gf_safetensors_path(const gf_safetensors *self)
{
    return self->path;
}

size_t gf_safetensors_count(const gf_safetensors *self)
{
    return self->count;
}

const gf_safetensors_tensor *gf_safetensors_at(const gf_safetensors *self, size_t i)
{
    return i < self->count ? &self->entries[i].t : NULL;
}

static entry *find_entry(const gf_safetensors *self, const char *name)
{
    for (size_t i = 0; i < self->count; i++)
        if (strcmp(self->entries[i].t.name, name) == 0)
            return &self->entries[i];
    return NULL;
}

const gf_safetensors_tensor *gf_safetensors_find(const gf_safetensors *self, const char *name)
{
    entry *e = find_entry(self, name);
    return e ? &e->t : NULL;
}

const float *gf_safetensors_get(gf_safetensors *self, const char *name, int ndim, ...)
{
    if (ndim < 0 || ndim > GF_SAFETENSORS_MAX_DIMS)
        return NULL;
    int64_t want[GF_SAFETENSORS_MAX_DIMS];
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim; i++)
        want[i] = va_arg(ap, int);
    va_end(ap);
    entry *e = find_entry(self, name);
    if (!e) {
        GF_ERROR("%s: tensor %s: missing", self->path, name);
        return NULL;
    }
    if (strcmp(e->t.dtype, "F32") != 0) {
        GF_ERROR("%s: tensor %s: dtype %s, F32 expected", self->path, name, e->t.dtype);
        return NULL;
    }
    int same = e->t.ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = e->t.shape[i] == want[i];
    if (!same) {
        char a[160], b[160];
        shape_str(a, sizeof a, e->t.ndim, e->t.shape);
        shape_str(b, sizeof b, ndim, want);
        GF_ERROR("%s: tensor %s: shape %s, %s expected", self->path, name, a, b);
        return NULL;
    }
    e->used = 1;
    return e->t.data;
}

int gf_safetensors_unused(const gf_safetensors *self)
{
    int n = 0;
    for (size_t i = 0; i < self->count; i++) {
        const entry *e = &self->entries[i];
        if (e->used || strcmp(e->t.dtype, "F32") != 0)
            continue;
        GF_ERROR("%s: tensor %s: unexpected (not part of this network)", self->path, e->t.name);
        n++;
    }
    return n;
}
