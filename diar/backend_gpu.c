/* diar_gpu.c — the pipeline's GPU backend (diar_gpu.h): one card, two streams
 * on it with a cuBLAS handle each, and the two GPU networks, taken once and
 * kept for every recording.
 *
 * The segmentation runs on the first stream; the fbank and the embedding
 * network on the second. In span mode the second stream starts a batch's
 * fbank and ResNet trunk as soon as the windows are on the card, before the
 * segmentation runs, so the two networks share the card (the LSTM's blocks
 * leave most multiprocessors idle); the pooling, which needs the
 * segmentation's masks, follows in embed.
 *
 * Routes: the worker's plan (route/plan.h), applied once here for every
 * call size the pipeline can make with this capacity: each production batch
 * up to the first that holds max_batch (a call of B windows runs the row of
 * the smallest that holds B: a recording's last, shorter batch runs the next
 * batch up), and the library row when max_batch is above them all. Each call
 * first puts the networks on its size's row, switching only the boundaries
 * whose route differs (use_row). */
#include "diar/backend_gpu.h"
#include "diar/cluster/ahc_gpu.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "gpu/blas.h"
#include "diar/embedding_gpu.h"
#include "kernels/fbank/fbank_gpu.h"
#include "diar/models.h"
#include "diar/segmentation_gpu.h"
#include "gpu/device.h"
#include "route/planner.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct {
    gf_gpu *gpu;                  /* the card: segmentation's stream */
    gf_blas_gpu *blas;            /* its cuBLAS handle */
    gf_gpu *gpu_e;                /* the same card: fbank and embedding's stream */
    gf_blas_gpu *blas_e;          /* its cuBLAS handle */
    gf_segmentation_gpu *seg;     /* segmentation network on the card */
    gf_embedding_gpu *emb;        /* embedding network on the card */
    gf_fbank_gpu *fbank;          /* its features, on the card */
    bool seg_span;                /* the last segment call came from a span: its windows are
                                     at gf_segmentation_gpu_input */
    int seg_batch;                /* their number */
    gf_cu_ptr span;               /* device copy of a batch's spans (max_batch windows' bytes) */
    gf_cu_function expand;        /* glue gf_windows_expand: span → windows */
    int max_batch;                /* windows per batch at most */
    bool feats_kept;              /* the last fbank left its features on the card */
    int feats_batch;              /* their windows */
    bool overlap;                 /* start them ahead (worker.overlap) */
    bool trunk_ahead;             /* segment_spans started the fbank and trunk of its windows */
    char identity[80];            /* "cuda " and the digest of the routes applied (plan_identity):
                                     gf_diar_backend.identity, for checkpoints */
    int row_batch[GF_DIAR_GPU_ROWS];   /* each row's call size: 0 (any that is no production
                                          batch), then the production batches up to max_batch */
    size_t n_rows;                /* rows applied: the call sizes max_batch allows */
    size_t n_bounds;              /* boundaries a row holds: the registry's, in its order */
    gf_route *routes;             /* [n_rows][n_bounds]: the routes applied, row by row */
    int active;                   /* the row the networks are on; -1: not known (a failed switch) */
} gpu_ctx;

/* Any boundary of the three networks, by name (a gf_route_setter). */
static int set_route(void *ctx, const char *boundary, gf_route_kind kind, const char **sha)
{
    gpu_ctx *c = ctx;
    int rc = gf_segmentation_gpu_switch(c->seg, boundary, kind, sha);
    if (rc == GF_ENOENT)
        rc = gf_embedding_gpu_switch(c->emb, boundary, kind, sha);
    if (rc == GF_ENOENT)
        rc = gf_fbank_gpu_switch(c->fbank, boundary, kind, sha);
    return rc;
}

/* The row of a call of B windows; -1 for a size above the capacity. */
static int row_of(const gpu_ctx *c, int B)
{
    int want = gf_route_plan_row(B);
    for (size_t r = 0; B >= 1 && B <= c->max_batch && r < c->n_rows; r++)
        if (c->row_batch[r] == want)
            return (int)r;
    return -1;
}

