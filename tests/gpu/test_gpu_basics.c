/* test_gpu_basics.c — the worker's card on a real GPU: open, memory, an
 * embedded kernel against its CPU reference, cuBLAS GEMM (fp32 and tf32)
 * against a float64 reference, and event timing into device statistics.
 * Skips cleanly where there is no CUDA device. Run by `make gpu-check`. */
#include "common/devstats.h"
#include "common/error.h"
#include "kernels/glue/glue_cpu.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

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

static void test_glue_leaky_relu(void **state)
{
    (void)state;
    NEED_GPU();
    const int shapes[][2] = { { 1, 1 }, { 7, 33 }, { 589, 128 }, { 1000, 257 } };
    unsigned seed = 12345;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *x = malloc(n * sizeof *x), *ref = malloc(n * sizeof *ref), *got = malloc(n * 4);
        float *bias = malloc((size_t)cols * 4);
        for (size_t i = 0; i < n; i++)
            x[i] = ref[i] = frand(&seed) * 3.0f;
        for (int c = 0; c < cols; c++)
            bias[c] = frand(&seed);
        gf_bias_leaky_relu_cpu(ref, bias, rows, cols, 0.01f);
        gf_cu_ptr dx, db;
        assert_int_equal(gf_gpu_alloc(gpu, n * 4, &dx), 0);
        assert_int_equal(gf_gpu_alloc(gpu, (size_t)cols * 4, &db), 0);
        assert_int_equal(gf_gpu_upload(gpu, dx, x, n * 4), 0);
        assert_int_equal(gf_gpu_upload(gpu, db, bias, (size_t)cols * 4), 0);
        gf_cu_function f;
        const char *tier, *sha;
        assert_int_equal(gf_gpu_function(gpu, "glue", "gf_bias_leaky_relu", &f, &tier, &sha), 0);
        float slope = 0.01f;
        void *params[] = { &dx, &db, &rows, &cols, &slope };
        unsigned blocks = (unsigned)((n + 255) / 256);
        assert_int_equal(gf_gpu_launch(gpu, f, blocks, 1, 1, 256, 1, 1, 0, params), 0);
        assert_int_equal(gf_gpu_download(gpu, got, dx, n * 4), 0);
        for (size_t i = 0; i < n; i++)
            if (got[i] != ref[i]) {
                fprintf(stderr, "glue %dx%d: [%zu] got %g want %g\n", rows, cols, i, got[i], ref[i]);
                fail();
            }
        if (s == 0)
            printf("glue module: tier %s sha256 %s\n", tier, sha);
        gf_gpu_free(gpu, dx);
        gf_gpu_free(gpu, db);
        free(x), free(ref), free(got), free(bias);
    }
}

/* Every module loads through the module cache: one load per area whatever
 * the number of kernels asked of it, and the module loaded is the one the
 * planner names (its tier's embedded PTX hash). In this (test) build every
 * later request is proven against the first (gpu/modcache.h). */
static void test_modules_load_once_through_the_cache(void **state)
{
    (void)state;
    NEED_GPU();
    size_t before = gf_gpu_modules_loaded(gpu);
    gf_cu_function f1, f2;
    const char *tier1, *sha1, *tier2, *sha2;
    assert_int_equal(gf_gpu_function(gpu, "glue", "gf_bias_leaky_relu", &f1, &tier1, &sha1), 0);
    size_t after_first = gf_gpu_modules_loaded(gpu);
    assert_true(after_first <= before + 1);
    assert_int_equal(gf_gpu_function(gpu, "glue", "gf_im2col2d", &f2, &tier2, &sha2), 0);
    assert_int_equal(gf_gpu_function(gpu, "glue", "gf_bias_leaky_relu", &f2, NULL, NULL), 0);
    assert_int_equal(gf_gpu_modules_loaded(gpu), after_first);
    assert_ptr_equal(f1, f2);
    assert_string_equal(tier1, tier2);
    assert_string_equal(sha1, sha2);
    gf_module_id id;
    assert_int_equal(gf_module_provider_embedded.identity(NULL, "glue", atoi(tier1 + 2), NULL, &id), 0);
    assert_string_equal(id.sha256, sha1);
}

