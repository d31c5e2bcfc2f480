/* test_gpu_fbank.c — the embedding network's log-mel features on the card
 * (kernels/fbank/fbank_gpu.c) on every pair of routes of its two boundaries:
 * own FFT + own mel, own FFT + library mel, library DFT + own mel, library +
 * library, at a batch of 1 and of 32 windows. Every feature of every window
 * against the float64 definition (gf_fbank_gpu_ref) within 1e-4 + 1e-9 x
 * its conditioning (the frame's power over the mel bin's energy: float32
 * rounding in a power spectrum is relative to the frame's whole power), and
 * the stages timed under the route that ran. Skips cleanly where there is
 * no CUDA device. Run by `make gpu-check`. */
#include "common/devstats.h"
#include "common/error.h"
#include "gpu/blas.h"
#include "kernels/fbank/fbank_gpu.h"
#include "kernels/fbank/fbank_ref.h"
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

#define WINDOWS 32
#define PER ((size_t)GF_FBANK_GPU_FRAMES * 80)
#define ATOL 1e-4
#define RTOL 1e-9

/* Speech-like windows: two tones at a level drawn per window, with noise. */
static void make_wave(float *wave, unsigned *seed)
{
    for (int w = 0; w < WINDOWS; w++) {
        double f1 = 250 + 150 * frand(seed), f2 = 1500 + 1000 * frand(seed);
        double amp = 0.2 + 0.15 * frand(seed);
        for (int i = 0; i < GF_FBANK_GPU_SAMPLES; i++) {
            double t = i / 16000.0, env = 0.5 + 0.5 * sin(2 * M_PI * 3 * t + w);
            wave[(size_t)w * GF_FBANK_GPU_SAMPLES + i] =
                (float)(amp * env * (sin(2 * M_PI * f1 * t) + 0.5 * sin(2 * M_PI * f2 * t)) +
                        0.005 * frand(seed));
        }
    }
}

/* The route a stage was timed under, from the run's device statistics. */
static const char *timed_route(const gf_devstats *st, const char *stage)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].stage, stage) == 0 && rows[i].count == 1)
            return rows[i].route;
    return "";
}

static void test_every_route_pair(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    float *wave = malloc(sizeof(float) * WINDOWS * GF_FBANK_GPU_SAMPLES);
    float *got = malloc(sizeof(float) * WINDOWS * PER);
    double *ref = malloc(sizeof(double) * WINDOWS * PER), *cond = malloc(sizeof(double) * WINDOWS * PER);
    unsigned seed = 4242;
    make_wave(wave, &seed);
    for (int w = 0; w < WINDOWS; w++)
        gf_fbank_gpu_ref(wave + (size_t)w * GF_FBANK_GPU_SAMPLES, ref + w * PER, cond + w * PER);
    static const int batches[] = { 1, WINDOWS };
    static const gf_route_kind kinds[2] = { GF_ROUTE_OWN, GF_ROUTE_LIBRARY };
    for (int bi = 0; bi < 2; bi++) {
        const int B = batches[bi];
        gf_fbank_gpu *g = gf_fbank_gpu_new(gpu, blas, B);
        assert_non_null(g);
        for (int pair = 0; pair < 4; pair++) {
            const gf_route_kind dft = kinds[pair / 2], mel = kinds[pair % 2];
            const char *dft_name = gf_route_kind_name(dft);
            const char *mel_name = gf_route_kind_name(mel);
            assert_int_equal(gf_fbank_gpu_set_route(g, "fbank.dft", dft, NULL), 0);
            assert_int_equal(gf_fbank_gpu_set_route(g, "fbank.mel", mel, NULL), 0);
            assert_int_equal(gf_fbank_gpu_route(g, "fbank.dft"), dft);
            assert_int_equal(gf_fbank_gpu_route(g, "fbank.mel"), mel);
            assert_int_equal(gf_gpu_fill32(gpu, gf_fbank_gpu_features(g), 0x7fc00000u,
                                           (size_t)B * PER), 0);   /* NaN poison */
            gf_devstats *st = gf_devstats_new();
            assert_int_equal(gf_fbank_gpu_run(g, wave, B, got, st), 0);
            assert_string_equal(timed_route(st, "fbank.dft"), dft_name);
            assert_string_equal(timed_route(st, "fbank.mel"), mel_name);
            gf_devstats_destroy(&st);
            long bad = 0, loose = 0;
            double worst = 0.0, max_abs = 0.0;
            for (size_t i = 0; i < (size_t)B * PER; i++) {
                double e = fabs((double)got[i] - ref[i]), lim = ATOL + RTOL * cond[i];
                loose += lim > 1e-2;
                if (!(e <= lim)) {   /* NaN (an unwritten output) fails too */
                    if (bad++ < 5)
                        fprintf(stderr, "dft %s, mel %s, batch %d: window %zu frame %zu bin %zu: "
                                "got %.7g, want %.7g (allowed %.3g)\n", dft_name, mel_name, B,
                                i / PER, i % PER / 80, i % 80, got[i], ref[i], lim);
                    continue;
                }
                worst = fmax(worst, e / lim);
                max_abs = fmax(max_abs, e);
            }
            printf("dft %-7s mel %-7s batch %2d: %zu features, max |error| %.3g, worst %.3f of "
                   "the tolerance, %ld outside; %ld ill-conditioned (allowed > 0.01)\n", dft_name,
                   mel_name, B, (size_t)B * PER, max_abs, worst, bad, loose);
            assert_int_equal(bad, 0);
        }
        gf_fbank_gpu_destroy(&g);
    }
    gf_blas_gpu_destroy(&blas);
    free(wave), free(got), free(ref), free(cond);
}

/* Bad input is an error, not a crash. */
static void test_bad_input(void **state)
{
    (void)state;
    NEED_GPU();
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    gf_fbank_gpu *g = gf_fbank_gpu_new(gpu, blas, 2);
    assert_non_null(g);
    float *wave = calloc(3 * GF_FBANK_GPU_SAMPLES, sizeof(float));
    float *feats = malloc(sizeof(float) * 3 * PER);
    assert_int_equal(gf_fbank_gpu_set_route(g, "fbank.fft", GF_ROUTE_OWN, NULL), GF_EINVAL);
    assert_int_equal(gf_fbank_gpu_run(g, wave, 0, feats, NULL), GF_EINVAL);
    assert_int_equal(gf_fbank_gpu_run(g, wave, 3, feats, NULL), GF_EINVAL);
    assert_int_equal(gf_fbank_gpu_stage(g, "fbank.log", gf_fbank_gpu_features(g), 1), GF_EINVAL);
    gf_fbank_gpu_destroy(&g);
    gf_fbank_gpu_destroy(&g);   /* safe twice */
    gf_blas_gpu_destroy(&blas);
    free(wave), free(feats);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_route_pair),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
