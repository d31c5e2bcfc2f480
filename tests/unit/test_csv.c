/* test_csv.c — RFC 4180 fields (cli/csv.h): plain text as it is; a comma,
 * a double quote, a line break, any control byte or an edge space quoted,
 * the quotes doubled; every byte kept, so a hostile job name cannot add a
 * field or a record; records end in CRLF; and a reader that follows the
 * RFC gets the name back (a small one here, written from the RFC). */
#include "cli/csv.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(const char *in, const char *want)
{
    char *got = gf_csv_field(in);
    if (strcmp(got, want) != 0)
        fail_msg("field of '%s': '%s', wanted '%s'", in ? in : "(null)", got, want);
    free(got);
}

static void test_plain_fields_unchanged(void **state)
{
    (void)state;
    check("train", "train");
    check("a b", "a b");
    check("", "");
    check(NULL, "");
    check("héllo wörld", "héllo wörld");          /* UTF-8 as it is */
    check("=SUM(A1)", "=SUM(A1)");                  /* data, not altered */
    assert_false(gf_csv_needs_quotes("x;y|z\\t"));
}

static void test_specials_quoted_quotes_doubled(void **state)
{
    (void)state;
    check("a,b", "\"a,b\"");
    check("say \"hi\"", "\"say \"\"hi\"\"\"");
    check("\"", "\"\"\"\"");
    check("two\nlines", "\"two\nlines\"");
    check("cr\rlf\r\n", "\"cr\rlf\r\n\"");
    check("tab\there", "\"tab\there\"");
    check("\x1b[31mred\x1b[0m", "\"\x1b[31mred\x1b[0m\"");
    check("del\x7f", "\"del\x7f\"");
    check(" lead", "\" lead\"");
    check("trail ", "\"trail \"");
    check("\xff\xfe not utf-8", "\xff\xfe not utf-8");   /* bytes kept: nothing to quote */
}

/* One record read back by RFC 4180's grammar: fields into out (each a
 * new string), their number returned; *rest after the CRLF. */
static size_t read_record(const char *s, char **out, size_t max, const char **rest)
{
    size_t n = 0;
    for (;;) {
        char *f = gf_malloc(strlen(s) + 1), *o = f;
        if (*s == '"') {
            for (s++;;) {
                if (*s == '"' && s[1] == '"') {
                    *o++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    assert_true(*s != '\0');
                    *o++ = *s++;
                }
            }
        } else {
            while (*s && *s != ',' && *s != '\r')
                *o++ = *s++;
        }
        *o = '\0';
        assert_true(n < max);
        out[n++] = f;
        if (*s == ',') {
            s++;
            continue;
        }
        assert_int_equal(s[0], '\r');
        assert_int_equal(s[1], '\n');
        *rest = s + 2;
        return n;
    }
}

static void test_hostile_names_round_trip(void **state)
{
    (void)state;
    static const char *const names[] = {
        "plain", "a,b,c", "\"quoted\"", "line\r\nbreak,\"x\"", "\x01\x02\x1f", "", " sp ",
        "x\",\"injected field", "end\r\n7,evil,record",
    };
    const size_t n = sizeof names / sizeof names[0];
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (size_t i = 0; i < n; i++) {
        gf_csv_put(f, "1", true);
        gf_csv_put(f, names[i], false);
        gf_csv_put(f, "done", false);
        gf_csv_end(f);
    }
    fclose(f);
    const char *s = buf;
    for (size_t i = 0; i < n; i++) {
        char *fields[8];
        size_t k = read_record(s, fields, 8, &s);
        assert_int_equal(k, 3);                 /* no field added */
        assert_string_equal(fields[0], "1");
        assert_string_equal(fields[1], names[i]);   /* every byte back */
        assert_string_equal(fields[2], "done");
        for (size_t j = 0; j < k; j++)
            free(fields[j]);
    }
    assert_int_equal(*s, '\0');                 /* no record added */
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_fields_unchanged),
        cmocka_unit_test(test_specials_quoted_quotes_doubled),
        cmocka_unit_test(test_hostile_names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
