/* test_spectral.c — spectral clustering with an estimated count
 * (diar/cluster/spectral.h): well-separated synthetic clusters found with
 * their count and their members, one cluster, rows all alike, unusable
 * rows skipped, the same labels run to run, the speaker-count bounds, and
 * the landmark path for more rows than are clustered. */
#include "common/error.h"
#include "diar/cluster/spectral.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DIM = 16 };

static double uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static double gauss(uint64_t *s)
{
    double u = uniform(s), v = uniform(s);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(2.0 * M_PI * v);
}

/* n rows around k random directions (row i from cluster i % k, so that the
 * clusters interleave as speakers do in time), noise sd sigma per value;
 * truth[i] = i % k. */
static float *blobs(size_t n, size_t k, double sigma, uint64_t seed, int *truth)
{
    uint64_t s = seed;
    double centre[8][DIM];
    for (size_t c = 0; c < k; c++)
        for (int d = 0; d < DIM; d++)
            centre[c][d] = gauss(&s);
    float *x = malloc(n * DIM * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        truth[i] = (int)(i % k);
        for (int d = 0; d < DIM; d++)
            x[i * DIM + d] = (float)(centre[i % k][d] + sigma * gauss(&s));
    }
    return x;
}

/* labels and truth give the same partition of the rows with label >= 0 */
static void same_partition(const int *labels, const int *truth, size_t n, int k)
{
    int map[16], back[16];
    for (int c = 0; c < 16; c++)
        map[c] = back[c] = -1;
    for (size_t i = 0; i < n; i++) {
        if (labels[i] < 0)
            continue;
        assert_true(labels[i] < k);
        if (map[truth[i]] < 0 && back[labels[i]] < 0) {
            map[truth[i]] = labels[i];
            back[labels[i]] = truth[i];
        }
        assert_int_equal(map[truth[i]], labels[i]);
        assert_int_equal(back[labels[i]], truth[i]);
    }
}

static void test_separated_clusters_counted(void **state)
{
    (void)state;
    for (size_t k = 2; k <= 6; k++) {
        size_t n = 30 * k;
        int *truth = malloc(n * sizeof *truth), *labels = malloc(n * sizeof *labels);
        float *x = blobs(n, k, 0.15, 1000 + k, truth);
        int got = gf_spectral_cluster(x, n, DIM, NULL, labels);
        assert_int_equal(got, (int)k);
        same_partition(labels, truth, n, got);
        /* numbered by first appearance */
        assert_int_equal(labels[0], 0);
        free(x);
        free(truth);
        free(labels);
    }
}

static void test_one_cluster(void **state)
{
    (void)state;
    size_t n = 60;
    int truth[60], labels[60];
    float *x = blobs(n, 1, 0.15, 7, truth);
    gf_spectral_opts o = gf_spectral_defaults();
    o.min_rows = 8;   /* as the weight-free mode asks */
    int got = gf_spectral_cluster(x, n, DIM, &o, labels);
    assert_int_equal(got, 1);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(labels[i], 0);
    /* a single row is one cluster */
    assert_int_equal(gf_spectral_cluster(x, 1, DIM, NULL, labels), 1);
    assert_int_equal(labels[0], 0);
    free(x);
}

static void test_identical_rows_one_cluster(void **state)
{
    (void)state;
    float x[40 * DIM];
    int labels[40];
    for (int i = 0; i < 40; i++)
        for (int d = 0; d < DIM; d++)
            x[i * DIM + d] = 0.25f + 0.01f * (float)d;
    assert_int_equal(gf_spectral_cluster(x, 40, DIM, NULL, labels), 1);
    for (int i = 0; i < 40; i++)
        assert_int_equal(labels[i], 0);
    /* nothing to split them by, even when more are asked for */
    gf_spectral_opts o = gf_spectral_defaults();
    o.num_speakers = 3;
    assert_int_equal(gf_spectral_cluster(x, 40, DIM, &o, labels), 1);
}

