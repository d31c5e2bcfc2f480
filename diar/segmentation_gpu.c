/* segmentation_gpu.c — segmentation-3.0 forward pass on a CUDA card (see
 * segmentation_gpu.h); the SincNet filterbank (kernels/sincnet/sincnet_gpu.c), the two
 * convolutions (kernels/segconv/segconv_gpu.c), the LSTM stack (kernels/lstm/lstm_gpu.c) and
 * the head's three layers (kernels/dense/dense_gpu.c) each run the route planned for
 * them.
 *
 * Shapes per window: 160000 samples → sinc |conv| [80, 15975] → pool
 * [80, 5325] → conv [60, 5321] → pool [60, 1773] → conv [60, 1769] → pool
 * [60, 589] → LSTM [589, 256] ×4 → linear [589, 128] ×2 → [589, 7]. Each
 * stage is timed by device events into the job's statistics. */
#include "diar/segmentation_gpu.h"
#include "diar/io/safetensors.h"
#include "kernels/dense/dense_gpu.h"
#include "kernels/lstm/lstm_gpu.h"
#include "kernels/segconv/segconv_gpu.h"
#include "kernels/sincnet/sincnet_gpu.h"
#include "diar/segmentation.h"
#include "kernels/sincnet/sincnet_cpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NF 80
#define NP 40
#define KS 251
#define HK 125
#define STRIDE 10
#define C2 GF_SEG_LSTM_IN
#define KC 5
#define H GF_SEG_LSTM_HIDDEN
#define G (4 * H)
#define LAYERS GF_SEG_LSTM_LAYERS
#define L0 128
#define T GF_SEG_FRAMES
#define N_IN GF_SEG_SAMPLES
#define CLASSES GF_SEG_CLASSES
#define T_SINC ((N_IN - KS) / STRIDE + 1)   /* 15975 */
#define T_P1 (T_SINC / 3)                   /* 5325 */
#define T_C2 (T_P1 - KC + 1)                /* 5321 */
#define T_P2 (T_C2 / 3)                     /* 1773 */
/* then 1769 convolved frames, pooled to T (589) */
#define SLOPE 0.01f
#define EPS 1e-5f

typedef struct {
    gf_cu_function wavnorm, instnorm, transpose;
} kernels;

struct gf_segmentation_gpu {
    gf_gpu *gpu;                   /* borrowed */
    gf_blas_gpu *blas;             /* borrowed */
    gf_math math;                  /* float GEMM math mode */
    int max_batch;                 /* workspace capacity */
    kernels k;                     /* glue kernels */
    /* weights on the card */
    gf_cu_ptr wav_w, wav_b, norm_w[3], norm_b[3];
    gf_sinc_gpu *sinc;             /* the filterbank and its routes */
    gf_segconv_gpu *segconv[2];    /* the two convolutions and their routes */
    gf_lstm_gpu *lstm;             /* the LSTM stack and its routes */
    gf_dense_gpu *dense[3];        /* linear0, linear1, classifier and their routes */
    /* workspace */
    gf_cu_ptr wave, wn, p1, p2, p3, x0, lin0, lin1, out;
    gf_cu_ptr lstm_out;            /* the LSTM stack's output [B, T, 2H] */
    gf_gpu_allocs mem;             /* every device allocation, freed on destroy */
};

static int dalloc(gf_segmentation_gpu *s, size_t bytes, gf_cu_ptr *dev)
{
    return gf_gpu_allocs_take(&s->mem, bytes, dev);
}

static int upload(gf_segmentation_gpu *s, const void *host, size_t bytes, gf_cu_ptr *dev)
{
    return gf_gpu_allocs_upload(&s->mem, host, bytes, dev);
}

static int get(gf_safetensors *st, gf_segmentation_gpu *s, gf_cu_ptr *dev, const char *name,
               int d0, int d1, int d2)
{
    const float *w = d2 ? gf_safetensors_get(st, name, 3, d0, d1, d2)
                   : d1 ? gf_safetensors_get(st, name, 2, d0, d1)
                        : gf_safetensors_get(st, name, 1, d0);
    if (!w)
        return GF_EINVAL;
    size_t n = (size_t)d0 * (d1 ? d1 : 1) * (d2 ? d2 : 1);
    return upload(s, w, n * sizeof(float), dev);
}

