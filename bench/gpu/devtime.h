/* devtime.h — the GPU benchmarks' measure: the median device time of a
 * region run `reps` times after two warm-ups, by events on the card's
 * stream (gf_gpu_timing_*). Header only: each benchmark is one program. */
#ifndef GF_BENCH_GPU_DEVTIME_H
#define GF_BENCH_GPU_DEVTIME_H

#include "common/devstats.h"
#include "common/util.h"
#include "gpu/device.h"

#include <stdlib.h>

/* One run of the measured region; 0 on success. */
typedef int (*bench_region_fn)(void *arg);

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median device ms of the runs that succeeded; 0 when none did. */
static inline double bench_median_ms(gf_gpu *gpu, bench_region_fn run, void *arg, int reps)
{
    double *ms = gf_calloc((size_t)(reps > 0 ? reps : 1), sizeof *ms);
    int got = 0;
    for (int r = -2; r < reps; r++) {
        gf_devstats *st = gf_devstats_new();
        gf_gpu_timing_begin(gpu, "bench", "x");
        int rc = run(arg);
        gf_gpu_timing_end(gpu);
        gf_gpu_timing_collect(gpu, st);
        const gf_devstats_row *rows;
        if (rc == 0 && r >= 0 && gf_devstats_rows(st, &rows) == 1 && rows[0].count == 1)
            ms[got++] = (double)rows[0].total_ns / 1e6;
        gf_devstats_destroy(&st);
    }
    qsort(ms, (size_t)got, sizeof *ms, bench_cmp_double);
    double m = got ? ms[got / 2] : 0;
    free(ms);
    return m;
}

#endif
