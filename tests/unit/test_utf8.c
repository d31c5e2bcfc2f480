/* test_utf8.c — gf_utf8_valid and gf_utf8_escape: valid multi-byte UTF-8
 * kept as it is, every ill-formed byte (overlong forms, surrogates, cut
 * sequences, lone continuation bytes, 0xc0/0xc1, 0xf5..0xff) escaped as
 * \xNN, truncation at a character boundary, and every output of random
 * bytes valid by a decoder written apart (tests/unit/strict_msgpack.h). */
#include "common/utf8.h"
#include "common/util.h"
#include "tests/unit/strict_msgpack.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

/* Escape s (n bytes) into a buffer of ample size. */
static const char *esc(const char *s, size_t n)
{
    static char out[1024];
    assert_int_equal(gf_utf8_escape(out, sizeof(out), s, n), n);
    return out;
}

#define ESC(lit) esc(lit, sizeof(lit) - 1)

static void test_valid_kept(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "",
        "plain ASCII, with a backslash \\ and \\x41 as text",
        "caf\xc3\xa9",                         /* U+00E9, 2 bytes */
        "\xe2\x82\xac 20",                     /* U+20AC, 3 bytes */
        "\xf0\x9f\x98\x80",                    /* U+1F600, 4 bytes */
        "\xc2\x80 \xdf\xbf",                   /* U+0080, U+07FF: the 2-byte ends */
        "\xe0\xa0\x80 \xef\xbf\xbf",           /* U+0800, U+FFFF */
        "\xed\x9f\xbf \xee\x80\x80",           /* U+D7FF, U+E000: around the surrogates */
        "\xf0\x90\x80\x80 \xf4\x8f\xbf\xbf",   /* U+10000, U+10FFFF */
        "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        size_t n = strlen(ok[i]);
        assert_true(gf_utf8_valid(ok[i], n));
        assert_true(strict_utf8((const uint8_t *)ok[i], n));
        assert_string_equal(esc(ok[i], n), ok[i]);
    }
    /* U+0000 is valid UTF-8, but a C string cannot hold it: escaped */
    assert_true(gf_utf8_valid("a\0b", 3));
    assert_string_equal(esc("a\0b", 3), "a\\x00b");
}

static void test_ill_formed_escaped(void **state)
{
    (void)state;
    static const struct { const char *in; size_t n; const char *out; } cases[] = {
#define C(in, out) { in, sizeof(in) - 1, out }
        C("\x80", "\\x80"),                                 /* lone continuation */
        C("a\xbf" "b", "a\\xBFb"),
        C("\xc0\xaf", "\\xC0\\xAF"),                        /* overlong '/' */
        C("\xc1\xbf", "\\xC1\\xBF"),                        /* overlong U+007F */
        C("\xe0\x80\xaf", "\\xE0\\x80\\xAF"),               /* overlong 3-byte '/' */
        C("\xe0\x9f\xbf", "\\xE0\\x9F\\xBF"),               /* overlong U+07FF */
        C("\xf0\x80\x80\xaf", "\\xF0\\x80\\x80\\xAF"),      /* overlong 4-byte '/' */
        C("\xf0\x8f\xbf\xbf", "\\xF0\\x8F\\xBF\\xBF"),      /* overlong U+FFFF */
        C("\xed\xa0\x80", "\\xED\\xA0\\x80"),               /* U+D800, a surrogate */
        C("\xed\xbf\xbf", "\\xED\\xBF\\xBF"),               /* U+DFFF */
        C("\xed\xa0\xbd\xed\xb8\x80", "\\xED\\xA0\\xBD\\xED\\xB8\\x80"), /* CESU-8 pair */
        C("\xf4\x90\x80\x80", "\\xF4\\x90\\x80\\x80"),      /* U+110000 */
        C("\xf5\x80\x80\x80", "\\xF5\\x80\\x80\\x80"),      /* lead bytes >= 0xf5 */
        C("\xf8\x88\x80\x80\x80", "\\xF8\\x88\\x80\\x80\\x80"),
        C("\xfe\xff", "\\xFE\\xFF"),
        C("caf\xc3", "caf\\xC3"),                           /* cut short at the end */
        C("\xe2\x82", "\\xE2\\x82"),
        C("\xf0\x9f\x98", "\\xF0\\x9F\\x98"),
        C("\xe2\x82z", "\\xE2\\x82z"),                      /* cut short by ASCII */
        C("\xc3\xc3\xa9", "\\xC3\xc3\xa9"),                 /* a lead byte, then a whole one */
        C("\xe9t\xe9", "\\xE9t\\xE9"),                      /* Latin-1 */
#undef C
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_false(gf_utf8_valid(cases[i].in, cases[i].n));
        assert_false(strict_utf8((const uint8_t *)cases[i].in, cases[i].n));
        const char *got = esc(cases[i].in, cases[i].n);
        if (strcmp(got, cases[i].out) != 0)
            fail_msg("case %zu: '%s', want '%s'", i, got, cases[i].out);
        assert_true(strict_utf8((const uint8_t *)got, strlen(got)));
        /* escaping is idempotent: what came out is valid and stays */
        assert_string_equal(esc(got, strlen(got)), got);
    }
}