/* Put the networks on the routes of a call of B windows: only the boundaries
 * whose route differs from the row they are on switch (the own modules are
 * loaded already; a switch back is a table lookup). */
static int use_row(gpu_ctx *c, int B)
{
    int r = row_of(c, B);
    if (r < 0) {
        GF_ERROR("CUDA card: a batch of %d windows, capacity %d", B, c->max_batch);
        return GF_EINVAL;
    }
    if (c->active == r)
        return 0;
    const gf_route *want = &c->routes[(size_t)r * c->n_bounds];
    const gf_route *have = c->active >= 0 ? &c->routes[(size_t)c->active * c->n_bounds] : NULL;
    int was = c->active;
    c->active = -1;
    for (size_t i = 0; i < c->n_bounds; i++)
        if (!have || want[i].kind != have[i].kind) {
            int rc = set_route(c, want[i].boundary, want[i].kind, NULL);
            if (rc != 0) {
                GF_ERROR("CUDA card: %s to the %s route for a batch of %d (from the row of %d): "
                         "%s", want[i].boundary, gf_route_kind_name(want[i].kind), B,
                         was >= 0 ? c->row_batch[was] : -1, gf_strerror(rc));
                return rc;
            }
        }
    c->active = r;
    return 0;
}

/* A trunk started ahead whose pooling did not come (a batch without speech,
 * or another call in between): wait for it and count its device time. */
static int finish_ahead(gpu_ctx *c, gf_devstats *stats)
{
    if (!c->trunk_ahead)
        return 0;
    c->trunk_ahead = false;
    return gf_embedding_gpu_pool(c->emb, c->feats_batch, NULL, NULL, 0, NULL, stats);
}

/* The spans go to the card (a span of consecutive windows is a tenth of
 * their bytes) and are expanded there, one after the other, into the
 * segmentation's input, which the fbank then reads too (gpu_fbank with wave
 * NULL); its features stay on the card for embed when feats is NULL. */
static int gpu_segment_spans(void *ctx, const gf_diar_span *spans, int n_spans, float *logp,
                             gf_devstats *stats)
{
    gpu_ctx *c = ctx;
    GF_TRY(gf_gpu_bind(c->gpu));   /* the calling thread may not be the one that opened it */
    c->seg_span = false;
    c->feats_kept = false;
    int B = 0;
    size_t samples = 0;
    for (int i = 0; i < n_spans; i++) {
        if (spans[i].windows < 1 || spans[i].step < 1 || spans[i].step > GF_DIAR_WINDOW) {
            GF_ERROR("segmentation (gpu): span %d of %d windows, step %d", i, spans[i].windows,
                     spans[i].step);
            return GF_EINVAL;
        }
        B += spans[i].windows;
        samples += (size_t)(spans[i].windows - 1) * (size_t)spans[i].step + GF_DIAR_WINDOW;
    }
    if (B < 1 || B > c->max_batch) {
        GF_ERROR("segmentation (gpu): batch of %d windows, capacity %d", B, c->max_batch);
        return GF_EINVAL;
    }
    assert(samples <= (size_t)c->max_batch * GF_DIAR_WINDOW);   /* step <= window */
    GF_TRY(finish_ahead(c, stats));
    GF_TRY(use_row(c, B));
    /* The windows are rewritten only once the other stream is done reading. */
    GF_TRY(gf_gpu_wait_for(c->gpu, c->gpu_e));
    gf_cu_ptr input = gf_segmentation_gpu_input(c->seg), at = c->span;
    int window = GF_DIAR_WINDOW;
    for (int i = 0, w0 = 0; i < n_spans; i++) {
        size_t n = (size_t)(spans[i].windows - 1) * (size_t)spans[i].step + GF_DIAR_WINDOW;
        gf_cu_ptr out = input + (gf_cu_ptr)w0 * GF_DIAR_WINDOW * sizeof(float);
        int step = spans[i].step, nw = spans[i].windows;
        void *p[] = { &at, &step, &window, &nw, &out };
        GF_TRY(gf_gpu_upload(c->gpu, at, spans[i].samples, n * sizeof(float)));
        GF_TRY(gf_gpu_launch1d(c->gpu, c->expand, (long)nw * GF_DIAR_WINDOW, p));
        at += (gf_cu_ptr)(n * sizeof(float));
        w0 += nw;
    }
    if (c->overlap) {   /* else the fbank and the trunk follow, from gpu_fbank and gpu_embed */
        GF_TRY(gf_gpu_wait_for(c->gpu_e, c->gpu));
        GF_TRY(gf_fbank_gpu_run_dev(c->fbank, input, B, NULL, stats));
        GF_TRY(gf_embedding_gpu_trunk(c->emb, gf_fbank_gpu_features(c->fbank), B, stats));
        c->feats_kept = true;
        c->feats_batch = B;
        c->trunk_ahead = true;
    }
    GF_TRY(gf_segmentation_gpu_run_dev(c->seg, B, logp, stats));
    c->seg_span = true;
    c->seg_batch = B;
    return 0;
}

