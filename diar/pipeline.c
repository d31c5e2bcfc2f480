/* pipeline.c — the diarization pipeline (pipeline.h): windows streamed from
 * diar/io/audio, the two networks behind a backend table (the CPU one
 * here), per-window results kept, then diar/cluster/cluster. The weight-free
 * mode replaces the networks by energy voice activity and fbank statistics. */
#include "diar/pipeline.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/ahc.h"
#include "diar/io/audio.h"
#include "diar/embedding.h"
#include "kernels/fbank/fbank_cpu.h"
#include "diar/models.h"
#include "diar/io/npy.h"
#include "common/par.h"
#include "diar/cluster/plda.h"
#include "diar/powerset.h"
#include "diar/segmentation.h"

#include <assert.h>
#include <json-c/json.h>
#include <limits.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the segmentation frame grid in samples: 0.0619375 s long, 0.016875 s apart */
#define VAD_FRAME_LEN 991
#define VAD_FRAME_STEP 270
#define VAD_ABS_FLOOR_DB (-60.0)  /* never speech below this (dBFS) */
#define VAD_MARGIN_DB 12.0        /* speech: this far above the noise floor */
#define VAD_FLOOR_RISE_DB 3.0     /* how fast the floor may rise per window */
#define VAD_MIN_SPEECH 4          /* frames: shorter speech runs are dropped */
#define VAD_MAX_GAP 20            /* frames: shorter pauses are bridged */

/* ---- the CPU backend -------------------------------------------------- */

typedef struct {
    gf_segmentation *seg;  /* segmentation network */
    gf_embedding *emb;     /* embedding network */
} cpu_ctx;

static int cpu_segment(void *ctx, const float *wave, int B, float *logp, gf_devstats *stats)
{
    cpu_ctx *c = ctx;
    int rc = gf_segmentation_run(c->seg, wave, B, logp);
    if (stats)
        gf_devstats_unavailable(stats, "segmentation", "cpu", "cpu card");
    return rc;
}

static int cpu_embed(void *ctx, const float *fbank, int B, const int *job_window,
                     const float *masks, int n_jobs, float *emb, gf_devstats *stats)
{
    cpu_ctx *c = ctx;
    int rc = gf_embedding_trunk(c->emb, fbank, B);
    if (stats)
        gf_devstats_unavailable(stats, "embedding.trunk", "cpu", "cpu card");
    for (int j = 0; rc == 0 && j < n_jobs; j++) {
        rc = gf_embedding_pool(c->emb, job_window[j], masks + (size_t)j * GF_DIAR_FRAMES,
                               GF_DIAR_FRAMES, emb + (size_t)j * GF_DIAR_EMB_DIM);
        if (stats)
            gf_devstats_unavailable(stats, "embedding.pool", "cpu", "cpu card");
    }
    return rc;
}

static void cpu_destroy(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c)
        return;
    gf_segmentation_destroy(&c->seg);
    gf_embedding_destroy(&c->emb);
    free(c);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int gf_diar_backend_cpu(const char *models_dir, int max_batch, int threads, gf_diar_backend *out)
{
    if (threads <= 0)
        threads = gf_par_cores(INT_MAX);
    char *seg_path = gf_strfmt("%s/%s", models_dir, GF_MODELS_SEGMENTATION);
    char *emb_path = gf_strfmt("%s/%s", models_dir, GF_MODELS_EMBEDDING);
    int rc = 0;
    gf_manifest *man = NULL;
    cpu_ctx *c = NULL;
    if (!file_exists(seg_path) || !file_exists(emb_path)) {
        rc = GF_ENOENT;
        goto out;
    }
    int mrc = gf_manifest_load(models_dir, &man);
    if (mrc != 0 && mrc != GF_ENOENT) {
        rc = mrc;
        goto out;
    }
    c = gf_calloc(1, sizeof *c);
    c->seg = gf_segmentation_new(seg_path,
                                 man ? gf_manifest_sha256(man, GF_MODELS_SEGMENTATION) : NULL,
                                 max_batch, threads);
    if (c->seg)
        c->emb = gf_embedding_new(emb_path,
                                  man ? gf_manifest_sha256(man, GF_MODELS_EMBEDDING) : NULL,
                                  GF_DIAR_FBANK_FRAMES, max_batch, threads);
    if (!c->seg || !c->emb) {
        cpu_destroy(c);
        rc = GF_EINVAL;
        goto out;
    }
    *out = (gf_diar_backend){ .name = "cpu", .route = "cpu", .segment = cpu_segment,
                              .embed = cpu_embed, .destroy = cpu_destroy, .ctx = c,
                              .identity = "cpu" };
out:
    gf_manifest_destroy(&man);
    free(seg_path);
    free(emb_path);
    return rc;
}

/* ---- pieces ----------------------------------------------------------- */