static void test_truncation_at_boundaries(void **state)
{
    (void)state;
    char out[16];
    /* "caf" + U+00E9 in 5 bytes of room (4 + NUL): the 2-byte sequence
     * does not fit whole, so it is left out */
    assert_int_equal(gf_utf8_escape(out, 5, "caf\xc3\xa9", 5), 3);
    assert_string_equal(out, "caf");
    assert_int_equal(gf_utf8_escape(out, 6, "caf\xc3\xa9", 5), 5);
    assert_string_equal(out, "caf\xc3\xa9");
    /* an escape is never cut: "a" + \xff needs 5 bytes and a NUL */
    assert_int_equal(gf_utf8_escape(out, 5, "a\xff", 2), 1);
    assert_string_equal(out, "a");
    assert_int_equal(gf_utf8_escape(out, 6, "a\xff", 2), 2);
    assert_string_equal(out, "a\\xFF");
    assert_int_equal(gf_utf8_escape(out, 1, "abc", 3), 0);
    assert_string_equal(out, "");
    /* every room from 1 to 15 gives valid UTF-8 */
    static const char mixed[] = "\xe2\x82\xac\xff\xf0\x9f\x98\x80x\xc3";
    for (size_t cap = 1; cap <= sizeof(out); cap++) {
        gf_utf8_escape(out, cap, mixed, sizeof(mixed) - 1);
        assert_true(strlen(out) < cap);
        assert_true(strict_utf8((const uint8_t *)out, strlen(out)));
    }
}

static void test_random_bytes(void **state)
{
    (void)state;
    uint64_t seed = 21;
    uint8_t in[64];
    char out[4 * sizeof(in) + 1];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(gf_splitmix64(&seed) % sizeof(in));
        for (size_t i = 0; i < n; i++) {
            uint64_t r = gf_splitmix64(&seed);
            /* bias toward the bytes that make multi-byte sequences */
            in[i] = (uint8_t)(r & 1 ? 0x80 | (r >> 8) : r >> 8);
        }
        bool valid = gf_utf8_valid((const char *)in, n);
        if (!memchr(in, 0, n))
            assert_int_equal(valid, strict_utf8(in, n));
        assert_int_equal(gf_utf8_escape(out, sizeof(out), (const char *)in, n), n);
        size_t len = strlen(out);
        assert_true(strict_utf8((const uint8_t *)out, len));
        if (valid && !memchr(in, 0, n)) {
            assert_int_equal(len, n);
            assert_memory_equal(out, in, n);
        }
    }
}

static void test_escape_dup(void **state)
{
    (void)state;
    assert_null(gf_utf8_escape_dup(NULL));
    char *s = gf_utf8_escape_dup("unknown key '\xff\xfe'");
    assert_string_equal(s, "unknown key '\\xFF\\xFE'");
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_kept),
        cmocka_unit_test(test_ill_formed_escaped),
        cmocka_unit_test(test_truncation_at_boundaries),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_escape_dup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
