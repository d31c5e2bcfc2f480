/* test_gpu_dense.c — the segmentation head's layers (kernels/dense/dense_gpu.c:
 * dense.linear0 256 → 128 and dense.linear1 128 → 128 with bias + leaky
 * ReLU, dense.classifier 128 → 7 with bias + log-softmax) on both routes in
 * both math modes against the float64 definition (gf_dense_ref), every
 * output, at the rows of a batch of 1 (589), 8 (4,712) and 32 windows
 * (18,848), and at 8,205 rows; the own linear kernels' blocks of 8, 16,
 * 32 and 64 rows each end part-way in one of them.
 * The own float32 kernels and the library route in fp32 within 2e-5 of sum
 * |w||x| per output (twice the row's largest for a log-probability); the
 * library route in tf32 and the own linear layers' tf32 tensor-core kernels
 * (math mode tf32, cc >= 9.0; there the test insists that they are the
 * ones that ran) within the tf32 bound 1.05e-3 of it. Also: the own route
 * refuses shapes it has no kernel for, and bad rows or buffers are refused.
 * Skips cleanly where there is no CUDA device. Run by `make gpu-check`. */
#include "common/error.h"
#include "gpu/blas.h"
#include "kernels/dense/dense_gpu.h"
#include "kernels/dense/dense_ref.h"
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

typedef struct {
    const char *name;
    int in, out;
    gf_dense_act act;
} layer;

static const layer layers[] = {
    { "dense.linear0", 256, 128, GF_DENSE_LEAKY_RELU },
    { "dense.linear1", 128, 128, GF_DENSE_LEAKY_RELU },
    { "dense.classifier", 128, 7, GF_DENSE_LOG_SOFTMAX },
};

/* The sum the rounding errors of output o scale with: sum |w||x| of its
 * row and column; for a log-probability, which subtracts the row's
 * log-sum-exp, twice the largest over the row's classes. */
static double error_bound(const layer *L, const float *w, const float *x, size_t o)
{
    size_t r = o / (size_t)L->out;
    int c0 = L->act == GF_DENSE_LEAKY_RELU ? (int)(o % (size_t)L->out) : 0;
    int c1 = L->act == GF_DENSE_LEAKY_RELU ? c0 + 1 : L->out;
    double worst = 0.0;
    for (int c = c0; c < c1; c++) {
        double s = 0.0;
        for (int k = 0; k < L->in; k++)
            s += fabs((double)w[(size_t)c * L->in + k] * x[r * (size_t)L->in + k]);
        worst = fmax(worst, s);
    }
    return L->act == GF_DENSE_LEAKY_RELU ? worst : 2.0 * worst;
}

static void check_layer(gf_blas_gpu *blas, const layer *L, int rows, unsigned seed)
{
    size_t nx = (size_t)rows * L->in, no = (size_t)rows * L->out, nw = (size_t)L->in * L->out;
    float *x = malloc(sizeof(float) * nx), *w = malloc(sizeof(float) * nw);
    float *bias = malloc(sizeof(float) * L->out), *got = malloc(sizeof(float) * no);
    double *ref = malloc(sizeof(double) * no), *bound = malloc(sizeof(double) * no);
    for (size_t i = 0; i < nx; i++)
        x[i] = frand(&seed);
    for (size_t i = 0; i < nw; i++)
        w[i] = frand(&seed) / sqrtf((float)L->in);
    for (int i = 0; i < L->out; i++)
        bias[i] = frand(&seed) * 0.1f;
    for (size_t o = 0; o < no; o++) {
        ref[o] = gf_dense_ref(w, bias, L->in, L->out, L->act, x, o);
        bound[o] = error_bound(L, w, x, o);
    }
    gf_dense_gpu *d = gf_dense_gpu_new(gpu, blas, L->name, L->in, L->out, w, bias, L->act, rows);
    assert_non_null(d);
    gf_cu_ptr dx, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * nx, &dx), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * no, &dout), 0);
    assert_int_equal(gf_gpu_upload(gpu, dx, x, sizeof(float) * nx), 0);
    const gpu_route_run *runs = gpu_route_runs;   /* own tf32: 1.05e-3 on tensor cores */
    for (size_t r = 0; r < GF_ARRAY_LEN(gpu_route_runs); r++) {
        assert_int_equal(gf_dense_gpu_set_route(d, runs[r].route, NULL), 0);
        assert_int_equal(gf_dense_gpu_route(d), runs[r].route);
        assert_int_equal(gf_gpu_fill32(gpu, dout, 0x7fc00000u, no), 0);   /* NaN poison */
        assert_int_equal(gf_dense_gpu_run(d, runs[r].math, dx, rows, dout), 0);
        assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * no), 0);
        /* Which own kernel ran: the tensor-core ones are held to tf32's bound,
         * and on a card that has them a tf32 job must take them. */
        const char *kern = gf_dense_gpu_kernel(d, runs[r].math, rows);
        const bool tc = kern && strstr(kern, "tf32");
        if (runs[r].route == GF_ROUTE_OWN && runs[r].math == GF_MATH_TF32 &&
            L->act == GF_DENSE_LEAKY_RELU && gf_gpu_cc(gpu) >= 90)
            assert_true(tc);
        if (runs[r].math == GF_MATH_FP32)
            assert_false(tc);
        const double rel = tc ? 1.05e-3 : runs[r].rel;
        char what[96];
        snprintf(what, sizeof what, "%s %s, %d rows (%s)", L->name, runs[r].what, rows,
                 kern ? kern : "cuBLAS");
        assert_int_equal(gpu_compare(what, got, ref, bound, rel, 2.4e-7, 1e-6, no), 0);
    }
    gf_gpu_free(gpu, dx);
    gf_gpu_free(gpu, dout);
    gf_dense_gpu_destroy(&d);
    free(x), free(w), free(bias), free(got), free(ref), free(bound);
}

