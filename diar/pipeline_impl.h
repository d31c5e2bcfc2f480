/* pipeline_impl.h — the pipeline object (gf_diar), shared by its two
 * rooms: diar/pipeline_new.c builds it (the networks or the weight-free
 * mode, its batch buffers, the VAD) and diar/pipeline.c runs it. Nothing
 * outside diar/pipeline*.c includes this. */
#ifndef GF_DIAR_PIPELINE_IMPL_H
#define GF_DIAR_PIPELINE_IMPL_H

#include "common/par.h"
#include "diar/cluster/plda.h"
#include "diar/netbatch.h"
#include "diar/pipeline.h"
#include "diar/vad.h"
#include "kernels/fbank/fbank_cpu.h"

#include <stdbool.h>
#include <stddef.h>

struct gf_diar {
    bool weight_free;          /* energy VAD + fbank statistics */
    int batch;                 /* windows per network call */
    int threads;               /* worker.cpu_threads, for the clustering's host stages
                                  (<= 0: gf_cluster_run's default) */
    gf_par *cluster_par;       /* their pool, made at the first clustering and kept */
    gf_diar_backend backend;   /* the networks (unused in weight-free mode) */
    bool has_backend;          /* backend holds something to destroy */
    float *span;               /* span mode (backend.segment_spans): the batch as one
                                  stretch of audio, window b at b * GF_DIAR_STEP */
    float *pinned;             /* the buffer backend.pin took, or NULL */
    float *ahead;              /* a second batch buffer of the same kind (span or wave):
                                  the next batch is decoded into it while this one runs */
    float *pinned_ahead;       /* it, when backend.pin took it too */
    size_t *valid_ahead;       /* [batch] its windows' audio samples */
    gf_plda *plda;             /* NULL in weight-free mode */
    gf_fbank *fbank;           /* plain (not mean-normalised) fbank, weight-free mode */
    gf_vad *vad;               /* weight-free mode's trained VAD; NULL: the energy VAD */
    float *wave;               /* [batch x 160000] */
    size_t *valid;             /* [batch] audio samples of each window */
    float *feats;              /* weight-free mode: one window's fbank [998 x 80] */
    gf_diar_netbatch *net;     /* with networks: the batch's host buffers (diar/netbatch.h) */
};

/* Samples of a span of n windows. */
static inline size_t gf_diar_span_samples(int n)
{
    return (size_t)(n - 1) * GF_DIAR_STEP + GF_DIAR_WINDOW;
}

/* Span mode: the backend segments from one span and keeps the windows for
 * its fbank (pipeline.h). */
static inline bool gf_diar_span_mode(const gf_diar *d)
{
    return d->has_backend
           && (d->backend.run_batch || (d->backend.segment_spans && d->backend.fbank));
}

#endif
