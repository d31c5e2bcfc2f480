/* embedding.c — WeSpeaker ResNet34 forward pass on the CPU.
 *
 * The trunk is a list of convolutions (conv1, then per BasicBlock conv1,
 * conv2 and the optional 1×1 shortcut) with their batch norms folded in at
 * load time: w' = w·γ/√(σ²+ε), b' = β − μ·γ/√(σ²+ε). The 3×3 stride-1
 * convolutions (30 of 36) run as Winograd F(2×2, 3×3) (kernels/resnet/winograd_cpu,
 * 2.25× fewer multiplications), the others through kernels/resnet/resnet_cpu (im2col
 * tiles + sgemm); both fuse the epilogue (bias, residual, ReLU). Activations ping-pong
 * between four buffers sized for the largest layer; nothing is allocated
 * after gf_embedding_new. Names and conventions: MODELS.md, docs/models.md. */
#include "diar/embedding.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "kernels/resnet/resnet_cpu.h"
#include "kernels/dense/dense_cpu.h"
#include "kernels/pooling/pooling_cpu.h"
#include "kernels/resnet/winograd_cpu.h"
#include "common/par.h"
#include "diar/io/safetensors.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCONV (1 + 16 * 2 + 3)   /* stem, two per block, three shortcuts */
#define CH_OUT 256
#define MEL_OUT (GF_EMB_MELS / 8)
#define STATS (2 * CH_OUT * MEL_OUT)

typedef struct {
    float *w;          /* folded weights [cout, cin*k*k]; NULL where wino is used */
    float *wino;       /* 3×3 stride 1: Winograd-transformed weights [16, cout, cin] */
    float *b;          /* folded bias [cout] */
    int cin, cout, k, stride, pad;
    int h, w_in;       /* input extent (mel, frames) */
} conv;

typedef struct {
    int c1, c2, sc;    /* conv indices; sc = -1 without shortcut */
} block;

/* Workspace for the trunk on one window. */
typedef struct {
    float *act[4];            /* activation buffers, largest layer */
    float *col;               /* im2col tile, or Winograd tile buffers */
} trunk_ws;

struct gf_embedding {
    gf_safetensors *st;       /* mapped weights (seg_1 points into it) */
    int frames, max_batch;    /* input frames per window, batch capacity */
    int t_out;                /* trunk output frames */
    int last_batch;           /* windows of the last trunk call */
    conv convs[NCONV];        /* stem first */
    block blocks[16];         /* in order */
    const float *seg_w, *seg_b;   /* seg_1 [256, 5120], [256] */
    /* workspace */
    gf_par *par;              /* threads: windows of a batch side by side */
    trunk_ws *tws;            /* one trunk workspace per thread */
    long act_floats;          /* size of each activation buffer */
    long col_floats;          /* size of each col buffer */
    float *feats;             /* trunk outputs [B, 2560, t_out] */
    float *wts;               /* resized mask [t_out] */
    float *stats;             /* [5120] */
};

/* Fold `prefix`.weight (conv) and `bnprefix` into c; 0 or GF_EINVAL. */
static int fold(gf_safetensors *st, conv *c, const char *wname, const char *bn)
{
    char n[128];
    const float *w = gf_safetensors_get(st, wname, 4, c->cout, c->cin, c->k, c->k);
    const float *p[4];
    static const char *parts[4] = { "weight", "bias", "running_mean", "running_var" };
    int ok = w != NULL;
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "%s.%s", bn, parts[i]);
        p[i] = gf_safetensors_get(st, n, 1, c->cout);
        ok = ok && p[i];
    }
    if (!ok)
        return GF_EINVAL;
    for (int o = 0; o < c->cout; o++)
        if (!(p[3][o] >= 0.0f)) {
            GF_ERROR("%s: tensor %s.running_var: negative variance at %d", gf_safetensors_path(st),
                     bn, o);
            return GF_EINVAL;
        }
    const long K = (long)c->cin * c->k * c->k;
    c->w = gf_malloc(sizeof(float) * (size_t)(c->cout * K));
    c->b = gf_malloc(sizeof(float) * (size_t)c->cout);
    for (int o = 0; o < c->cout; o++) {
        double s = p[0][o] / sqrt((double)p[3][o] + 1e-5);
        for (long i = 0; i < K; i++)
            c->w[o * K + i] = (float)(w[o * K + i] * s);
        c->b[o] = (float)(p[1][o] - p[2][o] * s);
    }
    if (c->k == 3 && c->stride == 1) {
        c->wino = gf_malloc(sizeof(float) * 16 * (size_t)c->cout * (size_t)c->cin);
        gf_winograd_pack_cpu(c->w, c->cout, c->cin, c->wino);
        free(c->w);
        c->w = NULL;
    }
    return 0;
}

