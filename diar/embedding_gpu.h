/* embedding_gpu.h — the speaker-embedding network (WeSpeaker ResNet34 as
 * wrapped by pyannote) on a CUDA card, each boundary on its planned route.
 *
 * Input: fbank features [B, 998, 80] (time × mel, mean-normalised, as
 * kernels/fbank/fbank_cpu makes them). The trunk runs once per window; then one
 * mask-weighted statistics pooling per (window, local speaker) job and the
 * seg_1 layer. Convolutions are im2col + cuBLAS GEMM with batch norm folded
 * into the weights at load and bias, residual and ReLU in one epilogue, or
 * the own kernel (kernels/resnet/resnet_gpu.h); the pooling and seg_1 have their
 * route objects (kernels/pooling/pooling_gpu.h, kernels/embedding/seg1_gpu.h).
 * Device buffers for max_batch windows are taken once. */
#ifndef GF_EMBEDDING_GPU_H
#define GF_EMBEDDING_GPU_H

#include "common/devstats.h"
#include "gpu/blas.h"
#include "diar/embedding.h"
#include "diar/segmentation.h"
#include "gpu/device.h"
#include "route/plan.h"
#include "route/planner.h"

#define GF_EMB_MASK GF_SEG_FRAMES   /* mask length: segmentation frames per window */

typedef struct gf_embedding_gpu gf_embedding_gpu;

/* Load `path` (sha256_hex or NULL), fold batch norm, upload, size for
 * max_batch windows and up to 3 jobs a window. NULL after logging why. */
gf_embedding_gpu *gf_embedding_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *path,
                                       const char *sha256_hex, int max_batch, gf_math math);
void gf_embedding_gpu_destroy(gf_embedding_gpu **self_p);

/* The planning step of this network's own kernels (the module provider's
 * hook, diar/kernel_plan.h): whether the launcher of req->boundary runs
 * that layer, as this network builds it (the architecture's geometry: the
 * loader takes no file of another shape), in req->math on card, with the
 * kernels of req->area (resnet.* in fp32: resnet32's 3xTF32 variants, but
 * resnet.conv1 the resnet module's direct kernel in both maths). No card is
 * touched. Returns 0; GF_EUNSUP with the reason in why; GF_ENOENT for a
 * boundary of another network. */
int gf_embedding_gpu_plan(const gf_route_request *req, const gf_card_identity *card, char *why,
                          size_t len);

/* Put a ResNet boundary ("resnet.layer2.0.conv1", ...) or all of them
 * ("resnet") on the library route or the own implicit-GEMM kernel
 * (kernels/resnet/resnet.cu), or "pooling.stats" / "embedding.seg_1" on theirs
 * (kernels/pooling/pooling.cu, kernels/embedding/embedding.cu). The own ResNet kernel is tf32
 * only and needs cc >= 8.0: otherwise GF_EUNSUP (refused, logged).
 * GF_ENOENT for an unknown boundary. */
int gf_embedding_gpu_set_route(gf_embedding_gpu *self, const char *boundary, gf_route_kind kind);

/* gf_embedding_gpu_set_route as a gf_route_setter (planner.h), one boundary
 * (not "resnet"): *module_sha256 (may be NULL) the module an own route
 * loaded. GF_ENOENT for a boundary of another network. */
int gf_embedding_gpu_switch(void *self, const char *boundary, gf_route_kind kind,
                            const char **module_sha256);

/* Take the plan's routes for this network's boundaries for a call of `batch`
 * windows in the network's math (gf_route_plan_apply): own only where the
 * module that loads is the planned one; a kernel that refuses at load runs
 * the library route (logged, and the plan says so). Returns 0, or the first
 * setter error (GF_EDEVICE). */
int gf_embedding_gpu_apply_plan(gf_embedding_gpu *self, gf_route_plan *plan, int batch);

/* feats [B, 998, 80]; n_jobs pooling jobs, job j on window job_window[j]
 * with frame weights masks[j][589] → emb [n_jobs, 256]. 0 <= n_jobs <= 3B.
 * Device time per boundary into stats (may be NULL). */
int gf_embedding_gpu_run(gf_embedding_gpu *self, const float *feats, int B,
                         const int *job_window, const float *masks, int n_jobs, float *emb,
                         gf_devstats *stats);
/* The same from features already on the card (device [B, 998, 80], e.g.
 * gf_fbank_gpu_features). */
int gf_embedding_gpu_run_dev(gf_embedding_gpu *self, gf_cu_ptr feats, int B,
                             const int *job_window, const float *masks, int n_jobs, float *emb,
                             gf_devstats *stats);
/* run_dev in two halves, so that the trunk can run while the host waits for
 * something else: _trunk queues the trunk on the card's stream and returns at
 * once (its output stays, timed regions too when stats is not NULL); _pool
 * then pools the n_jobs jobs of those B windows, waits for the card and
 * collects every timed region of this gf_gpu into stats. n_jobs may be 0. */
int gf_embedding_gpu_trunk(gf_embedding_gpu *self, gf_cu_ptr feats, int B, gf_devstats *stats);
int gf_embedding_gpu_pool(gf_embedding_gpu *self, int B, const int *job_window,
                          const float *masks, int n_jobs, float *emb, gf_devstats *stats);

#endif
