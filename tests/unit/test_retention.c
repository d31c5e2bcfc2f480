/* test_retention.c — which ended jobs go, and in what order
 * (broker/retention.h): the count first, then the age or a purge's date,
 * whichever is later; 0 keeps for ever; a listing walked to its end rests;
 * jobs live jobs wait for stay; only a job's own spool names are touched.
 * And the sweeper (broker/sweeper.h) on real files: a job's files and its
 * checkpoint folder go, a file of another shape or a symlink's target stays. */
#include "broker/retention.h"
#include "broker/sweeper.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOW (1800000000000LL)    /* 2027-01-15, ms */

static void test_defaults_keep_a_month_and_100000(void **state)
{
    (void)state;
    gf_retention_policy p = { .keep_days = 30, .keep_jobs = 100000 };
    /* under both limits: only the age is looked at, before now less 30 days */
    gf_retention_step s = gf_retention_next(&p, NOW, 500, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_BEFORE);
    assert_int_equal(s.limit, 64);
    assert_int_equal(s.cut_ms, NOW - 30 * GF_DAY_MS);
    /* over the count: the oldest by id, no more than are over it */
    s = gf_retention_next(&p, NOW, 100010, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_OLDEST);
    assert_int_equal(s.limit, 10);
    s = gf_retention_next(&p, NOW, 200000, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_OLDEST);
    assert_int_equal(s.limit, 64);
    /* exactly at the count: nothing over it */
    s = gf_retention_next(&p, NOW, 100000, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_BEFORE);
    /* nothing ended: nothing to ask */
    s = gf_retention_next(&p, NOW, 0, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_NOTHING);
}

static void test_zero_keeps_for_ever(void **state)
{
    (void)state;
    gf_retention_policy p = { .keep_days = 0, .keep_jobs = 0 };
    gf_retention_step s = gf_retention_next(&p, NOW, 5000000, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_NOTHING);
    /* one limit alone */
    p.keep_jobs = 10;
    s = gf_retention_next(&p, NOW, 11, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_OLDEST);
    assert_int_equal(s.limit, 1);
    s = gf_retention_next(&p, NOW, 10, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_NOTHING);   /* no age limit */
    p.keep_jobs = 0;
    p.keep_days = 1;
    s = gf_retention_next(&p, NOW, 1, 0, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_BEFORE);
    assert_int_equal(s.cut_ms, NOW - GF_DAY_MS);
}

static void test_purge_date_wins_when_later(void **state)
{
    (void)state;
    gf_retention_policy p = { .keep_days = 30, .keep_jobs = 0 };
    gf_retention_step s = gf_retention_next(&p, NOW, 10, NOW - GF_DAY_MS, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_BEFORE);
    assert_int_equal(s.cut_ms, NOW - GF_DAY_MS);
    /* an earlier purge date than the age limit changes nothing */
    s = gf_retention_next(&p, NOW, 10, NOW - 90 * GF_DAY_MS, 64, 0);
    assert_int_equal(s.cut_ms, NOW - 30 * GF_DAY_MS);
    /* a purge with retention off */
    p.keep_days = 0;
    s = gf_retention_next(&p, NOW, 10, NOW, 64, 0);
    assert_int_equal(s.how, GF_RETAIN_BEFORE);
    assert_int_equal(s.cut_ms, NOW);
}

static void test_resting_listings_are_skipped(void **state)
{
    (void)state;
    gf_retention_policy p = { .keep_days = 30, .keep_jobs = 10 };
    /* over the count, but the oldest were walked (all kept, say): the age next */
    gf_retention_step s = gf_retention_next(&p, NOW, 50, 0, 64, GF_RETAIN_REST_OLDEST);
    assert_int_equal(s.how, GF_RETAIN_BEFORE);
    s = gf_retention_next(&p, NOW, 50, 0, 64, GF_RETAIN_REST_OLDEST | GF_RETAIN_REST_BEFORE);
    assert_int_equal(s.how, GF_RETAIN_NOTHING);
    s = gf_retention_next(&p, NOW, 5, 0, 64, GF_RETAIN_REST_BEFORE);
    assert_int_equal(s.how, GF_RETAIN_NOTHING);
}

static gf_store_old row(uint64_t id)
{
    gf_store_old o = { .id = id, .ended_ms = (int64_t)id };
    o.out_path = gf_strfmt("/spool/%llu.out", (unsigned long long)id);
    return o;
}

