/* emb.c — the embedding network's candidates for `gpuflock qualify` (see
 * qualify.c): the fbank's FFT and mel kernels (kernels/fbank/fbank.cu) for
 * fbank.dft and fbank.mel, the statistics pooling (kernels/pooling/pooling.cu)
 * for pooling.stats and the split-K layer (kernels/embedding/embedding.cu)
 * for embedding.seg_1 — their pins, each run on both routes against float64
 * — the candidates' list (the ResNet trunk's layers come from resnet.c), and
 * the embedding network end to end (from the waveform for the fbank). */
#include "qualify/areas.h"
#include "kernels/resnet/resnet_gpu.h"
#include "kernels/pooling/pooling_gpu.h"
#include "kernels/pooling/pooling_ref.h"
#include "kernels/embedding/seg1_gpu.h"
#include "kernels/embedding/seg1_ref.h"
#include "diar/embedding_gpu.h"
#include "kernels/fbank/fbank_gpu.h"
#include "kernels/fbank/fbank_ref.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* kernels/fbank/fbank.cu: the FFT takes one warp a frame, 16 frames a block of 256
 * threads (radix 8, 8, 4 over 256 complex points); the mel kernel 16 frames
 * a block of 256 threads, each bin's nonzero weights only. */
static const gf_pin fbank_dft_pins[] = {
    { "frames_per_block", "16" },
    { "dft_tile", "fft256c-r884" },
    { "threads", "256" },
};

static const gf_pin fbank_mel_pins[] = {
    { "frames_per_block", "16" },
    { "mel_tile", "sparse" },
    { "threads", "256" },
};

/* kernels/pooling/pooling.cu: the 125 frames of 32 rows a block, 128 threads. */
static const gf_pin pool_pins[] = {
    { "frames_per_block", "125" },
    { "channels_per_block", "32" },
    { "threads", "128" },
};

/* kernels/embedding/embedding.cu, by the kernel each math mode runs
 * (kernels/embedding/seg1_gpu.c). Below cc 9.0 both modes run gf_seg1_splitk: float32
 * FMAs, 64 outputs of 32 rows a block, 128 threads, k split so that the grid
 * is at most 256 blocks (32 slices up to 64 rows, 20 at 96), the slices
 * summed by the last block of a tile. On cc >= 9.0 tf32 runs
 * gf_seg1_cluster_tf32: mma.sync tf32, a cluster of 8 blocks of 128 threads
 * owns 32 rows x 32 outputs, block r slice r of k (640 k), the 8 slices
 * summed through distributed shared memory (gfq_seg1 refuses a card that
 * cannot place the cluster, where gf_seg1_splitk_tf32 would run instead). */
static const gf_pin seg1_pins[] = {
    { "tile_n", "64" },
    { "split_k", "auto (32/20/...)" },
    { "threads", "128" },
};

static const gf_pin seg1_cluster_pins[] = {
    { "tile_n", "fp32 64, tf32 32" },
    { "split_k", "fp32 auto (32/20/...), tf32 8 (a cluster, summed in shared memory)" },
    { "threads", "128" },
};

/* The embedding network's candidates, in the report's order: the fbank, the
 * ResNet trunk's layers in network order, the pooling and seg_1. */
