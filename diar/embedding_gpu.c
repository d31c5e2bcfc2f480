/* embedding_gpu.c — ResNet34 speaker embeddings on a CUDA card (see
 * embedding_gpu.h); the convolutions (kernels/resnet/resnet_gpu.c), the pooling
 * (kernels/pooling/pooling_gpu.c) and seg_1 (kernels/embedding/seg1_gpu.c) each run the route
 * planned for them.
 *
 * Trunk [B,1,80,998] → conv1 32 → layer1 3×32 → layer2 4×64 (/2) → layer3
 * 6×128 (/2) → layer4 3×256 (/2) → [B,256,10,125] = [B,2560,125]; pooling
 * per job → [jobs, 5120] → seg_1 → [jobs, 256]. */
#include "diar/embedding_gpu.h"
#include "diar/io/safetensors.h"
#include "kernels/resnet/resnet_gpu.h"
#include "kernels/pooling/pooling_gpu.h"
#include "kernels/embedding/seg1_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRUNK_T GF_POOL_T             /* trunk frames after three stride-2 stages */
#define BN_EPS 1e-5
#define MAX_CONVS 40                  /* 1 + 2·16 + 3 shortcuts = 36 */

typedef struct {
    gf_cu_function transpose;
} kernels;

struct gf_embedding_gpu {
    gf_gpu *gpu;                  /* borrowed */
    gf_blas_gpu *blas;            /* borrowed */
    gf_math math;                 /* float GEMM math mode */
    int max_batch;                /* windows per run at most */
    kernels k;                    /* glue kernels */
    gf_conv_gpu *convs[MAX_CONVS];/* conv1, then per block conv1, conv2, [shortcut] */
    int n_convs;
    gf_pool_gpu *pool;            /* pooling.stats and its routes */
    gf_seg1_gpu *seg1;            /* embedding.seg_1 and its routes */
    gf_cu_ptr feats, act[4], col, pooled, emb;
    gf_cu_ptr trunk_out;          /* the last trunk's output (one of act[]) */
    int trunk_batch;              /* its windows; 0: none to pool */
    gf_gpu_allocs mem;            /* every device allocation */
    float *host_masks;            /* [3 * max_batch, 125]: resized masks before upload */
};

static const int layer_blocks[4] = { 3, 4, 6, 3 };
static const int layer_width[4] = { 32, 64, 128, 256 };

static int dalloc(gf_embedding_gpu *s, size_t bytes, gf_cu_ptr *dev)
{
    return gf_gpu_allocs_take(&s->mem, bytes, dev);
}

/* Fold conv `wname` [cout,cin,k,k] and batch norm `bn` (prefix) into one conv. */
static int load_conv(gf_embedding_gpu *s, gf_safetensors *st, const char *boundary,
                     const char *wname, const char *bn, gf_conv_shape shape)
{
    const int cin = shape.cin, cout = shape.cout, k = shape.k;
    char name[128];
    const float *w = gf_safetensors_get(st, wname, 4, cout, cin, k, k);
    const float *p[4];
    static const char *parts[4] = { "weight", "bias", "running_mean", "running_var" };
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s", bn, parts[i]);
        p[i] = gf_safetensors_get(st, name, 1, cout);
    }
    if (!w || !p[0] || !p[1] || !p[2] || !p[3])
        return GF_EINVAL;
    size_t kk = (size_t)cin * k * k;
    float *wf = gf_malloc(sizeof(float) * cout * kk);
    float *bf = gf_malloc(sizeof(float) * cout);
    for (int o = 0; o < cout; o++) {
        double scale = p[0][o] / sqrt((double)p[3][o] + BN_EPS);
        for (size_t j = 0; j < kk; j++)
            wf[o * kk + j] = (float)(w[o * kk + j] * scale);
        bf[o] = (float)(p[1][o] - p[2][o] * scale);
    }
    assert(s->n_convs < MAX_CONVS);
    gf_conv_gpu *c = gf_conv_gpu_new(s->gpu, s->blas, boundary, shape, wf, bf);
    free(wf);
    free(bf);
    if (!c)
        return GF_EDEVICE;
    s->convs[s->n_convs++] = c;
    return 0;
}