size_t gf_diar_pool_mask(const float *act, int s, float *mask)
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
    if (clean > GF_DIAR_MIN_CLEAN)
        return clean;
    size_t full = 0;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        mask[f] = act[(size_t)f * GF_DIAR_SPEAKERS + s] > 0.0f ? 1.0f : 0.0f;
        full += mask[f] > 0.0f;
    }
    return full;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void gf_diar_energy_vad(const float *win, size_t valid, double *noise_db, float *act)
{
    double db[GF_DIAR_FRAMES], sorted[GF_DIAR_FRAMES];
    int n_valid = 0;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        size_t a = (size_t)f * VAD_FRAME_STEP;
        size_t b = a + VAD_FRAME_LEN;
        act[f] = 0.0f;
        /* a frame counts when most of it is audio, not padding */
        if (a >= valid || (b > valid && valid - a < VAD_FRAME_LEN / 2)) {
            db[f] = -INFINITY;
            continue;
        }
        if (b > valid)
            b = valid;
        double e = 0.0;
        for (size_t i = a; i < b; i++)
            e += (double)win[i] * win[i];
        db[f] = 10.0 * log10(e / (double)(b - a) + 1e-12);
        sorted[n_valid++] = db[f];
    }
    if (n_valid == 0)
        return;
    qsort(sorted, (size_t)n_valid, sizeof *sorted, cmp_double);
    double p10 = sorted[n_valid / 10];
    if (isnan(*noise_db) || p10 < *noise_db)
        *noise_db = p10;
    else if (p10 > *noise_db + VAD_FLOOR_RISE_DB)
        *noise_db += VAD_FLOOR_RISE_DB;
    else
        *noise_db = p10;
    double thr = *noise_db + VAD_MARGIN_DB;
    if (thr < VAD_ABS_FLOOR_DB)
        thr = VAD_ABS_FLOOR_DB;
    for (int f = 0; f < GF_DIAR_FRAMES; f++)
        act[f] = db[f] > thr ? 1.0f : 0.0f;
    /* drop speech blips, then bridge short pauses between speech */
    for (int f = 0; f < GF_DIAR_FRAMES;) {
        if (act[f] == 0.0f) {
            f++;
            continue;
        }
        int e = f;
        while (e < GF_DIAR_FRAMES && act[e] != 0.0f)
            e++;
        if (e - f < VAD_MIN_SPEECH)
            for (int k = f; k < e; k++)
                act[k] = 0.0f;
        f = e;
    }
    int last = -1;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        if (act[f] == 0.0f)
            continue;
        if (last >= 0 && f - last - 1 > 0 && f - last - 1 < VAD_MAX_GAP)
            for (int k = last + 1; k < f; k++)
                act[k] = 1.0f;
        last = f;
    }
}

void gf_diar_wf_normalise(float *emb, size_t n, size_t dim)
{
    double *mean = gf_calloc(dim, sizeof *mean), *sd = gf_calloc(dim, sizeof *sd);
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        const float *e = emb + i * dim;
        if (isnan(e[0]))
            continue;
        for (size_t d = 0; d < dim; d++)
            mean[d] += e[d];
        rows++;
    }
    if (rows == 0)
        goto out;
    for (size_t d = 0; d < dim; d++)
        mean[d] /= (double)rows;
    for (size_t i = 0; i < n; i++) {
        const float *e = emb + i * dim;
        if (isnan(e[0]))
            continue;
        for (size_t d = 0; d < dim; d++)
            sd[d] += (e[d] - mean[d]) * (e[d] - mean[d]);
    }
    for (size_t d = 0; d < dim; d++)
        sd[d] = sqrt(sd[d] / (double)rows);
    for (size_t i = 0; i < n; i++) {
        float *e = emb + i * dim;
        if (isnan(e[0]))
            continue;
        double norm = 0.0;
        for (size_t d = 0; d < dim; d++) {
            double v = e[d] - mean[d];
            if (sd[d] > 1e-6)
                v /= sd[d];
            e[d] = (float)v;
            norm += v * v;
        }
        norm = sqrt(norm);
        /* a row equal to the mean stays the zero vector's neighbour: tiny
         * constant direction so that it is finite */
        for (size_t d = 0; d < dim; d++)
            e[d] = norm > 1e-12 ? (float)(e[d] / norm) : (float)(1.0 / sqrt((double)dim));
    }
out:
    free(mean);
    free(sd);
}

/* ---- the pipeline ----------------------------------------------------- */

struct gf_diar {
    bool weight_free;          /* energy VAD + fbank statistics */
    int batch;                 /* windows per network call */
    int threads;               /* worker.cpu_threads, for the clustering's host stages
                                  (<= 0: gf_cluster_run's default) */
    gf_par *cluster_par;       /* their pool, made at the first clustering and kept */
    gf_diar_backend backend;   /* the networks (unused in weight-free mode) */
    bool has_backend;          /* backend holds something to destroy */
    float *span;               /* span mode (backend.segment_span): the batch as one
                                  stretch of audio, window b at b * GF_DIAR_STEP */
    float *pinned;             /* the buffer backend.pin took, or NULL */
    float *ahead;              /* a second batch buffer of the same kind (span or wave):
                                  the next batch is decoded into it while this one runs */
    float *pinned_ahead;       /* it, when backend.pin took it too */
    size_t *valid_ahead;       /* [batch] its windows' audio samples */
    gf_plda *plda;             /* NULL in weight-free mode */
    gf_fbank *fbank;           /* plain (not mean-normalised) fbank, weight-free mode */
    float *wave;               /* [batch x 160000] */
    size_t *valid;             /* [batch] audio samples of each window */
    float *logp;               /* [batch x 589 x 7] */
    float *feats;              /* [batch x 998 x 80]; one window in weight-free mode */
    float *masks;              /* [batch x 3 x 589] pooling masks */
    int *job_window;           /* [batch x 3] window of each pooling job */
    int *job_slot;             /* [batch x 3] (window, speaker) cell of each job */
    float *embout;             /* [batch x 3 x 256] pooled embeddings */
};

