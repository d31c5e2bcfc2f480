/* test_gpu_pool.c — the end of the embedding network on both routes against
 * float64, every output: the statistics pooling (kernels/pooling/pooling_gpu.c,
 * pooling.stats: the glue kernel and kernels/pooling/pooling.cu, both float64,
 * within 2 units in float's last place of gf_pool_ref) and seg_1
 * (kernels/embedding/seg1_gpu.c, embedding.seg_1: the own float32 split-K kernel and
 * the library route in fp32 within 2e-5 of sum |w||x| per output, the
 * library route in tf32 and the own tensor-core kernel in tf32 (cc >= 9.0,
 * where the test insists that it ran; the float32 kernel below, held to
 * 2e-5) within the tf32 bound 1.05e-3 of it), at 1 job on 1 window, 96
 * jobs on 32 windows and uneven job lists (windows without jobs, a window
 * with 5). Each route runs twice: the own seg_1 kernel's arrival counters
 * must be left ready for the next launch. On cc >= 9.0 both tensor-core
 * kernels of seg_1 are also run by hand at 1, 96 and 37 jobs, twice each,
 * the second run bit-identical to the first: gf_seg1_splitk_tf32 (40 slices
 * of k at 1 job, 20 at 96 and at 37) and gf_seg1_cluster_tf32 (a cluster of
 * 8 slices summed in shared memory; the test insists that it ran where the
 * driver launches clusters). Skips cleanly where there is no CUDA device.
 * Run by `make gpu-check`. */
#include "common/error.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "kernels/pooling/pooling_gpu.h"
#include "kernels/pooling/pooling_ref.h"
#include "kernels/embedding/seg1_gpu.h"
#include "kernels/embedding/seg1_ref.h"

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

#define PER ((size_t)GF_POOL_ROWS * GF_POOL_T)   /* one window's trunk output */

/* n outputs against ref: |got - ref| <= rel · bound + slack; prints the first
 * mismatches and the worst error against its limit; returns the mismatches. */
/* The pooling of n_jobs jobs on B windows, both routes, every output. */
static void check_pool(const char *name, int B, const int *job_window, int n_jobs,
                       unsigned seed)
{
    size_t nx = (size_t)B * PER, no = (size_t)n_jobs * GF_POOL_OUT;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * GF_POOL_T * n_jobs);
    float *got = malloc(sizeof(float) * no);
    double *ref = malloc(sizeof(double) * no), *mag = malloc(sizeof(double) * no);
    for (size_t i = 0; i < nx; i++)
        x[i] = 0.5f + frand(&seed);
    for (int j = 0; j < n_jobs; j++)
        for (int t = 0; t < GF_POOL_T; t++) {
            float *wt = &w[(size_t)j * GF_POOL_T + t];
            switch (j % 3) {
            case 0: *wt = 0.5f + 0.5f * frand(&seed); break;          /* in (0, 1) */
            case 1: *wt = (t / 20 + j) % 2 ? 1.0f : 0.0f; break;     /* binary, as in the pipeline */
            default: *wt = t == (j * 37) % GF_POOL_T ? 0.75f : 0.0f;  /* a single frame */
            }
        }
    for (int j = 0; j < n_jobs; j++)
        for (int o = 0; o < GF_POOL_OUT; o++) {
            size_t i = (size_t)j * GF_POOL_OUT + o;
            ref[i] = gf_pool_ref(x + (size_t)job_window[j] * PER, w + (size_t)j * GF_POOL_T, o);
            mag[i] = fabs(ref[i]);
        }
    gf_pool_gpu *p = gf_pool_gpu_new(gpu, B, n_jobs);
    assert_non_null(p);
    gf_cu_ptr dx, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * nx, &dx), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * no, &dout), 0);
    assert_int_equal(gf_gpu_upload(gpu, dx, x, sizeof(float) * nx), 0);
    assert_int_equal(gf_pool_gpu_jobs(p, B, job_window, w, n_jobs), 0);
    static const struct {
        gf_route_kind route;
        const char *what;
    } runs[] = { { GF_ROUTE_OWN, "own" }, { GF_ROUTE_LIBRARY, "library" } };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        assert_int_equal(gf_pool_gpu_set_route(p, runs[r].route, NULL), 0);
        assert_int_equal(gf_pool_gpu_route(p), runs[r].route);
        for (int rep = 0; rep < 2; rep++) {
            char what[96];
            snprintf(what, sizeof what, "pooling %s %s, run %d", name, runs[r].what, rep + 1);
            assert_int_equal(gf_gpu_fill32(gpu, dout, 0x7fc00000u, no), 0);   /* NaN poison */
            assert_int_equal(gf_pool_gpu_run(p, dx, dout), 0);
            assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * no), 0);
            assert_int_equal(gpu_compare(what, got, ref, mag, 2.4e-7, 0.0, 1e-9, no), 0);
        }
    }
    gf_gpu_free(gpu, dx);
    gf_gpu_free(gpu, dout);
    gf_pool_gpu_destroy(&p);
    free(x), free(w), free(got), free(ref), free(mag);
}

