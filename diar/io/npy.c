/* npy.c — NumPy .npy reading and writing (see npy.h).
 *
 * The .npy format: the magic "\x93NUMPY", a version (1.0: 2-byte header
 * length; 2.0 and 3.0: 4-byte), then a Python dict literal with 'descr',
 * 'fortran_order' and 'shape', padded with spaces to an aligned length and
 * ended by '\n', then the raw elements. (.npz, a zip archive of such files,
 * is npz.c.) Only little-endian hosts are supported (checked at compile
 * time). */
#include "diar/io/npy.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host"
#endif

static const struct {
    gf_npy_dtype dtype;
    const char *descr;   /* as numpy writes it */
    char kind;           /* 'f', 'i', 'u', 'b' */
    size_t size;
} dtypes[] = {
    { GF_NPY_F32, "<f4", 'f', 4 },  { GF_NPY_F64, "<f8", 'f', 8 },
    { GF_NPY_I8, "|i1", 'i', 1 },   { GF_NPY_I16, "<i2", 'i', 2 },
    { GF_NPY_I32, "<i4", 'i', 4 },  { GF_NPY_I64, "<i8", 'i', 8 },
    { GF_NPY_U8, "|u1", 'u', 1 },   { GF_NPY_U16, "<u2", 'u', 2 },
    { GF_NPY_U32, "<u4", 'u', 4 },  { GF_NPY_U64, "<u8", 'u', 8 },
    { GF_NPY_BOOL, "|b1", 'b', 1 },
};

size_t gf_npy_itemsize(gf_npy_dtype dtype)
{
    for (size_t i = 0; i < GF_ARRAY_LEN(dtypes); i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].size;
    return 0;
}

const char *gf_npy_dtype_name(gf_npy_dtype dtype)
{
    for (size_t i = 0; i < GF_ARRAY_LEN(dtypes); i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].descr;
    return "?";
}

gf_npy_array *gf_npy_new(gf_npy_dtype dtype, int ndim, const size_t *shape)
{
    assert(ndim >= 0 && ndim <= GF_NPY_MAX_DIMS);
    gf_npy_array *a = gf_calloc(1, sizeof *a);
    a->dtype = dtype;
    a->ndim = ndim;
    a->count = 1;
    for (int i = 0; i < ndim; i++) {
        a->shape[i] = shape[i];
        a->count *= shape[i];
    }
    a->data = gf_calloc(a->count ? a->count : 1, gf_npy_itemsize(dtype));
    return a;
}

void gf_npy_destroy(gf_npy_array **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->data);
    free(*self_p);
    *self_p = NULL;
}

void gf_npy_shape_str(const gf_npy_array *a, char *buf, size_t size)
{
    size_t off = 0;
    off += (size_t)snprintf(buf + off, size - off, "(");
    for (int i = 0; i < a->ndim && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, "%s%zu", i ? ", " : "", a->shape[i]);
    if (off < size)
        snprintf(buf + off, size - off, a->ndim == 1 ? ",)" : ")");
}

int gf_npy_check_shape(const char *name, const gf_npy_array *a, int ndim, const size_t *want)
{
    bool ok = a->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        if (want[i] != (size_t)-1 && want[i] != a->shape[i])
            ok = false;
    if (ok)
        return 0;
    char got[128], exp[128];
    gf_npy_shape_str(a, got, sizeof got);
    size_t off = (size_t)snprintf(exp, sizeof exp, "(");
    for (int i = 0; i < ndim && off < sizeof exp; i++) {
        if (want[i] == (size_t)-1)
            off += (size_t)snprintf(exp + off, sizeof exp - off, "%s*", i ? ", " : "");
        else
            off += (size_t)snprintf(exp + off, sizeof exp - off, "%s%zu", i ? ", " : "", want[i]);
    }
    if (off < sizeof exp)
        snprintf(exp + off, sizeof exp - off, ndim == 1 ? ",)" : ")");
    GF_ERROR("%s: expected shape %s, got %s", name, exp, got);
    return GF_EINVAL;
}

/* ---- header parsing ------------------------------------------------- */

/* Find the value after "'key':" in the header dict; NULL if absent. */
static const char *dict_value(const char *hdr, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (!p)
        return NULL;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    if (*p != ':')
        return NULL;
    p++;
    while (*p == ' ')
        p++;
    return p;
}