static void test_every_layer_both_routes(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    static const int rows[] = { 589, 4712, 18848, 8205 };   /* batches 1, 8, 32; a part tile */
    for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
            check_layer(blas, &layers[l], rows[r], 11u + 7u * (unsigned)(l * 4 + r));
    gf_blas_gpu_destroy(&blas);
}

static void test_refusals(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    float *w = calloc(128 * 256, sizeof(float)), *bias = calloc(128, sizeof(float));
    /* shapes the own kernels do not run: 100 inputs; 64 outputs; 7 classes of 256 inputs */
    gf_dense_gpu *odd_in = gf_dense_gpu_new(gpu, blas, "odd.in", 100, 128, w, bias,
                                            GF_DENSE_LEAKY_RELU, 4);
    gf_dense_gpu *odd_out = gf_dense_gpu_new(gpu, blas, "odd.out", 128, 64, w, bias,
                                             GF_DENSE_LEAKY_RELU, 4);
    gf_dense_gpu *odd_cls = gf_dense_gpu_new(gpu, blas, "odd.classifier", 256, 7, w, bias,
                                             GF_DENSE_LOG_SOFTMAX, 4);
    assert_non_null(odd_in);
    assert_non_null(odd_out);
    assert_non_null(odd_cls);
    assert_int_equal(gf_dense_gpu_set_route(odd_in, GF_ROUTE_OWN, NULL), GF_EUNSUP);
    assert_int_equal(gf_dense_gpu_set_route(odd_out, GF_ROUTE_OWN, NULL), GF_EUNSUP);
    assert_int_equal(gf_dense_gpu_set_route(odd_cls, GF_ROUTE_OWN, NULL), GF_EUNSUP);
    assert_int_equal(gf_dense_gpu_route(odd_in), GF_ROUTE_LIBRARY);
    /* rows outside 1..max_rows and a misaligned buffer, on both routes */
    gf_dense_gpu *d = gf_dense_gpu_new(gpu, blas, "dense.linear1", 128, 128, w, bias,
                                       GF_DENSE_LEAKY_RELU, 4);
    assert_non_null(d);
    gf_cu_ptr dx, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * 128 * 8, &dx), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * 128 * 8, &dout), 0);
    for (int route = 0; route < 2; route++) {
        assert_int_equal(gf_dense_gpu_set_route(d, route ? GF_ROUTE_OWN : GF_ROUTE_LIBRARY,
                                                NULL), 0);
        assert_int_equal(gf_dense_gpu_run(d, GF_MATH_FP32, dx, 0, dout), GF_EINVAL);
        assert_int_equal(gf_dense_gpu_run(d, GF_MATH_FP32, dx, 5, dout), GF_EINVAL);
        assert_int_equal(gf_dense_gpu_run(d, GF_MATH_FP32, dx + 4, 4, dout), GF_EINVAL);
        assert_int_equal(gf_dense_gpu_run(d, GF_MATH_FP32, dx, 4, dout + 8), GF_EINVAL);
    }
    assert_int_equal(gf_gpu_sync(gpu), 0);
    gf_gpu_free(gpu, dx);
    gf_gpu_free(gpu, dout);
    gf_dense_gpu_destroy(&d);
    gf_dense_gpu_destroy(&d);   /* safe twice */
    gf_dense_gpu_destroy(&odd_in);
    gf_dense_gpu_destroy(&odd_out);
    gf_dense_gpu_destroy(&odd_cls);
    gf_blas_gpu_destroy(&blas);
    free(w), free(bias);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_layer_both_routes),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