static void test_pool_routes(void **state)
{
    (void)state;
    NEED_GPU();
    int one[1] = { 0 };
    check_pool("1 job, 1 window", 1, one, 1, 11);
    int jw[96];
    for (int j = 0; j < 96; j++)   /* 3 a window, interleaved */
        jw[j] = j % 32;
    check_pool("96 jobs, 32 windows", 32, jw, 96, 12);
    /* windows 1 and 3 without jobs, window 4 with 5 (two passes, the second
     * of two jobs), window 0 with 1 */
    int uneven[8] = { 4, 2, 4, 0, 4, 2, 4, 4 };
    check_pool("uneven, 5 windows", 5, uneven, 8, 13);
}

/* seg_1 on n_jobs rows, both routes in both math modes, every output. */
static void check_seg1(gf_blas_gpu *blas, int n_jobs, unsigned seed)
{
    size_t nw = (size_t)GF_SEG1_OUT * GF_SEG1_IN, np = (size_t)n_jobs * GF_SEG1_IN;
    size_t no = (size_t)n_jobs * GF_SEG1_OUT;
    float *w = malloc(sizeof(float) * nw), *bias = malloc(sizeof(float) * GF_SEG1_OUT);
    float *pooled = malloc(sizeof(float) * np), *got = malloc(sizeof(float) * no);
    double *ref = malloc(sizeof(double) * no), *bound = malloc(sizeof(double) * no);
    for (size_t i = 0; i < nw; i++)
        w[i] = frand(&seed) * 0.014f;   /* about 1 / sqrt(5120) */
    for (int i = 0; i < GF_SEG1_OUT; i++)
        bias[i] = frand(&seed) * 0.5f;
    for (size_t i = 0; i < np; i++)   /* means, then deviations (>= 0) */
        pooled[i] = (i % GF_SEG1_IN) < GF_SEG1_IN / 2 ? frand(&seed) : 1.0f + frand(&seed);
    for (size_t o = 0; o < no; o++) {
        size_t j = o / GF_SEG1_OUT, n = o % GF_SEG1_OUT;
        double b = 0.0;
        for (int k = 0; k < GF_SEG1_IN; k++)
            b += fabs((double)pooled[j * GF_SEG1_IN + k] * w[n * GF_SEG1_IN + k]);
        ref[o] = gf_seg1_ref(w, bias, pooled, o);
        bound[o] = b;
    }
    gf_seg1_gpu *s = gf_seg1_gpu_new(gpu, blas, w, bias, n_jobs);
    assert_non_null(s);
    gf_cu_ptr dp, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * np, &dp), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * no, &dout), 0);
    assert_int_equal(gf_gpu_upload(gpu, dp, pooled, sizeof(float) * np), 0);
    const gpu_route_run *runs = gpu_route_runs;   /* own tf32: 1.05e-3 on tensor cores */
    for (size_t r = 0; r < GF_ARRAY_LEN(gpu_route_runs); r++) {
        assert_int_equal(gf_seg1_gpu_set_route(s, runs[r].route, NULL), 0);
        assert_int_equal(gf_seg1_gpu_route(s), runs[r].route);
        const char *kern = gf_seg1_gpu_kernel(s, runs[r].math);
        const bool tc = kern && strstr(kern, "tf32");
        if (runs[r].route == GF_ROUTE_OWN && runs[r].math == GF_MATH_TF32 &&
            gf_gpu_cc(gpu) >= 90)
            assert_true(tc);
        if (runs[r].math == GF_MATH_FP32)
            assert_false(tc);
        const double rel = tc ? 1.05e-3 : runs[r].rel;
        for (int rep = 0; rep < 2; rep++) {
            char what[96];
            snprintf(what, sizeof what, "seg_1 %d jobs %s, run %d", n_jobs,
                     kern ? kern : runs[r].what, rep + 1);
            assert_int_equal(gf_gpu_fill32(gpu, dout, 0x7fc00000u, no), 0);   /* NaN poison */
            assert_int_equal(gf_seg1_gpu_run(s, runs[r].math, dp, n_jobs, dout), 0);
            assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * no), 0);
            assert_int_equal(gpu_compare(what, got, ref, bound, rel, 0.0, 1e-6, no), 0);
        }
    }
    /* Each tensor-core kernel by hand: within the tf32 bound, and a second
     * run the same to the bit (every sum in a fixed order). */
    static const struct {
        gf_seg1_tf32_kernel which;
        const char *name;
    } tc_kernels[] = { { GF_SEG1_TF32_SPLITK, "gf_seg1_splitk_tf32" },
                       { GF_SEG1_TF32_CLUSTER, "gf_seg1_cluster_tf32" } };
    float *first = malloc(sizeof(float) * no);
    assert_int_equal(gf_seg1_gpu_set_route(s, GF_ROUTE_OWN, NULL), 0);
    for (size_t q = 0; q < GF_ARRAY_LEN(tc_kernels); q++) {
        int rc = gf_seg1_gpu_set_tf32_kernel(s, tc_kernels[q].which);
        if (rc == GF_EUNSUP) {   /* below cc 9.0; the cluster also without cluster launches */
            assert_true(gf_gpu_cc(gpu) < 90 || (tc_kernels[q].which == GF_SEG1_TF32_CLUSTER &&
                                                 !gf_gpu_can_launch_clusters(gpu)));
            printf("seg_1 %d jobs %s: not on this card, skipped\n", n_jobs, tc_kernels[q].name);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_string_equal(gf_seg1_gpu_kernel(s, GF_MATH_TF32), tc_kernels[q].name);
        for (int rep = 0; rep < 2; rep++) {
            char what[96];
            snprintf(what, sizeof what, "seg_1 %d jobs %s (set), run %d", n_jobs,
                     tc_kernels[q].name, rep + 1);
            assert_int_equal(gf_gpu_fill32(gpu, dout, 0x7fc00000u, no), 0);   /* NaN poison */
            assert_int_equal(gf_seg1_gpu_run(s, GF_MATH_TF32, dp, n_jobs, dout), 0);
            assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * no), 0);
            assert_int_equal(gpu_compare(what, got, ref, bound, 1.05e-3, 0.0, 1e-6, no), 0);
            if (rep == 0)
                memcpy(first, got, sizeof(float) * no);
            else
                assert_memory_equal(first, got, sizeof(float) * no);
        }
    }
    assert_int_equal(gf_seg1_gpu_set_tf32_kernel(s, (gf_seg1_tf32_kernel)7), GF_EINVAL);
    free(first);
    gf_gpu_free(gpu, dp);
    gf_gpu_free(gpu, dout);
    gf_seg1_gpu_destroy(&s);
    free(w), free(bias), free(pooled), free(got), free(ref), free(bound);
}

