/* test_gpu_lstm.c — the segmentation network's LSTM stack (kernels/lstm/lstm_gpu.c:
 * 4 bidirectional layers of 128, 60 inputs, 589 steps) on its own route
 * against the float64 definition (gf_lstm_ref), every output of the
 * sequences checked: batches of 1, 17 and 32, the first and last sequences
 * of each, on both own kernels (v1 in fp32 math, and on cc >= 9.0 the
 * cluster kernel in tf32 with 8, 16 and 32 sequences a cluster); and the
 * library route on the batch of 17. fp32 math (the input projections' GEMMs in pedantic fp32): within
 * 1e-4 + 1e-3·|ref|, qualify's bound. Outputs are poisoned with NaN first.
 * Skips cleanly where there is no CUDA device or the card's shared memory
 * per block is too small for the own kernel. Run by `make gpu-check`. */
#include "common/error.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "diar/segmentation.h"
#include "kernels/lstm/lstm_gpu.h"
#include "kernels/lstm/lstm_ref.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/gpu/gpu_fixture.h"

/* the segmentation network's stack */
#define LAYERS GF_SEG_LSTM_LAYERS
#define IN GF_SEG_LSTM_IN
#define H GF_SEG_LSTM_HIDDEN
#define T GF_SEG_FRAMES
#define MAX_B 32

/* Run the stack on B sequences of x (on the card) and check sequences 0 and
 * B - 1 on every output; returns the mismatches. tf32: within qualify's
 * bound for that mode, 2e-2 + 2e-2·|ref|; the largest error is printed. */
static int check_batch(gf_lstm_gpu *l, const gf_lstm_weights *w, const float *x, gf_cu_ptr dx, int B,
                       gf_math math, const char *what)
{
    /* fp32: float32 throughout; tf32: qualify's bound for that math mode */
    const double atol = math == GF_MATH_TF32 ? 2e-2 : 1e-4;
    const double rtol = math == GF_MATH_TF32 ? 2e-2 : 1e-3;
    const size_t per = (size_t)T * 2 * H;
    float *got = malloc(sizeof(float) * per * B);
    double *ref = malloc(sizeof(double) * per);
    gf_cu_ptr out = 0;
    assert_int_equal(gf_lstm_gpu_poison(l), 0);
    assert_int_equal(gf_lstm_gpu_run(l, math, dx, B, &out), 0);
    assert_int_equal(gf_gpu_download(gpu, got, out, sizeof(float) * per * B), 0);
    int bad = 0;
    double worst = 0.0, max_abs = 0.0;
    int seqs[2] = { 0, B - 1 };
    for (int q = 0; q < (B > 1 ? 2 : 1); q++) {
        int b = seqs[q];
        gf_lstm_ref(w->dirs, LAYERS, IN, H, T, x + (size_t)b * T * IN, ref);
        for (size_t i = 0; i < per; i++) {
            double g = got[(size_t)b * per + i], e = fabs(g - ref[i]);
            double tol = atol + rtol * fabs(ref[i]);
            if (e > max_abs)
                max_abs = e;
            if (!(e <= tol)) {
                if (bad++ < 5)
                    printf("%s: sequence %d element %zu: %.9g vs %.9g\n", what, b, i, g, ref[i]);
            } else if (e / tol > worst) {
                worst = e / tol;
            }
        }
    }
    printf("%s, batch %d: sequences 0 and %d, worst error %.2f of the bound (largest %.2g), "
           "%d outside\n", what, B, B - 1, worst, max_abs, bad);
    free(got);
    free(ref);
    return bad;
}

static void test_own_and_library(void **state)
{
    (void)state;
    NEED_GPU();
    unsigned seed = 20261201u;
    uint64_t wseed = seed;
    gf_lstm_weights w;
    gf_lstm_weights_random(&w, LAYERS, IN, H, &wseed);
    float *x = malloc(sizeof(float) * (size_t)MAX_B * T * IN);
    for (size_t i = 0; i < (size_t)MAX_B * T * IN; i++)
        x[i] = frand(&seed);
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    gf_lstm_gpu *l = gf_lstm_gpu_new(gpu, blas, LAYERS, IN, H, w.dirs, MAX_B, T);
    assert_non_null(l);
    gf_cu_ptr dx = 0;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * (size_t)MAX_B * T * IN, &dx), 0);
    assert_int_equal(gf_gpu_upload(gpu, dx, x, sizeof(float) * (size_t)MAX_B * T * IN), 0);
    int rc = gf_lstm_gpu_set_route(l, GF_ROUTE_OWN, NULL);
    if (rc == GF_EUNSUP) {
        printf("the own LSTM kernel does not fit this card: skipping\n");
    } else {
        assert_int_equal(rc, 0);
        /* fp32 math runs v1; tf32 the cluster kernel where the card has it
         * (cc >= 9.0), with each of its group sizes, the default first */
        int bad = 0;
        int variants[] = { gf_lstm_gpu_seqs_per_cluster(l), 0, 8, 16, 32 };
        for (int v = 0; v < 5; v++) {
            if (v > 0 && (variants[v] == variants[0] ||
                          gf_lstm_gpu_set_seqs_per_cluster(l, variants[v]) != 0))
                continue;
            gf_math math = variants[v] ? GF_MATH_TF32 : GF_MATH_FP32;
            char what[64];
            snprintf(what, sizeof what,
                     variants[v] ? "own (cluster, %d a cluster, tf32)" : "own (v1, fp32)",
                     variants[v]);
            bad += check_batch(l, &w, x, dx, 1, math, what);
            bad += check_batch(l, &w, x, dx, 17, math, what);
            bad += check_batch(l, &w, x, dx, 32, math, what);
        }
        assert_int_equal(bad, 0);
        assert_int_equal(gf_lstm_gpu_set_seqs_per_cluster(l, 6),
                         variants[0] ? GF_EINVAL : GF_EUNSUP);
    }
    assert_int_equal(gf_lstm_gpu_set_route(l, GF_ROUTE_LIBRARY, NULL), 0);
    assert_int_equal(check_batch(l, &w, x, dx, 17, GF_MATH_FP32, "library"), 0);
    assert_int_equal(gf_lstm_gpu_run(l, GF_MATH_FP32, dx, MAX_B + 1, &(gf_cu_ptr){ 0 }), GF_EINVAL);
    gf_gpu_free(gpu, dx);
    gf_lstm_gpu_destroy(&l);
    gf_blas_gpu_destroy(&blas);
    gf_lstm_weights_free(&w);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_and_library),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