/* The two convolution stages and the head's three layers, as the loader
 * builds them and the planning step (gf_segmentation_gpu_plan) asks them. */
static const char *const conv_names[2] = { "segconv.conv1", "segconv.conv2" };
static const int conv_cin[2] = { NF, C2 }, conv_tin[2] = { T_P1, T_P2 };
static const struct {
    const char *boundary, *weight, *bias;
    int in, out;
    gf_dense_act act;
} head[3] = {
    { "dense.linear0", "linear.0.weight", "linear.0.bias", 2 * H, L0, GF_DENSE_LEAKY_RELU },
    { "dense.linear1", "linear.1.weight", "linear.1.bias", L0, L0, GF_DENSE_LEAKY_RELU },
    { "dense.classifier", "classifier.weight", "classifier.bias", L0, CLASSES,
      GF_DENSE_LOG_SOFTMAX },
};

static int load_weights(gf_segmentation_gpu *s, gf_safetensors *st)
{
    char name[96];
    /* The wave norm's weights on the card and the filterbank's tensors: any
     * of them missing, or a failed upload of the first two, is GF_EINVAL. */
    bool wav_norm = get(st, s, &s->wav_w, "sincnet.wav_norm1d.weight", 1, 0, 0) == 0 &&
                    get(st, s, &s->wav_b, "sincnet.wav_norm1d.bias", 1, 0, 0) == 0;
    const float *low = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.low_hz_", 2, NP, 1);
    const float *band = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.band_hz_", 2, NP, 1);
    const float *win = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.window_", 1, HK);
    const float *n = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.n_", 2, 1, HK);
    if (!wav_norm || !low || !band || !win || !n)
        return GF_EINVAL;
    float *f = gf_malloc(sizeof(float) * NF * KS);
    double *fd = gf_malloc(sizeof(double) * NF * KS);
    gf_sincfb_build_cpu(low, band, win, n, NP, HK, 16000.0f, f);
    for (int i = 0; i < NF * KS; i++)
        fd[i] = f[i];
    s->sinc = gf_sinc_gpu_new(s->gpu, s->blas, fd, s->max_batch);
    free(f);
    free(fd);
    if (!s->sinc)
        return GF_EDEVICE;
    for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, "sincnet.conv1d.%d.weight", i + 1);
        const float *cw = gf_safetensors_get(st, name, 3, C2, conv_cin[i], KC);
        snprintf(name, sizeof name, "sincnet.conv1d.%d.bias", i + 1);
        const float *cb = gf_safetensors_get(st, name, 1, C2);
        if (!cw || !cb)
            return GF_EINVAL;
        if (!(s->segconv[i] = gf_segconv_gpu_new(s->gpu, s->blas, conv_names[i], conv_cin[i],
                                                 conv_tin[i], cw, cb, s->max_batch)))
            return GF_EDEVICE;
    }
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "sincnet.norm1d.%d.weight", i);
        GF_TRY(get(st, s, &s->norm_w[i], name, i ? C2 : NF, 0, 0));
        snprintf(name, sizeof name, "sincnet.norm1d.%d.bias", i);
        GF_TRY(get(st, s, &s->norm_b[i], name, i ? C2 : NF, 0, 0));
    }
    gf_lstm_gpu_dir w[LAYERS][2];
    for (int l = 0; l < LAYERS; l++)
        for (int d = 0; d < 2; d++) {
            const char *sfx = d ? "_reverse" : "";
            int in = l ? 2 * H : C2;
            snprintf(name, sizeof name, "lstm.weight_ih_l%d%s", l, sfx);
            w[l][d].w_ih = gf_safetensors_get(st, name, 2, G, in);
            snprintf(name, sizeof name, "lstm.weight_hh_l%d%s", l, sfx);
            w[l][d].w_hh = gf_safetensors_get(st, name, 2, G, H);
            snprintf(name, sizeof name, "lstm.bias_ih_l%d%s", l, sfx);
            w[l][d].b_ih = gf_safetensors_get(st, name, 1, G);
            snprintf(name, sizeof name, "lstm.bias_hh_l%d%s", l, sfx);
            w[l][d].b_hh = gf_safetensors_get(st, name, 1, G);
            if (!w[l][d].w_ih || !w[l][d].w_hh || !w[l][d].b_ih || !w[l][d].b_hh)
                return GF_EINVAL;
        }
    s->lstm = gf_lstm_gpu_new(s->gpu, s->blas, LAYERS, C2, H, w, s->max_batch, T);
    if (!s->lstm)
        return GF_EDEVICE;
    for (int i = 0; i < 3; i++) {
        const float *lw = gf_safetensors_get(st, head[i].weight, 2, head[i].out, head[i].in);
        const float *lb = gf_safetensors_get(st, head[i].bias, 1, head[i].out);
        if (!lw || !lb)
            return GF_EINVAL;
        if (!(s->dense[i] = gf_dense_gpu_new(s->gpu, s->blas, head[i].boundary, head[i].in,
                                             head[i].out, lw, lb, head[i].act,
                                             s->max_batch * T)))
            return GF_EDEVICE;
    }
    if (gf_safetensors_unused(st) != 0)
        return GF_EINVAL;
    return 0;
}