size_t gfq_emb_candidates(int cc, gfq_trunk *t, gf_candidate *out, size_t cap)
{
    gfq_trunk_build(cc, t);
    size_t n = 0;
    assert(cap >= 4 + 2 * t->n);
    out[n++] = (gf_candidate){ "fbank", "fbank.dft", fbank_dft_pins,
                               GF_ARRAY_LEN(fbank_dft_pins) };
    out[n++] = (gf_candidate){ "fbank", "fbank.mel", fbank_mel_pins,
                               GF_ARRAY_LEN(fbank_mel_pins) };
    for (size_t i = 0; i < t->n; i++)
        out[n++] = (gf_candidate){ "resnet", t->layers[i].boundary, t->layers[i].config.pins,
                                   RESNET_PINS };
    for (size_t i = 0; i < t->n; i++)   /* math mode fp32: kernels/resnet/resnet32.cu */
        if (t->layers[i].has32)
            out[n++] = (gf_candidate){ "resnet32", t->layers[i].boundary,
                                       t->layers[i].config32.pins, RESNET_PINS };
    out[n++] = (gf_candidate){ "pooling", "pooling.stats", pool_pins, GF_ARRAY_LEN(pool_pins) };
    _Static_assert(GF_ARRAY_LEN(seg1_pins) == GF_ARRAY_LEN(seg1_cluster_pins), "same keys");
    out[n++] = (gf_candidate){ "embedding", "embedding.seg_1",
                               cc >= 90 ? seg1_cluster_pins : seg1_pins, GF_ARRAY_LEN(seg1_pins) };
    return n;
}

/* The embedding network end to end with `boundary` own (A) or library (B):
 * 3 pooling jobs a window, as the pipeline runs it. */
typedef struct {
    gf_embedding_gpu *e;
    const char *boundary;
    const float *feats, *masks;
    const int *job_window;
    float *emb;
    int B;
} emb_subject;

static int emb_set_route(void *arg, gf_route_kind kind)
{
    emb_subject *t = arg;
    return gf_embedding_gpu_set_route(t->e, t->boundary, kind);
}

static int emb_run(void *arg, gf_devstats *stats)
{
    emb_subject *t = arg;
    return gf_embedding_gpu_run(t->e, t->feats, t->B, t->job_window, t->masks, 3 * t->B, t->emb,
                                stats);
}

/* *own_trunk: whether the trunk ran on its own kernel (for a candidate
 * other than a ResNet layer, where it loads, as the LSTM for the
 * segmentation's: on the library route the trunk's time varies by more than
 * the pooling's gain). */
