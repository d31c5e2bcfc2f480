/* test_gpu_segconv.c — the segmentation network's 1-D convolution stages
 * (kernels/segconv/segconv_gpu.c: segconv.conv1 80 → 60 channels over 5,325 frames,
 * segconv.conv2 60 → 60 over 1,773) on both routes against a float64
 * reference computed here from the definition in segconv_gpu.h, every
 * output of two windows: the own kernel (kernels/segconv/segconv.cu, float32 FMAs)
 * and the library route in fp32 within 2e-5 of sum |w||x| per output, the
 * library route in tf32 within the tf32 bound 1.05e-3 of it. Skips cleanly
 * where there is no CUDA device. Run by `make gpu-check`. */
#include "common/error.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "kernels/segconv/segconv_gpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/gpu/gpu_fixture.h"

#define WINDOWS 2
#define C GF_SEGCONV_COUT
#define K GF_SEGCONV_TAPS

/* ref: the definition in float64; bound: the same with |w| and |x| and no
 * bias (the sum the rounding errors scale with), at the maximising frame. */
static void reference(const float *x, const float *w, const float *bias, int cin, int tin,
                      double *ref, double *bound)
{
    int tp = (tin - K + 1) / 3;
    for (int b = 0; b < WINDOWS; b++)
        for (int c = 0; c < C; c++)
            for (int p = 0; p < tp; p++) {
                double m = -INFINITY, mb = 0.0;
                for (int j = 0; j < 3; j++) {
                    double acc = 0.0, abs_acc = 0.0;
                    for (int ci = 0; ci < cin; ci++)
                        for (int k = 0; k < K; k++) {
                            double v = (double)w[(c * cin + ci) * K + k] *
                                       x[((size_t)b * cin + ci) * tin + 3 * p + j + k];
                            acc += v;
                            abs_acc += fabs(v);
                        }
                    m = fmax(m, acc);
                    mb = fmax(mb, abs_acc);
                }
                size_t o = ((size_t)b * C + c) * tp + p;
                ref[o] = m + bias[c];
                bound[o] = mb;
            }
}

static void check_stage(gf_blas_gpu *blas, const char *name, int cin, int tin, unsigned seed)
{
    int tp = (tin - K + 1) / 3;
    size_t nx = (size_t)WINDOWS * cin * tin, no = (size_t)WINDOWS * C * tp;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * C * cin * K);
    float *bias = malloc(sizeof(float) * C), *got = malloc(sizeof(float) * no);
    double *ref = malloc(sizeof(double) * no), *bound = malloc(sizeof(double) * no);
    for (size_t i = 0; i < nx; i++)
        x[i] = frand(&seed) * 2.0f;
    for (int i = 0; i < C * cin * K; i++)
        w[i] = frand(&seed) * 0.1f;
    for (int i = 0; i < C; i++)
        bias[i] = frand(&seed) * 0.5f;
    reference(x, w, bias, cin, tin, ref, bound);
    gf_segconv_gpu *s = gf_segconv_gpu_new(gpu, blas, name, cin, tin, w, bias, WINDOWS);
    assert_non_null(s);
    assert_int_equal(gf_segconv_gpu_pooled(s), tp);
    gf_cu_ptr dx, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * nx, &dx), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * no, &dout), 0);
    assert_int_equal(gf_gpu_upload(gpu, dx, x, sizeof(float) * nx), 0);
    const gpu_route_run *runs = gpu_route_runs;
    for (size_t r = 0; r < GF_ARRAY_LEN(gpu_route_runs); r++) {
        int rc = gf_segconv_gpu_set_route(s, runs[r].route, NULL);
        if (rc == GF_EUNSUP) {
            printf("%s %s: refused on this card\n", name, runs[r].what);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(gf_gpu_fill32(gpu, dout, 0x7fc00000u, no), 0);   /* NaN poison */
        assert_int_equal(gf_segconv_gpu_run(s, runs[r].math, dx, WINDOWS, dout), 0);
        assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * no), 0);
        char what[96];
        snprintf(what, sizeof what, "%s %s", name, runs[r].what);
        assert_int_equal(gpu_compare(what, got, ref, bound, runs[r].rel, 0.0, 1e-6, no), 0);
    }
    gf_gpu_free(gpu, dx);
    gf_gpu_free(gpu, dout);
    gf_segconv_gpu_destroy(&s);
    free(x), free(w), free(bias), free(got), free(ref), free(bound);
}

static void test_both_routes(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    check_stage(blas, "segconv.conv1", 80, 5325, 5);
    check_stage(blas, "segconv.conv2", 60, 1773, 6);
    /* a short input whose last block is mostly past the end */
    check_stage(blas, "segconv.short", 60, 100, 7);
    gf_blas_gpu_destroy(&blas);
}

/* Both stages share the kernel, whose shared memory follows Cin: setting the
 * smaller stage's route after the larger's must not shrink the larger's
 * limit (the network sets conv1, then conv2, then runs conv1). */
static void test_two_stages_one_kernel(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    float *w = calloc((size_t)C * 80 * K, sizeof(float)), *bias = calloc(C, sizeof(float));
    gf_segconv_gpu *big = gf_segconv_gpu_new(gpu, blas, "segconv.conv1", 80, 100, w, bias, 1);
    gf_segconv_gpu *small = gf_segconv_gpu_new(gpu, blas, "segconv.conv2", 60, 100, w, bias, 1);
    assert_non_null(big);
    assert_non_null(small);
    int rc = gf_segconv_gpu_set_route(big, GF_ROUTE_OWN, NULL);
    if (rc == GF_EUNSUP) {
        printf("own route refused on this card\n");
    } else {
        assert_int_equal(rc, 0);
        assert_int_equal(gf_segconv_gpu_set_route(small, GF_ROUTE_OWN, NULL), 0);
        gf_cu_ptr dx, dout;
        assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * 80 * 100, &dx), 0);
        assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * C * 32, &dout), 0);
        assert_int_equal(gf_gpu_fill32(gpu, dx, 0, 80 * 100), 0);
        assert_int_equal(gf_segconv_gpu_run(big, GF_MATH_FP32, dx, 1, dout), 0);
        assert_int_equal(gf_segconv_gpu_run(small, GF_MATH_FP32, dx, 1, dout), 0);
        assert_int_equal(gf_gpu_sync(gpu), 0);
        gf_gpu_free(gpu, dx);
        gf_gpu_free(gpu, dout);
    }
    gf_segconv_gpu_destroy(&big);
    gf_segconv_gpu_destroy(&small);
    gf_blas_gpu_destroy(&blas);
    free(w), free(bias);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_routes),
        cmocka_unit_test(test_two_stages_one_kernel),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