/* One convolution of the trunk: its planner name, its tensors in the file
 * and its shape. */
typedef struct {
    char boundary[48];            /* "resnet.layer2.0.shortcut" */
    char weight[64];              /* its weight tensor */
    char bn[48];                  /* the prefix of its batch norm's tensors */
    gf_conv_shape shape;
} trunk_conv;

/* The trunk's convolutions in network order, as the loader builds them and
 * the planning step (gf_embedding_gpu_plan) asks them: conv1, then per block
 * conv1, conv2 and, where the block changes width or stride, the shortcut.
 * Returns how many (at most MAX_CONVS). */
static int trunk_convs(trunk_conv *out)
{
    int n = 0, cin = 32;
    out[n++] = (trunk_conv){ "resnet.conv1", "resnet.conv1.weight", "resnet.bn1",
                             { .cin = 1, .cout = 32, .k = 3, .stride = 1 } };
    for (int l = 0; l < 4; l++) {
        int width = layer_width[l];
        for (int b = 0; b < layer_blocks[l]; b++) {
            int stride = (l > 0 && b == 0) ? 2 : 1;
            static const char *const names[3] = { "conv1", "conv2", "shortcut" };
            static const char *const weights[3] = { "conv1.weight", "conv2.weight",
                                                    "shortcut.0.weight" };
            static const char *const bns[3] = { "bn1", "bn2", "shortcut.1" };
            const gf_conv_shape shapes[3] = {
                { .cin = cin, .cout = width, .k = 3, .stride = stride },
                { .cin = width, .cout = width, .k = 3, .stride = 1 },
                { .cin = cin, .cout = width, .k = 1, .stride = stride },
            };
            int convs = (stride != 1 || cin != width) ? 3 : 2;
            for (int c = 0; c < convs; c++) {
                assert(n < MAX_CONVS);
                trunk_conv *t = &out[n++];
                snprintf(t->boundary, sizeof t->boundary, "resnet.layer%d.%d.%s", l + 1, b,
                         names[c]);
                snprintf(t->weight, sizeof t->weight, "resnet.layer%d.%d.%s", l + 1, b,
                         weights[c]);
                snprintf(t->bn, sizeof t->bn, "resnet.layer%d.%d.%s", l + 1, b, bns[c]);
                t->shape = shapes[c];
            }
            cin = width;
        }
    }
    return n;
}

static int load_weights(gf_embedding_gpu *s, gf_safetensors *st)
{
    trunk_conv convs[MAX_CONVS];
    int n = trunk_convs(convs);
    for (int i = 0; i < n; i++)
        GF_TRY(load_conv(s, st, convs[i].boundary, convs[i].weight, convs[i].bn, convs[i].shape));
    const float *sw = gf_safetensors_get(st, "resnet.seg_1.weight", 2, GF_SEG1_OUT, GF_SEG1_IN);
    const float *sb = gf_safetensors_get(st, "resnet.seg_1.bias", 1, GF_SEG1_OUT);
    if (!sw || !sb)
        return GF_EINVAL;
    if (!(s->seg1 = gf_seg1_gpu_new(s->gpu, s->blas, sw, sb, 3 * s->max_batch)))
        return GF_EDEVICE;
    if (gf_safetensors_unused(st) != 0)
        return GF_EINVAL;
    return 0;
}

static int load_kernels(gf_embedding_gpu *s)
{
    static const char *const names[] = { "gf_transpose_ct" };
    gf_cu_function *const fns[] = { &s->k.transpose };
    return gf_gpu_functions(s->gpu, "glue", names, fns, GF_ARRAY_LEN(names));
}

static int alloc_workspace(gf_embedding_gpu *s)
{
    const size_t B = (size_t)s->max_batch, f = sizeof(float);
    const size_t act = B * 32 * GF_EMB_MELS * GF_EMB_FRAMES;      /* largest activation */
    const size_t col = B * (size_t)GF_EMB_MELS * GF_EMB_FRAMES * 32 * 9;  /* layer1 im2col */
    s->host_masks = gf_malloc(3 * B * TRUNK_T * f);
    GF_TRY(dalloc(s, B * GF_EMB_FRAMES * GF_EMB_MELS * f, &s->feats));
    for (int i = 0; i < 4; i++)
        GF_TRY(dalloc(s, act * f, &s->act[i]));
    GF_TRY(dalloc(s, col * f, &s->col));
    GF_TRY(dalloc(s, 3 * B * GF_POOL_OUT * f, &s->pooled));
    GF_TRY(dalloc(s, 3 * B * GF_EMB_DIM * f, &s->emb));
    if (!(s->pool = gf_pool_gpu_new(s->gpu, s->max_batch, 3 * s->max_batch)))
        return GF_EDEVICE;
    return 0;
}

