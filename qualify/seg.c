/* qualify_seg.c — the segmentation network's candidates for `gpuflock
 * qualify` (see qualify.c): the persistent LSTM kernel (kernels/lstm/lstm.cu) for
 * lstm.stack, the fused SincNet filterbank (kernels/sincnet/sincnet.cu) for
 * sincnet.conv0.abs_pool, the fused 1-D convolution (kernels/segconv/segconv.cu) for
 * segconv.conv1 and conv2, and the head's fused layers (kernels/dense/dense.cu) for
 * dense.linear0, linear1 and classifier: their pins, each run on both routes
 * against float64, and the segmentation network end to end. */
#include "qualify/areas.h"
#include "diar/segmentation.h"
#include "diar/segmentation_gpu.h"
#include "kernels/dense/dense_gpu.h"
#include "kernels/dense/dense_ref.h"
#include "kernels/lstm/lstm_gpu.h"
#include "kernels/lstm/lstm_ref.h"
#include "kernels/segconv/segconv_gpu.h"
#include "kernels/sincnet/sincnet_gpu.h"
#include "kernels/sincnet/sincnet_ref.h"
#include "common/error.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LSTM_T GF_SEG_FRAMES   /* the production sequence length */
#define LSTM_IN GF_SEG_LSTM_IN
#define LSTM_H GF_SEG_LSTM_HIDDEN
#define LSTM_LAYERS GF_SEG_LSTM_LAYERS
#define REF_SEQS 3      /* sequences checked against the float64 reference per batch */

static const gf_pin lstm_pins[] = {
    { "hidden_per_block", "128" },
    { "persistent", "1" },
    { "directions_fused", "1" },
    { "threads", "512" },
};

/* kernels/lstm/lstm.cu on cc >= 9.0, by math mode (kernels/lstm/lstm_gpu.c): fp32 runs
 * v1 as above; tf32 the cluster kernel, a cluster of 8 blocks of 256
 * threads a direction and 8 sequences (32 in the pipeline when its stages
 * overlap: the same kernel on fewer multiprocessors), 16 hidden units a
 * block, the recurrence on the tensor cores, the hidden state exchanged
 * through distributed shared memory. */
static const gf_pin lstm_cluster_pins[] = {
    { "hidden_per_block", "fp32 128, tf32 16" },
    { "persistent", "1" },
    { "directions_fused", "fp32 1, tf32 0" },
    { "cluster", "fp32 1, tf32 8" },
    { "seqs_per_cluster", "fp32 1, tf32 8 (32 beside the trunk)" },
    { "threads", "fp32 512, tf32 256" },
};

/* kernels/sincnet/sincnet.cu, by the kernel the route runs (kernels/sincnet/sincnet_gpu.c).
 * FMA kernel (cc < 9.0): a block of 256 threads owns 256 pooled outputs
 * (7,680 samples) of 16 filters, taps unrolled by 2. DMMA kernel (cc >= 9.0:
 * the sm90 tier): a block of 128 threads owns 64 pooled outputs (1,920
 * samples) of 40 filters, mma.sync m16n8k4 f64 over taps 4 at a time,
 * unrolled by 3 (12 taps). */
static const gf_pin sinc_pins[] = {
    { "filters_per_block", "16" },
    { "samples_per_block", "7680" },
    { "taps_unroll", "2" },
    { "threads", "256" },
};

static const gf_pin sinc_dmma_pins[] = {
    { "filters_per_block", "40" },
    { "samples_per_block", "1920" },
    { "taps_unroll", "12" },
    { "threads", "128" },
};

/* kernels/segconv/segconv.cu: all 60 channels and 192 frames (64 pooled outputs) a
 * block, the 5 taps unrolled, 320 threads. */
static const gf_pin segconv_pins[] = {
    { "channels_per_block", "60" },
    { "frames_per_block", "192" },
    { "k_unroll", "5" },
    { "threads", "320" },
};