int gfq_e2e_embedding(const gf_qualify_ctx *ctx, const char *boundary, int B, gf_math math,
                      uint64_t *seed, double *a, double *b, bool *own_trunk)
{
    gf_embedding_gpu *e = gf_embedding_gpu_new(ctx->gpu, ctx->blas, ctx->embedding_model, NULL,
                                               B, math);
    if (!e)
        return GF_EINVAL;
    *own_trunk = false;
    if (strncmp(boundary, "resnet.", 7) != 0 && math == GF_MATH_TF32) {
        *own_trunk = gf_embedding_gpu_set_route(e, "resnet", GF_ROUTE_OWN) == 0;
        if (!*own_trunk)
            gf_embedding_gpu_set_route(e, "resnet", GF_ROUTE_LIBRARY);
    }
    const int jobs = 3 * B;
    size_t nf = (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS, nm = (size_t)jobs * GF_EMB_MASK;
    float *feats = gf_malloc(sizeof(float) * nf), *masks = gf_malloc(sizeof(float) * nm);
    float *emb = gf_malloc(sizeof(float) * GF_EMB_DIM * (size_t)jobs);
    int *jw = gf_malloc(sizeof(int) * (size_t)jobs);
    for (size_t i = 0; i < nf; i++)
        feats[i] = gf_rand_sym(seed, 1.0f);
    for (size_t i = 0; i < nm; i++)
        masks[i] = 0.5f + gf_rand_sym(seed, 0.5f);
    for (int j = 0; j < jobs; j++)
        jw[j] = j / 3;
    emb_subject t = { e, boundary, feats, masks, jw, emb, B };
    gfq_ab_subject sub = { emb_set_route, emb_run, &t, NULL, NULL };
    int rc = gfq_ab_rounds(ctx, &sub, 1e-9, a, b);   /* s */
    free(feats);
    free(masks);
    free(emb);
    free(jw);
    gf_embedding_gpu_destroy(&e);
    return rc;
}

/* ---- the fbank candidates ------------------------------------------------- */

#define FBANK_REF_WINDOWS 3   /* windows checked whole against float64 per tuple */
/* Tolerance of a feature: FBANK_ATOL + FBANK_RTOL x its conditioning
 * (gf_fbank_gpu_ref): float32 rounding in a power spectrum is relative to the
 * frame's whole power, and the log divides it by the mel bin's energy. */
#define FBANK_ATOL 1e-4
#define FBANK_RTOL 1e-9

/* Speech-like windows: two tones at a random level, with noise. */
static void fbank_wave(float *wave, int B, uint64_t *rng)
{
    for (int b = 0; b < B; b++) {
        double f1 = 100 + 150 * (1 + gf_rand_sym(rng, 1));
        double f2 = 500 + 1000 * (1 + gf_rand_sym(rng, 1));
        double amp = 0.05 + 0.15 * (1 + gf_rand_sym(rng, 1));
        for (int i = 0; i < GF_FBANK_GPU_SAMPLES; i++) {
            double t = i / 16000.0;
            wave[(size_t)b * GF_FBANK_GPU_SAMPLES + i] =
                (float)(amp * (sin(2 * M_PI * f1 * t) + 0.5 * sin(2 * M_PI * f2 * t)) +
                        gf_rand_sym(rng, 0.01f));
        }
    }
}

/* One boundary alone, timed. */
typedef struct {
    gf_fbank_gpu *f;
    const char *boundary;
    gf_cu_ptr wave;
    int B;
} fbank_subject;

static int fbank_set_route(void *arg, gf_route_kind kind)
{
    fbank_subject *t = arg;
    return gf_fbank_gpu_set_route(t->f, t->boundary, kind, NULL);
}

static int fbank_run(void *arg, gf_devstats *stats)
{
    fbank_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_fbank_gpu_stage(t->f, t->boundary, t->wave, t->B);
}

/* The fbank and the embedding network from the waveform, with `boundary`
 * own (A) or library (B); the other fbank boundary on the library route. */
typedef struct {
    gf_fbank_gpu *f;
    gf_embedding_gpu *e;
    const char *boundary;
    gf_cu_ptr wave;
    const float *masks;
    float *emb;
    int B;
} fbank_e2e_subject;

static int fbank_e2e_set_route(void *arg, gf_route_kind kind)
{
    fbank_e2e_subject *t = arg;
    return gf_fbank_gpu_set_route(t->f, t->boundary, kind, NULL);
}

static int fbank_e2e_run(void *arg, gf_devstats *stats)
{
    fbank_e2e_subject *t = arg;
    int jw[1] = { 0 };
    GF_TRY(gf_fbank_gpu_run_dev(t->f, t->wave, t->B, NULL, stats));
    return gf_embedding_gpu_run_dev(t->e, gf_fbank_gpu_features(t->f), t->B, jw, t->masks, 1,
                                    t->emb, stats);
}

int gfq_e2e_fbank(const gf_qualify_ctx *ctx, const char *boundary, int B, gf_math math,
                  uint64_t *seed, double *a, double *b)
{
    gf_embedding_gpu *e = gf_embedding_gpu_new(ctx->gpu, ctx->blas, ctx->embedding_model, NULL,
                                               B, math);
    gf_fbank_gpu *f = e ? gf_fbank_gpu_new(ctx->gpu, ctx->blas, B) : NULL;
    const size_t nw = (size_t)B * GF_FBANK_GPU_SAMPLES;
    float *wave = gf_malloc(sizeof(float) * nw), *masks = gf_malloc(sizeof(float) * 589);
    float *emb = gf_malloc(sizeof(float) * GF_EMB_DIM);
    gf_cu_ptr dw = 0;
    fbank_wave(wave, B, seed);
    for (int t = 0; t < 589; t++)
        masks[t] = (t / 40) % 2 ? 1.0f : 0.0f;
    int rc = e && f ? 0 : GF_EINVAL;
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * nw, &dw);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dw, wave, sizeof(float) * nw);
    if (rc)
        goto out_free;
    fbank_e2e_subject t = { f, e, boundary, dw, masks, emb, B };
    gfq_ab_subject sub = { fbank_e2e_set_route, fbank_e2e_run, &t, NULL, NULL };
    rc = gfq_ab_rounds(ctx, &sub, 1e-9, a, b);   /* s */
