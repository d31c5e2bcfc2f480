/* test_gpu_ahc.c — the card's centroid linkage (diar/cluster/ahc_gpu.c,
 * kernels/ahc/ahc.cu) against the CPU's (diar/cluster/ahc.c): the linkage
 * matrices must be bit-identical, every merge, distance and size, on points
 * with cluster structure (what AHC meets in diarization) and without, at
 * sizes and dimensions that are not multiples of the kernels' tiles; and the
 * flat clusters of the recipe's AHC must be the same. Skips without a GPU. */
#include "common/devstats.h"
#include "diar/cluster/ahc.h"
#include "diar/cluster/ahc_gpu.h"
#include "gpu/device.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu/gpu_fixture.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1.0p-53;
}

static double gauss(void)
{
    double u = urand() + 1e-300, v = urand();
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* n points of dim values around k centres (k 0: plain noise), spread s. */
static float *points(size_t n, size_t dim, int k, double s)
{
    float *c = malloc(sizeof(float) * (size_t)(k ? k : 1) * dim);
    float *x = malloc(sizeof(float) * n * dim);
    for (size_t i = 0; i < (size_t)(k ? k : 1) * dim; i++)
        c[i] = k ? (float)gauss() : 0.0f;
    for (size_t i = 0; i < n; i++) {
        size_t ci = k ? (size_t)(urand() * k) : 0;
        for (size_t d = 0; d < dim; d++)
            x[i * dim + d] = c[ci * dim + d] + (float)(s * gauss());
    }
    free(c);
    return x;
}

static void compare_linkage(size_t n, size_t dim, int k, double s)
{
    float *xf = points(n, dim, k, s);
    double *x = malloc(sizeof(double) * n * dim);
    for (size_t i = 0; i < n * dim; i++)
        x[i] = xf[i];
    double *zc = malloc(sizeof(double) * 4 * (n - 1)), *zg = malloc(sizeof(double) * 4 * (n - 1));
    memset(zg, 0xff, sizeof(double) * 4 * (n - 1));
    assert_int_equal(gf_ahc_linkage_centroid(x, n, dim, zc), 0);
    assert_int_equal(gf_ahc_linkage_centroid_gpu(gpu, x, n, dim, zg), 0);
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < 4 * (n - 1); i++)
        if (memcmp(&zc[i], &zg[i], sizeof(double)) != 0 && differ++ == 0)
            first = i;
    printf("n %zu dim %zu centres %d: %zu of %zu linkage values differ%s\n", n, dim, k, differ,
           4 * (n - 1), differ ? "" : " (bit-identical)");
    if (differ)
        printf("  first at merge %zu: cpu (%g %g %.17g %g) gpu (%g %g %.17g %g)\n", first / 4,
               zc[first / 4 * 4], zc[first / 4 * 4 + 1], zc[first / 4 * 4 + 2],
               zc[first / 4 * 4 + 3], zg[first / 4 * 4], zg[first / 4 * 4 + 1],
               zg[first / 4 * 4 + 2], zg[first / 4 * 4 + 3]);
    assert_int_equal(differ, 0);
    free(zc);
    free(zg);
    free(x);
    free(xf);
}

static void test_small_and_ragged(void **state)
{
    (void)state;
    NEED_GPU();
    compare_linkage(2, 3, 0, 1.0);
    compare_linkage(3, 1, 0, 1.0);
    compare_linkage(17, 37, 0, 1.0);
    compare_linkage(100, 33, 3, 0.3);
}

static void test_clustered(void **state)
{
    (void)state;
    NEED_GPU();
    compare_linkage(1000, 256, 0, 1.0);
    compare_linkage(3001, 256, 12, 0.25);
    compare_linkage(6000, 128, 40, 0.5);
}

/* The recipe's AHC (normalise in float32, link, cut at 0.6): same labels. */
static void test_cluster_labels(void **state)
{
    (void)state;
    NEED_GPU();
    size_t n = 4000, dim = 256;
    float *e = points(n, dim, 6, 0.04);
    int *lc = malloc(sizeof(int) * n), *lg = malloc(sizeof(int) * n);
    int kc = gf_ahc_cluster(e, n, dim, 0.6, lc);
    gf_devstats *st = gf_devstats_new();
    int kg = gf_ahc_cluster_with(gf_ahc_link_gpu, gpu, st, e, n, dim, 0.6, lg);
    printf("recipe AHC on %zu embeddings: %d clusters on the CPU, %d on the card\n", n, kc, kg);
    assert_true(kc > 1);
    assert_int_equal(kc, kg);
    assert_memory_equal(lc, lg, sizeof(int) * n);
    /* the linkage's device time: one measured sample of clustering.ahc, own */
    const gf_devstats_row *rows;
    size_t nr = gf_devstats_rows(st, &rows);
    assert_int_equal(nr, 1);
    assert_string_equal(rows[0].stage, "clustering.ahc");
    assert_string_equal(rows[0].route, "own");
    assert_int_equal(rows[0].count, 1);
    assert_true(rows[0].total_ns > 0);
    assert_int_equal(rows[0].failed + rows[0].unavailable, 0);
    gf_devstats_destroy(&st);
    free(lc);
    free(lg);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_and_ragged),
        cmocka_unit_test(test_clustered),
        cmocka_unit_test(test_cluster_labels),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
