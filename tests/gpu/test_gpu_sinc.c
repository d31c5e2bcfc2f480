/* test_gpu_sinc.c — the SincNet filterbank stage (kernels/sincnet/sincnet_gpu.c) on both
 * routes against its definition in float64 (gf_sinc_ref): for
 * random filters and waveforms, every pooled output of every filter and
 * window at batches 1 and 32, the own kernel (kernels/sincnet/sincnet.cu: the DMMA
 * kernel where the sm90 tier loads, which the test checks is the one that
 * ran, else the FMA kernel) and the library route (im2col, DGEMM, pooling).
 * The 5,325 pooled outputs of a window end part-way through a block of
 * either kernel (13 into the DMMA kernel's 84th block of 64, 205 into the
 * FMA kernel's 21st of 256), so the tail is checked too. Both routes sum in
 * float64 and round once, so each output must equal the reference rounded
 * to float within a few units in its last place. Skips cleanly where there
 * is no CUDA device. Run by `make gpu-check`. */
#include "common/error.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "kernels/sincnet/sincnet_gpu.h"
#include "kernels/sincnet/sincnet_ref.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/gpu/gpu_fixture.h"

#define WINDOWS 32   /* the largest batch run; batch 1 runs on the first window */

static void test_both_routes(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    const size_t nw = (size_t)WINDOWS * GF_SINC_SAMPLES;
    const size_t no = (size_t)WINDOWS * GF_SINC_FILTERS * GF_SINC_POOLED;
    double *filters = malloc(sizeof(double) * GF_SINC_FILTERS * GF_SINC_TAPS);
    float *wave = malloc(sizeof(float) * nw), *got = malloc(sizeof(float) * no);
    double *ref = malloc(sizeof(double) * no);
    unsigned seed = 77;
    for (int i = 0; i < GF_SINC_FILTERS * GF_SINC_TAPS; i++)
        filters[i] = frand(&seed) * 0.1;
    for (size_t i = 0; i < nw; i++)
        wave[i] = frand(&seed) * 1.5f;
    for (size_t i = 0; i < no; i++)
        ref[i] = gf_sinc_ref(filters, wave, i);

    gf_sinc_gpu *s = gf_sinc_gpu_new(gpu, blas, filters, WINDOWS);
    assert_non_null(s);
    gf_cu_ptr dw, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * nw, &dw), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * no, &dout), 0);
    assert_int_equal(gf_gpu_upload(gpu, dw, wave, sizeof(float) * nw), 0);
    static const gf_route_kind routes[] = { GF_ROUTE_OWN, GF_ROUTE_LIBRARY };
    static const int batches[] = { 1, WINDOWS };
    for (int run = 0; run < 4; run++) {
        const int r = run / 2, B = batches[run % 2];
        const size_t nb = (size_t)B * GF_SINC_FILTERS * GF_SINC_POOLED;
        int rc = gf_sinc_gpu_set_route(s, routes[r], NULL);
        if (rc == GF_EUNSUP) {   /* a card with too little shared memory: refused, logged */
            printf("own route refused on this card\n");
            continue;
        }
        assert_int_equal(rc, 0);
        const char *kern = gf_sinc_gpu_kernel(s);
        if (routes[r] == GF_ROUTE_LIBRARY)
            assert_null(kern);
        else
            assert_string_equal(kern, gf_gpu_cc(gpu) >= 90 ? "gf_sinc_abs_pool_dmma"
                                                           : "gf_sinc_abs_pool_f64");
        assert_int_equal(gf_gpu_fill32(gpu, dout, 0x7fc00000u, no), 0);   /* NaN poison */
        assert_int_equal(gf_sinc_gpu_run(s, dw, B, dout), 0);
        assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * no), 0);
        long bad = 0;
        double worst = 0.0;
        for (size_t i = nb; i < no; i++) {   /* outputs past the batch: untouched */
            if (!isnan(got[i]) && bad++ < 5)
                fprintf(stderr, "%s: output %zu past batch %d written\n", r ? "library" : "own", i,
                        B);
        }
        for (size_t i = 0; i < nb; i++) {
            double e = fabs((double)got[i] - ref[i]), lim = 4.0 * 6e-8 * fabs(ref[i]) + 1e-12;
            if (!(e <= lim)) {   /* NaN (an unwritten output) fails too */
                if (bad++ < 5)
                    fprintf(stderr, "%s: output %zu: got %.9g, want %.9g\n",
                            r ? "library" : "own", i, got[i], ref[i]);
            } else if (e / lim > worst) {
                worst = e / lim;
            }
        }
        printf("%-7s route (%s), batch %2d: %zu outputs, worst error %.2f of 4 ulp, %ld outside\n",
               r ? "library" : "own", kern ? kern : "DGEMM", B, nb, worst, bad);
        assert_int_equal(bad, 0);
    }
    gf_gpu_free(gpu, dw);
    gf_gpu_free(gpu, dout);
    gf_sinc_gpu_destroy(&s);
    gf_blas_gpu_destroy(&blas);
    free(filters), free(wave), free(got), free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_routes),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
