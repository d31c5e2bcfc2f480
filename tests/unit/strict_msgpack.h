/* strict_msgpack.h — what a strict msgpack decoder (Python's msgpack with
 * raw=False, Rust's rmp-serde) demands of a message, written apart from
 * the code under test: every str holds valid UTF-8, and the bytes are one
 * whole msgpack value. The UTF-8 check decodes code points (the library's
 * common/utf8.c checks byte ranges instead), so the two are independent. */
#ifndef GF_TEST_STRICT_MSGPACK_H
#define GF_TEST_STRICT_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Valid UTF-8 by decoding: the shortest form, no surrogates, <= U+10FFFF. */
static inline bool strict_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        size_t len;
        uint32_t cp, min;
        if (b < 0x80) { i++; continue; }
        else if ((b & 0xe0) == 0xc0) { len = 2; cp = b & 0x1f; min = 0x80; }
        else if ((b & 0xf0) == 0xe0) { len = 3; cp = b & 0x0f; min = 0x800; }
        else if ((b & 0xf8) == 0xf0) { len = 4; cp = b & 0x07; min = 0x10000; }
        else return false;
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

static inline uint64_t strict_be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* One msgpack value at p[*pos..n): true when it is whole and every string
 * in it is UTF-8; else false with why filled. */
static inline bool strict_value(const uint8_t *p, size_t n, size_t *pos, int depth, char *why,
                                size_t wlen)
{
    if (depth > 64 || *pos >= n) {
        snprintf(why, wlen, depth > 64 ? "nested too deep" : "truncated at %zu", *pos);
        return false;
    }
    uint8_t b = p[(*pos)++];
    uint64_t len = 0, items = 0;
    size_t hdr = 0;
    enum { SCALAR, STR, BIN, ARR, MAP, EXT } kind = SCALAR;
    size_t skip = 0;
    if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
        skip = 0;
    } else if (b >= 0x80 && b <= 0x8f) {
        kind = MAP; items = b & 0x0f;
    } else if (b >= 0x90 && b <= 0x9f) {
        kind = ARR; items = b & 0x0f;
    } else if (b >= 0xa0 && b <= 0xbf) {
        kind = STR; len = b & 0x1f;
    } else {
        switch (b) {
        case 0xcc: case 0xd0: skip = 1; break;
        case 0xcd: case 0xd1: skip = 2; break;
        case 0xce: case 0xd2: case 0xca: skip = 4; break;
        case 0xcf: case 0xd3: case 0xcb: skip = 8; break;
        case 0xd9: kind = STR; hdr = 1; break;
        case 0xda: kind = STR; hdr = 2; break;
        case 0xdb: kind = STR; hdr = 4; break;
        case 0xc4: kind = BIN; hdr = 1; break;
        case 0xc5: kind = BIN; hdr = 2; break;
        case 0xc6: kind = BIN; hdr = 4; break;
        case 0xdc: kind = ARR; hdr = 2; break;
        case 0xdd: kind = ARR; hdr = 4; break;
        case 0xde: kind = MAP; hdr = 2; break;
        case 0xdf: kind = MAP; hdr = 4; break;
        default:
            kind = EXT;
        }
    }
    if (kind == EXT) {
        snprintf(why, wlen, "extension or invalid byte 0x%02x at %zu", b, *pos - 1);
        return false;
    }
    if (hdr) {
        if (n - *pos < hdr) {
            snprintf(why, wlen, "truncated header at %zu", *pos);
            return false;
        }
        uint64_t v = strict_be(p + *pos, hdr);
        *pos += hdr;
        if (kind == STR || kind == BIN)
            len = v;
        else
            items = v;
    }
    if (kind == SCALAR || kind == STR || kind == BIN) {
        size_t need = kind == SCALAR ? skip : (size_t)len;
        if (n - *pos < need) {
            snprintf(why, wlen, "truncated value at %zu", *pos);
            return false;
        }
        if (kind == STR && !strict_utf8(p + *pos, need)) {
            snprintf(why, wlen, "a str of %zu bytes at %zu is not UTF-8: '%.*s'", need, *pos,
                     (int)(need > 60 ? 60 : need), (const char *)p + *pos);
            return false;
        }
        *pos += need;
        return true;
    }
    uint64_t count = kind == MAP ? items * 2 : items;
    for (uint64_t i = 0; i < count; i++)
        if (!strict_value(p, n, pos, depth + 1, why, wlen))
            return false;
    return true;
}

/* The whole buffer is one value, every string in it UTF-8. */
static inline bool strict_msgpack(const uint8_t *p, size_t n, char *why, size_t wlen)
{
    size_t pos = 0;
    if (!strict_value(p, n, &pos, 0, why, wlen))
        return false;
    if (pos != n) {
        snprintf(why, wlen, "%zu bytes after the value", n - pos);
        return false;
    }
    return true;
}

#endif