/* kernels/dense/dense.cu, the linear layers, by math mode (kernels/dense/dense_gpu.c).
 * fp32: float32 FMAs, a block owns 32 rows (from 8,192 rows on; 16 from
 * 2,048, 8 below: batches 32, 8, 1) x all 128 outputs and walks K 16 at a
 * time through two shared-memory stages. tf32 (cc >= 9.0): mma.sync tf32, a
 * block owns 64 rows (from 8,192 on; 16 below) x all 128 outputs and takes
 * all of K into shared memory at once in two halves. The classifier's block
 * owns 16 rows, 8 lanes a row over its 128 inputs, float32 in both modes.
 * 128 threads. */
static const gf_pin dense_linear_pins[] = {
    { "tile_m", "fp32 32/16/8, tf32 64/16" },
    { "tile_n", "128" },
    { "tile_k", "fp32 16, tf32 all of K" },
    { "stages", "fp32 2, tf32 2 (halves of K)" },
    { "threads", "128" },
};

static const gf_pin dense_classifier_pins[] = {
    { "tile_m", "16" },
    { "tile_n", "7" },
    { "tile_k", "128" },
    { "threads", "128" },
};

/* The segmentation network's candidates, in the report's order. */
size_t gfq_seg_candidates(int cc, gf_candidate *out, size_t cap)
{
    size_t n = 0;
    assert(cap >= 7);   /* lstm, sincnet, 2 segconv, 3 dense */
    if (cc >= 90)
        out[n++] = (gf_candidate){ "lstm", "lstm.stack", lstm_cluster_pins,
                                   GF_ARRAY_LEN(lstm_cluster_pins) };
    else
        out[n++] = (gf_candidate){ "lstm", "lstm.stack", lstm_pins, GF_ARRAY_LEN(lstm_pins) };
    if (cc >= 90)
        out[n++] = (gf_candidate){ "sincnet", "sincnet.conv0.abs_pool", sinc_dmma_pins,
                                   GF_ARRAY_LEN(sinc_dmma_pins) };
    else
        out[n++] = (gf_candidate){ "sincnet", "sincnet.conv0.abs_pool", sinc_pins,
                                   GF_ARRAY_LEN(sinc_pins) };
    out[n++] = (gf_candidate){ "segconv", "segconv.conv1", segconv_pins,
                               GF_ARRAY_LEN(segconv_pins) };
    out[n++] = (gf_candidate){ "segconv", "segconv.conv2", segconv_pins,
                               GF_ARRAY_LEN(segconv_pins) };
    out[n++] = (gf_candidate){ "dense", "dense.linear0", dense_linear_pins,
                               GF_ARRAY_LEN(dense_linear_pins) };
    out[n++] = (gf_candidate){ "dense", "dense.linear1", dense_linear_pins,
                               GF_ARRAY_LEN(dense_linear_pins) };
    out[n++] = (gf_candidate){ "dense", "dense.classifier", dense_classifier_pins,
                               GF_ARRAY_LEN(dense_classifier_pins) };
    return n;
}

/* ---- the LSTM candidate --------------------------------------------------- */

typedef struct {
    gf_lstm_gpu *l;
    gf_math math;
    gf_cu_ptr x;
    int B;
} lstm_subject;

static int lstm_set_route(void *arg, gf_route_kind kind)
{
    lstm_subject *t = arg;
    return gf_lstm_gpu_set_route(t->l, kind, NULL);
}

static int lstm_run(void *arg, gf_devstats *stats)
{
    lstm_subject *t = arg;
    gf_cu_ptr out;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_lstm_gpu_run(t->l, t->math, t->x, t->B, &out);
}

