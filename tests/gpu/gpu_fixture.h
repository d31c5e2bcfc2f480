/* gpu_fixture.h — card 0 for a group of GPU tests, opened once: `gpu` is
 * NULL where there is no CUDA device, and NEED_GPU() then skips the case.
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

#define NEED_GPU()                                   \
    do {                                             \
        if (!gpu) {                                  \
            printf("no CUDA device: skipping\n");    \
            skip();                                  \
        }                                            \
    } while (0)

#endif