out_free:
    if (dw)
        gf_gpu_free(ctx->gpu, dw);
    free(wave), free(masks), free(emb);
    gf_fbank_gpu_destroy(&f);
    gf_embedding_gpu_destroy(&e);
    return rc;
}

/* The candidate on its own route and the other fbank boundary on the
 * library route, from a fresh waveform to the features the network reads;
 * whole windows against the float64 definition (gf_fbank_gpu_ref), every
 * output, the tolerance scaled by each output's conditioning. The routes
 * compute in float32 in every math mode. */
int gfq_fbank(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
              gf_qualify_result *res)
{
    const bool dft = strcmp(cand->boundary, "fbank.dft") == 0;
    const char *other = dft ? "fbank.mel" : "fbank.dft";
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ (dft ? 0xfd : 0xfe);
    uint64_t rng = seed;
    const size_t per = (size_t)GF_FBANK_GPU_FRAMES * GF_EMB_MELS;
    const size_t nw = (size_t)B * GF_FBANK_GPU_SAMPLES, no = (size_t)B * per;
    float *wave = gf_malloc(sizeof(float) * nw), *got = gf_malloc(sizeof(float) * no);
    double *ref = gf_malloc(sizeof(double) * per), *cond = gf_malloc(sizeof(double) * per);
    fbank_wave(wave, B, &rng);
    gf_cu_ptr dw = 0;
    const char *sha = NULL;
    gf_fbank_gpu *f = gf_fbank_gpu_new(ctx->gpu, ctx->blas, B);
    int rc = f ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_fbank_gpu_set_route(f, cand->boundary, GF_ROUTE_OWN, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(cand->boundary, sha, res);
    if (rc)
        goto out_free;
    rc = gf_fbank_gpu_set_route(f, other, GF_ROUTE_LIBRARY, NULL);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * nw, &dw);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dw, wave, sizeof(float) * nw);
    if (rc)
        goto out_free;
    rc = gf_gpu_fill32(ctx->gpu, gf_fbank_gpu_features(f), 0x7fc00000u, no);
    if (rc)
        goto out_free;
    rc = gf_fbank_gpu_run_dev(f, dw, B, got, NULL);
    if (rc)
        goto out_free;
    gfq_acc_errors e = { .atol = FBANK_ATOL, .rtol = FBANK_RTOL };
    int wins[FBANK_REF_WINDOWS] = { 0, B / 2, B - 1 }, checked = 0;
    long loose = 0;
    for (int q = 0; q < FBANK_REF_WINDOWS; q++) {
        if (q > 0 && wins[q] == wins[q - 1])
            continue;
        const int b = wins[q];
        checked++;
        gf_fbank_gpu_ref(wave + (size_t)b * GF_FBANK_GPU_SAMPLES, ref, cond);
        for (size_t i = 0; i < per; i++) {
            double lim = FBANK_ATOL + FBANK_RTOL * cond[i], a = got[(size_t)b * per + i];
            loose += lim > 1e-2;
            if (!gfq_acc_add_within(&e, a, ref[i], lim) && e.mismatches <= 5)
                fprintf(ctx->report, "    mismatch: window %d frame %zu bin %zu: %.7g vs "
                        "%.7g (allowed %.3g)\n", b, i / GF_EMB_MELS, i % GF_EMB_MELS, a,
                        ref[i], lim);
        }
    }
    fprintf(ctx->report, "  accuracy: tolerance %g + %g x conditioning; %ld of %ld outputs "
            "ill-conditioned (allowed > 0.01)\n", FBANK_ATOL, FBANK_RTOL, loose,
            (long)(checked * per));
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "elements", "windows_checked", checked);
    if (rc)
        goto out_free;
    if (res->accurate) {
        fbank_subject t = { f, cand->boundary, dw, B };
        gfq_ab_subject sub = { fbank_set_route, fbank_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dw)
        gf_gpu_free(ctx->gpu, dw);
    gf_fbank_gpu_destroy(&f);
    free(wave), free(got), free(ref), free(cond);
    return rc;
}

