/* test_fbank_gpu.c — the float64 definition the GPU fbank is checked against
 * (gf_fbank_gpu_ref, kernels/fbank/fbank_ref.c), itself checked here without a
 * card: the CPU filterbank (kernels/fbank/fbank_cpu.c, float32, within 1e-3 of
 * torchaudio) must lie within the GPU checks' tolerance of it, 1e-4 + 1e-9 x
 * each output's conditioning, and a feature moved by a few thousandths where
 * the conditioning is good must not. (The GPU routes themselves:
 * tests/gpu/test_gpu_fbank.c.) */
#include "common/error.h"
#include "kernels/fbank/fbank_cpu.h"
#include "kernels/fbank/fbank_gpu.h"
#include "kernels/fbank/fbank_ref.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define PER ((size_t)GF_FBANK_GPU_FRAMES * GF_FBANK_BINS)
#define ATOL 1e-4
#define RTOL 1e-9

static unsigned lcg(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Uniform in [-1, 1). */
static double urand(unsigned *s)
{
    return (double)lcg(s) / 8388608.0 - 1.0;
}

/* Outputs of cpu outside the tolerance of ref. */
static long outside(const float *cpu, const double *ref, const double *cond, double *worst)
{
    long bad = 0;
    for (size_t i = 0; i < PER; i++) {
        double e = fabs(cpu[i] - ref[i]), lim = ATOL + RTOL * cond[i];
        assert_true(cond[i] >= 2.0);   /* a mel bin holds at most the frame's power */
        if (!(e <= lim))
            bad++;
        else if (e / lim > *worst)
            *worst = e / lim;
    }
    return bad;
}

static void test_cpu_within_tolerance(void **state)
{
    (void)state;
    float *wave = malloc(sizeof(float) * GF_FBANK_GPU_SAMPLES), *cpu = malloc(sizeof(float) * PER);
    double *ref = malloc(sizeof(double) * PER), *cond = malloc(sizeof(double) * PER);
    unsigned seed = 9;
    for (int kind = 0; kind < 2; kind++) {   /* tones with noise; white noise */
        double f1 = 300 + 100 * urand(&seed), f2 = 2000 + 500 * urand(&seed);
        for (int i = 0; i < GF_FBANK_GPU_SAMPLES; i++) {
            double t = i / 16000.0;
            wave[i] = kind ? (float)(0.3 * urand(&seed))
                           : (float)(0.3 * (sin(2 * M_PI * f1 * t) + 0.5 * sin(2 * M_PI * f2 * t)) +
                                     0.005 * urand(&seed));
        }
        size_t frames = 0;
        assert_int_equal(gf_fbank_compute(wave, GF_FBANK_GPU_SAMPLES, cpu, &frames), 0);
        assert_int_equal(frames, GF_FBANK_GPU_FRAMES);
        gf_fbank_gpu_ref(wave, ref, cond);
        double worst = 0.0;
        long bad = outside(cpu, ref, cond, &worst);
        printf("%s: cpu within %.3f of the tolerance, %ld outside\n", kind ? "noise" : "tones",
               worst, bad);
        assert_int_equal(bad, 0);
        /* The check sees a small error where the output is well conditioned. */
        size_t best = 0;
        for (size_t i = 1; i < PER; i++)
            if (cond[i] < cond[best])
                best = i;
        cpu[best] += 3e-3f;
        assert_int_equal(outside(cpu, ref, cond, &worst), 1);
    }
    free(wave), free(cpu), free(ref), free(cond);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_within_tolerance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
