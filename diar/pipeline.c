/* pipeline.c — the diarization pipeline's run loop (pipeline.h; the object
 * is built by diar/pipeline_new.c, diar/pipeline_impl.h): windows
 * streamed from diar/io/audio in batches, each batch decoded on a second
 * thread while the one before it runs through the two networks of the
 * backend table (diar/backend_cpu by default) or the weight-free mode's
 * stages (diar/weightfree), the per-window results kept and offered at each
 * batch boundary (checkpoints, resume), then diar/cluster/cluster and the
 * result (diar/result). */
#include "diar/pipeline_impl.h"

#include "common/error.h"
#include "common/log.h"
#include "common/par.h"
#include "common/util.h"
#include "diar/cluster/plda.h"
#include "diar/io/audio.h"
#include "diar/io/audio_windows.h"
#include "diar/netbatch.h"
#include "diar/powerset.h"
#include "diar/weightfree.h"
#include "kernels/fbank/fbank_cpu.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pieces ----------------------------------------------------------- */

size_t gf_diar_pool_mask(const float *act, int s, bool exclude_overlap, float *mask)
{
    size_t clean = 0;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        const float *a = act + (size_t)f * GF_DIAR_SPEAKERS;
        float others = 0.0f;
        for (int k = 0; k < GF_DIAR_SPEAKERS; k++)
            if (k != s)
                others += a[k];
        mask[f] = (a[s] > 0.0f && others == 0.0f) ? 1.0f : 0.0f;
        clean += mask[f] > 0.0f;
    }
    if (exclude_overlap && clean > GF_DIAR_MIN_CLEAN)
        return clean;
    size_t full = 0;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        mask[f] = act[(size_t)f * GF_DIAR_SPEAKERS + s] > 0.0f ? 1.0f : 0.0f;
        full += mask[f] > 0.0f;
    }
    return full;
}

/* ---- one batch -------------------------------------------------------- */

static double secs(uint64_t t0)
{
    return (double)(gf_now_ns() - t0) * 1e-9;
}

/* Segmentation, fbank and embeddings of nb windows in d->span (span mode)
 * or d->wave into the per-window arrays (diar/netbatch.h), or through the
 * backend's run_batch when it shares its device among pipelines. */
static int run_batch_neural(gf_diar *d, bool span, int nb, size_t step, float *seg, float *emb,
                            float *logits, bool exclude_overlap, gf_devstats *stats,
                            gf_diar_result *res)
{
    gf_diar_piece p = {
        .in = { .samples = span ? d->span : d->wave, .windows = nb,
                .step = span ? (int)step : GF_DIAR_WINDOW },
        .seg = seg, .emb = emb, .logits = logits, .exclude_overlap = exclude_overlap,
    };
    gf_diar_times t = { 0 };
    int rc = d->backend.run_batch
                 ? d->backend.run_batch(d->backend.ctx, &p, 1, stats, &t)
                 : gf_diar_netbatch_run(d->net, &d->backend, &p, 1, stats, &t);
    res->t_segmentation += t.segmentation;
    res->t_fbank += t.fbank;
    res->t_embedding += t.embedding;
    return rc;
}

/* ---- decoding ahead --------------------------------------------------- */

/* One batch of windows from the iterator into buf (the span in span mode,
 * else whole windows) and valid. done: the audio ended (nb may still be > 0).
 * rc: 0, GF_EINTR (cancelled), or the iterator's error. */
typedef struct {
    gf_diar *d;
    gf_audio_windows *it;
    const gf_diar_run_opts *o;
    const char *path;
    float *buf;
    size_t *valid;
    bool span;              /* buf is a span (span mode at the default step) */
    size_t before;          /* windows read in the batches before this one */
    int nb;
    int64_t last_sample;
    bool done;
    int rc;
} batch_read;