static gf_diar *diar_alloc(int batch, bool weight_free)
{
    gf_diar *d = gf_calloc(1, sizeof *d);
    d->batch = batch > 0 ? batch : 32;
    d->weight_free = weight_free;
    size_t B = (size_t)d->batch;
    if (weight_free)   /* with networks, the backend decides (batch_buffer) */
        d->wave = gf_malloc(B * GF_DIAR_WINDOW * sizeof *d->wave);
    d->valid = gf_malloc(B * sizeof *d->valid);
    d->valid_ahead = gf_malloc(B * sizeof *d->valid_ahead);
    if (weight_free)
        d->ahead = gf_malloc(B * GF_DIAR_WINDOW * sizeof *d->ahead);
    /* weight-free mode takes the fbank one window at a time */
    d->feats = gf_malloc((weight_free ? 1 : B) * GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS
                         * sizeof *d->feats);
    if (weight_free) {
        d->fbank = gf_fbank_new();
    } else {
        d->logp = gf_malloc(B * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *d->logp);
        d->masks = gf_malloc(B * GF_DIAR_SPEAKERS * GF_DIAR_FRAMES * sizeof *d->masks);
        d->job_window = gf_malloc(B * GF_DIAR_SPEAKERS * sizeof *d->job_window);
        d->job_slot = gf_malloc(B * GF_DIAR_SPEAKERS * sizeof *d->job_slot);
        d->embout = gf_malloc(B * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM * sizeof *d->embout);
    }
    return d;
}

/* The backend lets go of the batch buffer, then is destroyed. */
static void drop_backend(gf_diar *d)
{
    if (!d->has_backend)
        return;
    if (d->pinned && d->backend.unpin)
        d->backend.unpin(d->backend.ctx, d->pinned);
    if (d->pinned_ahead && d->backend.unpin)
        d->backend.unpin(d->backend.ctx, d->pinned_ahead);
    d->pinned = d->pinned_ahead = NULL;
    if (d->backend.destroy)
        d->backend.destroy(d->backend.ctx);
    d->has_backend = false;
}

/* Samples of a span of n windows. */
static size_t span_samples(int n)
{
    return (size_t)(n - 1) * GF_DIAR_STEP + GF_DIAR_WINDOW;
}

/* Span mode: the backend segments from one span and keeps the windows for
 * its fbank (pipeline.h). */
static bool span_mode(const gf_diar *d)
{
    return d->has_backend && d->backend.segment_span && d->backend.fbank;
}

/* The batch buffers the backend takes, the one in use and the one ahead:
 * spans in span mode, else B whole windows (the other kind is not kept);
 * page-locked where the backend can. */
static void batch_buffer(gf_diar *d)
{
    assert(!d->pinned && !d->pinned_ahead);   /* the last backend let go (drop_backend) */
    bool span = span_mode(d);
    float **keep = span ? &d->span : &d->wave, **drop = span ? &d->wave : &d->span;
    size_t bytes = span ? span_samples(d->batch) * sizeof(float)
                        : (size_t)d->batch * GF_DIAR_WINDOW * sizeof(float);
    free(*drop);
    *drop = NULL;
    free(d->ahead);
    if (!*keep)
        *keep = gf_malloc(bytes);
    d->ahead = gf_malloc(bytes);
    /* Not pinned is only slower: the copies stage through pageable memory. */
    if (d->backend.pin && d->backend.pin(d->backend.ctx, *keep, bytes) == 0)
        d->pinned = *keep;
    if (d->backend.pin && d->backend.pin(d->backend.ctx, d->ahead, bytes) == 0)
        d->pinned_ahead = d->ahead;
}

gf_diar *gf_diar_new_weight_free(int batch_size)
{
    GF_INFO("diarize: weight-free mode (energy voice activity, fbank-statistics embeddings, "
            "cosine AHC; no PLDA/VBx)");
    return diar_alloc(batch_size, true);
}

gf_diar *gf_diar_new(const char *models_dir, int batch_size, int threads, bool *weight_free)
{
    gf_diar_backend be;
    int bs = batch_size > 0 ? batch_size : 32;
    int rc = gf_diar_backend_cpu(models_dir, bs, threads, &be);
    if (rc == GF_ENOENT) {
        GF_WARN("weight-free mode: no model files in %s (%s, %s)", models_dir,
                GF_MODELS_SEGMENTATION, GF_MODELS_EMBEDDING);
        if (weight_free)
            *weight_free = true;
        gf_diar *wf = gf_diar_new_weight_free(bs);
        if (wf)
            wf->threads = threads;
        return wf;
    }
    if (rc != 0)
        return NULL;
    char *plda_dir = gf_strfmt("%s/plda", models_dir);
    gf_plda *plda = NULL;
    rc = gf_plda_load(plda_dir, &plda);
    free(plda_dir);
    if (rc != 0) {
        GF_ERROR("%s: the network files are there but the PLDA (plda/) is unusable",
                 models_dir);
        be.destroy(be.ctx);
        return NULL;
    }
    gf_diar *d = diar_alloc(bs, false);
    d->threads = threads;
    d->backend = be;
    d->has_backend = true;
    batch_buffer(d);
    d->plda = plda;
    if (weight_free)
        *weight_free = false;
    return d;
}

