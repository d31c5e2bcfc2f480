/* test_fbank.c — the Kaldi filterbank against a plain float64 DFT version of
 * the same definition, and its properties. (Parity with torchaudio itself is
 * tests/integration/fbank_parity.sh.) */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "kernels/fbank/fbank_cpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double mel(double hz)
{
    return 1127.0 * log(1.0 + hz / 700.0);
}

/* The definition, in float64 with an O(N^2) DFT: no FFT, no float32 tables. */
static void fbank_naive(const float *wave, size_t n, double *out)
{
    size_t frames = 1 + (n - 400) / 160;
    double lo = mel(20), hi = mel(8000), d = (hi - lo) / 81;
    for (size_t f = 0; f < frames; f++) {
        double x[400], mean = 0;
        for (int j = 0; j < 400; j++)
            mean += (x[j] = wave[f * 160 + (size_t)j] * 32768.0);
        mean /= 400;
        for (int j = 0; j < 400; j++)
            x[j] -= mean;
        for (int j = 399; j > 0; j--)
            x[j] -= 0.97 * x[j - 1];
        x[0] -= 0.97 * x[0];
        for (int j = 0; j < 400; j++)
            x[j] *= 0.54 - 0.46 * cos(2 * M_PI * j / 399);
        double p[256];
        for (int k = 0; k < 256; k++) {
            double re = 0, im = 0;
            for (int j = 0; j < 400; j++) {
                re += x[j] * cos(2 * M_PI * k * j / 512);
                im -= x[j] * sin(2 * M_PI * k * j / 512);
            }
            p[k] = re * re + im * im;
        }
        for (int b = 0; b < 80; b++) {
            double l = lo + b * d, c = lo + (b + 1) * d, r = lo + (b + 2) * d, e = 0;
            for (int k = 0; k < 256; k++) {
                double m = mel(31.25 * k);
                double w = fmin((m - l) / (c - l), (r - m) / (r - c));
                if (w > 0)
                    e += w * p[k];
            }
            out[f * 80 + (size_t)b] = log(fmax(e, 1.1920929e-7));
        }
    }
}

/* Noise with a chirp on top: every mel bin well above float32 rounding. */
static float *test_wave(size_t n, unsigned seed)
{
    float *w = gf_malloc(n * sizeof(float));
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / 16000;
        double noise = ((double)rand() / RAND_MAX - 0.5) * 0.2;
        w[i] = (float)(noise + 0.3 * sin(2 * M_PI * (200 * t + 1500 * t * t)));
    }
    return w;
}

static void test_frames(void **state)
{
    (void)state;
    assert_int_equal(gf_fbank_frames(0), 0);
    assert_int_equal(gf_fbank_frames(399), 0);
    assert_int_equal(gf_fbank_frames(400), 1);
    assert_int_equal(gf_fbank_frames(559), 1);
    assert_int_equal(gf_fbank_frames(560), 2);
    assert_int_equal(gf_fbank_frames(160000), 998);
    float w[399] = { 0.5f };
    float out[80];
    size_t nf = 7;
    assert_int_equal(gf_fbank_compute(w, 399, out, &nf), GF_EINVAL);
    assert_int_equal(nf, 0);
}

static void test_against_naive(void **state)
{
    (void)state;
    size_t sizes[] = { 400, 401, 1760, 4123 };
    gf_fbank *fb = gf_fbank_new();
    for (size_t s = 0; s < GF_ARRAY_LEN(sizes); s++) {
        size_t n = sizes[s];
        float *w = test_wave(n, (unsigned)(11 + s));
        size_t frames = gf_fbank_frames(n), got = 0;
        float *ours = gf_malloc(frames * 80 * sizeof(float));
        double *ref = gf_malloc(frames * 80 * sizeof(double));
        assert_int_equal(gf_fbank_run(fb, w, n, ours, &got, 0), 0);
        assert_int_equal(got, frames);
        fbank_naive(w, n, ref);
        double worst = 0;
        size_t at = 0;
        for (size_t i = 0; i < frames * 80; i++) {
            double e = fabs(ours[i] - ref[i]);
            if (e > worst) {
                worst = e;
                at = i;
            }
        }
        printf("n=%zu: %zu frames, max |ours - float64 DFT| %.2e at frame %zu bin %zu\n", n,
               frames, worst, at / 80, at % 80);
        if (worst > 1e-3)
            fail_msg("n=%zu: max error %g at %zu (ours %g, ref %g)", n, worst, at, ours[at],
                     ref[at]);
        free(w);
        free(ours);
        free(ref);
    }
    gf_fbank_destroy(&fb);
    gf_fbank_destroy(&fb);
}

