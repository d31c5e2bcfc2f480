/* test_devstats.c — device-timing statistics: samples, the three kinds of
 * unmeasured launches, saturation, merge and the JSON round trip. */
#include "common/devstats.h"
#include "common/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const gf_devstats_row *find(const gf_devstats *s, const char *stage, const char *route)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(s, &rows);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].stage, stage) && !strcmp(rows[i].route, route))
            return &rows[i];
    return NULL;
}

static void test_measured_zero_is_not_unavailable(void **state)
{
    (void)state;
    gf_devstats *s = gf_devstats_new();
    gf_devstats_measured(s, "segmentation", "library", 0);
    gf_devstats_unavailable(s, "segmentation", "cpu", "cpu card");
    gf_devstats_unavailable(s, "segmentation", "cpu", "other reason");
    const gf_devstats_row *m = find(s, "segmentation", "library");
    const gf_devstats_row *u = find(s, "segmentation", "cpu");
    assert_non_null(m);
    assert_non_null(u);
    assert_int_equal(m->count, 1);
    assert_int_equal(m->total_ns, 0);
    assert_int_equal(m->unavailable, 0);
    assert_int_equal(u->count, 0);
    assert_int_equal(u->unavailable, 2);
    assert_string_equal(u->reason, "cpu card");
    gf_devstats_destroy(&s);
    assert_null(s);
    gf_devstats_destroy(&s);
}

static void test_failed_never_counts_as_time(void **state)
{
    (void)state;
    gf_devstats *s = gf_devstats_new();
    gf_devstats_measured(s, "embedding", "own", 1500);
    gf_devstats_measured(s, "embedding", "own", 700);
    gf_devstats_failed(s, "embedding", "own");
    gf_devstats_not_requested(s, "embedding", "own");
    const gf_devstats_row *r = find(s, "embedding", "own");
    assert_int_equal(r->count, 2);
    assert_int_equal(r->total_ns, 2200);
    assert_int_equal(r->max_ns, 1500);
    assert_int_equal(r->failed, 1);
    assert_int_equal(r->not_requested, 1);
    gf_devstats_destroy(&s);
}

static void test_saturation(void **state)
{
    (void)state;
    assert_true(gf_sat_add(UINT64_MAX - 1, 5) == UINT64_MAX);
    assert_int_equal(gf_sat_add(2, 3), 5);
    gf_devstats *s = gf_devstats_new();
    gf_devstats_measured(s, "lstm", "own", UINT64_MAX - 10);
    gf_devstats_measured(s, "lstm", "own", 100);
    gf_devstats_transfer(s, "checkpoint.capture", "cpu", UINT64_MAX, 1);
    gf_devstats_transfer(s, "checkpoint.capture", "cpu", 1, 1);
    assert_true(find(s, "lstm", "own")->total_ns == UINT64_MAX);
    assert_true(find(s, "checkpoint.capture", "cpu")->bytes == UINT64_MAX);
    assert_int_equal(find(s, "checkpoint.capture", "cpu")->copies, 2);
    gf_devstats_destroy(&s);
}

static void test_json_round_trip_and_merge(void **state)
{
    (void)state;
    gf_devstats *s = gf_devstats_new();
    gf_devstats_measured(s, "fbank", "library", 12345);
    gf_devstats_unavailable(s, "fbank", "cpu", "cpu card");
    gf_devstats_measured(s, "pooling", "own", UINT64_MAX);
    char *json = gf_devstats_to_json(s);
    gf_devstats *back = NULL;
    assert_int_equal(gf_devstats_from_json(json, &back), 0);
    char *json2 = gf_devstats_to_json(back);
    assert_string_equal(json, json2);
    gf_devstats_merge(back, s);
    assert_int_equal(find(back, "fbank", "library")->count, 2);
    assert_int_equal(find(back, "fbank", "library")->total_ns, 24690);
    assert_true(find(back, "pooling", "own")->total_ns == UINT64_MAX);
    char *table = gf_devstats_format(back);
    assert_non_null(strstr(table, "unavailable: cpu card"));
    free(table);
    free(json);
    free(json2);
    gf_devstats_destroy(&s);
    gf_devstats_destroy(&back);
}

static void test_json_malformed(void **state)
{
    (void)state;
    gf_devstats *s = NULL;
    assert_int_equal(gf_devstats_from_json("{", &s), GF_EINVAL);
    assert_int_equal(gf_devstats_from_json("{}", &s), GF_EINVAL);
    assert_int_equal(gf_devstats_from_json("[1]", &s), GF_EINVAL);
    assert_int_equal(gf_devstats_from_json("[{\"stage\":\"a\"}]", &s), GF_EINVAL);
    assert_int_equal(gf_devstats_from_json(
        "[{\"stage\":\"a\",\"route\":\"b\",\"count\":\"-1\"}]", &s), GF_EINVAL);
    assert_null(s);
}

static void test_row_limit_folds(void **state)
{
    (void)state;
    gf_devstats *s = gf_devstats_new();
    char name[32];
    for (int i = 0; i < GF_DEVSTATS_MAX_ROWS + 10; i++) {
        snprintf(name, sizeof name, "stage%d", i);
        gf_devstats_measured(s, name, "own", 1);
    }
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(s, &rows);
    assert_int_equal(n, GF_DEVSTATS_MAX_ROWS);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += rows[i].count;
    assert_int_equal(total, GF_DEVSTATS_MAX_ROWS + 10);
    gf_devstats_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measured_zero_is_not_unavailable),
        cmocka_unit_test(test_failed_never_counts_as_time),
        cmocka_unit_test(test_saturation),
        cmocka_unit_test(test_json_round_trip_and_merge),
        cmocka_unit_test(test_json_malformed),
        cmocka_unit_test(test_row_limit_folds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