static int lstm_accuracy(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B,
                         gf_math math, const gf_lstm_weights *w, const float *x, gf_lstm_gpu *l,
                         gf_cu_ptr dx, gf_qualify_result *res, uint64_t seed)
{
    const size_t per = (size_t)LSTM_T * 2 * LSTM_H;
    float *got = gf_malloc(sizeof(float) * (size_t)B * per);
    double *ref = gf_malloc(sizeof(double) * per);
    gf_cu_ptr out;
    int rc = gf_lstm_gpu_poison(l);
    if (rc)
        goto out_free;
    rc = gf_lstm_gpu_run(l, math, dx, B, &out);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, out, sizeof(float) * (size_t)B * per);
    if (rc)
        goto out_free;
    /* Tolerances by math mode: fp32 end to end, or tf32 input projections. */
    gfq_acc_errors e = { .atol = math == GF_MATH_TF32 ? 2e-2 : 1e-4,
                     .rtol = math == GF_MATH_TF32 ? 2e-2 : 1e-3 };
    int seqs[REF_SEQS] = { 0, B / 2, B - 1 };
    for (int q = 0; q < REF_SEQS; q++) {
        if (q > 0 && seqs[q] == seqs[q - 1])
            continue;
        int b = seqs[q];
        gf_lstm_ref(w->dirs, LSTM_LAYERS, LSTM_IN, LSTM_H, LSTM_T, x + (size_t)b * LSTM_T * LSTM_IN, ref);
        for (size_t i = 0; i < per; i++) {
            double a = got[(size_t)b * per + i];
            if (!gfq_acc_add(&e, a, ref[i]) && e.mismatches <= 5)
                fprintf(ctx->report, "    mismatch: sequence %d element %zu: %.9g vs %.9g\n",
                        b, i, a, ref[i]);
        }
    }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e,
                        gfq_count_unwritten(got, (size_t)B * per), (size_t)B * per, "elements",
                        "sequences_checked", REF_SEQS);
out_free:
    free(got);
    free(ref);
    return rc;
}

int gfq_lstm(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
             gf_qualify_result *res)
{
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math;
    uint64_t rng = seed;
    gf_lstm_weights w;
    gf_lstm_weights_random(&w, LSTM_LAYERS, LSTM_IN, LSTM_H, &rng);
    float *x = gf_malloc(sizeof(float) * (size_t)B * LSTM_T * LSTM_IN);
    for (size_t i = 0; i < (size_t)B * LSTM_T * LSTM_IN; i++)
        x[i] = gf_rand_sym(&rng, 1.0f);
    gf_cu_ptr dx = 0;
    const char *sha = NULL;
    gf_lstm_gpu *l = gf_lstm_gpu_new(ctx->gpu, ctx->blas, LSTM_LAYERS, LSTM_IN, LSTM_H, w.dirs,
                                     B, LSTM_T);
    int rc = l ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_lstm_gpu_set_route(l, GF_ROUTE_OWN, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(cand->boundary, sha, res);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * (size_t)B * LSTM_T * LSTM_IN, &dx);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dx, x, sizeof(float) * (size_t)B * LSTM_T * LSTM_IN);
    if (rc)
        goto out_free;
    rc = lstm_accuracy(ctx, cand, B, math, &w, x, l, dx, res, seed);
    if (rc)
        goto out_free;
    if (res->accurate) {
        lstm_subject t = { l, math, dx, B };
        gfq_ab_subject sub = { lstm_set_route, lstm_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dx)
        gf_gpu_free(ctx->gpu, dx);
    gf_lstm_gpu_destroy(&l);
    gf_lstm_weights_free(&w);
    free(x);
    return rc;
}

/* ---- the SincNet filterbank candidate -------------------------------------- */

#define SINC_SAMPLES 4096   /* pooled outputs checked against float64 per tuple */

typedef struct {
    gf_sinc_gpu *s;
    gf_cu_ptr wave, out;
    int B;
} sinc_subject;

static int sinc_set_route(void *arg, gf_route_kind kind)
{
    sinc_subject *t = arg;
    return gf_sinc_gpu_set_route(t->s, kind, NULL);
}

static int sinc_run(void *arg, gf_devstats *stats)
{
    sinc_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_sinc_gpu_run(t->s, t->wave, t->B, t->out);
}

/* The filterbank sums in float64 on both routes whatever the math mode, and
 * rounds once to float: the tolerance is a few units in the last place. */