static void read_batch(batch_read *r)
{
    gf_diar *d = r->d;
    bool span = r->span;
    int64_t span_start = 0;
    r->nb = 0;
    r->rc = 0;
    while (r->nb < d->batch) {
        const float *win;
        int64_t start;
        size_t valid;
        if (r->o->cancel && r->o->cancel(r->o->cancel_user)) {
            GF_INFO("%s: stopped after %zu windows (cancelled)", r->path, r->before + (size_t)r->nb);
            r->rc = GF_EINTR;
            return;
        }
        int k = gf_audio_windows_next(r->it, &win, &start, &valid);
        if (k < 0) {
            r->rc = k;
            return;
        }
        if (k == 0) {
            r->done = true;
            return;
        }
        int nb = r->nb;
        if (!span) {
            memcpy(r->buf + (size_t)nb * GF_DIAR_WINDOW, win, GF_DIAR_WINDOW * sizeof *win);
        } else if (nb == 0) {
            memcpy(r->buf, win, GF_DIAR_WINDOW * sizeof *win);
            span_start = start;
        } else if (start == span_start + (int64_t)nb * GF_DIAR_STEP) {
            /* the window's last second is new; the rest is its neighbours' */
            memcpy(r->buf + gf_diar_span_samples(nb + 1) - GF_DIAR_STEP,
                   win + GF_DIAR_WINDOW - GF_DIAR_STEP, GF_DIAR_STEP * sizeof *win);
        } else {
            GF_ERROR("%s: window at sample %lld is not one step after the previous one",
                     r->path, (long long)start);
            r->rc = GF_ESTATE;
            return;
        }
        r->valid[nb] = valid;
        r->last_sample = start + (int64_t)valid;
        r->nb++;
    }
}

static void *read_ahead(void *arg)
{
    read_batch(arg);
    return NULL;
}

/* ---- resuming --------------------------------------------------------- */

/* Whether a resume state fits this run (gf_diar_run_opts.resume); says why
 * not. total: the audio's window count, which may still grow by one. */
static bool resume_fits(const gf_diar *d, const gf_diar_state *rs, size_t dim, bool keep_logits,
                        size_t total, const char *path)
{
    const char *why = NULL;
    if (rs->weight_free != d->weight_free)
        why = rs->weight_free ? "made in weight-free mode" : "made by the networks";
    else if (rs->dim != dim)
        why = "another embedding size";
    else if (rs->n_windows == 0 || rs->n_windows > total + 1)
        why = "a window count the audio does not have";
    else if (rs->n_windows % (size_t)d->batch != 0 && rs->n_windows < total)
        why = "it does not end at a batch boundary";
    else if (!rs->seg || (!d->weight_free && !rs->emb))
        why = "results missing";
    else if (keep_logits && !rs->logits)
        why = "no logits, and they are to be saved";
    else if (rs->n_blocks > gf_diar_max_blocks(rs->n_windows) || (rs->n_blocks && !rs->blocks))
        why = "more statistics blocks than its windows hold";
    else if (d->weight_free && rs->trained_vad != (d->vad != NULL))
        why = rs->trained_vad ? "made with the trained VAD" : "made with the energy VAD";
    else if (rs->vad_chunks > gf_diar_max_vad_chunks(rs->n_windows)
             || (rs->vad_chunks && !rs->vad_flags))
        why = "more VAD chunks than its windows hold";
    if (!why)
        return true;
    GF_WARN("%s: the state to resume from is not used (%s): starting at the first window", path,
            why);
    return false;
}

/* A batch a resume supplies: its windows' results copied from rs. */
static void restore_batch(const gf_diar_state *rs, size_t w0, int nb, float *seg, float *emb,
                          float *logits)
{
    size_t k = (size_t)nb;
    memcpy(seg, rs->seg + w0 * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS,
           k * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof *seg);
    if (rs->emb)
        memcpy(emb, rs->emb + w0 * GF_DIAR_SPEAKERS * rs->dim,
               k * GF_DIAR_SPEAKERS * rs->dim * sizeof *emb);
    if (logits && rs->logits)
        memcpy(logits, rs->logits + w0 * GF_DIAR_FRAMES * GF_DIAR_CLASSES,
               k * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *logits);
}

/* ---- the run ---------------------------------------------------------- */

int gf_diar_step_samples(double fraction, size_t *samples)
{
    if (fraction == 0.0)
        fraction = GF_DIAR_STEP_DEFAULT;
    if (!(fraction >= GF_DIAR_STEP_MIN - 1e-12 && fraction <= 1.0))
        return GF_EINVAL;
    double x = fraction * GF_DIAR_WINDOW / GF_DIAR_STEP_QUANTUM;
    double r = floor(x + 0.5);
    if (r < 1.0 || fabs(x - r) > 1e-6)
        return GF_EINVAL;
    *samples = (size_t)r * GF_DIAR_STEP_QUANTUM;
    return 0;
}

