/* backend.h — the diarization pipeline's two network calls behind a table
 * of function pointers, so that another device can replace them: the CPU
 * networks (diar/backend_cpu.h) and the CUDA card's (diar/backend_gpu.h)
 * fill the same table, and the pipeline (diar/pipeline.h) calls it without
 * knowing which. Shapes are in windows of the pipeline's sizes: 160000
 * samples, 589 segmentation frames of 7 powerset classes, 998 fbank frames
 * of 80 bins, embeddings of 256 (GF_DIAR_* in pipeline.h). */
#ifndef GF_DIAR_BACKEND_H
#define GF_DIAR_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "common/devstats.h"
#include "diar/cluster/ahc.h"

/* Windows laid out in one stretch of memory: window b of the stretch at
 * samples[b * step .. b * step + 160000). A span of consecutive windows
 * has step GF_DIAR_STEP (a tenth of the bytes of whole windows); whole
 * windows end to end have step 160000. */
typedef struct {
    const float *samples;
    int windows;
    int step;
} gf_diar_span;

/* One stretch of windows through the networks with its own outputs, for
 * a batch that may hold the windows of several recordings (the per-window
 * arrays as the pipeline keeps them, diar/pipeline.h). */
typedef struct {
    gf_diar_span in;
    float *seg;            /* [windows x 589 x 3] binary activity */
    float *emb;            /* [windows x 3 x 256] embeddings (NaN: inactive speaker) */
    float *logits;         /* [windows x 589 x 7] log-probabilities, or NULL */
    bool exclude_overlap;  /* pooling masks without the overlapped frames (pipeline.h) */
} gf_diar_piece;

/* Wall seconds of a batch's stages, added to the recording's timings. */
typedef struct {
    double segmentation;
    double fbank;
    double embedding;
} gf_diar_times;

typedef struct {
    const char *name;   /* "cpu", "cuda" */
    const char *route;  /* devstats route name of its launches */
    /* wave [B, 160000] → logp [B, 589, 7]. Returns 0 or a negative GF_E*. NULL
     * in a backend with segment_spans (diar/netbatch.c calls one of the two). */
    int (*segment)(void *ctx, const float *wave, int B, float *logp, gf_devstats *stats);
    /* fbank [B, 998, 80]; job j pools window job_window[j] with
     * masks[j * 589 ..] into emb[j * 256 ..]. fbank NULL: the features
     * the backend's fbank kept on its device. A backend with an fbank hook
     * is called for every batch, with n_jobs 0 when no window has speech,
     * so that it can finish what it started ahead (backend_gpu.c starts the
     * trunk during segment_spans). Returns 0 or a GF_E*. */
    int (*embed)(void *ctx, const float *fbank, int B, const int *job_window,
                 const float *masks, int n_jobs, float *emb, gf_devstats *stats);
    /* wave [B, 160000] → mean-normalised fbank [B, 998, 80]; NULL: the
     * pipeline computes the fbank on the CPU (kernels/fbank/fbank_cpu.c). wave
     * NULL: the windows segment_spans has just taken. feats NULL: the
     * features stay on the device for the embed call that follows. */
    int (*fbank)(void *ctx, const float *wave, int B, float *feats, gf_devstats *stats);
    /* Optional: segment the windows of n_spans spans as one batch (their
     * windows in order; B, the sum, at most the capacity): a device backend
     * moves spans, not whole windows. The pipeline then calls fbank with
     * wave NULL for the same windows. */
    int (*segment_spans)(void *ctx, const gf_diar_span *spans, int n_spans, float *logp,
                         gf_devstats *stats);
    /* Optional: every network call of a batch at once, pieces of several
     * recordings in one batch (a backend that shares its device among
     * pipelines, diar/batcher.h); stage seconds are added to times. When
     * set, the pipeline calls nothing else of the networks. */
    int (*run_batch)(void *ctx, const gf_diar_piece *pieces, int n_pieces, gf_devstats *stats,
                     gf_diar_times *times);
    /* Optional: page-lock the pipeline's batch buffer (host, bytes) for
     * faster copies, and undo it before the buffer is freed. */
    int (*pin)(void *ctx, void *host, size_t bytes);
    void (*unpin)(void *ctx, void *host);
    void (*destroy)(void *ctx);  /* frees ctx */
    void *ctx;                   /* owned by the table */
    /* What the backend's numbers depend on besides the weights and the
     * batch, for a checkpoint's identity: "cpu", or on a card its route
     * plan's digest (diar/backend_gpu.c). Borrowed from ctx; NULL: "cpu". */
    const char *identity;
    /* Its numbers for a window depend on the size of the batch that carries
     * it (a library route may choose its algorithm by it, as cuBLAS does):
     * diar/netbatch.c then pads every batch to its capacity with silent
     * windows, so that a window's results are the same whatever batch it is
     * in, alone or beside other jobs' (diar/batcher.h). */
    bool fixed_batch;
    /* The clustering's AHC linkage on the backend's device, with ahc_ctx;
     * NULL: on the CPU (diar/cluster/ahc.c). */
    gf_ahc_link_fn ahc_link;
    void *ahc_ctx;
} gf_diar_backend;

#endif
