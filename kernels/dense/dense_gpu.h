/* dense_gpu.h — one layer of the segmentation network's head on a CUDA card
 * (dense.linear0: 256 → 128, dense.linear1: 128 → 128, dense.classifier:
 * 128 → 7), with its two routes.
 *
 * For each row r of x [rows][in], z[r][o] = sum over k of x[r][k] · w[o][k]
 * + bias[o], then, by the layer's activation, out[r][o] = z (z > 0) or
 * 0.01 · z (leaky ReLU), or out[r][o] = z[r][o] - log sum over c of
 * exp(z[r][c]) (log-softmax over the row's outputs). Library route: cuBLAS
 * SGEMM in the job's math mode, then the bias + activation glue kernel (and
 * the log-softmax kernel). Own route: kernels/dense/dense.cu, one launch, for the
 * head's shapes only (128 outputs and a multiple of 16 inputs with leaky
 * ReLU; 7 outputs of 128 inputs with log-softmax): float32 FMAs, except the
 * leaky ReLU layers in math mode tf32 on cc >= 9.0, which run on the tensor
 * cores in tf32 as the library then does. */
#ifndef GF_DENSE_GPU_H
#define GF_DENSE_GPU_H

#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

#include <stddef.h>

#define GF_DENSE_SLOPE 0.01f   /* the leaky ReLU's slope below zero (MODELS.md) */

typedef enum {
    GF_DENSE_LEAKY_RELU,       /* dense.linear0, dense.linear1 */
    GF_DENSE_LOG_SOFTMAX,      /* dense.classifier */
} gf_dense_act;

typedef struct gf_dense_gpu gf_dense_gpu;

/* Upload w [out][in] and bias [out] (host, copied) for up to max_rows rows;
 * boundary names the layer in logs. NULL on a device error. */
gf_dense_gpu *gf_dense_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *boundary, int in,
                               int out, const float *w, const float *bias, gf_dense_act act,
                               int max_rows);
void gf_dense_gpu_destroy(gf_dense_gpu **self_p);

/* The own route's planning step for a layer of `in` inputs and `out`
 * outputs with activation act (boundary names it), with the kernels of
 * module `area` (NULL: not asked): the own kernels run 128 outputs of a
 * multiple of 16 inputs with leaky ReLU and 7 outputs of 128 inputs with
 * log-softmax. Returns 0, or GF_EUNSUP with the reason in why (the
 * planner's hook and the route switch apply this rule). */
int gf_dense_gpu_plan(int in, int out, gf_dense_act act, const char *boundary, const char *area,
                      char *why, size_t len);

/* Choose the route; on success with the own route, *module_sha256 (may be
 * NULL) is the identity of the module that loaded. GF_EUNSUP (logged) where
 * gf_dense_gpu_plan refuses the layer. */
int gf_dense_gpu_set_route(gf_dense_gpu *self, gf_route_kind kind, const char **module_sha256);
gf_route_kind gf_dense_gpu_route(const gf_dense_gpu *self);

/* The own kernel a run of rows rows in math mode math launches (borrowed,
 * static), or NULL on the library route. */
const char *gf_dense_gpu_kernel(const gf_dense_gpu *self, gf_math math, int rows);

/* x [rows][in] → out [rows][out], both on the card, 16-byte aligned (as
 * gf_gpu_alloc returns them); math: the library route's SGEMM mode. Returns
 * 0, GF_EINVAL (rows outside 1..max_rows, a misaligned buffer; logged) or
 * GF_EDEVICE. */
int gf_dense_gpu_run(gf_dense_gpu *self, gf_math math, gf_cu_ptr x, int rows, gf_cu_ptr out);

#endif
