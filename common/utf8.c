/* utf8.c — UTF-8 validation and \xNN escaping of outside bytes (see
 * utf8.h). Sequences are checked against Unicode's table of well-formed
 * byte sequences (The Unicode Standard, table 3-7), which excludes overlong
 * forms, surrogates and code points past U+10FFFF by the ranges of the
 * second byte alone. */
#include "common/utf8.h"
#include "common/util.h"

#include <string.h>

size_t gf_utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char b = s[0];
    if (b < 0x80)
        return 1;
    unsigned char lo = 0x80, hi = 0xbf;   /* the range of the second byte */
    size_t len;
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
        len = 3;
        if (b == 0xe0)
            lo = 0xa0;                    /* below: overlong */
        else if (b == 0xed)
            hi = 0x9f;                    /* above: surrogates */
    } else if (b >= 0xf0 && b <= 0xf4) {
        len = 4;
        if (b == 0xf0)
            lo = 0x90;                    /* below: overlong */
        else if (b == 0xf4)
            hi = 0x8f;                    /* above: past U+10FFFF */
    } else {
        return 0;                         /* 0x80..0xc1 (continuation, overlong), 0xf5.. */
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

bool gf_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = gf_utf8_seq_len(p + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

size_t gf_utf8_escape(char *dst, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t k = p[i] ? gf_utf8_seq_len(p + i, n - i) : 0;
        size_t w = k ? k : 4;
        if (o + w >= cap)
            break;
        if (k) {
            memcpy(dst + o, p + i, k);
            i += k;
        } else {
            dst[o] = '\\';
            dst[o + 1] = 'x';
            dst[o + 2] = hex[p[i] >> 4];
            dst[o + 3] = hex[p[i] & 15];
            i++;
        }
        o += w;
    }
    dst[o] = '\0';
    return i;
}

char *gf_utf8_escape_dup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *out = gf_malloc(4 * n + 1);
    gf_utf8_escape(out, 4 * n + 1, s, n);
    return out;
}
