/* netbatch.c — one batch of windows through the networks (netbatch.h).
 *
 * The order of the calls is the backend table's contract (diar/backend.h):
 * the segmentation (of spans on a device backend, else of whole windows),
 * the powerset decoding on the host into each piece's activity, the fbank
 * (the backend's, or the CPU's window by window), then one embed call for
 * every active (window, local speaker) of the batch, scattered back into
 * the pieces' embeddings. */
#include "diar/netbatch.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/pipeline.h"
#include "diar/powerset.h"
#include "kernels/fbank/fbank_cpu.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct gf_diar_netbatch {
    int cap;            /* windows per batch at most */
    float *logp;        /* [cap x 589 x 7] the segmentation's output */
    float *wave;        /* [cap x 160000] whole windows, for a backend without spans */
    float *feats;       /* [cap x 998 x 80] the CPU fbank */
    float *masks;       /* [cap x 3 x 589] pooling masks */
    int *job_window;    /* [cap x 3] the batch window of each pooling job */
    float **job_out;    /* [cap x 3] where each job's embedding goes */
    float *embout;      /* [cap x 3 x 256] pooled embeddings */
    gf_diar_span *spans; /* [cap] the pieces' inputs */
    gf_diar_piece *padded; /* [cap + 1] the pieces and the padding (fixed_batch) */
    float *pad_in;       /* zeros: the windows that fill a batch up to cap (step 1) */
    float *pad_out[3];   /* their discarded activity, embeddings, log-probabilities */
};

gf_diar_netbatch *gf_diar_netbatch_new(int cap)
{
    assert(cap >= 1);
    gf_diar_netbatch *self = gf_calloc(1, sizeof *self);
    size_t B = (size_t)cap;
    self->cap = cap;
    self->logp = gf_malloc(B * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *self->logp);
    self->masks = gf_malloc(B * GF_DIAR_SPEAKERS * GF_DIAR_FRAMES * sizeof *self->masks);
    self->job_window = gf_malloc(B * GF_DIAR_SPEAKERS * sizeof *self->job_window);
    self->job_out = gf_malloc(B * GF_DIAR_SPEAKERS * sizeof *self->job_out);
    self->embout = gf_malloc(B * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM * sizeof *self->embout);
    self->spans = gf_malloc(B * sizeof *self->spans);
    return self;
}

void gf_diar_netbatch_destroy(gf_diar_netbatch **self_p)
{
    gf_diar_netbatch *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    free(self->logp);
    free(self->wave);
    free(self->feats);
    free(self->masks);
    free(self->job_window);
    free(self->job_out);
    free(self->embout);
    free(self->spans);
    free(self->padded);
    free(self->pad_in);
    for (int k = 0; k < 3; k++)
        free(self->pad_out[k]);
    free(self);
    *self_p = NULL;
}

static double secs(uint64_t t0)
{
    return (double)(gf_now_ns() - t0) * 1e-9;
}

/* Window w of piece p. */
static const float *window_of(const gf_diar_piece *p, int w)
{
    return p->in.samples + (size_t)w * (size_t)p->in.step;
}

/* The pieces followed by silent windows up to the capacity (a piece of
 * zeros at step 1, its results discarded): *n grows by one. */
static const gf_diar_piece *pad(gf_diar_netbatch *self, const gf_diar_piece *p, int *n, int B)
{
    size_t W = (size_t)self->cap;
    if (!self->padded) {
        self->padded = gf_malloc((W + 1) * sizeof *self->padded);
        self->pad_in = gf_calloc(W + GF_DIAR_WINDOW, sizeof(float));
        self->pad_out[0] = gf_malloc(W * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float));
        self->pad_out[1] = gf_malloc(W * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM * sizeof(float));
        self->pad_out[2] = gf_malloc(W * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof(float));
    }
    memcpy(self->padded, p, (size_t)*n * sizeof *p);
    self->padded[(*n)++] = (gf_diar_piece){
        .in = { .samples = self->pad_in, .windows = self->cap - B, .step = 1 },
        .seg = self->pad_out[0], .emb = self->pad_out[1], .logits = self->pad_out[2],
    };
    return self->padded;
}

/* The batch as whole windows end to end, for a backend that takes no
 * spans: the one piece's own memory when it is laid out so already. */
static const float *whole_windows(gf_diar_netbatch *self, const gf_diar_piece *p, int n)
{
    if (n == 1 && p[0].in.step == GF_DIAR_WINDOW)
        return p[0].in.samples;
    if (!self->wave)
        self->wave = gf_malloc((size_t)self->cap * GF_DIAR_WINDOW * sizeof *self->wave);
    size_t b = 0;
    for (int i = 0; i < n; i++)
        for (int w = 0; w < p[i].in.windows; w++, b++)
            memcpy(self->wave + b * GF_DIAR_WINDOW, window_of(&p[i], w),
                   GF_DIAR_WINDOW * sizeof(float));
    return self->wave;
}