static void set_conv(conv *c, int cin, int cout, int k, int stride, int h, int w)
{
    c->cin = cin;
    c->cout = cout;
    c->k = k;
    c->stride = stride;
    c->pad = k == 3 ? 1 : 0;
    c->h = h;
    c->w_in = w;
}

gf_embedding *gf_embedding_new(const char *path, const char *sha256_hex, int frames, int max_batch,
                               int threads)
{
    assert(max_batch >= 1 && frames >= 8 && threads >= 1);
    gf_embedding *e = gf_calloc(1, sizeof *e);
    e->frames = frames;
    e->max_batch = max_batch;
    e->st = gf_safetensors_open(path, sha256_hex);
    if (!e->st)
        goto fail;
    static const int nblocks[4] = { 3, 4, 6, 3 };
    int h = GF_EMB_MELS, w = frames, cin = 32, nc = 0, nb = 0, ok = 1;
    long act_max = 32L * h * w, col_min = 0;
    char wn[128], bn[128];
    set_conv(&e->convs[nc], 1, 32, 3, 1, h, w);
    ok = fold(e->st, &e->convs[nc++], "resnet.conv1.weight", "resnet.bn1") == 0 && ok;
    for (int l = 0; l < 4; l++) {
        int cout = 32 << l;
        for (int b = 0; b < nblocks[l]; b++) {
            int stride = (b == 0 && l > 0) ? 2 : 1;
            int ho = gf_conv2d_out(h, 3, stride, 1), wo = gf_conv2d_out(w, 3, stride, 1);
            block *bl = &e->blocks[nb++];
            bl->c1 = nc;
            set_conv(&e->convs[nc], cin, cout, 3, stride, h, w);
            snprintf(wn, sizeof wn, "resnet.layer%d.%d.conv1.weight", l + 1, b);
            snprintf(bn, sizeof bn, "resnet.layer%d.%d.bn1", l + 1, b);
            ok = fold(e->st, &e->convs[nc++], wn, bn) == 0 && ok;
            bl->c2 = nc;
            set_conv(&e->convs[nc], cout, cout, 3, 1, ho, wo);
            snprintf(wn, sizeof wn, "resnet.layer%d.%d.conv2.weight", l + 1, b);
            snprintf(bn, sizeof bn, "resnet.layer%d.%d.bn2", l + 1, b);
            ok = fold(e->st, &e->convs[nc++], wn, bn) == 0 && ok;
            bl->sc = -1;
            if (stride != 1 || cin != cout) {
                bl->sc = nc;
                set_conv(&e->convs[nc], cin, cout, 1, stride, h, w);
                snprintf(wn, sizeof wn, "resnet.layer%d.%d.shortcut.0.weight", l + 1, b);
                snprintf(bn, sizeof bn, "resnet.layer%d.%d.shortcut.1", l + 1, b);
                ok = fold(e->st, &e->convs[nc++], wn, bn) == 0 && ok;
            }
            for (int i = bl->c1; i < nc; i++) {
                long m = gf_conv2d_col_min(e->convs[i].cin, e->convs[i].k, wo);
                col_min = m > col_min ? m : col_min;
            }
            if ((long)cout * ho * wo > act_max)
                act_max = (long)cout * ho * wo;
            h = ho;
            w = wo;
            cin = cout;
        }
    }
    assert(nc == NCONV && nb == 16 && h == MEL_OUT && cin == CH_OUT);
    e->t_out = w;
    e->seg_w = gf_safetensors_get(e->st, "resnet.seg_1.weight", 2, GF_EMB_DIM, STATS);
    e->seg_b = gf_safetensors_get(e->st, "resnet.seg_1.bias", 1, GF_EMB_DIM);
    ok = ok && e->seg_w && e->seg_b;
    if (!ok || gf_safetensors_unused(e->st) != 0) {
        GF_ERROR("%s: not a WeSpeaker ResNet34 model file", path);
        goto fail;
    }
    e->act_floats = act_max;
    e->col_floats = col_min > (1L << 20) ? col_min : (1L << 20);
    for (int i = 0; i < NCONV; i++)
        if (e->convs[i].wino)
            e->col_floats = gf_winograd_ws_size(e->convs[i].cin, e->convs[i].cout,
                                                e->convs[i].w_in, e->col_floats);
    e->par = gf_par_new(threads);
    e->tws = gf_calloc((size_t)threads, sizeof *e->tws);
    for (int t = 0; t < threads; t++) {
        for (int i = 0; i < 4; i++)
            e->tws[t].act[i] = gf_malloc(sizeof(float) * (size_t)e->act_floats);
        e->tws[t].col = gf_malloc(sizeof(float) * (size_t)e->col_floats);
    }
    e->feats = gf_malloc(sizeof(float) * (size_t)max_batch * CH_OUT * MEL_OUT * (size_t)e->t_out);
    e->wts = gf_malloc(sizeof(float) * (size_t)e->t_out);
    e->stats = gf_malloc(sizeof(float) * STATS);
    return e;
fail:
    gf_embedding_destroy(&e);
    return NULL;
}