int gfq_sinc(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
             gf_qualify_result *res)
{
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ 0x51ac;
    uint64_t rng = seed;
    const size_t nw = (size_t)B * GF_SINC_SAMPLES;
    const size_t no = (size_t)B * GF_SINC_FILTERS * GF_SINC_POOLED;
    double *filters = gf_malloc(sizeof(double) * GF_SINC_FILTERS * GF_SINC_TAPS);
    float *wave = gf_malloc(sizeof(float) * nw), *got = gf_malloc(sizeof(float) * no);
    for (int i = 0; i < GF_SINC_FILTERS * GF_SINC_TAPS; i++)
        filters[i] = gf_rand_sym(&rng, 0.1f);
    for (size_t i = 0; i < nw; i++)
        wave[i] = gf_rand_sym(&rng, 1.5f);
    gf_cu_ptr dw = 0, dout = 0;
    const char *sha = NULL;
    gf_sinc_gpu *s = gf_sinc_gpu_new(ctx->gpu, ctx->blas, filters, B);
    int rc = s ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_sinc_gpu_set_route(s, GF_ROUTE_OWN, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(cand->boundary, sha, res);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * nw, &dw);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * no, &dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dw, wave, sizeof(float) * nw);
    if (rc)
        goto out_free;
    rc = gf_gpu_fill32(ctx->gpu, dout, 0x7fc00000u, no);   /* NaN poison */
    if (rc)
        goto out_free;
    rc = gf_sinc_gpu_run(s, dw, B, dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, dout, sizeof(float) * no);
    if (rc)
        goto out_free;
    gfq_acc_errors e = { .atol = 1e-9, .rtol = 2.4e-7 };   /* 2 ulp of float */
    for (int k = 0; k < SINC_SAMPLES; k++) {
        size_t o = (size_t)(gf_splitmix64(&rng) % no);
        gfq_acc_add(&e, got[o], gf_sinc_ref(filters, wave, o));
    }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "sampled outputs", "outputs_written_checked", (int64_t)no);
    if (rc)
        goto out_free;
    if (res->accurate) {
        sinc_subject t = { s, dw, dout, B };
        gfq_ab_subject sub = { sinc_set_route, sinc_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dw)
        gf_gpu_free(ctx->gpu, dw);
    if (dout)
        gf_gpu_free(ctx->gpu, dout);
    gf_sinc_gpu_destroy(&s);
    free(filters), free(wave), free(got);
    return rc;
}

/* ---- the segmentation convolution candidates ------------------------------- */

#define SEGCONV_SAMPLES 4096   /* pooled outputs checked against float64 per tuple */

typedef struct {
    gf_segconv_gpu *s;
    gf_math math;
    gf_cu_ptr x, out;
    int B;
} segconv_subject;

static int segconv_set_route(void *arg, gf_route_kind kind)
{
    segconv_subject *t = arg;
    return gf_segconv_gpu_set_route(t->s, kind, NULL);
}

static int segconv_run(void *arg, gf_devstats *stats)
{
    segconv_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_segconv_gpu_run(t->s, t->math, t->x, t->B, t->out);
}

/* The own kernel sums in float32 FMAs in both math modes; the tolerances are
 * the math mode's, as for the ResNet layers (fp32: those of the LSTM). */