static int parse_header(const char *name, const char *hdr, gf_npy_dtype *dtype, int *ndim,
                        size_t *shape)
{
    const char *d = dict_value(hdr, "descr");
    if (!d || (*d != '\'' && *d != '"')) {
        GF_ERROR("%s: malformed .npy header: no 'descr'", name);
        return GF_EINVAL;
    }
    char quote = *d++;
    const char *end = strchr(d, quote);
    if (!end || end - d > 16) {
        GF_ERROR("%s: malformed .npy header: bad 'descr'", name);
        return GF_EINVAL;
    }
    char descr[20];
    memcpy(descr, d, (size_t)(end - d));
    descr[end - d] = '\0';
    if (descr[0] == '>') {
        GF_ERROR("%s: big-endian data ('%s') is not supported; save it little-endian", name, descr);
        return GF_EUNSUP;
    }
    bool found = false;
    if ((descr[0] == '<' || descr[0] == '|' || descr[0] == '=') && strlen(descr) == 3) {
        for (size_t i = 0; i < GF_ARRAY_LEN(dtypes); i++) {
            if (descr[1] == dtypes[i].kind && (size_t)(descr[2] - '0') == dtypes[i].size) {
                /* one-byte types have no byte order; '<' and '|' both fine */
                *dtype = dtypes[i].dtype;
                found = true;
                break;
            }
        }
    }
    if (!found) {
        GF_ERROR("%s: unsupported dtype '%s' (supported: f4 f8 i1-i8 u1-u8 b1)", name, descr);
        return GF_EUNSUP;
    }
    const char *f = dict_value(hdr, "fortran_order");
    if (!f) {
        GF_ERROR("%s: malformed .npy header: no 'fortran_order'", name);
        return GF_EINVAL;
    }
    if (strncmp(f, "True", 4) == 0) {
        GF_ERROR("%s: Fortran-order arrays are not supported; save with C order", name);
        return GF_EUNSUP;
    }
    if (strncmp(f, "False", 5) != 0) {
        GF_ERROR("%s: malformed .npy header: bad 'fortran_order'", name);
        return GF_EINVAL;
    }
    const char *s = dict_value(hdr, "shape");
    if (!s || *s != '(') {
        GF_ERROR("%s: malformed .npy header: no 'shape'", name);
        return GF_EINVAL;
    }
    s++;
    *ndim = 0;
    for (;;) {
        while (*s == ' ' || *s == ',')
            s++;
        if (*s == ')')
            break;
        if (*s < '0' || *s > '9' || *ndim >= GF_NPY_MAX_DIMS) {
            GF_ERROR("%s: malformed or unsupported .npy shape", name);
            return GF_EINVAL;
        }
        char *e;
        errno = 0;
        unsigned long long v = strtoull(s, &e, 10);
        if (errno || v > ((size_t)1 << 48)) {
            GF_ERROR("%s: .npy shape dimension out of range", name);
            return GF_EINVAL;
        }
        while (*e == 'L')
            e++;
        shape[(*ndim)++] = (size_t)v;
        s = e;
        if (*s != ',' && *s != ')' && *s != ' ') {
            GF_ERROR("%s: malformed .npy shape", name);
            return GF_EINVAL;
        }
    }
    return 0;
}

int gf_npy_parse(const char *name, const void *buf, size_t len, gf_npy_array **out)
{
    const unsigned char *b = buf;
    *out = NULL;
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) {
        GF_ERROR("%s: not a .npy file (bad magic)", name);
        return GF_EINVAL;
    }
    unsigned major = b[6];
    size_t hlen, hoff;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hoff = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) {
            GF_ERROR("%s: truncated .npy header", name);
            return GF_EINVAL;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hoff = 12;
    } else {
        GF_ERROR("%s: unsupported .npy format version %u.%u", name, major, b[7]);
        return GF_EUNSUP;
    }
    if (hlen > len - hoff) {
        GF_ERROR("%s: truncated .npy header (%zu bytes declared, %zu present)", name, hlen,
                 len - hoff);
        return GF_EINVAL;
    }
    char *hdr = gf_malloc(hlen + 1);
    memcpy(hdr, b + hoff, hlen);
    hdr[hlen] = '\0';
    gf_npy_dtype dtype;
    int ndim;
    size_t shape[GF_NPY_MAX_DIMS];
    int rc = parse_header(name, hdr, &dtype, &ndim, shape);
    free(hdr);
    if (rc)
        return rc;
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && count > SIZE_MAX / 16 / shape[i]) {
            GF_ERROR("%s: .npy shape too large", name);
            return GF_EINVAL;
        }
        count *= shape[i];
    }
    size_t need = count * gf_npy_itemsize(dtype);
    size_t have = len - hoff - hlen;
    if (have < need) {
        GF_ERROR("%s: truncated .npy data (%zu bytes expected, %zu present)", name, need, have);
        return GF_EINVAL;
    }
    gf_npy_array *a = gf_npy_new(dtype, ndim, shape);
    memcpy(a->data, b + hoff + hlen, need);
    *out = a;
    return 0;
}

int gf_npy_read_file(const char *path, long long max, unsigned char **buf, size_t *len)
{
    int fd = gf_open_regular(path, max, NULL);
    if (fd == GF_ENOENT)
        GF_ERROR("%s: cannot open: %s", path, strerror(ENOENT));
    if (fd < 0)
        return fd;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        GF_ERROR("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return GF_EIO;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *b = gf_malloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            b = gf_realloc(b, cap);
        }
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        GF_ERROR("%s: read error", path);
        fclose(f);
        free(b);
        return GF_EIO;
    }
    fclose(f);
    *buf = b;
    *len = n;
    return 0;
}