void gf_diar_set_backend(gf_diar *self, gf_diar_backend *backend)
{
    assert(!self->weight_free);
    drop_backend(self);
    self->backend = *backend;
    self->has_backend = true;
    memset(backend, 0, sizeof *backend);
    batch_buffer(self);
}

void gf_diar_destroy(gf_diar **self_p)
{
    gf_diar *d = self_p ? *self_p : NULL;
    if (!d)
        return;
    drop_backend(d);
    gf_par_destroy(&d->cluster_par);
    gf_plda_destroy(&d->plda);
    gf_fbank_destroy(&d->fbank);
    free(d->wave);
    free(d->span);
    free(d->ahead);
    free(d->valid);
    free(d->valid_ahead);
    free(d->logp);
    free(d->feats);
    free(d->masks);
    free(d->job_window);
    free(d->job_slot);
    free(d->embout);
    free(d);
    *self_p = NULL;
}

bool gf_diar_weight_free(const gf_diar *self)
{
    return self->weight_free;
}

int gf_diar_batch(const gf_diar *self)
{
    return self->batch;
}

const char *gf_diar_identity(const gf_diar *self)
{
    if (self->weight_free || !self->has_backend || !self->backend.identity)
        return "cpu";
    return self->backend.identity;
}

char *gf_diar_result_json(const gf_diar_result *r, const char *models_dir, const gf_devstats *st)
{
    char *turns = gf_rttm_json(r->rttm);
    json_object *o = json_tokener_parse(turns);
    free(turns);
    if (!o)
        o = json_object_new_object();
    json_object_object_add(o, "mode", json_object_new_string(r->weight_free ? "weight-free"
                                                                             : "neural"));
    if (r->weight_free) {
        char *msg = gf_strfmt("weight-free mode: no model files in %s", models_dir);
        json_object_object_add(o, "notice", json_object_new_string(msg));
        free(msg);
    }
    json_object_object_add(o, "duration", json_object_new_double(r->duration));
    json_object_object_add(o, "windows", json_object_new_int64((int64_t)r->n_windows));
    json_object *t = json_object_new_object();
    json_object_object_add(t, "decode", json_object_new_double(r->t_decode));
    json_object_object_add(t, "segmentation", json_object_new_double(r->t_segmentation));
    json_object_object_add(t, "fbank", json_object_new_double(r->t_fbank));
    json_object_object_add(t, "embedding", json_object_new_double(r->t_embedding));
    json_object_object_add(t, "clustering", json_object_new_double(r->t_clustering));
    json_object_object_add(t, "total", json_object_new_double(r->t_total));
    json_object_object_add(o, "timings", t);
    if (st) {
        char *ds = gf_devstats_to_json(st);
        json_object *dj = json_tokener_parse(ds);
        free(ds);
        if (dj)
            json_object_object_add(o, "devstats", dj);
    }
    char *s = gf_strfmt("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

gf_diar_run_opts gf_diar_run_defaults(void)
{
    gf_diar_run_opts o = { .cluster = gf_cluster_defaults() };
    return o;
}

void gf_diar_result_free(gf_diar_result *r)
{
    gf_rttm_destroy(&r->rttm);
    memset(r, 0, sizeof *r);
}

static double secs(uint64_t t0)
{
    return (double)(gf_now_ns() - t0) * 1e-9;
}

static char *uri_of(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = gf_strdup(*b ? b : "recording");
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    for (char *p = s; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n')
            *p = '_';
    return s;
}

static int save_array(const char *dir, const char *name, const float *data, size_t n0, size_t n1,
                      size_t n2)
{
    size_t shape[3] = { n0, n1, n2 };
    gf_npy_array *a = gf_npy_new(GF_NPY_F32, 3, shape);
    memcpy(a->data, data, a->count * sizeof(float));
    char *path = gf_strfmt("%s/%s", dir, name);
    int rc = gf_npy_save(path, a);
    free(path);
    gf_npy_destroy(&a);
    return rc;
}

static int save_intermediates(const char *dir, const float *logits, const float *seg,
                              const float *emb, size_t n, size_t dim)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        GF_ERROR("%s: cannot create the intermediates directory: %s", dir, strerror(errno));
        return GF_EIO;
    }
    int rc = 0;
    if (logits)
        rc = save_array(dir, "segmentation_logits.npy", logits, n, GF_DIAR_FRAMES,
                        GF_DIAR_CLASSES);
    if (!rc)
        rc = save_array(dir, "segmentations.npy", seg, n, GF_DIAR_FRAMES, GF_DIAR_SPEAKERS);
    if (!rc)
        rc = save_array(dir, "embeddings.npy", emb, n, GF_DIAR_SPEAKERS, dim);
    return rc;
}

/* Segmentation, fbank and embeddings of nb windows in d->wave into the
 * per-window arrays at window offset w0. */
static int run_batch_neural(gf_diar *d, int nb, float *seg, float *emb, float *logits,
                            gf_devstats *stats, gf_diar_result *res)
{
    uint64_t t0 = gf_now_ns();
    bool span = span_mode(d);
    int rc = span ? d->backend.segment_span(d->backend.ctx, d->span, nb, d->logp, stats)
                  : d->backend.segment(d->backend.ctx, d->wave, nb, d->logp, stats);
    if (rc) {
        GF_ERROR("segmentation (%s) failed on a batch of %d windows", d->backend.name, nb);
        return rc;
    }
    for (int b = 0; b < nb; b++) {
        const float *lp = d->logp + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_CLASSES;
        gf_powerset_decode(lp, GF_DIAR_FRAMES, seg + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS);
        if (logits)
            memcpy(logits + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_CLASSES, lp,
                   GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *lp);
    }
    res->t_segmentation += secs(t0);

    t0 = gf_now_ns();
    if (d->backend.fbank) {   /* on the backend's device, where the features stay */
        rc = d->backend.fbank(d->backend.ctx, span ? NULL : d->wave, nb, NULL, stats);
        if (rc) {
            GF_ERROR("fbank (%s) failed on a batch of %d windows", d->backend.name, nb);
            return rc;
        }
    }
    for (int b = 0; b < nb && !d->backend.fbank; b++) {
        size_t nf = 0;
        rc = gf_fbank_compute(d->wave + (size_t)b * GF_DIAR_WINDOW, GF_DIAR_WINDOW,
                              d->feats + (size_t)b * GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS, &nf);
        if (rc)
            return rc;
        if (stats)
            gf_devstats_unavailable(stats, "fbank", "cpu", "cpu card");
    }
    res->t_fbank += secs(t0);

    t0 = gf_now_ns();
    int n_jobs = 0;
    for (int b = 0; b < nb; b++) {
        const float *act = seg + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        for (int s = 0; s < GF_DIAR_SPEAKERS; s++) {
            float *e = emb + ((size_t)b * GF_DIAR_SPEAKERS + (size_t)s) * GF_DIAR_EMB_DIM;
            for (int k = 0; k < GF_DIAR_EMB_DIM; k++)
                e[k] = NAN;
            if (gf_diar_pool_mask(act, s, d->masks + (size_t)n_jobs * GF_DIAR_FRAMES) == 0)
                continue;
            d->job_window[n_jobs] = b;
            d->job_slot[n_jobs] = b * GF_DIAR_SPEAKERS + s;
            n_jobs++;
        }
    }
    if (n_jobs > 0 || d->backend.fbank) {   /* a device backend may finish work begun ahead */
        rc = d->backend.embed(d->backend.ctx, d->backend.fbank ? NULL : d->feats, nb,
                              d->job_window, d->masks, n_jobs, d->embout, stats);
        if (rc) {
            GF_ERROR("embedding (%s) failed on a batch of %d windows", d->backend.name, nb);
            return rc;
        }
        for (int j = 0; j < n_jobs; j++)
            memcpy(emb + (size_t)d->job_slot[j] * GF_DIAR_EMB_DIM,
                   d->embout + (size_t)j * GF_DIAR_EMB_DIM, GF_DIAR_EMB_DIM * sizeof(float));
    }
    res->t_embedding += secs(t0);
    return 0;
}

/* Weight-free mode: per-block statistics, gathered while the windows stream.
 * Blocks are GF_DIAR_WF_BLOCK seconds on a global grid; each is computed from
 * the first window that holds it. */
typedef struct {
    double noise_db;   /* running noise floor of the energy VAD */
    float *vec;        /* [n x GF_DIAR_WF_DIM] block statistics (NaN: too little speech) */
    size_t n;          /* blocks filled */
    size_t cap;        /* allocated */
} wf_blocks;

#define WF_BLOCK_FBANK ((int)(GF_DIAR_WF_BLOCK * 100.0 + 0.5))  /* fbank frames per block */
#define WF_BLOCKS_PER_STEP ((size_t)(1.0 / GF_DIAR_WF_BLOCK + 0.5))
#define WF_BLOCKS_PER_WINDOW (10 * WF_BLOCKS_PER_STEP)

/* window c holds blocks c * per_step .. c * per_step + per_window - 1 */
size_t gf_diar_max_blocks(size_t n_windows)
{
    return n_windows ? (n_windows - 1) * WF_BLOCKS_PER_STEP + WF_BLOCKS_PER_WINDOW : 0;
}

/* segmentation frame (of the 589) nearest to fbank frame k, by centres */
static int seg_frame_of_fbank(size_t k)
{
    long centre = (long)k * GF_FBANK_SHIFT + GF_FBANK_FRAME / 2;
    long f = (centre - VAD_FRAME_LEN / 2 + VAD_FRAME_STEP / 2) / VAD_FRAME_STEP;
    if (f < 0)
        f = 0;
    if (f >= GF_DIAR_FRAMES)
        f = GF_DIAR_FRAMES - 1;
    return (int)f;
}

/* Mean and std of the cepstra 1..GF_DIAR_WF_CEPS (DCT-II of the log-mel
 * row; c0, the loudness, left out) of fbank rows k0..k1 under act; returns
 * the rows used. */
static size_t range_stats(const float *fbank, size_t k0, size_t k1, const float *act, float *out)
{
    enum { C = GF_DIAR_WF_CEPS };
    double dct[C][GF_FBANK_BINS];
    for (int i = 0; i < C; i++)
        for (int m = 0; m < GF_FBANK_BINS; m++)
            dct[i][m] = cos(M_PI * (i + 1) * (m + 0.5) / GF_FBANK_BINS);
    double sum[C] = { 0 }, sq[C] = { 0 };
    size_t used = 0;
    for (size_t k = k0; k < k1; k++) {
        if (act[seg_frame_of_fbank(k)] == 0.0f)
            continue;
        const float *row = fbank + k * GF_FBANK_BINS;
        for (int i = 0; i < C; i++) {
            double v = 0.0;
            for (int m = 0; m < GF_FBANK_BINS; m++)
                v += dct[i][m] * row[m];
            sum[i] += v;
            sq[i] += v * v;
        }
        used++;
    }
    for (int i = 0; i < C; i++) {
        if (!used) {
            out[i] = out[C + i] = NAN;
            continue;
        }
        double mean = sum[i] / (double)used;
        double var = sq[i] / (double)used - mean * mean;
        out[i] = (float)mean;
        out[C + i] = (float)sqrt(var > 0.0 ? var : 0.0);
    }
    return used;
}

size_t gf_diar_fbank_stats(const float *fbank, size_t n_fbank, const float *act, float *out)
{
    return range_stats(fbank, 0, n_fbank, act, out);
}

static int run_batch_weight_free(gf_diar *d, int nb, size_t w0, float *seg, wf_blocks *wb,
                                 gf_devstats *stats, gf_diar_result *res)
{
    for (int b = 0; b < nb; b++) {
        const float *w = d->wave + (size_t)b * GF_DIAR_WINDOW;
        float *act = seg + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        float vad[GF_DIAR_FRAMES];
        uint64_t t0 = gf_now_ns();
        gf_diar_energy_vad(w, d->valid[b], &wb->noise_db, vad);
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            act[f * GF_DIAR_SPEAKERS] = vad[f];
            act[f * GF_DIAR_SPEAKERS + 1] = 0.0f;
            act[f * GF_DIAR_SPEAKERS + 2] = 0.0f;
        }
        res->t_segmentation += secs(t0);
        if (stats)
            gf_devstats_unavailable(stats, "vad.energy", "cpu", "cpu card");

        t0 = gf_now_ns();
        size_t nf = 0;
        int rc = gf_fbank_run(d->fbank, w, GF_DIAR_WINDOW, d->feats, &nf, 0);
        if (rc)
            return rc;
        res->t_fbank += secs(t0);
        if (stats)
            gf_devstats_unavailable(stats, "fbank", "cpu", "cpu card");

        /* the blocks of this window no earlier window held */
        t0 = gf_now_ns();
        size_t first = (w0 + (size_t)b) * WF_BLOCKS_PER_STEP;
        for (size_t j = 0; j < WF_BLOCKS_PER_WINDOW; j++) {
            size_t g = first + j;
            size_t start = j * (size_t)WF_BLOCK_FBANK * GF_FBANK_SHIFT;
            if (g < wb->n || start >= d->valid[b])
                continue;
            if (g >= wb->cap) {
                wb->cap = 2 * (g + 1);
                wb->vec = gf_realloc(wb->vec, wb->cap * GF_DIAR_WF_DIM * sizeof *wb->vec);
            }
            size_t k0 = j * (size_t)WF_BLOCK_FBANK, k1 = k0 + (size_t)WF_BLOCK_FBANK;
            if (k1 > nf)
                k1 = nf;
            float *v = wb->vec + g * GF_DIAR_WF_DIM;
            if (k0 >= k1 || range_stats(d->feats, k0, k1, vad, v) < GF_DIAR_WF_MIN_FRAMES)
                for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                    v[k] = NAN;
            wb->n = g + 1;
        }
        res->t_embedding += secs(t0);
        if (stats)
            gf_devstats_unavailable(stats, "embedding.fbank_stats", "cpu", "cpu card");
    }
    return 0;
}