static void check_gemm(gf_blas_gpu *blas, gf_math math, bool trans_b, int m, int n, int k,
                       unsigned *seed)
{
    float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4);
    float *c = malloc((size_t)m * n * 4);
    for (long i = 0; i < (long)m * k; i++)
        a[i] = frand(seed);
    for (long i = 0; i < (long)k * n; i++)
        b[i] = frand(seed);
    gf_cu_ptr da, db, dc;
    assert_int_equal(gf_gpu_alloc(gpu, (size_t)m * k * 4, &da), 0);
    assert_int_equal(gf_gpu_alloc(gpu, (size_t)k * n * 4, &db), 0);
    assert_int_equal(gf_gpu_alloc(gpu, (size_t)m * n * 4, &dc), 0);
    assert_int_equal(gf_gpu_upload(gpu, da, a, (size_t)m * k * 4), 0);
    assert_int_equal(gf_gpu_upload(gpu, db, b, (size_t)k * n * 4), 0);
    assert_int_equal(gf_gpu_fill32(gpu, dc, 0x7fc00000u, (size_t)m * n), 0); /* NaN poison */
    int ldb = trans_b ? k : n;
    assert_int_equal(gf_blas_gpu_gemm(blas, math, trans_b, m, n, k, 1.0f, da, k, db, ldb, 0.0f,
                                      dc, n), 0);
    assert_int_equal(gf_gpu_download(gpu, c, dc, (size_t)m * n * 4), 0);
    double num = 0, den = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double r = 0;
            for (int p = 0; p < k; p++)
                r += (double)a[(long)i * k + p] *
                     (trans_b ? b[(long)j * k + p] : b[(long)p * n + j]);
            double g = c[(long)i * n + j];
            assert_false(isnan(g));
            num += (g - r) * (g - r);
            den += r * r;
        }
    double rel = sqrt(num / den);
    double tol = math == GF_MATH_TF32 ? 2e-3 : 1e-5;
    printf("gemm %s %s %dx%dx%d: relative error %.3g (tolerance %.0g)\n",
           math == GF_MATH_TF32 ? "tf32" : "fp32", trans_b ? "NT" : "NN", m, n, k, rel, tol);
    assert_true(rel < tol);
    gf_gpu_free(gpu, da), gf_gpu_free(gpu, db), gf_gpu_free(gpu, dc);
    free(a), free(b), free(c);
}

static void test_cublas_gemm(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    unsigned seed = 777;
    check_gemm(blas, GF_MATH_FP32, false, 1, 1, 1, &seed);
    check_gemm(blas, GF_MATH_FP32, true, 589, 512, 60, &seed);
    check_gemm(blas, GF_MATH_FP32, false, 123, 77, 300, &seed);
    check_gemm(blas, GF_MATH_TF32, true, 589, 512, 256, &seed);
    gf_blas_gpu_destroy(&blas);
}

static void test_timing_into_stats(void **state)
{
    (void)state;
    NEED_GPU();
    gf_devstats *stats = gf_devstats_new();
    gf_cu_ptr d;
    assert_int_equal(gf_gpu_alloc(gpu, 1 << 20, &d), 0);
    assert_int_equal(gf_gpu_timing_begin(gpu, "fill", "library"), 0);
    assert_int_equal(gf_gpu_fill32(gpu, d, 0x3f800000u, (1 << 20) / 4), 0);
    assert_int_equal(gf_gpu_timing_end(gpu), 0);
    assert_int_equal(gf_gpu_timing_end(gpu), GF_ESTATE);
    gf_gpu_timing_collect(gpu, stats);
    const gf_devstats_row *rows;
    assert_int_equal(gf_devstats_rows(stats, &rows), 1);
    assert_int_equal(rows[0].count, 1);
    assert_int_equal(rows[0].failed, 0);
    gf_gpu_free(gpu, d);
    gf_devstats_destroy(&stats);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glue_leaky_relu),
        cmocka_unit_test(test_modules_load_once_through_the_cache),
        cmocka_unit_test(test_cublas_gemm),
        cmocka_unit_test(test_timing_into_stats),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