gf_embedding_gpu *gf_embedding_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *path,
                                       const char *sha256_hex, int max_batch, gf_math math)
{
    assert(max_batch >= 1);
    gf_embedding_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    s->math = math;
    s->max_batch = max_batch;
    s->mem.gpu = gpu;
    gf_safetensors *st = gf_safetensors_open(path, sha256_hex);
    int rc = st ? load_weights(s, st) : GF_EINVAL;
    if (rc == GF_EINVAL && st)
        GF_ERROR("%s: not a ResNet34 embedding model file", path);
    gf_safetensors_destroy(&st);
    if (rc)
        goto fail;
    rc = load_kernels(s);
    if (rc)
        goto fail;
    rc = alloc_workspace(s);
    if (rc)
        goto fail;
    rc = gf_gpu_sync(gpu);
    if (rc)
        goto fail;
    return s;
fail:
    gf_embedding_gpu_destroy(&s);
    return NULL;
}

void gf_embedding_gpu_destroy(gf_embedding_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_embedding_gpu *s = *self_p;
    for (int i = 0; i < s->n_convs; i++)
        gf_conv_gpu_destroy(&s->convs[i]);
    gf_pool_gpu_destroy(&s->pool);
    gf_seg1_gpu_destroy(&s->seg1);
    gf_gpu_allocs_release(&s->mem);
    free(s->host_masks);
    free(s);
    *self_p = NULL;
}


static int launch1d(gf_embedding_gpu *s, gf_cu_function f, long n, void **params)
{
    return gf_gpu_launch1d(s->gpu, f, n, params);
}

static int run_conv(gf_embedding_gpu *s, gf_conv_gpu *c, int B, gf_cu_ptr x, int h, int w,
                    gf_cu_ptr out, gf_cu_ptr residual, int relu, int *ho_p, int *wo_p)
{
    *ho_p = gf_conv_gpu_out(c, h);
    *wo_p = gf_conv_gpu_out(c, w);
    return gf_conv_gpu_run(c, s->math, B, x, h, w, out, residual, relu, s->col);
}

/* Set the route of pooling.stats or embedding.seg_1 on its route object;
 * GF_ENOENT for any other boundary. */
static int tail_route(gf_embedding_gpu *s, const char *boundary, gf_route_kind kind,
                      const char **sha)
{
    if (strcmp(boundary, "pooling.stats") == 0)
        return gf_pool_gpu_set_route(s->pool, kind, sha);
    if (strcmp(boundary, "embedding.seg_1") == 0)
        return gf_seg1_gpu_set_route(s->seg1, kind, sha);
    return GF_ENOENT;
}

/* Any boundary of the network by name, as gf_plan_apply switches it. */
static int route_of(void *obj, const char *boundary, gf_route_kind kind, const char **sha)
{
    gf_embedding_gpu *s = obj;
    int rc = tail_route(s, boundary, kind, sha);
    if (rc != GF_ENOENT)
        return rc;
    for (int i = 0; i < s->n_convs; i++)
        if (strcmp(gf_conv_gpu_boundary(s->convs[i]), boundary) == 0)
            return gf_conv_gpu_set_route(s->convs[i], kind, s->math, sha);
    return GF_ENOENT;
}

int gf_embedding_gpu_plan(const gf_route_request *req, const gf_card_identity *card, char *why,
                          size_t len)
{
    if (strcmp(req->boundary, "pooling.stats") == 0)
        return gf_pool_gpu_plan(req->area, why, len);
    if (strcmp(req->boundary, "embedding.seg_1") == 0)
        return gf_seg1_gpu_plan(req->area, why, len);
    trunk_conv convs[MAX_CONVS];
    int n = trunk_convs(convs);
    for (int i = 0; i < n; i++)
        if (strcmp(convs[i].boundary, req->boundary) == 0)
            return gf_conv_gpu_plan(convs[i].shape, req->math, gf_card_arch(card),
                                    card->smem_optin, req->area, why, len);
    return GF_ENOENT;
}

