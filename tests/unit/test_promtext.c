/* test_promtext.c — the text exposition format as the broker writes it:
 * names, escaping, numbers, and histograms whose buckets, sum and count
 * agree. */
#include "broker/promtext.h"
#include "common/util.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A family with one sample per line: HELP, TYPE, then the samples. */
static void test_family_and_samples(void **state)
{
    (void)state;
    gf_promtext *t = gf_promtext_new();
    gf_promtext_family(t, "gpuflock_jobs_ended_total", GF_PROM_COUNTER, "Jobs that ended.");
    const char *l[] = { "state", "done", "kind", "command", NULL };
    gf_promtext_sample(t, "gpuflock_jobs_ended_total", l, 12);
    gf_promtext_family(t, "gpuflock_store_behind", GF_PROM_GAUGE, "1 while behind.");
    gf_promtext_sample(t, "gpuflock_store_behind", NULL, 0);
    size_t len;
    const char *text = gf_promtext_text(t, &len);
    assert_string_equal(text, "# HELP gpuflock_jobs_ended_total Jobs that ended.\n"
                              "# TYPE gpuflock_jobs_ended_total counter\n"
                              "gpuflock_jobs_ended_total{state=\"done\",kind=\"command\"} 12\n"
                              "# HELP gpuflock_store_behind 1 while behind.\n"
                              "# TYPE gpuflock_store_behind gauge\n"
                              "gpuflock_store_behind 0\n");
    assert_int_equal(len, strlen(text));
    size_t taken;
    char *own = gf_promtext_take(t, &taken);
    assert_int_equal(taken, len);
    assert_string_equal(gf_promtext_text(t, &len), "");   /* empty again */
    assert_int_equal(len, 0);
    free(own);
    gf_promtext_destroy(&t);
    assert_null(t);
    gf_promtext_destroy(&t);   /* safe twice */
}

/* Label values escape backslash, double quote and newline; HELP escapes
 * backslash and newline and keeps quotes; bytes that are not UTF-8 are
 * written \xNN first (their backslash then escaped as any other). */
static void test_escaping(void **state)
{
    (void)state;
    gf_promtext *t = gf_promtext_new();
    gf_promtext_family(t, "x_seconds_total", GF_PROM_COUNTER, "a \"quoted\" \\ help\nline");
    const char *l[] = { "stage", "a\\b\"c\nd", "route", "caf\xc3\xa9 \xff", NULL };
    gf_promtext_sample(t, "x_seconds_total", l, 1.5);
    const char *text = gf_promtext_text(t, NULL);
    assert_non_null(strstr(text, "# HELP x_seconds_total a \"quoted\" \\\\ help\\nline\n"));
    assert_non_null(strstr(text, "x_seconds_total{stage=\"a\\\\b\\\"c\\nd\","
                                 "route=\"caf\xc3\xa9 \\\\xFF\"} 1.5\n"));
    /* one sample, one line: no raw newline inside it */
    const char *s = strstr(text, "x_seconds_total{");
    assert_ptr_equal(strchr(s, '\n'), s + strlen(s) - 1);
    gf_promtext_destroy(&t);
}

/* Integral values as integers, others with the fewest digits that read
 * back as the same double, and NaN, +Inf, -Inf as the format spells them. */
static void test_numbers(void **state)
{
    (void)state;
    const struct { double v; const char *want; } cases[] = {
        { 0, "0" }, { 1, "1" }, { -3, "-3" }, { 1234567890123.0, "1234567890123" },
        { 0.5, "0.5" }, { 0.1, "0.1" }, { 1e-9, "1e-09" }, { 2.5e-5, "2.5e-05" },
        { 1e300, "1e+300" }, { 9007199254740993.0, "9007199254740992" },
        { 0.30000000000000004, "0.30000000000000004" },
        { NAN, "NaN" }, { INFINITY, "+Inf" }, { -INFINITY, "-Inf" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[40];
        gf_promtext_number(cases[i].v, buf, sizeof buf);
        if (strcmp(buf, cases[i].want) != 0)
            fail_msg("case %zu: %s, want %s", i, buf, cases[i].want);
        if (!isnan(cases[i].v))
            assert_true(strtod(buf, NULL) == cases[i].v);
    }
}

/* The value of "name{...}" whose line starts with prefix, from text. */
static double value_of(const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);
    if (!p)
        fail_msg("no line %s in:\n%s", prefix, text);
    const char *sp = strchr(p, ' ');
    assert_non_null(sp);
    return strtod(sp + 1, NULL);
}

/* An observation falls in the first bucket whose bound it does not pass
 * (a bound is inclusive); the text's buckets are cumulative, +Inf equals
 * the count, the sum is the observations'. */
static void test_histogram(void **state)
{
    (void)state;
    static const double bounds[] = { 0.01, 0.1, 1, 10 };
    gf_prom_hist h;
    gf_prom_hist_init(&h, bounds, 4);
    const double obs[] = { 0.001, 0.1, 0.3, 0.7, 5, 1000, NAN };
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        gf_prom_hist_observe(&h, obs[i]);
    assert_int_equal(h.count, 6);   /* NaN left out */
    gf_promtext *t = gf_promtext_new();
    gf_promtext_family(t, "gpuflock_job_run_seconds", GF_PROM_HISTOGRAM, "Run time.");
    const char *l[] = { "kind", "command", NULL };
    gf_promtext_histogram(t, "gpuflock_job_run_seconds", l, &h);
    const char *text = gf_promtext_text(t, NULL);
    assert_non_null(strstr(text, "# TYPE gpuflock_job_run_seconds histogram\n"));
    const struct { const char *le; double want; } b[] = {
        { "0.01", 1 }, { "0.1", 2 }, { "1", 4 }, { "10", 5 }, { "+Inf", 6 },
    };
    double last = 0;
    for (size_t i = 0; i < 5; i++) {
        char prefix[128];
        snprintf(prefix, sizeof prefix, "gpuflock_job_run_seconds_bucket{kind=\"command\",le=\"%s\"} ",
                 b[i].le);
        double v = value_of(text, prefix);
        assert_true(v == b[i].want);
        assert_true(v >= last);     /* cumulative: never down */
        last = v;
    }
    double count = value_of(text, "gpuflock_job_run_seconds_count{kind=\"command\"} ");
    double sum = value_of(text, "gpuflock_job_run_seconds_sum{kind=\"command\"} ");
    assert_true(count == last);
    assert_true(fabs(sum - (0.001 + 0.1 + 0.3 + 0.7 + 5 + 1000)) < 1e-9);
    /* an empty one is all zeros, and still consistent */
    gf_prom_hist e;
    gf_prom_hist_init(&e, bounds, 4);
    gf_promtext_histogram(t, "empty_seconds", NULL, &e);
    text = gf_promtext_text(t, NULL);
    assert_non_null(strstr(text, "empty_seconds_bucket{le=\"+Inf\"} 0\n"
                                 "empty_seconds_sum 0\n"
                                 "empty_seconds_count 0\n"));
    gf_promtext_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_and_samples),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_histogram),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
