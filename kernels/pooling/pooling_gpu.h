/* pool_gpu.h — the embedding network's statistics pooling on a CUDA card,
 * with its two routes for the boundary pooling.stats.
 *
 * Per job j on window b = job_window[j] with frame weights w[j][125]:
 *   v1 = Σw + 1e-8, mean[r] = Σt w[t]·x[b][r][t] / v1,
 *   std[r] = sqrt(Σt w[t]·(x[b][r][t] - mean[r])² / (v1 - Σw²/v1 + 1e-8)),
 *   out[j] = mean[0..2559], std[0..2559]
 * over the trunk's output x [B][2560][125] (kernels/pooling/pooling_cpu.h, MODELS.md),
 * in float64, rounded once to float. Library route: the glue kernel
 * gf_statspool (one block a job). Own route: kernels/pooling/pooling.cu (a block a
 * window and 32 rows, for every job of the window). */
#ifndef GF_POOL_GPU_H
#define GF_POOL_GPU_H

#include "gpu/device.h"
#include "route/planner.h"

#include <stddef.h>

#define GF_POOL_ROWS 2560   /* the trunk's rows: 256 channels x 10 mel rows */
#define GF_POOL_T 125       /* the trunk's frames */
#define GF_POOL_OUT (2 * GF_POOL_ROWS)

typedef struct gf_pool_gpu gf_pool_gpu;

/* For batches of up to max_batch windows and max_jobs jobs. NULL on a
 * device error. */
gf_pool_gpu *gf_pool_gpu_new(gf_gpu *gpu, int max_batch, int max_jobs);
void gf_pool_gpu_destroy(gf_pool_gpu **self_p);

/* The own route's planning step, with the kernels of module `area` (NULL:
 * not asked): the kernel runs any batch on any card its module loads on, so
 * it refuses only another area's module. Returns 0, or GF_EUNSUP with the
 * reason in why. */
int gf_pool_gpu_plan(const char *area, char *why, size_t len);

/* Choose the route; on success with the own route, *module_sha256 (may be
 * NULL) is the identity of the module that loaded. GF_EDEVICE on a driver
 * error. */
int gf_pool_gpu_set_route(gf_pool_gpu *self, gf_route_kind kind, const char **module_sha256);
gf_route_kind gf_pool_gpu_route(const gf_pool_gpu *self);

/* The jobs of the next runs: n_jobs jobs on a batch of B windows, job j on
 * window job_window[j] with weights w[j][125] (host, copied to the card on
 * its stream). GF_EINVAL (logged) for B outside 1..max_batch, n_jobs outside
 * 0..max_jobs or a window outside 0..B-1. */
int gf_pool_gpu_jobs(gf_pool_gpu *self, int B, const int *job_window, const float *w,
                     int n_jobs);

/* x [B][2560][125] on the card → out [n_jobs][5120] on the card, for the
 * jobs set last (nothing is launched for none). 0 or GF_EDEVICE. */
int gf_pool_gpu_run(gf_pool_gpu *self, gf_cu_ptr x, gf_cu_ptr out);

#endif