int gfq_segconv(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                gf_qualify_result *res)
{
    bool first = strcmp(cand->boundary, "segconv.conv1") == 0;
    const int cin = first ? 80 : 60, tin = first ? 5325 : 1773, C = GF_SEGCONV_COUT;
    const int K = GF_SEGCONV_TAPS, tp = (tin - K + 1) / 3;
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ (first ? 0xc1 : 0xc2);
    uint64_t rng = seed;
    const size_t nx = (size_t)B * cin * tin, no = (size_t)B * C * tp, nw = (size_t)C * cin * K;
    float *x = gf_malloc(sizeof(float) * nx), *w = gf_malloc(sizeof(float) * nw);
    float *bias = gf_malloc(sizeof(float) * C), *got = gf_malloc(sizeof(float) * no);
    for (size_t i = 0; i < nx; i++)
        x[i] = gf_rand_sym(&rng, 1.0f);
    for (size_t i = 0; i < nw; i++)
        w[i] = gf_rand_sym(&rng, 1.0f / sqrtf((float)(cin * K)));
    for (int i = 0; i < C; i++)
        bias[i] = gf_rand_sym(&rng, 0.1f);
    gf_cu_ptr dx = 0, dout = 0;
    const char *sha = NULL;
    gf_segconv_gpu *s = gf_segconv_gpu_new(ctx->gpu, ctx->blas, cand->boundary, cin, tin, w,
                                           bias, B);
    int rc = s ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_segconv_gpu_set_route(s, GF_ROUTE_OWN, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(cand->boundary, sha, res);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * nx, &dx);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * no, &dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dx, x, sizeof(float) * nx);
    if (rc)
        goto out_free;
    rc = gf_gpu_fill32(ctx->gpu, dout, 0x7fc00000u, no);   /* NaN poison */
    if (rc)
        goto out_free;
    rc = gf_segconv_gpu_run(s, math, dx, B, dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, dout, sizeof(float) * no);
    if (rc)
        goto out_free;
    gfq_acc_errors e = gfq_acc_layer(math);
    for (int k = 0; k < SEGCONV_SAMPLES; k++) {
        size_t o = (size_t)(gf_splitmix64(&rng) % no);
        size_t b = o / ((size_t)C * tp), c = (o / tp) % C, p = o % tp;
        double ref = -INFINITY;
        for (int j = 0; j < 3; j++) {
            double acc = 0.0;
            for (int ci = 0; ci < cin; ci++)
                for (int q = 0; q < K; q++)
                    acc += (double)w[(c * cin + ci) * K + q] *
                           x[(b * cin + ci) * tin + 3 * p + j + q];
            ref = fmax(ref, acc);
        }
        gfq_acc_add(&e, got[o], ref + bias[c]);
    }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "sampled outputs", "outputs_written_checked", (int64_t)no);
    if (rc)
        goto out_free;
    if (res->accurate) {
        segconv_subject t = { s, math, dx, dout, B };
        gfq_ab_subject sub = { segconv_set_route, segconv_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dx)
        gf_gpu_free(ctx->gpu, dx);
    if (dout)
        gf_gpu_free(ctx->gpu, dout);
    gf_segconv_gpu_destroy(&s);
    free(x), free(w), free(bias), free(got);
    return rc;
}

/* ---- the segmentation head's candidates ------------------------------------ */

typedef struct {
    gf_dense_gpu *d;
    gf_math math;
    gf_cu_ptr x, out;
    int rows;
} dense_subject;

static int dense_set_route(void *arg, gf_route_kind kind)
{
    dense_subject *t = arg;
    return gf_dense_gpu_set_route(t->d, kind, NULL);
}

static int dense_run(void *arg, gf_devstats *stats)
{
    dense_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_dense_gpu_run(t->d, t->math, t->x, t->rows, t->out);
}

/* One layer of the head over the B·589 frames of a batch, every output
 * against float64. The own kernels sum in float32 FMAs in both math modes;
 * the tolerances are the math mode's, as for the segmentation
 * convolutions. */
