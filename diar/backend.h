/* backend.h — the diarization pipeline's two network calls behind a table
 * of function pointers, so that another device can replace them: the CPU
 * networks (diar/backend_cpu.h) and the CUDA card's (diar/backend_gpu.h)
 * fill the same table, and the pipeline (diar/pipeline.h) calls it without
 * knowing which. Shapes are in windows of the pipeline's sizes: 160000
 * samples, 589 segmentation frames of 7 powerset classes, 998 fbank frames
 * of 80 bins, embeddings of 256 (GF_DIAR_* in pipeline.h). */
#ifndef GF_DIAR_BACKEND_H
#define GF_DIAR_BACKEND_H

#include <stddef.h>

#include "common/devstats.h"
#include "diar/cluster/ahc.h"

typedef struct {
    const char *name;   /* "cpu", "cuda" */
    const char *route;  /* devstats route name of its launches */
    /* wave [B, 160000] → logp [B, 589, 7]. Returns 0 or a negative GF_E*. */
    int (*segment)(void *ctx, const float *wave, int B, float *logp, gf_devstats *stats);
    /* fbank [B, 998, 80]; job j pools window job_window[j] with
     * masks[j * 589 ..] into emb[j * 256 ..]. fbank NULL: the features
     * the backend's fbank kept on its device. A backend with an fbank hook
     * is called for every batch, with n_jobs 0 when no window has speech,
     * so that it can finish what it started ahead (backend_gpu.c starts the
     * trunk during segment_span). Returns 0 or a GF_E*. */
    int (*embed)(void *ctx, const float *fbank, int B, const int *job_window,
                 const float *masks, int n_jobs, float *emb, gf_devstats *stats);
    /* wave [B, 160000] → mean-normalised fbank [B, 998, 80]; NULL: the
     * pipeline computes the fbank on the CPU (kernels/fbank/fbank_cpu.c). wave
     * NULL: the windows segment_span has just taken. feats NULL: the
     * features stay on the device for the embed call that follows. */
    int (*fbank)(void *ctx, const float *wave, int B, float *feats, gf_devstats *stats);
    /* Optional: segment from the batch as one span of audio, window b being
     * span[b * 16000 .. b * 16000 + 160000) ((B - 1) * 16000 + 160000
     * samples: consecutive windows overlap by 9 s, so a device backend moves
     * a tenth of the bytes). The pipeline then calls fbank with wave NULL for
     * the same windows. */
    int (*segment_span)(void *ctx, const float *span, int B, float *logp, gf_devstats *stats);
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
    /* The clustering's AHC linkage on the backend's device, with ahc_ctx;
     * NULL: on the CPU (diar/cluster/ahc.c). */
    gf_ahc_link_fn ahc_link;
    void *ahc_ctx;
} gf_diar_backend;

#endif