static int gpu_fbank(void *ctx, const float *wave, int B, float *feats, gf_devstats *stats)
{
    gpu_ctx *c = ctx;
    GF_TRY(gf_gpu_bind(c->gpu));   /* the calling thread may not be the one that opened it */
    if (!wave && !feats && c->trunk_ahead && B == c->feats_batch)
        return 0;   /* segment_spans started them: features and trunk are on the card */
    GF_TRY(finish_ahead(c, stats));
    c->feats_kept = false;
    GF_TRY(use_row(c, B));
    int rc;
    if (wave) {
        rc = gf_fbank_gpu_run(c->fbank, wave, B, feats, stats);
    } else if (c->seg_span && B == c->seg_batch) {   /* the windows come from the other stream */
        GF_TRY(gf_gpu_wait_for(c->gpu_e, c->gpu));
        rc = gf_fbank_gpu_run_dev(c->fbank, gf_segmentation_gpu_input(c->seg), B, feats, stats);
    } else {
        GF_ERROR("fbank (gpu): no windows of a batch of %d on the card", B);
        rc = GF_EINVAL;
    }
    if (rc == 0 && !feats) {
        c->feats_kept = true;
        c->feats_batch = B;
    }
    return rc;
}

static int gpu_embed(void *ctx, const float *fbank, int B, const int *job_window,
                     const float *masks, int n_jobs, float *emb, gf_devstats *stats)
{
    gpu_ctx *c = ctx;
    GF_TRY(gf_gpu_bind(c->gpu));   /* the calling thread may not be the one that opened it */
    if (!fbank && c->trunk_ahead && B == c->feats_batch) {
        c->trunk_ahead = false;
        return gf_embedding_gpu_pool(c->emb, B, job_window, masks, n_jobs, emb, stats);
    }
    GF_TRY(finish_ahead(c, stats));
    if (n_jobs == 0)
        return 0;   /* nothing to pool, and no trunk to finish */
    GF_TRY(use_row(c, B));
    if (fbank)
        return gf_embedding_gpu_run(c->emb, fbank, B, job_window, masks, n_jobs, emb, stats);
    if (!c->feats_kept || B != c->feats_batch) {
        GF_ERROR("embedding (gpu): no features of a batch of %d windows kept on the card", B);
        return GF_EINVAL;
    }
    return gf_embedding_gpu_run_dev(c->emb, gf_fbank_gpu_features(c->fbank), B, job_window,
                                    masks, n_jobs, emb, stats);
}

static int gpu_pin(void *ctx, void *host, size_t bytes)
{
    gpu_ctx *c = ctx;
    return gf_gpu_pin(c->gpu, host, bytes);
}