/* Mean normalisation: each bin's column sums to zero, and it is the plain
 * output minus the column mean. gf_fbank_compute is the normalised form. */
static void test_mean_norm(void **state)
{
    (void)state;
    size_t n = 16000;
    float *w = test_wave(n, 5);
    size_t frames = gf_fbank_frames(n), got;
    float *plain = gf_malloc(frames * 80 * sizeof(float));
    float *norm = gf_malloc(frames * 80 * sizeof(float));
    float *conv = gf_malloc(frames * 80 * sizeof(float));
    gf_fbank *fb = gf_fbank_new();
    assert_int_equal(gf_fbank_run(fb, w, n, plain, &got, 0), 0);
    assert_int_equal(gf_fbank_run(fb, w, n, norm, &got, GF_FBANK_MEAN_NORM), 0);
    assert_int_equal(gf_fbank_compute(w, n, conv, &got), 0);
    assert_int_equal(got, frames);
    assert_memory_equal(norm, conv, frames * 80 * sizeof(float));
    for (int b = 0; b < 80; b++) {
        double sum = 0, mean = 0;
        for (size_t f = 0; f < frames; f++) {
            sum += norm[f * 80 + (size_t)b];
            mean += plain[f * 80 + (size_t)b];
        }
        mean /= (double)frames;
        assert_true(fabs(sum / (double)frames) < 1e-5);
        for (size_t f = 0; f < frames; f++)
            assert_true(fabs(norm[f * 80 + (size_t)b] - (plain[f * 80 + (size_t)b] - mean)) <
                        1e-5);
    }
    gf_fbank_destroy(&fb);
    free(w);
    free(plain);
    free(norm);
    free(conv);
}

/* A pure tone lands in the mel bins around its frequency; scaling the input
 * by a shifts every log energy by 2 ln a. */
static void test_tone_and_scale(void **state)
{
    (void)state;
    size_t n = 4000;
    float *w = gf_malloc(n * sizeof(float)), *w2 = gf_malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        w[i] = (float)(0.25 * sin(2 * M_PI * 1000.0 * (double)i / 16000) +
                       1e-3 * sin(0.37 * (double)i * (double)i));
        w2[i] = w[i] * 0.5f;
    }
    size_t frames = gf_fbank_frames(n), got;
    float *a = gf_malloc(frames * 80 * sizeof(float)), *b = gf_malloc(frames * 80 * sizeof(float));
    gf_fbank *fb = gf_fbank_new();
    assert_int_equal(gf_fbank_run(fb, w, n, a, &got, 0), 0);
    assert_int_equal(gf_fbank_run(fb, w2, n, b, &got, 0), 0);
    /* Centre of bin k in Hz; the loudest bin's neighbourhood holds 1 kHz. */
    double lo = mel(20), d = (mel(8000) - lo) / 81;
    for (size_t f = 0; f < frames; f++) {
        int best = 0;
        for (int k = 1; k < 80; k++)
            if (a[f * 80 + (size_t)k] > a[f * 80 + (size_t)best])
                best = k;
        double left = 700 * (exp((lo + best * d) / 1127) - 1);
        double right = 700 * (exp((lo + (best + 2) * d) / 1127) - 1);
        assert_true(left < 1000 && 1000 < right);
        for (int k = 0; k < 80; k++)
            assert_true(fabs(a[f * 80 + (size_t)k] - b[f * 80 + (size_t)k] - 2 * log(2.0)) < 1e-3);
    }
    gf_fbank_destroy(&fb);
    free(w);
    free(w2);
    free(a);
    free(b);
}

int main(void)
{
    gf_log_init("test_fbank", GF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_against_naive),
        cmocka_unit_test(test_mean_norm),
        cmocka_unit_test(test_tone_and_scale),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