static int load_kernels(gf_segmentation_gpu *s)
{
    static const char *const names[] = { "gf_wavnorm", "gf_instnorm_lrelu", "gf_transpose_ct" };
    gf_cu_function *const fns[] = { &s->k.wavnorm, &s->k.instnorm, &s->k.transpose };
    return gf_gpu_functions(s->gpu, "glue", names, fns, GF_ARRAY_LEN(names));
}

static int alloc_workspace(gf_segmentation_gpu *s)
{
    const size_t B = (size_t)s->max_batch, f = sizeof(float);
    struct { gf_cu_ptr *p; size_t bytes; } list[] = {
        { &s->wave, B * N_IN * f },          { &s->wn, B * N_IN * f },
        { &s->p1, B * NF * T_P1 * f },       { &s->p2, B * C2 * T_P2 * f },
        { &s->p3, B * C2 * T * f },
        { &s->x0, B * T * C2 * f },          { &s->lin0, B * T * L0 * f },
        { &s->lin1, B * T * L0 * f },        { &s->out, B * T * CLASSES * f },
    };
    for (size_t i = 0; i < GF_ARRAY_LEN(list); i++) {
        int rc = dalloc(s, list[i].bytes, list[i].p);
        if (rc)
            return rc;
    }
    return 0;
}

gf_segmentation_gpu *gf_segmentation_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *path,
                                             const char *sha256_hex, int max_batch, gf_math math)
{
    assert(max_batch >= 1);
    gf_segmentation_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    s->math = math;
    s->max_batch = max_batch;
    s->mem.gpu = gpu;
    gf_safetensors *st = gf_safetensors_open(path, sha256_hex);
    int rc = st ? load_weights(s, st) : GF_EINVAL;
    if (rc == GF_EINVAL && st)
        GF_ERROR("%s: not a segmentation-3.0 model file", path);
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
    gf_segmentation_gpu_destroy(&s);
    return NULL;
}

void gf_segmentation_gpu_destroy(gf_segmentation_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_segmentation_gpu *s = *self_p;
    gf_sinc_gpu_destroy(&s->sinc);
    gf_segconv_gpu_destroy(&s->segconv[0]);
    gf_segconv_gpu_destroy(&s->segconv[1]);
    gf_lstm_gpu_destroy(&s->lstm);
    for (int i = 0; i < 3; i++)
        gf_dense_gpu_destroy(&s->dense[i]);
    gf_gpu_allocs_release(&s->mem);
    free(s);
    *self_p = NULL;
}