int gf_diar_netbatch_run(gf_diar_netbatch *self, gf_diar_backend *be, const gf_diar_piece *p,
                         int n, gf_devstats *stats, gf_diar_times *times)
{
    gf_diar_times t = { 0 };
    int B = 0;
    for (int i = 0; i < n; i++) {
        assert(p[i].in.windows >= 1 && p[i].in.step >= 1);
        B += p[i].in.windows;
    }
    assert(n >= 1 && B <= self->cap);
    if (be->fixed_batch && B < self->cap) {
        p = pad(self, p, &n, B);
        B = self->cap;
    }
    bool spans = be->segment_spans && be->fbank;
    const float *wave = spans ? NULL : whole_windows(self, p, n);

    uint64_t t0 = gf_now_ns();
    int rc;
    if (spans) {
        for (int i = 0; i < n; i++)
            self->spans[i] = p[i].in;
        rc = be->segment_spans(be->ctx, self->spans, n, self->logp, stats);
    } else {
        rc = be->segment(be->ctx, wave, B, self->logp, stats);
    }
    if (rc) {
        GF_ERROR("segmentation (%s) failed on a batch of %d windows", be->name, B);
        return rc;
    }
    for (int i = 0, b = 0; i < n; i++)
        for (int w = 0; w < p[i].in.windows; w++, b++) {
            const float *lp = self->logp + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_CLASSES;
            gf_powerset_decode(lp, GF_DIAR_FRAMES,
                               p[i].seg + (size_t)w * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS);
            if (p[i].logits)
                memcpy(p[i].logits + (size_t)w * GF_DIAR_FRAMES * GF_DIAR_CLASSES, lp,
                       GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *lp);
        }
    t.segmentation = secs(t0);

    t0 = gf_now_ns();
    if (be->fbank) {   /* on the backend's device, where the features stay */
        rc = be->fbank(be->ctx, wave, B, NULL, stats);
        if (rc) {
            GF_ERROR("fbank (%s) failed on a batch of %d windows", be->name, B);
            return rc;
        }
    } else {
        if (!self->feats)
            self->feats = gf_malloc((size_t)self->cap * GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS
                                    * sizeof *self->feats);
        for (int i = 0, b = 0; i < n; i++)
            for (int w = 0; w < p[i].in.windows; w++, b++) {
                size_t nf = 0;
                rc = gf_fbank_compute(window_of(&p[i], w), GF_DIAR_WINDOW,
                                      self->feats + (size_t)b * GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS,
                                      &nf);
                if (rc)
                    return rc;
                if (stats)
                    gf_devstats_unavailable(stats, "fbank", "cpu", "cpu card");
            }
    }
    t.fbank = secs(t0);

    t0 = gf_now_ns();
    int n_jobs = 0;
    for (int i = 0, b = 0; i < n; i++)
        for (int w = 0; w < p[i].in.windows; w++, b++) {
            const float *act = p[i].seg + (size_t)w * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
            for (int s = 0; s < GF_DIAR_SPEAKERS; s++) {
                float *e = p[i].emb + ((size_t)w * GF_DIAR_SPEAKERS + (size_t)s) * GF_DIAR_EMB_DIM;
                for (int k = 0; k < GF_DIAR_EMB_DIM; k++)
                    e[k] = NAN;
                if (gf_diar_pool_mask(act, s, p[i].exclude_overlap,
                                      self->masks + (size_t)n_jobs * GF_DIAR_FRAMES) == 0)
                    continue;
                self->job_window[n_jobs] = b;
                self->job_out[n_jobs] = e;
                n_jobs++;
            }
        }
    if (n_jobs > 0 || be->fbank) {   /* a device backend may finish work begun ahead */
        rc = be->embed(be->ctx, be->fbank ? NULL : self->feats, B, self->job_window, self->masks,
                       n_jobs, self->embout, stats);
        if (rc) {
            GF_ERROR("embedding (%s) failed on a batch of %d windows", be->name, B);
            return rc;
        }
        for (int j = 0; j < n_jobs; j++)
            memcpy(self->job_out[j], self->embout + (size_t)j * GF_DIAR_EMB_DIM,
                   GF_DIAR_EMB_DIM * sizeof(float));
    }
    t.embedding = secs(t0);
    if (times) {
        times->segmentation += t.segmentation;
        times->fbank += t.fbank;
        times->embedding += t.embedding;
    }
    return 0;
}