int gf_embedding_gpu_set_route(gf_embedding_gpu *s, const char *boundary, gf_route_kind kind)
{
    int rc = tail_route(s, boundary, kind, NULL);
    if (rc != GF_ENOENT)
        return rc;
    bool all = strcmp(boundary, "resnet") == 0, found = false;
    for (int i = 0; i < s->n_convs; i++)
        if (all || strcmp(gf_conv_gpu_boundary(s->convs[i]), boundary) == 0) {
            GF_TRY(gf_conv_gpu_set_route(s->convs[i], kind, s->math, NULL));
            found = true;
        }
    return found ? 0 : GF_ENOENT;
}

int gf_embedding_gpu_switch(void *self, const char *boundary, gf_route_kind kind,
                            const char **module_sha256)
{
    return route_of(self, boundary, kind, module_sha256);
}

int gf_embedding_gpu_apply_plan(gf_embedding_gpu *s, gf_route_plan *plan, int batch)
{
    const char *names[MAX_CONVS + 2];
    size_t n = 0;
    for (int i = 0; i < s->n_convs; i++)
        names[n++] = gf_conv_gpu_boundary(s->convs[i]);
    names[n++] = "pooling.stats";
    names[n++] = "embedding.seg_1";
    return gf_route_plan_apply(plan, batch, s->math, names, n, route_of, s, NULL);
}

/* "own" when any conv of the stage runs the own kernel. */
static const char *stage_route(const gf_embedding_gpu *s, int first, int last)
{
    for (int i = first; i < last && i < s->n_convs; i++)
        if (gf_conv_gpu_route(s->convs[i]) == GF_ROUTE_OWN)
            return "own";
    return "library";
}

static int trunk(gf_embedding_gpu *s, gf_cu_ptr feats, int B, gf_devstats *stats,
                 gf_cu_ptr *result)
{
    /* [B, 998, 80] → [B, 80, 998] (mel × time, one input channel). */
    int frames = GF_EMB_FRAMES, mels = GF_EMB_MELS;
    void *p_tr[] = { &feats, &B, &frames, &mels, &s->act[0] };
    GF_TRY(launch1d(s, s->k.transpose, (long)B * frames * mels, p_tr));
    int h = GF_EMB_MELS, w = GF_EMB_FRAMES, ho, wo;
    gf_cu_ptr x = s->act[0], t = s->act[1], sc = s->act[2], out = s->act[3];
    if (stats)
        GF_TRY(gf_gpu_timing_begin(s->gpu, "resnet.conv1", stage_route(s, 0, 1)));
    GF_TRY(run_conv(s, s->convs[0], B, x, h, w, t, 0, 1, &ho, &wo));
    if (stats)
        GF_TRY(gf_gpu_timing_end(s->gpu));
    gf_cu_ptr tmp = x;
    x = t;
    t = tmp;
    int ci = 1;
    char stage[GF_DEVSTATS_NAME_MAX];
    for (int l = 0; l < 4; l++) {
        if (stats) {
            snprintf(stage, sizeof stage, "resnet.layer%d", l + 1);
            GF_TRY(gf_gpu_timing_begin(s->gpu, stage, stage_route(s, ci, ci + 3 * layer_blocks[l])));
        }
        for (int b = 0; b < layer_blocks[l]; b++) {
            gf_conv_gpu *c1 = s->convs[ci++], *c2 = s->convs[ci++];
            gf_conv_shape sh = gf_conv_gpu_shape(c1);
            gf_conv_gpu *short_c = (sh.stride != 1 || sh.cin != sh.cout) ? s->convs[ci++] : NULL;
            int h1, w1;
            GF_TRY(run_conv(s, c1, B, x, h, w, t, 0, 1, &h1, &w1));
            gf_cu_ptr res = x;
            if (short_c) {
                int hs, ws;
                GF_TRY(run_conv(s, short_c, B, x, h, w, sc, 0, 0, &hs, &ws));
                res = sc;
            }
            GF_TRY(run_conv(s, c2, B, t, h1, w1, out, res, 1, &ho, &wo));
            h = ho;
            w = wo;
            tmp = x;
            x = out;
            out = tmp;
        }
        if (stats)
            GF_TRY(gf_gpu_timing_end(s->gpu));
    }
    assert(h == 10 && w == TRUNK_T);
    *result = x;
    return 0;
}