/* After the stream: cluster the blocks (cosine AHC), give each window up to
 * three local speakers (the block clusters present in it, most active
 * first), activity from the VAD in column 0 of seg, and an embedding each
 * (the mean of its blocks). Returns 0 or a GF_E*. */
static int wf_local_speakers(wf_blocks *wb, float *seg, float *emb, size_t n_windows,
                             double threshold)
{
    size_t nb = wb->n, m = 0;
    gf_diar_wf_normalise(wb->vec, nb, GF_DIAR_WF_DIM);
    int *label = gf_malloc((nb ? nb : 1) * sizeof *label);
    size_t *rows = gf_malloc((nb ? nb : 1) * sizeof *rows);
    for (size_t j = 0; j < nb; j++) {
        label[j] = -1;
        if (!isnan(wb->vec[j * GF_DIAR_WF_DIM]))
            rows[m++] = j;
    }
    int rc = 0, K = 0;
    if (m == 1) {
        label[rows[0]] = 0;
        K = 1;
    } else if (m > 1) {
        float *x = gf_malloc(m * GF_DIAR_WF_DIM * sizeof *x);
        int *lab = gf_malloc(m * sizeof *lab);
        for (size_t i = 0; i < m; i++)
            memcpy(x + i * GF_DIAR_WF_DIM, wb->vec + rows[i] * GF_DIAR_WF_DIM,
                   GF_DIAR_WF_DIM * sizeof *x);
        rc = gf_ahc_cluster(x, m, GF_DIAR_WF_DIM, threshold, lab);
        if (rc >= 0) {
            K = rc;
            rc = 0;
            for (size_t i = 0; i < m; i++)
                label[rows[i]] = lab[i];
        }
        free(x);
        free(lab);
    }
    if (rc)
        goto out;
    /* blocks with too little speech take the label of the nearest labelled block */
    if (m > 0) {
        int *filled = gf_malloc(nb * sizeof *filled);
        for (size_t j = 0; j < nb; j++) {
            filled[j] = label[j];
            for (size_t r = 1; filled[j] < 0 && r < nb; r++) {
                if (j >= r && label[j - r] >= 0)
                    filled[j] = label[j - r];
                else if (j + r < nb && label[j + r] >= 0)
                    filled[j] = label[j + r];
            }
        }
        memcpy(label, filled, nb * sizeof *label);
        free(filled);
    }
    /* each block cluster's centroid, unit length: the embedding of every
     * local speaker it becomes, so that the clustering proper finds the
     * same clusters */
    size_t Kz = (size_t)(K ? K : 1);
    double *cent = gf_calloc(Kz * GF_DIAR_WF_DIM, sizeof *cent);
    for (size_t i = 0; i < m; i++)
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            cent[(size_t)label[rows[i]] * GF_DIAR_WF_DIM + (size_t)k] +=
                wb->vec[rows[i] * GF_DIAR_WF_DIM + (size_t)k];
    for (int c = 0; c < K; c++) {
        double *v = cent + (size_t)c * GF_DIAR_WF_DIM, norm = 0.0;
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            norm += v[k] * v[k];
        norm = sqrt(norm);
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            v[k] = norm > 1e-12 ? v[k] / norm : 1.0 / sqrt((double)GF_DIAR_WF_DIM);
    }
    size_t *count = gf_calloc(Kz, sizeof *count);
    for (size_t c = 0; c < n_windows; c++) {
        float *act = seg + c * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        int fl[GF_DIAR_FRAMES];  /* block cluster of each speech frame, -1: silence */
        memset(count, 0, Kz * sizeof *count);
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            fl[f] = -1;
            if (act[f * GF_DIAR_SPEAKERS] == 0.0f)
                continue;
            double t = (double)c + (f * VAD_FRAME_STEP + VAD_FRAME_LEN / 2) / (double)GF_AUDIO_RATE;
            size_t j = (size_t)(t / GF_DIAR_WF_BLOCK);
            if (j >= nb)
                j = nb - 1;
            fl[f] = label[j];
            if (fl[f] >= 0)
                count[fl[f]]++;
        }
        int local[GF_DIAR_SPEAKERS];  /* block cluster of each local speaker */
        for (int s = 0; s < GF_DIAR_SPEAKERS; s++) {
            local[s] = -1;
            size_t best = 0;
            for (int k = 0; k < K; k++)
                if (count[k] > best && (s < 1 || k != local[0]) && (s < 2 || k != local[1])) {
                    best = count[k];
                    local[s] = k;
                }
        }
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            int ls = -1;
            double best = -INFINITY;
            for (int s = 0; fl[f] >= 0 && s < GF_DIAR_SPEAKERS && local[s] >= 0; s++) {
                if (fl[f] == local[s]) {
                    ls = s;
                    break;
                }
                /* a fourth cluster in this window: the closest of the three */
                double dot = 0.0;
                for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                    dot += cent[(size_t)fl[f] * GF_DIAR_WF_DIM + (size_t)k]
                           * cent[(size_t)local[s] * GF_DIAR_WF_DIM + (size_t)k];
                if (dot > best) {
                    best = dot;
                    ls = s;
                }
            }
            for (int s = 0; s < GF_DIAR_SPEAKERS; s++)
                act[f * GF_DIAR_SPEAKERS + s] = s == ls ? 1.0f : 0.0f;
        }
        for (int s = 0; s < GF_DIAR_SPEAKERS; s++) {
            float *e = emb + (c * GF_DIAR_SPEAKERS + (size_t)s) * GF_DIAR_WF_DIM;
            for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                e[k] = local[s] >= 0 ? (float)cent[(size_t)local[s] * GF_DIAR_WF_DIM + (size_t)k]
                                     : NAN;
        }
    }
    free(cent);
    free(count);
