/* npz.c — NumPy .npz archives (see npz.h).
 *
 * A .npz is a zip archive of .npy files. Reading goes by the central
 * directory (its sizes are authoritative: numpy writes data descriptors),
 * zip64 where the 32-bit fields overflow, checks each member's CRC-32 and
 * inflates deflated members with zlib before gf_npy_parse. Writing makes
 * one local header per member and the central directory after them, with
 * no zip64 (an archive over 4 GiB is refused). */
#include "diar/io/npz.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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
    int rc = gf_npy_read_file(path, GF_NPZ_FILE_MAX, &buf, &len);
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
            goto out_free;
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
out_free:
    free(cd);
    free(out);
    return rc;
#undef ENSURE
}
