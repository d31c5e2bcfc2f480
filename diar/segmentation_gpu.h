/* segmentation_gpu.h — the segmentation network on a CUDA card.
 *
 * The same network and weights as segmentation.h, with every boundary on the
 * GPU: the library route runs the convolutions as im2col + cuBLAS GEMM (the
 * sinc filterbank in float64, as the CPU reference), the LSTM as one GEMM for
 * the input projection of all steps plus one GEMM and one cell kernel per
 * step, the head's layers as GEMMs with fused glue. Weights are uploaded once and
 * device buffers sized for max_batch windows are taken once: running a batch
 * allocates nothing. */
#ifndef GF_SEGMENTATION_GPU_H
#define GF_SEGMENTATION_GPU_H

#include "common/devstats.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/plan.h"
#include "route/planner.h"

typedef struct gf_segmentation_gpu gf_segmentation_gpu;

/* Load `path` (sha256_hex or NULL), upload the weights to `gpu`, size the
 * workspace for max_batch windows. math: fp32 or tf32 for the float GEMMs.
 * Returns NULL after logging why. gpu and blas are borrowed. */
gf_segmentation_gpu *gf_segmentation_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *path,
                                             const char *sha256_hex, int max_batch, gf_math math);
void gf_segmentation_gpu_destroy(gf_segmentation_gpu **self_p);

/* Put `boundary` on the library route or the project's own kernel. Every
 * boundary can take the library route; own kernels exist for
 * "sincnet.conv0.abs_pool", "segconv.conv1", "segconv.conv2", "lstm.stack",
 * "dense.linear0", "dense.linear1" and "dense.classifier".
 * Returns 0; GF_ENOENT for a boundary that is not this network's, or with
 * the own route one without an own kernel; GF_EUNSUP when the kernel
 * refuses this card (e.g. too little shared memory), with the reason
 * logged. */
int gf_segmentation_gpu_set_route(gf_segmentation_gpu *self, const char *boundary,
                                  gf_route_kind kind);

/* The planning step of this network's own kernels (the module provider's
 * hook, diar/kernel_plan.h): whether the launcher of req->boundary runs
 * that layer, as this network builds it (its geometry is the architecture's:
 * the loader takes no file of another shape), in req->math on card, with the
 * kernels of req->area. No card is touched. Returns 0; GF_EUNSUP with the
 * reason in why; GF_ENOENT for a boundary of another network. */
int gf_segmentation_gpu_plan(const gf_route_request *req, const gf_card_identity *card,
                             char *why, size_t len);

/* Other work runs beside this network on the card (the pipeline's stages
 * overlapped): kernels that can then hold fewer multiprocessors for longer
 * (the LSTM stack's cluster kernel, gf_lstm_gpu_set_narrow). */
void gf_segmentation_gpu_share_card(gf_segmentation_gpu *self, bool shared);

/* gf_segmentation_gpu_set_route as a gf_route_setter (planner.h): self is
 * the network; *module_sha256 (may be NULL) the module an own route loaded.
 * GF_ENOENT for a boundary of another network. */
int gf_segmentation_gpu_switch(void *self, const char *boundary, gf_route_kind kind,
                               const char **module_sha256);

/* Take the plan's routes for this network's boundaries for a call of `batch`
 * windows in `math` (gf_route_plan_apply): an own route is used only when the
 * module that loads is exactly the one the route stands on; a kernel that
 * refuses at load runs the library route (logged, and the plan says so).
 * Returns 0, or the first setter error (GF_EDEVICE). */
int gf_segmentation_gpu_apply_plan(gf_segmentation_gpu *self, gf_route_plan *plan, int batch,
                                   gf_math math);

/* wave [B, 160000] on the host → logp [B, 589, 7] on the host. Device time
 * of each boundary goes into stats (may be NULL). Returns 0, GF_EINVAL (bad
 * B) or GF_EDEVICE. */
int gf_segmentation_gpu_run(gf_segmentation_gpu *self, const float *wave, int B, float *logp,
                            gf_devstats *stats);
/* The card's copy of the last run's input wave, device [B, 160000]: the
 * fbank of the same windows may start from it (gf_fbank_gpu_run_dev). */
gf_cu_ptr gf_segmentation_gpu_input(const gf_segmentation_gpu *self);
/* gf_segmentation_gpu_run on the wave already at gf_segmentation_gpu_input
 * (B windows, put there by a kernel). */
int gf_segmentation_gpu_run_dev(gf_segmentation_gpu *self, int B, float *logp,
                                gf_devstats *stats);

#endif