static int launch1d(gf_segmentation_gpu *s, gf_cu_function f, long n, void **params)
{
    return gf_gpu_launch1d(s->gpu, f, n, params);
}

/* A 1-D convolution stage: convolution and bias + max-pool 3 on its route,
 * then instance norm + leaky ReLU in place. */
static int conv_stage(gf_segmentation_gpu *s, int B, gf_cu_ptr in, int idx, gf_cu_ptr pool_out)
{
    GF_TRY(gf_segconv_gpu_run(s->segconv[idx], s->math, in, B, pool_out));
    int rows = B * C2, tp = gf_segconv_gpu_pooled(s->segconv[idx]), c2 = C2;
    float eps = EPS, slope = SLOPE;
    void *p_norm[] = { &pool_out, &tp, &c2, &s->norm_w[idx + 1], &s->norm_b[idx + 1], &eps,
                       &slope };
    return gf_gpu_launch(s->gpu, s->k.instnorm, (unsigned)rows, 1, 1, 256, 1, 1, 0, p_norm);
}

static int sincnet(gf_segmentation_gpu *s, int B)
{
    int n = N_IN;
    float eps = EPS, slope = SLOPE;
    void *p_wn[] = { &s->wave, &s->wn, &n, &s->wav_w, &s->wav_b, &eps };
    GF_TRY(gf_gpu_launch(s->gpu, s->k.wavnorm, (unsigned)B, 1, 1, 512, 1, 1, 0, p_wn));
    GF_TRY(gf_sinc_gpu_run(s->sinc, s->wn, B, s->p1));
    int rows = B * NF, tp1 = T_P1, nf = NF;
    void *p_norm[] = { &s->p1, &tp1, &nf, &s->norm_w[0], &s->norm_b[0], &eps, &slope };
    return gf_gpu_launch(s->gpu, s->k.instnorm, (unsigned)rows, 1, 1, 256, 1, 1, 0, p_norm);
}

static int lstm_stack(gf_segmentation_gpu *s, int B)
{
    int c2 = C2, t = T;
    void *p_tr[] = { &s->p3, &B, &c2, &t, &s->x0 };
    GF_TRY(launch1d(s, s->k.transpose, (long)B * C2 * T, p_tr));
    return gf_lstm_gpu_run(s->lstm, s->math, s->x0, B, &s->lstm_out);
}

/* The head's layers in network order, as the boundaries name them. */
static const char *const dense_names[3] = { "dense.linear0", "dense.linear1",
                                            "dense.classifier" };

/* The boundaries with two routes, and how each is switched. */
static int route_of(void *obj, const char *boundary, gf_route_kind kind, const char **sha)
{
    gf_segmentation_gpu *s = obj;
    for (int i = 0; i < 3; i++)
        if (strcmp(boundary, dense_names[i]) == 0)
            return gf_dense_gpu_set_route(s->dense[i], kind, sha);
    if (strcmp(boundary, "lstm.stack") == 0)
        return gf_lstm_gpu_set_route(s->lstm, kind, sha);
    if (strcmp(boundary, "sincnet.conv0.abs_pool") == 0)
        return gf_sinc_gpu_set_route(s->sinc, kind, sha);
    if (strcmp(boundary, "segconv.conv1") == 0)
        return gf_segconv_gpu_set_route(s->segconv[0], kind, sha);
    if (strcmp(boundary, "segconv.conv2") == 0)
        return gf_segconv_gpu_set_route(s->segconv[1], kind, sha);
    return GF_ENOENT;
}

int gf_segmentation_gpu_switch(void *self, const char *boundary, gf_route_kind kind,
                               const char **module_sha256)
{
    return route_of(self, boundary, kind, module_sha256);
}