void gf_embedding_destroy(gf_embedding **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_embedding *e = *self_p;
    for (int i = 0; i < NCONV; i++) {
        free(e->convs[i].w);
        free(e->convs[i].wino);
        free(e->convs[i].b);
    }
    for (int t = 0; e->par && t < gf_par_threads(e->par); t++) {
        for (int i = 0; i < 4; i++)
            free(e->tws[t].act[i]);
        free(e->tws[t].col);
    }
    free(e->tws);
    gf_par_destroy(&e->par);
    free(e->feats);
    free(e->wts);
    free(e->stats);
    gf_safetensors_destroy(&e->st);
    free(e);
    *self_p = NULL;
}

int gf_embedding_trunk_frames(const gf_embedding *self)
{
    return self->t_out;
}

static void run_conv(const gf_embedding *e, float *col, const conv *c, const float *x,
                     const float *res, int relu, float *out)
{
    if (c->wino) {
        gf_winograd_cpu(x, c->cin, c->h, c->w_in, c->wino, c->b, c->cout, res, relu, out, col,
                        e->col_floats);
        return;
    }
    gf_conv2d_cpu(x, c->cin, c->h, c->w_in, c->w, c->b, c->cout, c->k, c->stride, c->pad, res,
                  relu, out, col, e->col_floats);
}

typedef struct {
    gf_embedding *e;      /* the network */
    const float *fbank;   /* [B, frames, 80] */
} trunk_ctx;

/* The trunk on window b, in worker's workspace, into feats[b]. */
static void trunk_task(void *arg, int worker, int b)
{
    trunk_ctx *r = arg;
    gf_embedding *e = r->e;
    trunk_ws *w = &e->tws[worker];
    const int T = e->frames;
    const long feat = (long)CH_OUT * MEL_OUT * e->t_out;
    const float *f = r->fbank + (long)b * T * GF_EMB_MELS;
    float *in = w->act[3];
    for (int t = 0; t < T; t++)
        for (int m = 0; m < GF_EMB_MELS; m++)
            in[(long)m * T + t] = f[(long)t * GF_EMB_MELS + m];
    float *x = w->act[0], *y = w->act[1], *s = w->act[2], *z = w->act[3];
    run_conv(e, w->col, &e->convs[0], in, NULL, 1, x);
    for (int i = 0; i < 16; i++) {
        const block *bl = &e->blocks[i];
        run_conv(e, w->col, &e->convs[bl->c1], x, NULL, 1, y);
        const float *res = x;
        if (bl->sc >= 0) {
            run_conv(e, w->col, &e->convs[bl->sc], x, NULL, 0, s);
            res = s;
        }
        float *dst = i == 15 ? e->feats + b * feat : z;
        run_conv(e, w->col, &e->convs[bl->c2], y, res, 1, dst);
        float *tmp = x;
        x = z;
        z = tmp;
    }
}

int gf_embedding_trunk(gf_embedding *e, const float *fbank, int B)
{
    if (B < 1 || B > e->max_batch) {
        GF_ERROR("embedding: batch of %d windows (1 to %d)", B, e->max_batch);
        return GF_EINVAL;
    }
    trunk_ctx r = { .e = e, .fbank = fbank };
    gf_par_run(e->par, B, trunk_task, &r);
    e->last_batch = B;
    return 0;
}

int gf_embedding_pool(gf_embedding *e, int b, const float *mask, int mask_frames, float *out)
{
    if (b < 0 || b >= e->last_batch || mask_frames < 1) {
        GF_ERROR("embedding: pool of window %d with a %d-frame mask", b, mask_frames);
        return GF_EINVAL;
    }
    const int T = e->t_out;
    for (int i = 0; i < T; i++)
        e->wts[i] = mask[(long)i * mask_frames / T];
    gf_statspool_cpu(e->feats + (long)b * CH_OUT * MEL_OUT * T, CH_OUT * MEL_OUT, T, e->wts,
                     e->stats);
    gf_linear_cpu(e->stats, 1, STATS, STATS, e->seg_w, e->seg_b, GF_EMB_DIM, 1.0f, out);
    return 0;
}