/* One recording's run over its windows `it` (taken: destroyed here), path
 * naming it (a file, or samples in memory), begun at t_start; res zeroed
 * but for its mode. */
static int run_windows(gf_diar *d, gf_audio_windows *it, size_t step, const char *path,
                       uint64_t t_start, const gf_diar_run_opts *o, gf_devstats *stats,
                       gf_diar_result *res)
{
    const gf_audio_info *info = gf_audio_windows_info(it);
    size_t total = gf_audio_windows_count(info->samples, GF_DIAR_WINDOW, step);
    /* Span mode (the backend's own span buffers) at the default step; at
     * another, whole windows, in buffers of this run's own (the backend's
     * span buffers stay as they are, put back at the end). */
    bool span = gf_diar_span_mode(d) && step == GF_DIAR_STEP;
    bool own_wave = gf_diar_span_mode(d) && !span;
    float *kept_wave = d->wave, *kept_ahead = d->ahead;
    if (own_wave) {
        d->wave = gf_malloc((size_t)d->batch * GF_DIAR_WINDOW * sizeof *d->wave);
        d->ahead = gf_malloc((size_t)d->batch * GF_DIAR_WINDOW * sizeof *d->ahead);
    }
    size_t dim = d->weight_free ? GF_DIAR_WF_DIM : GF_DIAR_EMB_DIM;
    bool keep_logits = o->save_dir && !d->weight_free;
    const gf_diar_state *rs = o->resume ? o->resume(o->resume_user, total) : NULL;
    if (rs && !resume_fits(d, rs, dim, keep_logits, total, path))
        rs = NULL;
    size_t skip = rs ? rs->n_windows : 0;   /* windows the resume supplies */
    size_t cap = total ? total : 1, n = 0;
    if (cap < skip)
        cap = skip;
    float *seg = gf_malloc(cap * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof *seg);
    float *emb = gf_malloc(cap * GF_DIAR_SPEAKERS * dim * sizeof *emb);
    float *logits = keep_logits ? gf_malloc(cap * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *logits)
                                : NULL;
    gf_diar_wf_blocks wb = { .noise_db = NAN };
    if (rs && d->weight_free) {   /* what the windows after the resumed ones carry on from */
        wb.noise_db = rs->noise_db;
        wb.n = wb.cap = rs->n_blocks;
        if (wb.n) {
            wb.vec = gf_malloc(wb.n * GF_DIAR_WF_DIM * sizeof *wb.vec);
            memcpy(wb.vec, rs->blocks, wb.n * GF_DIAR_WF_DIM * sizeof *wb.vec);
        }
        if (rs->trained_vad)
            gf_diar_vad_restore(&wb.vad, &rs->vad_state, rs->vad_chunks, rs->vad_flags);
    }
    wb.vad.vad = d->weight_free ? d->vad : NULL;
    wb.step = step;
    if (wb.vad.vad && !(rs && rs->trained_vad))
        gf_vad_reset(&wb.vad.st);
    res->n_resumed = skip;
    int64_t last_sample = 0;
    int rc = 0;
    /* This batch runs while a thread decodes the next into the other
     * buffer (read_ahead); each buffer's role swaps after every batch. */
    float **buf = span ? &d->span : &d->wave;
    batch_read cur = { .d = d, .it = it, .o = o, .path = path, .buf = *buf, .valid = d->valid,
                       .span = span };
    batch_read nxt = cur;
    nxt.buf = d->ahead;
    nxt.valid = d->valid_ahead;
    uint64_t t0 = gf_now_ns();
    read_batch(&cur);
    res->t_decode += secs(t0);
    while (cur.rc == 0 && cur.nb > 0) {
        pthread_t reader;
        nxt.before = cur.before + (size_t)cur.nb;
        bool ahead = !cur.done && pthread_create(&reader, NULL, read_ahead, &nxt) == 0;
        *buf = cur.buf;   /* run_batch_* read the batch at d->span / d->wave, d->valid */
        d->valid = cur.valid;
        d->ahead = nxt.buf;
        d->valid_ahead = nxt.valid;
        int nb = cur.nb;
        last_sample = cur.last_sample;
        if (n + (size_t)nb > cap) {
            cap = (n + (size_t)nb) * 2;
            seg = gf_realloc(seg, cap * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof *seg);
            emb = gf_realloc(emb, cap * GF_DIAR_SPEAKERS * dim * sizeof *emb);
            if (logits)
                logits = gf_realloc(logits, cap * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *logits);
        }
        float *sb = seg + n * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        float *eb = emb + n * GF_DIAR_SPEAKERS * dim;
        float *lb = logits ? logits + n * GF_DIAR_FRAMES * GF_DIAR_CLASSES : NULL;
        if (n + (size_t)nb <= skip) {
            restore_batch(rs, n, nb, sb, eb, lb);
        } else if (n < skip) {   /* resume_fits rules it out unless the audio changed */
            GF_ERROR("%s: the state resumed from ends at window %zu, inside the batch of "
                     "windows %zu..%zu", path, skip, n, n + (size_t)nb - 1);
            rc = GF_ESTATE;
        } else if (d->weight_free) {
            rc = gf_diar_wf_batch(d->fbank, d->feats, d->wave, d->valid, nb, n, sb, &wb, stats,
                                  res);
        } else {
            rc = run_batch_neural(d, span, nb, step, sb, eb, lb, o->exclude_overlap, stats, res);
        }
        t0 = gf_now_ns();   /* decoding the next batch: only the wait for it counts */
        if (ahead)
            pthread_join(reader, NULL);
        else if (!cur.done)
            read_batch(&nxt);
        else
            nxt.nb = 0;
        res->t_decode += secs(t0);
        if (rc) {
            GF_ERROR("%s: diarization failed after %zu windows", path, n);
            goto out_free;
        }
        n += (size_t)nb;
        if (o->progress)
            o->progress(o->progress_user, n, total > n ? total : n);
        if (n > skip && o->boundary) {
            gf_diar_state st = {
                .n_windows = n, .dim = dim, .weight_free = d->weight_free, .seg = seg,
                .emb = d->weight_free ? NULL : emb, .logits = logits, .noise_db = wb.noise_db,
                .n_blocks = wb.n, .blocks = wb.n ? wb.vec : NULL,
                .trained_vad = wb.vad.vad != NULL, .vad_state = wb.vad.st,
                .vad_chunks = wb.vad.n, .vad_flags = wb.vad.n ? wb.vad.flag : NULL,
                .last = nxt.nb == 0 && nxt.rc == 0,
            };
            if (o->boundary(o->boundary_user, &st)) {
                GF_INFO("%s: stopped after %zu windows, at a batch boundary", path, n);
                rc = GF_EINTR;
                goto out_free;
            }
        }
        batch_read t = cur;
        cur = nxt;
        nxt = t;
    }
    rc = cur.rc;
    if (rc)
        goto out_free;
    if (n == 0) {
        GF_ERROR("%s: no audio samples", path);
        rc = GF_EINVAL;
        goto out_free;
    }
    if (n < skip) {
        GF_ERROR("%s: %zu windows, fewer than the %zu of the state resumed from", path, n, skip);
        rc = GF_ESTATE;
        goto out_free;
    }
    res->n_windows = n;
    res->duration = (double)last_sample / GF_AUDIO_RATE;

    t0 = gf_now_ns();
    gf_cluster_opts copts = o->cluster;
    copts.chunks.step = (double)step / GF_AUDIO_RATE;
    if (!copts.par && copts.threads <= 0) {
        if (!d->cluster_par)
            d->cluster_par = gf_par_new(d->threads > 0 ? d->threads : gf_par_cores(16));
        copts.par = d->cluster_par;
    }
    if (d->has_backend && d->backend.ahc_link && !copts.ahc_link) {
        copts.ahc_link = d->backend.ahc_link;
        copts.ahc_ctx = d->backend.ahc_ctx;
        copts.stats = stats;
    }
    if (d->weight_free) {
        /* the speaker constraints bound the block clustering's estimate;
         * gf_cluster_run then only joins the local speakers of one block
         * cluster (their embeddings are its centroid) */
        gf_spectral_opts so = gf_spectral_defaults();
        so.num_speakers = copts.num_speakers;
        so.min_speakers = copts.min_speakers;
        if (copts.max_speakers > 0)
            so.max_speakers = copts.max_speakers;
        else if (copts.min_speakers > so.max_speakers)
            so.max_speakers = copts.min_speakers;
        copts.threshold = GF_DIAR_WF_SAME;
        rc = gf_diar_wf_local_speakers(&wb, seg, emb, n, &so);
        if (rc) {
            GF_ERROR("%s: weight-free block clustering failed (%s)", path, gf_strerror(rc));
            goto out_free;
        }
    }
    if (o->save_dir) {
        rc = gf_diar_save_intermediates(o->save_dir, logits, seg, emb, n, dim, o->overwrite);
        if (rc)
            goto out_free;
    }
    gf_cluster_result cres;
    rc = gf_cluster_run(seg, emb, n, GF_DIAR_FRAMES, GF_DIAR_SPEAKERS, dim, d->plda, &copts,
                        &cres);
    if (rc) {
        GF_ERROR("%s: clustering failed (%s)", path, gf_strerror(rc));
        goto out_free;
    }
    gf_diar_result_turns(res, path, &cres);
    gf_cluster_result_free(&cres);
    res->used = copts;
    res->used.par = NULL;     /* what was used, not the means: nothing borrowed */
    res->used.ahc_link = NULL;
    res->used.ahc_ctx = NULL;
    res->used.stats = NULL;
    res->exclude_overlap = o->exclude_overlap;
    res->vad = gf_diar_vad(d);
    res->t_clustering = secs(t0);
    if (stats)
        gf_devstats_unavailable(stats, "clustering", "cpu",
                                copts.ahc_link ? "host stage; its AHC linkage on the card is "
                                                 "timed as clustering.ahc"
                                               : "cpu card");
out_free:
    res->t_total = secs(t_start);
    gf_audio_windows_destroy(&it);
    free(seg);
    free(emb);
    free(logits);
    free(wb.vec);
    gf_diar_vad_stream_free(&wb.vad);
    if (own_wave) {   /* both buffers of this run's, whichever role each ended in */
        free(d->wave);
        free(d->ahead);
        d->wave = kept_wave;
        d->ahead = kept_ahead;
    }
    if (rc)
        gf_diar_result_free(res);
    return rc;
}

