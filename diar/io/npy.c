/* npy.c — NumPy .npy/.npz reading and writing (see npy.h).
 *
 * The .npy format: the magic "\x93NUMPY", a version (1.0: 2-byte header
 * length; 2.0 and 3.0: 4-byte), then a Python dict literal with 'descr',
 * 'fortran_order' and 'shape', padded with spaces to an aligned length and
 * ended by '\n', then the raw elements. .npz is a zip archive of such files;
 * we read the central directory (authoritative sizes, numpy writes data
 * descriptors), check each member's CRC-32 and inflate deflated members with
 * zlib. Only little-endian hosts are supported (checked at compile time). */
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
#include <zlib.h>

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

static int read_file(const char *path, unsigned char **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        GF_ERROR("%s: cannot open: %s", path, strerror(e));
        return e == ENOENT ? GF_ENOENT : GF_EIO;
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
    int rc = read_file(path, &buf, &len);
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

int gf_npy_save(const char *path, const gf_npy_array *a)
{
    size_t len;
    void *b = gf_npy_serialize(a, &len);
    int rc = gf_write_file_atomic(path, b, len);
    free(b);
    return rc;
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

/* ---- .npz ----------------------------------------------------------- */

struct gf_npz {
    size_t n;               /* members */
    char **names;           /* member names without ".npy" */
    gf_npy_array **arrays;  /* their arrays */
};

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static void npz_add(gf_npz *z, const char *name, size_t nlen, gf_npy_array *a)
{
    z->names = gf_realloc(z->names, (z->n + 1) * sizeof *z->names);
    z->arrays = gf_realloc(z->arrays, (z->n + 1) * sizeof *z->arrays);
    if (nlen > 4 && memcmp(name + nlen - 4, ".npy", 4) == 0)
        nlen -= 4;
    char *s = gf_malloc(nlen + 1);
    memcpy(s, name, nlen);
    s[nlen] = '\0';
    z->names[z->n] = s;
    z->arrays[z->n] = a;
    z->n++;
}

static int inflate_raw(const unsigned char *src, size_t slen, unsigned char *dst, size_t dlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
        return -1;
    int rc = 0;
    size_t in_off = 0, out_off = 0;
    for (;;) {
        uInt in_chunk = (uInt)((slen - in_off) > 0x40000000 ? 0x40000000 : slen - in_off);
        uInt out_chunk = (uInt)((dlen - out_off) > 0x40000000 ? 0x40000000 : dlen - out_off);
        zs.next_in = (Bytef *)(uintptr_t)(src + in_off);
        zs.avail_in = in_chunk;
        zs.next_out = dst + out_off;
        zs.avail_out = out_chunk;
        int r = inflate(&zs, Z_NO_FLUSH);
        in_off += in_chunk - zs.avail_in;
        out_off += out_chunk - zs.avail_out;
        if (r == Z_STREAM_END)
            break;
        if (r != Z_OK || (zs.avail_in == in_chunk && zs.avail_out == out_chunk)) {
            rc = -1;
            break;
        }
    }
    inflateEnd(&zs);
    return rc == 0 && out_off == dlen ? 0 : -1;
}

int gf_npz_load(const char *path, gf_npz **out)
{
    unsigned char *buf;
    size_t len;
    *out = NULL;
    int rc = read_file(path, &buf, &len);
    if (rc)
        return rc;
    gf_npz *z = gf_calloc(1, sizeof *z);
    rc = GF_EINVAL;
    /* End of central directory: 22 bytes + comment (< 64 KiB), from the end. */
    size_t eocd = SIZE_MAX;
    for (size_t i = len >= 22 ? len - 22 : 0; len >= 22; i--) {
        if (rd32(buf + i) == 0x06054b50) {
            eocd = i;
            break;
        }
        if (i == 0 || len - i > 22 + 65535)
            break;
    }
    if (eocd == SIZE_MAX) {
        GF_ERROR("%s: not a .npz (zip) file: no end-of-central-directory record (bad magic or "
                 "truncated)", path);
        goto fail;
    }
    size_t nent = rd16(buf + eocd + 10);
    uint64_t cd_off = rd32(buf + eocd + 16);
    if (cd_off == 0xffffffffu || nent == 0xffff) {
        /* zip64 end of central directory locator just before */
        if (eocd < 20 || rd32(buf + eocd - 20) != 0x07064b50) {
            GF_ERROR("%s: malformed zip64 archive", path);
            goto fail;
        }
        uint64_t z64 = rd64(buf + eocd - 20 + 8);
        if (z64 > len - 56 || rd32(buf + z64) != 0x06064b50) {
            GF_ERROR("%s: malformed zip64 end record", path);
            goto fail;
        }
        nent = (size_t)rd64(buf + z64 + 32);
        cd_off = rd64(buf + z64 + 48);
    }
    size_t p = (size_t)cd_off;
    for (size_t e = 0; e < nent; e++) {
        if (p > len || len - p < 46 || rd32(buf + p) != 0x02014b50) {
            GF_ERROR("%s: truncated or malformed zip central directory (entry %zu)", path, e);
            goto fail;
        }
        unsigned method = rd16(buf + p + 10);
        uint32_t crc = rd32(buf + p + 16);
        uint64_t csize = rd32(buf + p + 20);
        uint64_t usize = rd32(buf + p + 24);
        size_t nlen = rd16(buf + p + 28), xlen = rd16(buf + p + 30), clen = rd16(buf + p + 32);
        uint64_t loff = rd32(buf + p + 42);
        if (len - p - 46 < nlen + xlen + clen) {
            GF_ERROR("%s: truncated zip central directory", path);
            goto fail;
        }
        const char *name = (const char *)buf + p + 46;
        char member[256];
        snprintf(member, sizeof member, "%s[%.*s]", path, (int)(nlen > 200 ? 200 : nlen), name);
        /* zip64 extended information: the 0xffffffff fields, in order */
        const unsigned char *x = buf + p + 46 + nlen, *xe = x + xlen;
        while (xe - x >= 4) {
            unsigned id = rd16(x), sz = rd16(x + 2);
            if ((size_t)(xe - x - 4) < sz)
                break;
            if (id == 0x0001) {
                const unsigned char *q = x + 4, *qe = x + 4 + sz;
                if (usize == 0xffffffffu && qe - q >= 8) { usize = rd64(q); q += 8; }
                if (csize == 0xffffffffu && qe - q >= 8) { csize = rd64(q); q += 8; }
                if (loff == 0xffffffffu && qe - q >= 8) { loff = rd64(q); q += 8; }
            }
            x += 4 + sz;
        }
        if (loff > len || len - loff < 30 || rd32(buf + loff) != 0x04034b50) {
            GF_ERROR("%s: bad local header offset", member);
            goto fail;
        }
        size_t doff = (size_t)loff + 30 + rd16(buf + loff + 26) + rd16(buf + loff + 28);
        if (doff > len || len - doff < csize) {
            GF_ERROR("%s: truncated member data", member);
            goto fail;
        }
        if (usize > ((uint64_t)1 << 40)) {
            GF_ERROR("%s: member too large", member);
            goto fail;
        }
        unsigned char *data;
        bool own = false;
        if (method == 0) {
            if (csize != usize) {
                GF_ERROR("%s: stored member with different sizes", member);
                goto fail;
            }
            data = buf + doff;
        } else if (method == 8) {
            /* deflate expands at most about 1032:1; a larger claim is corrupt
             * (and must not make us allocate gigabytes) */
            if (usize > csize * 1032 + 1024) {
                GF_ERROR("%s: implausible uncompressed size %llu for %llu compressed bytes",
                         member, (unsigned long long)usize, (unsigned long long)csize);
                goto fail;
            }
            data = gf_malloc(usize ? (size_t)usize : 1);
            own = true;
            if (inflate_raw(buf + doff, (size_t)csize, data, (size_t)usize) != 0) {
                GF_ERROR("%s: corrupt deflated data", member);
                free(data);
                goto fail;
            }
        } else {
            GF_ERROR("%s: unsupported zip compression method %u (stored and deflated only)",
                     member, method);
            rc = GF_EUNSUP;
            goto fail;
        }
        uLong c = crc32(0L, Z_NULL, 0);
        for (uint64_t o = 0; o < usize;) {
            uInt chunk = (uInt)(usize - o > 0x40000000 ? 0x40000000 : usize - o);
            c = crc32(c, data + o, chunk);
            o += chunk;
        }
        if ((uint32_t)c != crc) {
            GF_ERROR("%s: CRC-32 mismatch (corrupt archive)", member);
            if (own)
                free(data);
            goto fail;
        }
        gf_npy_array *a;
        int prc = gf_npy_parse(member, data, (size_t)usize, &a);
        if (own)
            free(data);
        if (prc) {
            rc = prc;
            goto fail;
        }
        npz_add(z, name, nlen, a);
        p += 46 + nlen + xlen + clen;
    }
    free(buf);
    *out = z;
    return 0;
fail:
    free(buf);
    gf_npz_destroy(&z);
    return rc;
}

size_t gf_npz_count(const gf_npz *z) { return z->n; }
const char *gf_npz_name(const gf_npz *z, size_t i) { return i < z->n ? z->names[i] : NULL; }

const gf_npy_array *gf_npz_get(const gf_npz *z, const char *name)
{
    for (size_t i = 0; i < z->n; i++)
        if (strcmp(z->names[i], name) == 0)
            return z->arrays[i];
    return NULL;
}

void gf_npz_destroy(gf_npz **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_npz *z = *self_p;
    for (size_t i = 0; i < z->n; i++) {
        free(z->names[i]);
        gf_npy_destroy(&z->arrays[i]);
    }
    free(z->names);
    free(z->arrays);
    free(z);
    *self_p = NULL;
}

static void put16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

int gf_npz_save(const char *path, const char *const *names, const gf_npy_array *const *arrays,
                size_t n, bool compressed)
{
    size_t cap = 1 << 16, len = 0;
    unsigned char *out = gf_malloc(cap);
    unsigned char *cd = NULL;
    size_t cdlen = 0;
    int rc = 0;
#define ENSURE(extra)                                                   \
    do {                                                                \
        while (len + (extra) > cap) {                                   \
            cap *= 2;                                                   \
            out = gf_realloc(out, cap);                                 \
        }                                                               \
    } while (0)
    for (size_t i = 0; i < n; i++) {
        size_t ulen;
        unsigned char *u = gf_npy_serialize(arrays[i], &ulen);
        char *mname = gf_strfmt("%s.npy", names[i]);
        size_t nlen = strlen(mname);
        unsigned char *cdata = u;
        size_t clen = ulen;
        unsigned method = 0;
        if (compressed) {
            uLongf bound = compressBound((uLong)ulen);
            cdata = gf_malloc(bound);
            z_stream zs;
            memset(&zs, 0, sizeof zs);
            deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
            zs.next_in = u;
            zs.avail_in = (uInt)ulen;
            zs.next_out = cdata;
            zs.avail_out = (uInt)bound;
            int zr = deflate(&zs, Z_FINISH);
            clen = zs.total_out;
            deflateEnd(&zs);
            if (zr != Z_STREAM_END) {
                GF_ERROR("%s: deflate failed for member %s", path, mname);
                rc = GF_EIO;
            }
            method = 8;
        }
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), u, (uInt)ulen);
        if (ulen > 0xfffffffeu || len + clen + 30 + nlen > 0xfffffffeu) {
            GF_ERROR("%s: member %s too large for a non-zip64 archive", path, mname);
            rc = GF_ETOOBIG;
        }
        if (rc == 0) {
            size_t loff = len;
            ENSURE(30 + nlen + clen);
            unsigned char *h = out + len;
            put32(h, 0x04034b50);
            put16(h + 4, 20);
            put16(h + 6, 0);
            put16(h + 8, method);
            put16(h + 10, 0);
            put16(h + 12, 0x21); /* 1980-01-01 */
            put32(h + 14, crc);
            put32(h + 18, (uint32_t)clen);
            put32(h + 22, (uint32_t)ulen);
            put16(h + 26, (unsigned)nlen);
            put16(h + 28, 0);
            memcpy(h + 30, mname, nlen);
            memcpy(h + 30 + nlen, cdata, clen);
            len += 30 + nlen + clen;
            cd = gf_realloc(cd, cdlen + 46 + nlen);
            unsigned char *c = cd + cdlen;
            memset(c, 0, 46);
            put32(c, 0x02014b50);
            put16(c + 4, 20);
            put16(c + 6, 20);
            put16(c + 10, method);
            put16(c + 14, 0x21);
            put32(c + 16, crc);
            put32(c + 20, (uint32_t)clen);
            put32(c + 24, (uint32_t)ulen);
            put16(c + 28, (unsigned)nlen);
            put32(c + 38, 0644u << 16);
            put32(c + 42, (uint32_t)loff);
            memcpy(c + 46, mname, nlen);
            cdlen += 46 + nlen;
        }
        if (cdata != u)
            free(cdata);
        free(u);
        free(mname);
        if (rc)
            goto out;
    }
    ENSURE(cdlen + 22);
    size_t cd_off = len;
    if (cdlen)
        memcpy(out + len, cd, cdlen);
    len += cdlen;
    unsigned char *e = out + len;
    memset(e, 0, 22);
    put32(e, 0x06054b50);
    put16(e + 8, (unsigned)n);
    put16(e + 10, (unsigned)n);
    put32(e + 12, (uint32_t)cdlen);
    put32(e + 16, (uint32_t)cd_off);
    len += 22;
    rc = gf_write_file_atomic(path, out, len);
out:
    free(cd);
    free(out);
    return rc;
#undef ENSURE
}