/* ---- the statistics pooling candidate --------------------------------------- */

typedef struct {
    gf_pool_gpu *p;
    gf_cu_ptr x, out;
} pool_subject;

static int pool_set_route(void *arg, gf_route_kind kind)
{
    pool_subject *t = arg;
    return gf_pool_gpu_set_route(t->p, kind, NULL);
}

static int pool_run(void *arg, gf_devstats *stats)
{
    pool_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_pool_gpu_run(t->p, t->x, t->out);
}

/* Both routes sum in float64 whatever the math mode and round once to float:
 * the tolerance is a few units in the last place, on every output of 3 jobs
 * a window (jobs interleaved across the windows, as the own kernel's index
 * must sort them) with random weights in (0, 1). */
int gfq_pool(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
             gf_qualify_result *res)
{
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ 0x9001;
    uint64_t rng = seed;
    const int jobs = 3 * B;
    const size_t per = (size_t)GF_POOL_ROWS * GF_POOL_T, nx = (size_t)B * per;
    const size_t no = (size_t)jobs * GF_POOL_OUT;
    float *x = gf_malloc(sizeof(float) * nx), *w = gf_malloc(sizeof(float) * GF_POOL_T * jobs);
    float *got = gf_malloc(sizeof(float) * no);
    int *jw = gf_malloc(sizeof(int) * (size_t)jobs);
    for (size_t i = 0; i < nx; i++)
        x[i] = 0.5f + gf_rand_sym(&rng, 1.0f);
    for (int i = 0; i < GF_POOL_T * jobs; i++)
        w[i] = 0.5f + gf_rand_sym(&rng, 0.5f);
    for (int j = 0; j < jobs; j++)
        jw[j] = j % B;
    gf_cu_ptr dx = 0, dout = 0;
    const char *sha = NULL;
    gf_pool_gpu *p = gf_pool_gpu_new(ctx->gpu, B, jobs);
    int rc = p ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_pool_gpu_set_route(p, GF_ROUTE_OWN, &sha);
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
    rc = gf_pool_gpu_jobs(p, B, jw, w, jobs);
    if (rc)
        goto out_free;
    rc = gf_gpu_fill32(ctx->gpu, dout, 0x7fc00000u, no);   /* NaN poison */
    if (rc)
        goto out_free;
    rc = gf_pool_gpu_run(p, dx, dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, dout, sizeof(float) * no);
    if (rc)
        goto out_free;
    gfq_acc_errors e = { .atol = 1e-9, .rtol = 2.4e-7 };   /* 2 ulp of float */
    for (int j = 0; j < jobs; j++)
        for (int o = 0; o < GF_POOL_OUT; o++) {
            double ref = gf_pool_ref(x + (size_t)jw[j] * per, w + (size_t)j * GF_POOL_T, o);
            float g = got[(size_t)j * GF_POOL_OUT + o];
            if (!gfq_acc_add(&e, g, ref) && e.mismatches <= 5)
                fprintf(ctx->report, "    mismatch: job %d output %d: %.9g vs %.9g\n", j, o, g,
                        ref);
        }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "elements", "jobs_checked", jobs);
    if (rc)
        goto out_free;
    if (res->accurate) {
        pool_subject t = { p, dx, dout };
        gfq_ab_subject sub = { pool_set_route, pool_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dx)
        gf_gpu_free(ctx->gpu, dx);
    if (dout)
        gf_gpu_free(ctx->gpu, dout);
    gf_pool_gpu_destroy(&p);
    free(x), free(w), free(got), free(jw);
    return rc;
}

/* ---- the seg_1 candidate ------------------------------------------------------ */

typedef struct {
    gf_seg1_gpu *s;
    gf_math math;
    gf_cu_ptr pooled, emb;
    int jobs;
} seg1_subject;

