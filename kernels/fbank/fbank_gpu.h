/* fbank_gpu.h — the embedding network's log-mel features on a CUDA card, in
 * two boundaries, each with two routes (the planner picks per boundary):
 *   fbank.dft: framing (DC removal, pre-emphasis, window) and the power
 *     spectrum of the 512-point DFT of each 400-sample frame, bins 0..255,
 *     into a power buffer [B * 998][256];
 *   fbank.mel: the 80 mel banks over that power, log, and each bin's mean
 *     over the window's 998 frames subtracted, into features [B][998][80].
 * Library route: a glue framing kernel, the DFT as a cuBLAS GEMM against a
 * cosine/sine matrix, a power kernel; the mel banks as a second GEMM, a log
 * + mean kernel. Own route (kernels/fbank/fbank.cu): a 512-point real FFT per
 * frame in shared memory writing the power; the sparse mel banks with the
 * log, then the mean. Both routes hand the same power layout over, so any
 * pair of routes runs. Float32 in every math mode (the log of small powers
 * is sensitive to tf32's 10-bit mantissa). Same conventions and tables as
 * kernels/fbank/fbank_cpu.c. Device buffers for max_batch windows of 10 s are
 * taken once. */
#ifndef GF_FBANK_GPU_H
#define GF_FBANK_GPU_H

#include "common/devstats.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/plan.h"
#include "route/planner.h"

#define GF_FBANK_GPU_SAMPLES 160000   /* a 10 s window */
#define GF_FBANK_GPU_FRAMES 998       /* its frames */

typedef struct gf_fbank_gpu gf_fbank_gpu;

/* NULL on a device error (logged). gpu and blas are borrowed. */
gf_fbank_gpu *gf_fbank_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, int max_batch);
void gf_fbank_gpu_destroy(gf_fbank_gpu **self_p);

/* Choose the route of boundary "fbank.dft" or "fbank.mel". On success with
 * the own route, *module_sha256 (may be NULL) is the identity of the module
 * that loaded. GF_EINVAL (logged) for another boundary; GF_ENOENT where this
 * build has no fbank module; GF_EDEVICE on a driver error. */
int gf_fbank_gpu_set_route(gf_fbank_gpu *self, const char *boundary, gf_route_kind kind,
                           const char **module_sha256);
/* The planning step of the own kernels (the module provider's hook,
 * diar/kernel_plan.h): fbank.dft and fbank.mel run the fbank module's
 * kernels, on any card that module loads on, at any batch; a binding of
 * another area (the dense area may also bind them) is refused, since the GPU
 * code has no such route. Returns 0; GF_EUNSUP with the reason in why;
 * GF_ENOENT for another boundary. */
int gf_fbank_gpu_plan(const gf_route_request *req, const gf_card_identity *card, char *why,
                      size_t len);
/* The route of a boundary (library for an unknown name). */
gf_route_kind gf_fbank_gpu_route(const gf_fbank_gpu *self, const char *boundary);
/* gf_fbank_gpu_set_route as a gf_route_setter (planner.h); GF_ENOENT (not
 * logged) for a boundary other than fbank.dft and fbank.mel. */
int gf_fbank_gpu_switch(void *self, const char *boundary, gf_route_kind kind,
                        const char **module_sha256);

/* Take the plan's routes of fbank.dft and fbank.mel for a call of `batch`
 * windows in `math` (gf_route_plan_apply): own only where the module that
 * loads is the planned one (a route of another area's module is refused by
 * the planning step, gf_fbank_gpu_plan). Returns 0, or the first setter
 * error (GF_EDEVICE). */
int gf_fbank_gpu_apply_plan(gf_fbank_gpu *self, gf_route_plan *plan, int batch, gf_math math);

/* wave [B, 160000] (host) → feats [B, 998, 80] (host), mean-normalised per
 * window. Device time into stats ("fbank.dft", "fbank.mel", each with the
 * route that ran). */
int gf_fbank_gpu_run(gf_fbank_gpu *self, const float *wave, int B, float *feats,
                     gf_devstats *stats);
/* The same from a wave already on the card (device [B, 160000], e.g. the
 * segmentation's input). feats NULL: the features stay on the card, at
 * gf_fbank_gpu_features, until the next run, and the call returns without
 * waiting for the card: its timed regions stay on the gf_gpu for the next
 * gf_gpu_timing_collect there (the embedding's, when both share it). */
int gf_fbank_gpu_run_dev(gf_fbank_gpu *self, gf_cu_ptr wave, int B, float *feats,
                         gf_devstats *stats);
gf_cu_ptr gf_fbank_gpu_features(const gf_fbank_gpu *self);

/* One boundary alone on its route, untimed, queued without waiting: for
 * "fbank.dft" wave (device [B, 160000]) → the power buffer, for "fbank.mel"
 * the power buffer (as the last fbank.dft left it) → the features. */
int gf_fbank_gpu_stage(gf_fbank_gpu *self, const char *boundary, gf_cu_ptr wave, int B);

#endif
