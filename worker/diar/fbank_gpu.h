/* fbank_gpu.h — the embedding network's log-mel features on a CUDA card,
 * library route: framing (DC removal, pre-emphasis, window) in a glue
 * kernel, the 512-point DFT of the 400-sample frames as one cuBLAS GEMM
 * against a cosine/sine matrix, the power spectrum, the mel banks as a
 * second GEMM, then log and per-window mean normalisation. Same conventions
 * and tables as worker/diar/fbank.c (the reference); the GEMMs always run in
 * fp32 (the log of small powers is sensitive to tf32's 10-bit mantissa).
 * Device buffers for max_batch windows of 10 s are taken once. */
#ifndef GF_FBANK_GPU_H
#define GF_FBANK_GPU_H

#include "common/devstats.h"
#include "worker/blas_gpu.h"
#include "worker/gpu.h"

typedef struct gf_fbank_gpu gf_fbank_gpu;

/* NULL on a device error (logged). gpu and blas are borrowed. */
gf_fbank_gpu *gf_fbank_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, int max_batch);
void gf_fbank_gpu_destroy(gf_fbank_gpu **self_p);

/* wave [B, 160000] (host) → feats [B, 998, 80] (host), mean-normalised per
 * window. Device time into stats ("fbank.dft", "fbank.mel"). */
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

#endif