static int seg1_set_route(void *arg, gf_route_kind kind)
{
    seg1_subject *t = arg;
    return gf_seg1_gpu_set_route(t->s, kind, NULL);
}

static int seg1_run(void *arg, gf_devstats *stats)
{
    seg1_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_seg1_gpu_run(t->s, t->math, t->pooled, t->jobs, t->emb);
}

/* The own kernel the pins describe (gf_seg1_splitk, or in tf32 on cc >= 9.0
 * gf_seg1_cluster_tf32); the tolerances are the math mode's, as for the
 * segmentation convolutions; every output of 3 jobs a window. */
int gfq_seg1(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
             gf_qualify_result *res)
{
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ 0x5e91;
    uint64_t rng = seed;
    const int jobs = 3 * B;
    const size_t nw = (size_t)GF_SEG1_OUT * GF_SEG1_IN, np = (size_t)jobs * GF_SEG1_IN;
    const size_t no = (size_t)jobs * GF_SEG1_OUT;
    float *w = gf_malloc(sizeof(float) * nw), *bias = gf_malloc(sizeof(float) * GF_SEG1_OUT);
    float *pooled = gf_malloc(sizeof(float) * np), *got = gf_malloc(sizeof(float) * no);
    for (size_t i = 0; i < nw; i++)
        w[i] = gf_rand_sym(&rng, 1.0f / sqrtf((float)GF_SEG1_IN));
    for (int i = 0; i < GF_SEG1_OUT; i++)
        bias[i] = gf_rand_sym(&rng, 0.1f);
    for (size_t i = 0; i < np; i++)
        pooled[i] = gf_rand_sym(&rng, 1.0f);
    gf_cu_ptr dp = 0, dout = 0;
    const char *sha = NULL;
    gf_seg1_gpu *s = gf_seg1_gpu_new(ctx->gpu, ctx->blas, w, bias, jobs);
    const char *want = math == GF_MATH_TF32 && gf_gpu_cc(ctx->gpu) >= 90 ? "gf_seg1_cluster_tf32"
                                                                         : "gf_seg1_splitk";
    int rc = s ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_seg1_gpu_set_route(s, GF_ROUTE_OWN, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(cand->boundary, sha, res);
    if (rc)
        goto out_free;
    if (strcmp(gf_seg1_gpu_kernel(s, math), want) != 0) {
        GF_ERROR("%s: the pins describe %s, but this card runs %s: not qualified",
                 cand->boundary, want, gf_seg1_gpu_kernel(s, math));
        rc = GF_EUNSUP;
        goto out_free;
    }
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * np, &dp);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * no, &dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dp, pooled, sizeof(float) * np);
    if (rc)
        goto out_free;
    rc = gf_gpu_fill32(ctx->gpu, dout, 0x7fc00000u, no);   /* NaN poison */
    if (rc)
        goto out_free;
    rc = gf_seg1_gpu_run(s, math, dp, jobs, dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, dout, sizeof(float) * no);
    if (rc)
        goto out_free;
    gfq_acc_errors e = gfq_acc_layer(math);
    for (size_t o = 0; o < no; o++) {
        double ref = gf_seg1_ref(w, bias, pooled, o);
        if (!gfq_acc_add(&e, got[o], ref) && e.mismatches <= 5)
            fprintf(ctx->report, "    mismatch: output %zu: %.9g vs %.9g\n", o, got[o], ref);
    }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "elements", "jobs_checked", jobs);
    if (rc)
        goto out_free;
    if (res->accurate) {
        seg1_subject t = { s, math, dp, dout, jobs };
        gfq_ab_subject sub = { seg1_set_route, seg1_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dp)
        gf_gpu_free(ctx->gpu, dp);
    if (dout)
        gf_gpu_free(ctx->gpu, dout);
    gf_seg1_gpu_destroy(&s);
    free(w), free(bias), free(pooled), free(got);
    return rc;
}
