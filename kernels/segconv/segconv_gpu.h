/* segconv_gpu.h — one 1-D convolution stage of the segmentation network on
 * a CUDA card (segconv.conv1: 80 → 60 channels, segconv.conv2: 60 → 60),
 * with its two routes.
 *
 * out[b][c][p] = max over j < 3 of (sum over ci, k < 5 of
 *                w[c][ci][k] · x[b][ci][3p + j + k]) + bias[c],
 * for p < (tin - 4) / 3: the convolution (5 taps, stride 1) and the max-pool
 * by 3 with its bias; the instance norm and leaky ReLU after it are not
 * part of it. Library route: im2col, cuBLAS SGEMM in the job's math mode,
 * the pooling kernel. Own route: kernels/segconv/segconv.cu, one launch in float32
 * FMAs whatever the math mode. */
#ifndef GF_SEGCONV_GPU_H
#define GF_SEGCONV_GPU_H

#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

#define GF_SEGCONV_COUT 60
#define GF_SEGCONV_TAPS 5

typedef struct gf_segconv_gpu gf_segconv_gpu;

/* Upload w [60][cin][5] and bias [60] (host, copied) for inputs of up to
 * max_batch windows of cin x tin; boundary names the stage in logs. NULL on
 * a device error. */
gf_segconv_gpu *gf_segconv_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *boundary,
                                   int cin, int tin, const float *w, const float *bias,
                                   int max_batch);
void gf_segconv_gpu_destroy(gf_segconv_gpu **self_p);

/* The own route's planning step for a stage of cin input channels (boundary
 * names it) on a card offering smem_optin bytes of shared memory a block (0:
 * not known, not checked), with the kernels of module `area` (NULL: not
 * asked): the kernel needs cin·784 bytes. Returns 0, or GF_EUNSUP with the
 * reason in why (the planner's hook; the route switch's gf_gpu_own_kernel
 * applies the same limit). */
int gf_segconv_gpu_plan(int cin, int smem_optin, const char *boundary, const char *area,
                        char *why, size_t len);

/* Choose the route; on success with the own route, *module_sha256 (may be
 * NULL) is the identity of the module that loaded. GF_EUNSUP (logged) where
 * the card's shared memory per block is below the kernel's cin·784 bytes. */
int gf_segconv_gpu_set_route(gf_segconv_gpu *self, gf_route_kind kind,
                             const char **module_sha256);
gf_route_kind gf_segconv_gpu_route(const gf_segconv_gpu *self);

/* Pooled outputs per channel: (tin - 4) / 3. */
int gf_segconv_gpu_pooled(const gf_segconv_gpu *self);

/* x [B][cin][tin] → out [B][60][pooled], both on the card; math: the library
 * route's SGEMM mode. Returns 0, GF_EINVAL (B above max_batch) or
 * GF_EDEVICE. */
int gf_segconv_gpu_run(gf_segconv_gpu *self, gf_math math, gf_cu_ptr x, int B, gf_cu_ptr out);

#endif
