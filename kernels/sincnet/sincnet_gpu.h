/* sinc_gpu.h — the SincNet filterbank stage of the segmentation network on a
 * CUDA card, with its two routes for the boundary sincnet.conv0.abs_pool.
 *
 * out[b][f][p] = max over j < 3 of |sum over k < 251 of
 *                filters[f][k] · wave[b][10·(3p + j) + k]|,
 * in float64, rounded once to float; for 160,000 samples 15,975 frames and
 * 5,325 pooled outputs per filter. Library route: the waveform's im2col
 * matrix in float64, cuBLAS DGEMM, then a pooling kernel (two float64
 * workspaces: 1.4 GB at a batch of 32). Own route: kernels/sincnet/sincnet.cu, the
 * three steps in one kernel with no workspace: on float64 tensor cores
 * (DMMA) where the sm90 tier loads, else in float64 FMAs. */
#ifndef GF_SINC_GPU_H
#define GF_SINC_GPU_H

#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

#define GF_SINC_FILTERS 80
#define GF_SINC_TAPS 251
#define GF_SINC_STRIDE 10
#define GF_SINC_SAMPLES 160000
#define GF_SINC_FRAMES ((GF_SINC_SAMPLES - GF_SINC_TAPS) / GF_SINC_STRIDE + 1)   /* 15975 */
#define GF_SINC_POOLED (GF_SINC_FRAMES / 3)                                       /* 5325 */

typedef struct gf_sinc_gpu gf_sinc_gpu;

/* Upload the filters (host [80][251] float64, copied) and take the library
 * route's workspaces for up to max_batch windows. NULL on a device error. */
gf_sinc_gpu *gf_sinc_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const double *filters,
                             int max_batch);
void gf_sinc_gpu_destroy(gf_sinc_gpu **self_p);

/* The own route's planning step on a card offering smem_optin bytes of
 * shared memory a block (0: not known, not checked), with the kernels of
 * module `area` (NULL: not asked): the kernel needs 95 KB. Returns 0, or
 * GF_EUNSUP with the reason in why (the planner's hook; the route switch's
 * gf_gpu_own_kernel applies the same limit). */
int gf_sinc_gpu_plan(int smem_optin, const char *area, char *why, size_t len);

/* Choose the route. The own route is refused (GF_EUNSUP, logged) on a card
 * whose shared memory per block is below the kernel's 95 KB; GF_EDEVICE on a
 * driver error. On success with the own route, *module_sha256 (may be NULL)
 * is the identity of the module that loaded. */
int gf_sinc_gpu_set_route(gf_sinc_gpu *self, gf_route_kind kind, const char **module_sha256);
gf_route_kind gf_sinc_gpu_route(const gf_sinc_gpu *self);
/* The kernel gf_sinc_gpu_run launches on the own route: the DMMA kernel
 * where the sm90 tier loads (cc >= 9.0), else the FMA kernel; NULL on the
 * library route. */
const char *gf_sinc_gpu_kernel(const gf_sinc_gpu *self);

/* wave [B][160000] float on the card → out [B][80][5325] float on the card.
 * Returns 0, GF_EINVAL (B above max_batch) or GF_EDEVICE. */
int gf_sinc_gpu_run(gf_sinc_gpu *self, gf_cu_ptr wave, int B, gf_cu_ptr out);

#endif