static void gpu_unpin(void *ctx, void *host)
{
    gpu_ctx *c = ctx;
    gf_gpu_unpin(c->gpu, host);
}

static void gpu_destroy(void *ctx)
{
    gpu_ctx *c = ctx;
    if (!c)
        return;
    if (c->gpu)   /* a worker may drop the networks from any thread (worker/diarpool.c) */
        (void)gf_gpu_bind(c->gpu);
    gf_segmentation_gpu_destroy(&c->seg);
    gf_embedding_gpu_destroy(&c->emb);
    gf_fbank_gpu_destroy(&c->fbank);
    gf_blas_gpu_destroy(&c->blas_e);
    gf_gpu_destroy(&c->gpu_e);
    gf_blas_gpu_destroy(&c->blas);
    gf_gpu_destroy(&c->gpu);
    free(c->routes);
    free(c);
}

/* One batch of B windows of quiet noise through everything the pipeline
 * will run on the card for that size, untimed. */
static int warm_batch(gpu_ctx *c, int B)
{
    const int jobs = GF_DIAR_SPEAKERS * B;   /* a full batch's shapes */
    const size_t samples = (size_t)(B - 1) * GF_DIAR_STEP + GF_DIAR_WINDOW;
    float *span = gf_malloc(samples * sizeof *span);
    float *logp = gf_malloc((size_t)B * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof *logp);
    float *masks = gf_malloc((size_t)jobs * GF_DIAR_FRAMES * sizeof *masks);
    float *emb = gf_malloc((size_t)jobs * GF_DIAR_EMB_DIM * sizeof *emb);
    int *job_window = gf_malloc((size_t)jobs * sizeof *job_window);
    uint64_t seed = 0x5eed;
    for (size_t i = 0; i < samples; i++)
        span[i] = gf_rand_sym(&seed, 0.01f);
    for (int j = 0; j < jobs; j++)
        job_window[j] = j / GF_DIAR_SPEAKERS;
    for (size_t i = 0; i < (size_t)jobs * GF_DIAR_FRAMES; i++)
        masks[i] = 1.0f;
    gf_diar_span one = { .samples = span, .windows = B, .step = GF_DIAR_STEP };
    int rc = gpu_segment_spans(c, &one, 1, logp, NULL);
    if (rc)
        goto out_free;
    rc = gpu_fbank(c, NULL, B, NULL, NULL);
    if (rc)
        goto out_free;
    rc = gpu_embed(c, NULL, B, job_window, masks, jobs, emb, NULL);
out_free:
    free(span);
    free(logp);
    free(masks);
    free(emb);
    free(job_window);
    if (rc != 0)
        GF_ERROR("CUDA card: the warm-up batch of %d windows failed (%s)", B, gf_strerror(rc));
    return rc;
}

/* A batch of quiet noise for each row, untimed, before the first recording:
 * the first call of each kernel otherwise pays for the driver loading its
 * module (lazily, and cuBLAS's among them) and for cuBLAS choosing its
 * algorithms, up to about 0.1 s that would land in the first recording's
 * first batch (or, for a row whose routes differ, its last). A row's batch:
 * its production batch, or max_batch for the row max_batch itself takes (a
 * production batch above it, or the library row above them all). The full
 * batch goes last, so the
 * networks start on its row. A worker keeps the backend between jobs, so it
 * pays this once. */
static int warm_up(gpu_ctx *c)
{
    int sizes[GF_DIAR_GPU_ROWS];
    size_t n = 0;
    for (size_t r = 0; r < c->n_rows; r++) {
        int b = c->row_batch[r];
        if (b == 0 || b > c->max_batch)   /* the row of max_batch itself */
            b = c->max_batch;
        if (b != c->max_batch)
            sizes[n++] = b;
    }
    sizes[n++] = c->max_batch;
    for (size_t i = 0; i < n; i++)
        GF_TRY(warm_batch(c, sizes[i]));
    /* three points in the plane: two merges of the card's linkage */
    const double pts[6] = { 0.0, 0.0, 1.0, 0.0, 0.0, 3.0 };
    double Z[8];
    return gf_ahc_link_gpu(c->gpu, NULL, pts, 3, 2, Z);
}