/* The run's step in samples, or -1 after saying why o's is refused. */
static int run_step(const gf_diar_run_opts *o, const char *name, size_t *step)
{
    if (gf_diar_step_samples(o->segmentation_step, step) == 0)
        return 0;
    GF_ERROR("%s: segmentation_step %g: not a fraction of the 10 s window in [%g, 1] that is a "
             "whole number of 10 ms", name, o->segmentation_step, GF_DIAR_STEP_MIN);
    return -1;
}

int gf_diar_run(gf_diar *d, const char *path, const gf_diar_run_opts *o, gf_devstats *stats,
                gf_diar_result *res)
{
    memset(res, 0, sizeof *res);
    res->weight_free = d->weight_free;
    uint64_t t_start = gf_now_ns();
    size_t step;
    if (run_step(o, path, &step))
        return GF_EINVAL;
    int err = 0;
    gf_audio_windows *it = gf_audio_windows_new(path, GF_DIAR_WINDOW, step, &err);
    if (!it)
        return err ? err : GF_EIO;
    return run_windows(d, it, step, path, t_start, o, stats, res);
}

int gf_diar_run_samples(gf_diar *d, const float *x, size_t n, int rate, const char *name,
                        const gf_diar_run_opts *o, gf_devstats *stats, gf_diar_result *res)
{
    memset(res, 0, sizeof *res);
    res->weight_free = d->weight_free;
    uint64_t t_start = gf_now_ns();
    size_t step;
    if (run_step(o, name, &step))
        return GF_EINVAL;
    int err = 0;
    gf_audio_windows *it = gf_audio_windows_new_samples(x, n, rate, name, GF_DIAR_WINDOW, step,
                                                        &err);
    if (!it)
        return err ? err : GF_EINVAL;
    return run_windows(d, it, step, name, t_start, o, stats, res);
}