static void test_unusable_rows_skipped(void **state)
{
    (void)state;
    size_t n = 90;
    int truth[90], labels[90];
    float *x = blobs(n, 3, 0.15, 11, truth);
    x[5 * DIM + 3] = NAN;              /* a NaN anywhere in a row */
    for (int d = 0; d < DIM; d++) {
        x[17 * DIM + d] = NAN;         /* a NaN row (a block without speech) */
        x[40 * DIM + d] = 0.0f;        /* a zero row: no direction */
    }
    x[63 * DIM] = INFINITY;
    int got = gf_spectral_cluster(x, n, DIM, NULL, labels);
    assert_int_equal(got, 3);
    assert_int_equal(labels[5], -1);
    assert_int_equal(labels[17], -1);
    assert_int_equal(labels[40], -1);
    assert_int_equal(labels[63], -1);
    same_partition(labels, truth, n, got);
    /* no usable row at all: no cluster */
    for (size_t i = 0; i < n * DIM; i++)
        x[i] = NAN;
    assert_int_equal(gf_spectral_cluster(x, n, DIM, NULL, labels), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(labels[i], -1);
    assert_int_equal(gf_spectral_cluster(x, 0, DIM, NULL, labels), 0);
    free(x);
}

static void test_same_labels_run_to_run(void **state)
{
    (void)state;
    size_t n = 200;
    int truth[200], a[200], b[200];
    /* overlapping clusters, so that the answer is not forced by the data */
    float *x = blobs(n, 4, 0.9, 23, truth);
    int ka = gf_spectral_cluster(x, n, DIM, NULL, a);
    int kb = gf_spectral_cluster(x, n, DIM, NULL, b);
    assert_true(ka >= 1);
    assert_int_equal(ka, kb);
    assert_memory_equal(a, b, sizeof a);
    free(x);
}

static void test_speaker_bounds(void **state)
{
    (void)state;
    size_t n = 120;
    int truth[120], labels[120];
    float *x = blobs(n, 4, 0.15, 31, truth);
    gf_spectral_opts o = gf_spectral_defaults();
    o.num_speakers = 3;   /* forced: exactly that many */
    assert_int_equal(gf_spectral_cluster(x, n, DIM, &o, labels), 3);
    o = gf_spectral_defaults();
    o.max_speakers = 2;   /* the estimate stays within the bound */
    int got = gf_spectral_cluster(x, n, DIM, &o, labels);
    assert_true(got >= 1 && got <= 2);
    o = gf_spectral_defaults();
    o.min_speakers = 6;
    o.max_speakers = 8;
    got = gf_spectral_cluster(x, n, DIM, &o, labels);
    assert_true(got >= 6 && got <= 8);
    o = gf_spectral_defaults();
    o.min_speakers = 5;
    o.max_speakers = 4;   /* contradictory: refused */
    assert_int_equal(gf_spectral_cluster(x, n, DIM, &o, labels), GF_EINVAL);
    o = gf_spectral_defaults();
    o.min_rows = 40;      /* 120 rows hold at most 3 clusters of 40 */
    got = gf_spectral_cluster(x, n, DIM, &o, labels);
    assert_true(got >= 1 && got <= 3);
    o.min_rows = 30;      /* and 4 of 30 */
    assert_int_equal(gf_spectral_cluster(x, n, DIM, &o, labels), 4);
    /* a forced count above the rows is capped at them */
    o = gf_spectral_defaults();
    o.num_speakers = 5;
    assert_int_equal(gf_spectral_cluster(x, 4, DIM, &o, labels), 4);
    free(x);
}

static void test_landmarks_beyond_max_rows(void **state)
{
    (void)state;
    size_t n = 600;
    int *truth = malloc(n * sizeof *truth), *labels = malloc(n * sizeof *labels);
    float *x = blobs(n, 3, 0.15, 47, truth);
    gf_spectral_opts o = gf_spectral_defaults();
    o.max_rows = 150;
    o.search_rows = 60;
    int got = gf_spectral_cluster(x, n, DIM, &o, labels);
    assert_int_equal(got, 3);
    same_partition(labels, truth, n, got);
    for (size_t i = 0; i < n; i++)
        assert_true(labels[i] >= 0);
    o.max_rows = 50000;   /* more than LAPACK can index */
    assert_int_equal(gf_spectral_cluster(x, n, DIM, &o, labels), GF_ETOOBIG);
    free(x);
    free(truth);
    free(labels);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_separated_clusters_counted),
        cmocka_unit_test(test_one_cluster),
        cmocka_unit_test(test_identical_rows_one_cluster),
        cmocka_unit_test(test_unusable_rows_skipped),
        cmocka_unit_test(test_same_labels_run_to_run),
        cmocka_unit_test(test_speaker_bounds),
        cmocka_unit_test(test_landmarks_beyond_max_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