/* The backend's identity for checkpoints (gf_diar_backend.identity): "cuda "
 * and the SHA-256 of what decides the networks' numbers on this card
 * besides the weights: the card (name, capability, multiprocessors, driver,
 * whose JIT compiles the PTX) and every route applied, row by row (the call
 * size, boundary, math, own or library, and an own route's module digest).
 * A checkpoint made under another plan is not reused: its results could
 * differ in the last bits. */
static void plan_identity(gpu_ctx *c, const gf_card_identity *card)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        abort();   /* out of memory */
    fprintf(f, "card %s cc %d.%d sms %d driver %d\n", card->name, card->cc_major,
            card->cc_minor, card->sm_count, card->driver_version);
    for (size_t r = 0; r < c->n_rows; r++) {
        fprintf(f, "row %d\n", c->row_batch[r]);
        for (size_t i = 0; i < c->n_bounds; i++) {
            const gf_route *rt = &c->routes[r * c->n_bounds + i];
            fprintf(f, "%s %s %s %s\n", rt->boundary, gf_math_name(rt->math),
                    gf_route_kind_name(rt->kind),
                    rt->kind == GF_ROUTE_OWN ? rt->module.sha256 : "-");
        }
    }
    fclose(f);
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex(text, len, hex);
    free(text);
    snprintf(c->identity, sizeof c->identity, "cuda %s", hex);
}

/* The plan's routes for every call size this capacity allows: the library
 * row when max_batch is above every production batch, then each production
 * batch up to the first that holds max_batch (gf_route_plan_row), applied in
 * that order (the own modules of every row load now); the networks stay on
 * the last. */
static int apply_rows(gpu_ctx *c, gf_route_plan *plan, gf_math math)
{
    const int *prod = gf_production_batches();
    c->n_rows = 0;
    int top = gf_route_plan_row(c->max_batch);   /* 0: above them all */
    if (top == 0)
        c->row_batch[c->n_rows++] = 0;
    for (int j = 0; j < GF_N_PRODUCTION_BATCHES; j++)
        if (prod[j] <= c->max_batch || prod[j] == top)
            c->row_batch[c->n_rows++] = prod[j];
    c->n_bounds = gf_boundary_count();
    c->routes = gf_calloc(c->n_rows * c->n_bounds, sizeof *c->routes);
    const char **names = gf_calloc(c->n_bounds, sizeof *names);
    for (size_t i = 0; i < c->n_bounds; i++)
        names[i] = gf_boundary_at(i)->name;
    int rc = 0;
    for (size_t r = 0; r < c->n_rows && !rc; r++)
        rc = gf_route_plan_apply(plan, c->row_batch[r], math, names, c->n_bounds, set_route, c,
                                 &c->routes[r * c->n_bounds]);
    free(names);
    c->active = rc ? -1 : (int)c->n_rows - 1;
    return rc;
}

size_t gf_diar_backend_gpu_routes(const gf_diar_backend *be, const gf_route **routes,
                                  const int **batches)
{
    if (!be->name || strcmp(be->name, "cuda") != 0 || !be->ctx)
        return 0;
    const gpu_ctx *c = be->ctx;
    *routes = c->routes;
    *batches = c->row_batch;
    return c->n_rows;
}