int gf_npy_load(const char *path, gf_npy_array **out)
{
    unsigned char *buf;
    size_t len;
    *out = NULL;
    int rc = gf_npy_read_file(path, GF_NPY_FILE_MAX, &buf, &len);
    if (rc)
        return rc;
    rc = gf_npy_parse(path, buf, len, out);
    free(buf);
    return rc;
}

/* ---- writing -------------------------------------------------------- */

void *gf_npy_serialize(const gf_npy_array *a, size_t *len)
{
    char dict[512];
    int off = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       gf_npy_dtype_name(a->dtype));
    for (int i = 0; i < a->ndim; i++)
        off += snprintf(dict + off, sizeof dict - (size_t)off, "%s%zu", i ? ", " : "", a->shape[i]);
    off += snprintf(dict + off, sizeof dict - (size_t)off, "%s), }", a->ndim == 1 ? "," : "");
    size_t dlen = (size_t)off;
    /* total header (magic+version+len+dict+pad+'\n') aligned to 64 bytes */
    size_t pre = 10;
    size_t total = (pre + dlen + 1 + 63) / 64 * 64;
    if (total - pre > 65535) {
        pre = 12;
        total = (pre + dlen + 1 + 63) / 64 * 64;
    }
    size_t hlen = total - pre;
    size_t nbytes = a->count * gf_npy_itemsize(a->dtype);
    unsigned char *b = gf_malloc(total + nbytes);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = pre == 10 ? 1 : 2;
    b[7] = 0;
    b[8] = (unsigned char)(hlen & 0xff);
    b[9] = (unsigned char)(hlen >> 8 & 0xff);
    if (pre == 12) {
        b[10] = (unsigned char)(hlen >> 16 & 0xff);
        b[11] = (unsigned char)(hlen >> 24 & 0xff);
    }
    memcpy(b + pre, dict, dlen);
    memset(b + pre + dlen, ' ', hlen - dlen - 1);
    b[total - 1] = '\n';
    if (nbytes)
        memcpy(b + total, a->data, nbytes);
    *len = total + nbytes;
    return b;
}

int gf_npy_save_as(const char *path, const gf_npy_array *a, bool replace)
{
    size_t len;
    void *b = gf_npy_serialize(a, &len);
    int rc = gf_write_file(path, b, len, replace);
    free(b);
    return rc;
}

int gf_npy_save(const char *path, const gf_npy_array *a)
{
    return gf_npy_save_as(path, a, true);
}

/* ---- conversions ---------------------------------------------------- */

#define CONVERT(T, a, dst)                                                     \
    do {                                                                       \
        const void *src_ = (a)->data;                                          \
        for (size_t i_ = 0; i_ < (a)->count; i_++) {                           \
            switch ((a)->dtype) {                                              \
            case GF_NPY_F32: dst[i_] = (T)((const float *)src_)[i_]; break;    \
            case GF_NPY_F64: dst[i_] = (T)((const double *)src_)[i_]; break;   \
            case GF_NPY_I8: dst[i_] = (T)((const int8_t *)src_)[i_]; break;    \
            case GF_NPY_I16: dst[i_] = (T)((const int16_t *)src_)[i_]; break;  \
            case GF_NPY_I32: dst[i_] = (T)((const int32_t *)src_)[i_]; break;  \
            case GF_NPY_I64: dst[i_] = (T)((const int64_t *)src_)[i_]; break;  \
            case GF_NPY_U8: dst[i_] = (T)((const uint8_t *)src_)[i_]; break;   \
            case GF_NPY_U16: dst[i_] = (T)((const uint16_t *)src_)[i_]; break; \
            case GF_NPY_U32: dst[i_] = (T)((const uint32_t *)src_)[i_]; break; \
            case GF_NPY_U64: dst[i_] = (T)((const uint64_t *)src_)[i_]; break; \
            case GF_NPY_BOOL: dst[i_] = (T)(((const uint8_t *)src_)[i_] != 0); break; \
            }                                                                  \
        }                                                                      \
    } while (0)

double *gf_npy_to_f64(const gf_npy_array *a)
{
    double *d = gf_malloc((a->count ? a->count : 1) * sizeof *d);
    CONVERT(double, a, d);
    return d;
}

float *gf_npy_to_f32(const gf_npy_array *a)
{
    float *d = gf_malloc((a->count ? a->count : 1) * sizeof *d);
    CONVERT(float, a, d);
    return d;
}

int64_t *gf_npy_to_i64(const gf_npy_array *a)
{
    int64_t *d = gf_malloc((a->count ? a->count : 1) * sizeof *d);
    CONVERT(int64_t, a, d);
    return d;
}
