/* gpu_fixture.h — card 0 for a group of GPU tests, opened once: `gpu` is
 * NULL where there is no CUDA device, and NEED_GPU() then skips the case;
 * and the tests' random inputs (frand).
 * Include after cmocka.h; pass gpu_setup / gpu_teardown to
 * cmocka_run_group_tests. */
#ifndef GF_TEST_GPU_FIXTURE_H
#define GF_TEST_GPU_FIXTURE_H

#include "worker/gpu.h"

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

#define NEED_GPU()                                   \
    do {                                             \
        if (!gpu) {                                  \
            printf("no CUDA device: skipping\n");    \
            skip();                                  \
        }                                            \
    } while (0)

#endif