int gf_diar_backend_gpu(gf_route_plan *plan, const char *models_dir, int max_batch, gf_math math,
                        bool overlap, gf_diar_backend *out)
{
    const gf_card_identity *card = gf_route_plan_card(plan);
    const int ordinal = card->index;
    char *seg_path = gf_strfmt("%s/%s", models_dir, GF_MODELS_SEGMENTATION);
    char *emb_path = gf_strfmt("%s/%s", models_dir, GF_MODELS_EMBEDDING);
    gf_manifest *man = NULL;
    gpu_ctx *c = gf_calloc(1, sizeof *c);
    struct stat st;
    int rc = 0;
    if (card->kind != GF_DEVICE_CUDA || max_batch < 1) {
        GF_ERROR("card %d: %s for the GPU backend", ordinal,
                 card->kind != GF_DEVICE_CUDA ? "not a CUDA card" : "no batch size");
        rc = GF_EINVAL;
        goto fail;
    }
    if (stat(seg_path, &st) != 0 || stat(emb_path, &st) != 0) {
        GF_ERROR("%s: no model files (%s, %s) for the GPU backend", models_dir,
                 GF_MODELS_SEGMENTATION, GF_MODELS_EMBEDDING);
        rc = GF_ENOENT;
        goto fail;
    }
    rc = gf_manifest_load(models_dir, &man);
    if (rc != 0 && rc != GF_ENOENT)
        goto fail;
    /* With the stages overlapped the segmentation's stream goes first: its
     * persistent LSTM is a long chain of dependent steps on few blocks, the
     * trunk beside it many short blocks that fill in around it. */
    rc = overlap ? gf_gpu_open_urgent(ordinal, &c->gpu) : gf_gpu_open(ordinal, &c->gpu);
    if (rc != 0) {
        GF_ERROR("CUDA card %d: cannot be opened (%s)", ordinal, gf_strerror(rc));
        goto fail;
    }
    rc = gf_blas_gpu_open(c->gpu, &c->blas);
    if (rc != 0)
        goto fail;
    rc = gf_gpu_open(ordinal, &c->gpu_e);
    if (rc != 0)
        goto fail;
    rc = gf_blas_gpu_open(c->gpu_e, &c->blas_e);
    if (rc != 0)
        goto fail;
    c->seg = gf_segmentation_gpu_new(c->gpu, c->blas, seg_path,
                                     man ? gf_manifest_sha256(man, GF_MODELS_SEGMENTATION) : NULL,
                                     max_batch, math);
    c->emb = c->seg ? gf_embedding_gpu_new(c->gpu_e, c->blas_e, emb_path,
                                           man ? gf_manifest_sha256(man, GF_MODELS_EMBEDDING)
                                               : NULL,
                                           max_batch, math)
                    : NULL;
    c->fbank = c->emb ? gf_fbank_gpu_new(c->gpu_e, c->blas_e, max_batch) : NULL;
    if (!c->seg || !c->emb || !c->fbank) {
        rc = GF_EINVAL;
        goto fail;
    }
    c->max_batch = max_batch;
    c->overlap = overlap;
    rc = apply_rows(c, plan, math);
    if (rc != 0)
        goto fail;
    plan_identity(c, card);
    gf_segmentation_gpu_share_card(c->seg, overlap);   /* the trunk runs beside it */
    /* spans of any step up to whole windows: at most max_batch windows' bytes */
    rc = gf_gpu_alloc(c->gpu, (size_t)max_batch * GF_DIAR_WINDOW * sizeof(float), &c->span);
    if (rc != 0)
        goto fail;
    rc = gf_gpu_function(c->gpu, "glue", "gf_windows_expand", &c->expand, NULL, NULL);
    if (rc != 0)
        goto fail;
    rc = warm_up(c);
    if (rc != 0)
        goto fail;
    *out = (gf_diar_backend){ .name = "cuda", .route = "library",
                              .segment_spans = gpu_segment_spans,
                              .embed = gpu_embed, .fbank = gpu_fbank, .destroy = gpu_destroy,
                              .pin = gpu_pin, .unpin = gpu_unpin, .ctx = c,
                              .ahc_link = gf_ahc_link_gpu, .ahc_ctx = c->gpu,
                              .identity = c->identity, .fixed_batch = true };
    gf_manifest_destroy(&man);
    free(seg_path);
    free(emb_path);
    return 0;
fail:
    gpu_destroy(c);
    gf_manifest_destroy(&man);
    free(seg_path);
    free(emb_path);
    return rc;
}