int gf_segmentation_gpu_plan(const gf_route_request *req, const gf_card_identity *card,
                             char *why, size_t len)
{
    const char *b = req->boundary;
    const int optin = card->smem_optin;
    if (strcmp(b, "sincnet.conv0.abs_pool") == 0)
        return gf_sinc_gpu_plan(optin, req->area, why, len);
    for (int i = 0; i < 2; i++)
        if (strcmp(b, conv_names[i]) == 0)
            return gf_segconv_gpu_plan(conv_cin[i], optin, b, req->area, why, len);
    if (strcmp(b, "lstm.stack") == 0)
        return gf_lstm_gpu_plan(H, optin, req->area, why, len);
    for (int i = 0; i < 3; i++)
        if (strcmp(b, head[i].boundary) == 0)
            return gf_dense_gpu_plan(head[i].in, head[i].out, head[i].act, b, req->area, why,
                                     len);
    return GF_ENOENT;
}

void gf_segmentation_gpu_share_card(gf_segmentation_gpu *s, bool shared)
{
    gf_lstm_gpu_set_narrow(s->lstm, shared);
}

int gf_segmentation_gpu_set_route(gf_segmentation_gpu *s, const char *boundary,
                                  gf_route_kind kind)
{
    return route_of(s, boundary, kind, NULL);
}

int gf_segmentation_gpu_apply_plan(gf_segmentation_gpu *s, gf_route_plan *plan, int batch,
                                   gf_math math)
{
    static const char *const boundaries[] = { "sincnet.conv0.abs_pool", "segconv.conv1",
                                               "segconv.conv2", "lstm.stack", "dense.linear0",
                                               "dense.linear1", "dense.classifier" };
    return gf_route_plan_apply(plan, batch, math, boundaries, GF_ARRAY_LEN(boundaries), route_of,
                               s, NULL);
}

gf_cu_ptr gf_segmentation_gpu_input(const gf_segmentation_gpu *s)
{
    return s->wave;
}

int gf_segmentation_gpu_run(gf_segmentation_gpu *s, const float *wave, int B, float *logp,
                            gf_devstats *stats)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("segmentation (gpu): batch of %d windows, capacity %d", B, s->max_batch);
        return GF_EINVAL;
    }
    GF_TRY(gf_gpu_upload(s->gpu, s->wave, wave, (size_t)B * N_IN * sizeof(float)));
    return gf_segmentation_gpu_run_dev(s, B, logp, stats);
}

int gf_segmentation_gpu_run_dev(gf_segmentation_gpu *s, int B, float *logp, gf_devstats *stats)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("segmentation (gpu): batch of %d windows, capacity %d", B, s->max_batch);
        return GF_EINVAL;
    }
    GF_GPU_STAGE(s->gpu, stats, "sincnet.conv0.abs_pool",
                 gf_route_kind_name(gf_sinc_gpu_route(s->sinc)), sincnet(s, B));
    GF_GPU_STAGE(s->gpu, stats, "segconv.conv1",
                 gf_route_kind_name(gf_segconv_gpu_route(s->segconv[0])),
                 conv_stage(s, B, s->p1, 0, s->p2));
    GF_GPU_STAGE(s->gpu, stats, "segconv.conv2",
                 gf_route_kind_name(gf_segconv_gpu_route(s->segconv[1])),
                 conv_stage(s, B, s->p2, 1, s->p3));
    GF_GPU_STAGE(s->gpu, stats, "lstm.stack", gf_route_kind_name(gf_lstm_gpu_route(s->lstm)),
                 lstm_stack(s, B));
    /* The head, a layer a stage: LSTM output → lin0 → lin1 → log-probabilities. */
    const gf_cu_ptr head_in[3] = { s->lstm_out, s->lin0, s->lin1 };
    const gf_cu_ptr head_out[3] = { s->lin0, s->lin1, s->out };
    for (int i = 0; i < 3; i++)
        GF_GPU_STAGE(s->gpu, stats, dense_names[i],
                     gf_route_kind_name(gf_dense_gpu_route(s->dense[i])),
                     gf_dense_gpu_run(s->dense[i], s->math, head_in[i], B * T, head_out[i]));
    GF_TRY(gf_gpu_download(s->gpu, logp, s->out, (size_t)B * T * CLASSES * sizeof(float)));
    if (stats)
        gf_gpu_timing_collect(s->gpu, stats);
    return 0;
}