int gfq_dense(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
              gf_qualify_result *res)
{
    const bool cls = strcmp(cand->boundary, "dense.classifier") == 0;
    const bool first = strcmp(cand->boundary, "dense.linear0") == 0;
    const int in = first ? 256 : 128, n = cls ? 7 : 128, rows = B * 589;
    const gf_dense_act act = cls ? GF_DENSE_LOG_SOFTMAX : GF_DENSE_LEAKY_RELU;
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ (uint64_t)(0xd0 + in + n);
    uint64_t rng = seed;
    const size_t nx = (size_t)rows * in, no = (size_t)rows * n, nw = (size_t)n * in;
    float *x = gf_malloc(sizeof(float) * nx), *w = gf_malloc(sizeof(float) * nw);
    float *bias = gf_malloc(sizeof(float) * n), *got = gf_malloc(sizeof(float) * no);
    for (size_t i = 0; i < nx; i++)
        x[i] = gf_rand_sym(&rng, 1.0f);
    for (size_t i = 0; i < nw; i++)
        w[i] = gf_rand_sym(&rng, 1.0f / sqrtf((float)in));
    for (int i = 0; i < n; i++)
        bias[i] = gf_rand_sym(&rng, 0.1f);
    gf_cu_ptr dx = 0, dout = 0;
    const char *sha = NULL;
    gf_dense_gpu *d = gf_dense_gpu_new(ctx->gpu, ctx->blas, cand->boundary, in, n, w, bias, act,
                                       rows);
    int rc = d ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_dense_gpu_set_route(d, GF_ROUTE_OWN, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(cand->boundary, sha, res);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * nx, &dx);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * no, &dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dx, x, sizeof(float) * nx);
    if (rc)
        goto out_free;
    rc = gf_gpu_fill32(ctx->gpu, dout, 0x7fc00000u, no);   /* NaN poison */
    if (rc)
        goto out_free;
    rc = gf_dense_gpu_run(d, math, dx, rows, dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, dout, sizeof(float) * no);
    if (rc)
        goto out_free;
    gfq_acc_errors e = gfq_acc_layer(math);
    for (size_t o = 0; o < no; o++) {
        double ref = gf_dense_ref(w, bias, in, n, act, x, o);
        if (!gfq_acc_add(&e, got[o], ref) && e.mismatches <= 5)
            fprintf(ctx->report, "    mismatch: row %zu output %zu: %.9g vs %.9g\n",
                    o / (size_t)n, o % (size_t)n, got[o], ref);
    }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "elements", "rows", rows);
    if (rc)
        goto out_free;
    if (res->accurate) {
        dense_subject t = { d, math, dx, dout, rows };
        gfq_ab_subject sub = { dense_set_route, dense_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dx)
        gf_gpu_free(ctx->gpu, dx);
    if (dout)
        gf_gpu_free(ctx->gpu, dout);
    gf_dense_gpu_destroy(&d);
    free(x), free(w), free(bias), free(got);
    return rc;
}

/* ---- the segmentation network end to end ----------------------------------- */

/* The whole segmentation network, A (boundary own) / B (library) rounds,
 * seconds. */
typedef struct {
    gf_segmentation_gpu *s;
    const char *boundary;
    const float *wave;
    float *logp;
    int B;
} seg_subject;

static int seg_set_route(void *arg, gf_route_kind kind)
{
    seg_subject *t = arg;
    return gf_segmentation_gpu_set_route(t->s, t->boundary, kind);
}

static int seg_run(void *arg, gf_devstats *stats)
{
    seg_subject *t = arg;
    return gf_segmentation_gpu_run(t->s, t->wave, t->B, t->logp, stats);
}

int gfq_e2e_segmentation(const gf_qualify_ctx *ctx, const char *boundary, int B, gf_math math,
                         uint64_t *seed, double *a, double *b)
{
    gf_segmentation_gpu *s = gf_segmentation_gpu_new(ctx->gpu, ctx->blas,
                                                     ctx->segmentation_model, NULL, B, math);
    if (!s)
        return GF_EINVAL;
    /* The LSTM on its own kernel where it loads while another boundary is
     * measured: on the library route its per-step launches vary by more
     * than the filterbank's gain (a batch-32 fp32 network of 58 ms). */
    if (strcmp(boundary, "lstm.stack") != 0 &&
        gf_segmentation_gpu_set_route(s, "lstm.stack", GF_ROUTE_OWN) != 0)
        gf_segmentation_gpu_set_route(s, "lstm.stack", GF_ROUTE_LIBRARY);
    float *wave = gf_malloc(sizeof(float) * (size_t)B * 160000);
    float *logp = gf_malloc(sizeof(float) * (size_t)B * 589 * 7);
    for (size_t i = 0; i < (size_t)B * 160000; i++)
        wave[i] = gf_rand_sym(seed, 0.3f);
    seg_subject t = { s, boundary, wave, logp, B };
    gfq_ab_subject sub = { seg_set_route, seg_run, &t, NULL, NULL };
    int rc = gfq_ab_rounds(ctx, &sub, 1e-9, a, b);   /* s */
    free(wave);
    free(logp);
    gf_segmentation_gpu_destroy(&s);
    return rc;
}