static void test_waited_for_jobs_stay(void **state)
{
    (void)state;
    gf_store_old rows[5] = { row(3), row(4), row(5), row(6), row(7) };
    uint64_t keep[] = { 7, 4, 99, 4 };   /* unsorted, repeated, one not listed */
    size_t n = gf_retention_drop_kept(rows, 5, keep, 4);
    assert_int_equal(n, 3);
    assert_int_equal(rows[0].id, 3);
    assert_int_equal(rows[1].id, 5);
    assert_int_equal(rows[2].id, 6);
    assert_string_equal(rows[2].out_path, "/spool/6.out");
    n = gf_retention_drop_kept(rows, n, NULL, 0);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++)
        free(rows[i].out_path);
}

static void test_spool_names(void **state)
{
    (void)state;
    assert_true(gf_retention_spool_name("/var/lib/gpuflock/spool/12.out", 12, ".out"));
    assert_true(gf_retention_spool_name("/s/12.err", 12, ".err"));
    assert_false(gf_retention_spool_name("/s/112.out", 12, ".out"));
    assert_false(gf_retention_spool_name("/s/12.out", 12, ".err"));
    assert_false(gf_retention_spool_name("relative/12.out", 12, ".out"));
    assert_false(gf_retention_spool_name("/etc/passwd", 12, ".out"));
    assert_false(gf_retention_spool_name(NULL, 12, ".out"));
    assert_false(gf_retention_spool_name("/12.out", 12, ".out"));
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    close(fd);
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_sweeper_removes_a_jobs_files(void **state)
{
    (void)state;
    char dir[128];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-sweep"), 0);
    char *out = gf_strfmt("%s/5.out", dir), *err = gf_strfmt("%s/5.err", dir);
    char *ckpt = gf_strfmt("%s/5.ckpt", dir), *outs = gf_strfmt("%s/5.outs", dir);
    char *ckdir = gf_strfmt("%s/5.ckdir", dir), *inside = gf_strfmt("%s/5.ckdir/state", dir);
    char *other = gf_strfmt("%s/6.out", dir), *victim = gf_strfmt("%s/victim", dir);
    char *link = gf_strfmt("%s/5.ckdir/link", dir);
    touch(out);
    touch(err);
    touch(ckpt);
    touch(outs);
    assert_int_equal(mkdir(ckdir, 0700), 0);
    touch(inside);
    touch(other);
    touch(victim);
    assert_int_equal(symlink(victim, link), 0);
    gf_sweeper *sw = gf_sweeper_new();
    gf_store_old *rows = gf_calloc(2, sizeof(gf_store_old));
    rows[0] = (gf_store_old){ .id = 5, .out_path = gf_strdup(out), .err_path = gf_strdup(err) };
    /* a record naming a file that is not its own: left alone */
    rows[1] = (gf_store_old){ .id = 7, .out_path = gf_strdup(other), .err_path = NULL };
    assert_true(gf_sweeper_give(sw, rows, 2));
    for (int i = 0; i < 500 && gf_sweeper_busy(sw); i++)
        usleep(10000);
    assert_false(gf_sweeper_busy(sw));
    assert_false(exists(out) || exists(err) || exists(ckpt) || exists(outs) || exists(ckdir));
    assert_true(exists(other));
    assert_true(exists(victim));         /* the symlink went, not what it named */
    /* an empty batch is nothing to wait for */
    assert_true(gf_sweeper_give(sw, NULL, 0));
    assert_false(gf_sweeper_busy(sw));
    gf_sweeper_destroy(&sw);
    assert_null(sw);
    gf_sweeper_destroy(&sw);
    gf_test_rmtree(dir);
    free(out);
    free(err);
    free(ckpt);
    free(outs);
    free(ckdir);
    free(inside);
    free(other);
    free(victim);
    free(link);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_keep_a_month_and_100000),
        cmocka_unit_test(test_zero_keeps_for_ever),
        cmocka_unit_test(test_purge_date_wins_when_later),
        cmocka_unit_test(test_resting_listings_are_skipped),
        cmocka_unit_test(test_waited_for_jobs_stay),
        cmocka_unit_test(test_spool_names),
        cmocka_unit_test(test_sweeper_removes_a_jobs_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