/* Resize each job's 589-frame mask to the trunk's 125 frames (nearest:
 * source (i*589)/125, as the reference does). */
static void resize_masks(const float *masks, int n_jobs, float *out)
{
    for (int j = 0; j < n_jobs; j++)
        for (int i = 0; i < TRUNK_T; i++)
            out[(size_t)j * TRUNK_T + i] = masks[(size_t)j * GF_EMB_MASK + (i * GF_EMB_MASK) / TRUNK_T];
}

int gf_embedding_gpu_run(gf_embedding_gpu *s, const float *feats, int B,
                         const int *job_window, const float *masks, int n_jobs, float *emb,
                         gf_devstats *stats)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("embedding (gpu): batch of %d windows, capacity %d windows", B, s->max_batch);
        return GF_EINVAL;
    }
    GF_TRY(gf_gpu_upload(s->gpu, s->feats, feats,
                      (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS * sizeof(float)));
    return gf_embedding_gpu_run_dev(s, s->feats, B, job_window, masks, n_jobs, emb, stats);
}

int gf_embedding_gpu_run_dev(gf_embedding_gpu *s, gf_cu_ptr feats, int B,
                             const int *job_window, const float *masks, int n_jobs, float *emb,
                             gf_devstats *stats)
{
    GF_TRY(gf_embedding_gpu_trunk(s, feats, B, stats));
    return gf_embedding_gpu_pool(s, B, job_window, masks, n_jobs, emb, stats);
}

int gf_embedding_gpu_trunk(gf_embedding_gpu *s, gf_cu_ptr feats, int B, gf_devstats *stats)
{
    s->trunk_batch = 0;
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("embedding (gpu): batch of %d windows, capacity %d windows", B, s->max_batch);
        return GF_EINVAL;
    }
    GF_TRY(trunk(s, feats, B, stats, &s->trunk_out));
    s->trunk_batch = B;
    return 0;
}

int gf_embedding_gpu_pool(gf_embedding_gpu *s, int B, const int *job_window, const float *masks,
                          int n_jobs, float *emb, gf_devstats *stats)
{
    if (B < 1 || B != s->trunk_batch || n_jobs < 0 || n_jobs > 3 * B) {
        GF_ERROR("embedding (gpu): %d jobs on a batch of %d windows; the trunk ran on %d",
                 n_jobs, B, s->trunk_batch);
        return GF_EINVAL;
    }
    for (int j = 0; j < n_jobs; j++)
        if (job_window[j] < 0 || job_window[j] >= B) {
            GF_ERROR("embedding (gpu): job %d names window %d of %d", j, job_window[j], B);
            return GF_EINVAL;
        }
    if (n_jobs > 0) {
        resize_masks(masks, n_jobs, s->host_masks);
        GF_TRY(gf_pool_gpu_jobs(s->pool, B, job_window, s->host_masks, n_jobs));
        GF_GPU_STAGE(s->gpu, stats, "pooling.stats",
                     gf_route_kind_name(gf_pool_gpu_route(s->pool)),
                     gf_pool_gpu_run(s->pool, s->trunk_out, s->pooled));
        GF_GPU_STAGE(s->gpu, stats, "embedding.seg_1",
                     gf_route_kind_name(gf_seg1_gpu_route(s->seg1)),
                     gf_seg1_gpu_run(s->seg1, s->math, s->pooled, n_jobs, s->emb));
        GF_TRY(gf_gpu_download(s->gpu, emb, s->emb, sizeof(float) * (size_t)n_jobs * GF_EMB_DIM));
    }
    GF_TRY(gf_gpu_sync(s->gpu));
    if (stats)
        gf_gpu_timing_collect(s->gpu, stats);
    return 0;
}
