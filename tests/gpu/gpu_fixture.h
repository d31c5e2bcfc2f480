/* gpu_fixture.h — card 0 for a group of GPU tests, opened once: `gpu` is
 * NULL where there is no CUDA device, and NEED_GPU() then skips the case;
 * the tests' random inputs (frand); the four (route, math) runs of a stage
 * with their error bounds (gpu_route_runs); and the check of outputs against
 * a float64 reference (gpu_compare).
 * Include after cmocka.h; pass gpu_setup / gpu_teardown to
 * cmocka_run_group_tests. */
#ifndef GF_TEST_GPU_FIXTURE_H
#define GF_TEST_GPU_FIXTURE_H

#include "common/util.h"
#include "route/boundary.h"
#include "gpu/device.h"
#include "route/planner.h"

#include <math.h>

#include <stdio.h>

static gf_gpu *gpu;

static int gpu_setup(void **state)
{
    (void)state;
    if (gf_gpu_open(0, &gpu) != 0)
        gpu = NULL;
    return 0;
}

static int gpu_teardown(void **state)
{
    (void)state;
    gf_gpu_destroy(&gpu);
    return 0;
}

/* Uniform in [-1, 1) from a fixed LCG: every run checks the same inputs. */
static inline float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return ((float)(*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

/* A stage's runs: each route in each math mode, with the bound on its error
 * as a fraction of the output's sum of |w·x| (float32 FMAs: 2e-5; tf32's
 * 10-bit mantissa on the library route: 1.05e-3; an own tensor-core kernel
 * in tf32 is held to the latter by its test). */
typedef struct {
    gf_route_kind route;
    gf_math math;
    double rel;
    const char *what;
} gpu_route_run;

static const gpu_route_run gpu_route_runs[] = {
    { GF_ROUTE_OWN, GF_MATH_FP32, 2e-5, "own" },
    { GF_ROUTE_OWN, GF_MATH_TF32, 2e-5, "own tf32" },
    { GF_ROUTE_LIBRARY, GF_MATH_FP32, 2e-5, "library fp32" },
    { GF_ROUTE_LIBRARY, GF_MATH_TF32, 1.05e-3, "library tf32" },
};

/* got against ref, each within rel·bound[i] + rel_ref·|ref[i]| + slack (a
 * NaN is outside): prints the first five outside and a summary line under
 * what; returns how many are outside. */
static inline long gpu_compare(const char *what, const float *got, const double *ref,
                               const double *bound, double rel, double rel_ref, double slack,
                               size_t n)
{
    long bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double lim = rel * bound[i] + rel_ref * fabs(ref[i]) + slack;
        double e = fabs((double)got[i] - ref[i]);
        if (!(e <= lim)) {
            if (bad++ < 5)
                fprintf(stderr, "%s: output %zu: got %.9g, want %.9g\n", what, i, got[i], ref[i]);
        } else if (e / lim > worst) {
            worst = e / lim;
        }
    }
    printf("%-40s %zu outputs, worst error %.2f of the bound, %ld outside\n", what, n, worst,
           bad);
    return bad;
}

#define NEED_GPU()                                   \
    do {                                             \
        if (!gpu) {                                  \
            printf("no CUDA device: skipping\n");    \
            skip();                                  \
        }                                            \
    } while (0)

#endif
