/* seg1_gpu.h — the embedding network's last layer (seg_1, 5120 → 256) on a
 * CUDA card, with its two routes for the boundary embedding.seg_1.
 *
 * emb[j][n] = bias[n] + Σk pooled[j][k] · w[n][k], k < 5120, n < 256, for
 * each pooling job j. Library route: cuBLAS SGEMM in the job's math mode
 * and the bias kernel. Own route: kernels/embedding/embedding.cu, split along k with
 * the bias added where the parts meet: float32 FMAs, or in math mode tf32
 * on cc >= 9.0 the tensor cores in tf32, as the library then runs (the
 * slices summed in a thread-block cluster where the card places one, else
 * through global memory). */
#ifndef GF_SEG1_GPU_H
#define GF_SEG1_GPU_H

#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

#include <stddef.h>

#define GF_SEG1_IN 5120
#define GF_SEG1_OUT 256

typedef struct gf_seg1_gpu gf_seg1_gpu;

/* Upload w [256][5120] and bias [256] (host, copied) for up to max_jobs
 * rows a run. NULL on a device error. */
gf_seg1_gpu *gf_seg1_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const float *w, const float *bias,
                             int max_jobs);
void gf_seg1_gpu_destroy(gf_seg1_gpu **self_p);

/* The own route's planning step, with the kernels of module `area` (NULL:
 * not asked): its kernels are the embedding module's (the dense area's GEMM
 * could run seg_1 in principle, but the GPU code does not), and need no
 * more shared memory than any card offers (the tf32 and cluster kernels,
 * which do, are extras: the float32 kernel serves where they do not load).
 * Returns 0, or GF_EUNSUP with the reason in why. */
int gf_seg1_gpu_plan(const char *area, char *why, size_t len);

/* Choose the route; on success with the own route, *module_sha256 (may be
 * NULL) is the identity of the module that loaded. GF_EDEVICE on a driver
 * error. */
int gf_seg1_gpu_set_route(gf_seg1_gpu *self, gf_route_kind kind, const char **module_sha256);
gf_route_kind gf_seg1_gpu_route(const gf_seg1_gpu *self);

/* The own kernel a run in math mode math launches (borrowed, static), or
 * NULL on the library route. */
const char *gf_seg1_gpu_kernel(const gf_seg1_gpu *self, gf_math math);

/* The own route's kernel in math mode tf32 on cc >= 9.0 (kernels/embedding/embedding.cu). */
typedef enum {
    GF_SEG1_TF32_AUTO,     /* the cluster kernel where the card places a cluster, else split-K */
    GF_SEG1_TF32_SPLITK,   /* gf_seg1_splitk_tf32: partial sums through global memory */
    GF_SEG1_TF32_CLUSTER,  /* gf_seg1_cluster_tf32: summed in the cluster's shared memory */
} gf_seg1_tf32_kernel;

/* Pick the tf32 kernel by hand (tests, benchmarks), after choosing the own
 * route; the next gf_seg1_gpu_set_route goes back to AUTO. Returns 0,
 * GF_EUNSUP where that kernel did not load (below cc 9.0; the cluster kernel
 * also where the card cannot place a cluster) or GF_EINVAL for an unknown
 * value. */
int gf_seg1_gpu_set_tf32_kernel(gf_seg1_gpu *self, gf_seg1_tf32_kernel which);

/* pooled [n_jobs][5120] → emb [n_jobs][256], both on the card; math: the
 * library route's SGEMM mode. Nothing is launched for n_jobs 0. Returns 0,
 * GF_EINVAL (n_jobs outside 0..max_jobs, logged) or GF_EDEVICE. */
int gf_seg1_gpu_run(gf_seg1_gpu *self, gf_math math, gf_cu_ptr pooled, int n_jobs,
                    gf_cu_ptr emb);

#endif