out:
    free(rows);
    free(label);
    return rc;
}

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
    size_t before;          /* windows read in the batches before this one */
    int nb;
    int64_t last_sample;
    bool done;
    int rc;
} batch_read;

static void read_batch(batch_read *r)
{
    gf_diar *d = r->d;
    bool span = span_mode(d);
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
            memcpy(r->buf + span_samples(nb + 1) - GF_DIAR_STEP,
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

int gf_diar_run(gf_diar *d, const char *path, const gf_diar_run_opts *o, gf_devstats *stats,
                gf_diar_result *res)
{
    memset(res, 0, sizeof *res);
    res->weight_free = d->weight_free;
    uint64_t t_start = gf_now_ns();
    int err = 0;
    gf_audio_windows *it = gf_audio_windows_new(path, GF_DIAR_WINDOW, GF_DIAR_STEP, &err);
    if (!it)
        return err ? err : GF_EIO;
    const gf_audio_info *info = gf_audio_windows_info(it);
    size_t total = gf_audio_windows_count(info->samples, GF_DIAR_WINDOW, GF_DIAR_STEP);
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
    wf_blocks wb = { .noise_db = NAN };
    if (rs && d->weight_free) {   /* what the windows after the resumed ones carry on from */
        wb.noise_db = rs->noise_db;
        wb.n = wb.cap = rs->n_blocks;
        if (wb.n) {
            wb.vec = gf_malloc(wb.n * GF_DIAR_WF_DIM * sizeof *wb.vec);
            memcpy(wb.vec, rs->blocks, wb.n * GF_DIAR_WF_DIM * sizeof *wb.vec);
        }
    }
    res->n_resumed = skip;
    int64_t last_sample = 0;
    int rc = 0;
    /* This batch runs while a thread decodes the next into the other
     * buffer (read_ahead); each buffer's role swaps after every batch. */
    float **buf = span_mode(d) ? &d->span : &d->wave;
    batch_read cur = { .d = d, .it = it, .o = o, .path = path, .buf = *buf, .valid = d->valid };
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
            rc = run_batch_weight_free(d, nb, n, sb, &wb, stats, res);
        } else {
            rc = run_batch_neural(d, nb, sb, eb, lb, stats, res);
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
            goto out;
        }
        n += (size_t)nb;
        if (o->progress)
            o->progress(o->progress_user, n, total > n ? total : n);
        if (n > skip && o->boundary) {
            gf_diar_state st = {
                .n_windows = n, .dim = dim, .weight_free = d->weight_free, .seg = seg,
                .emb = d->weight_free ? NULL : emb, .logits = logits, .noise_db = wb.noise_db,
                .n_blocks = wb.n, .blocks = wb.n ? wb.vec : NULL,
                .last = nxt.nb == 0 && nxt.rc == 0,
            };
            if (o->boundary(o->boundary_user, &st)) {
                GF_INFO("%s: stopped after %zu windows, at a batch boundary", path, n);
                rc = GF_EINTR;
                goto out;
            }
        }
        batch_read t = cur;
        cur = nxt;
        nxt = t;
    }
    rc = cur.rc;
    if (rc)
        goto out;
    if (n == 0) {
        GF_ERROR("%s: no audio samples", path);
        rc = GF_EINVAL;
        goto out;
    }
    if (n < skip) {
        GF_ERROR("%s: %zu windows, fewer than the %zu of the state resumed from", path, n, skip);
        rc = GF_ESTATE;
        goto out;
    }
    res->n_windows = n;
    res->duration = (double)last_sample / GF_AUDIO_RATE;

    t0 = gf_now_ns();
    gf_cluster_opts copts = o->cluster;
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
        copts.threshold = GF_DIAR_WF_THRESHOLD;
        rc = wf_local_speakers(&wb, seg, emb, n, copts.threshold);
        if (rc) {
            GF_ERROR("%s: weight-free block clustering failed (%s)", path, gf_strerror(rc));
            goto out;
        }
    }
    if (o->save_dir) {
        rc = save_intermediates(o->save_dir, logits, seg, emb, n, dim);
        if (rc)
            goto out;
    }
    gf_cluster_result cres;
    rc = gf_cluster_run(seg, emb, n, GF_DIAR_FRAMES, GF_DIAR_SPEAKERS, dim, d->plda, &copts,
                        &cres);
    if (rc) {
        GF_ERROR("%s: clustering failed (%s)", path, gf_strerror(rc));
        goto out;
    }
    char *uri = uri_of(path);
    res->rttm = gf_rttm_new();
    int max_label = -1;
    for (size_t i = 0; i < cres.n_turns; i++) {
        char name[32];
        snprintf(name, sizeof name, "SPEAKER_%02d", cres.turns[i].label);
        gf_rttm_add(res->rttm, uri, 1, cres.turns[i].start,
                    cres.turns[i].end - cres.turns[i].start, name);
        if (cres.turns[i].label > max_label)
            max_label = cres.turns[i].label;
    }
    res->n_speakers = (size_t)(max_label + 1);
    free(uri);
    gf_cluster_result_free(&cres);
    res->t_clustering = secs(t0);
    if (stats)
        gf_devstats_unavailable(stats, "clustering", "cpu",
                                copts.ahc_link ? "host stage; its AHC linkage on the card is "
                                                 "timed as clustering.ahc"
                                               : "cpu card");
out:
    res->t_total = secs(t_start);
    gf_audio_windows_destroy(&it);
    free(seg);
    free(emb);
    free(logits);
    free(wb.vec);
    if (rc)
        gf_diar_result_free(res);
    return rc;
}