static void test_seg1_routes(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    check_seg1(blas, 1, 21);
    check_seg1(blas, 96, 22);
    check_seg1(blas, 37, 23);   /* a second row tile ending part-way */
    gf_blas_gpu_destroy(&blas);
}

/* Bad input is refused with GF_EINVAL, before anything reaches the card. */
static void test_bad_input(void **state)
{
    (void)state;
    NEED_GPU();
    gf_pool_gpu *p = gf_pool_gpu_new(gpu, 2, 6);
    assert_non_null(p);
    float w[2 * GF_POOL_T] = { 0 };
    int outside[2] = { 0, 2 }, inside[2] = { 1, 0 };
    assert_int_equal(gf_pool_gpu_jobs(p, 2, outside, w, 2), GF_EINVAL);   /* window 2 of 2 */
    assert_int_equal(gf_pool_gpu_jobs(p, 3, inside, w, 2), GF_EINVAL);    /* batch above 2 */
    assert_int_equal(gf_pool_gpu_jobs(p, 2, inside, w, 7), GF_EINVAL);    /* jobs above 6 */
    assert_int_equal(gf_pool_gpu_jobs(p, 2, inside, w, 0), 0);
    assert_int_equal(gf_pool_gpu_run(p, 0, 0), 0);   /* no jobs: nothing launched */
    gf_pool_gpu_destroy(&p);
    gf_pool_gpu_destroy(&p);   /* safe twice */
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    float *sw = calloc((size_t)GF_SEG1_OUT * GF_SEG1_IN, sizeof(float));
    float sb[GF_SEG1_OUT] = { 0 };
    gf_seg1_gpu *s = gf_seg1_gpu_new(gpu, blas, sw, sb, 3);
    assert_non_null(s);
    assert_int_equal(gf_seg1_gpu_run(s, GF_MATH_FP32, 0, 4, 0), GF_EINVAL);
    assert_int_equal(gf_seg1_gpu_run(s, GF_MATH_FP32, 0, -1, 0), GF_EINVAL);
    gf_seg1_gpu_destroy(&s);
    gf_blas_gpu_destroy(&blas);
    free(sw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_routes),
        cmocka_unit_test(test_seg1_routes),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
