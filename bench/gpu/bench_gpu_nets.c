/* bench_gpu_nets.c — device time of both networks on a CUDA card, per
 * boundary and route, at a batch of windows (default 32), for each plan:
 * library fp32, library tf32, and own kernels where they exist (the "own"
 * plans run the fbank's own kernels too; the embedding network reads the
 * fbank's features of the same waveform). Prints one
 * table per plan and the real-time factor of the networks (seconds of audio
 * per second of device time, counting each 10 s window as the 1 s of new
 * audio it covers at the pipeline's 1 s step).
 * Usage: bench_gpu_nets MODELS_DIR [BATCH] [REPEATS] */
#include "common/devstats.h"
#include "common/error.h"
#include "common/util.h"
#include "gpu/blas.h"
#include "diar/embedding_gpu.h"
#include "kernels/fbank/fbank_gpu.h"
#include "diar/segmentation.h"
#include "diar/segmentation_gpu.h"
#include "route/evidence.h"
#include "gpu/device.h"
#include "diar/kernel_plan.h"
#include "route/planner.h"

#include <stdbool.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;     /* plan name */
    gf_math math;
    gf_route_kind seg;    /* the boundaries whose own kernels run in both math modes: the
                           * segmentation's, the fbank's, the pooling and seg_1 */
    bool planned;         /* routes from the planner and evidence/ instead */
    gf_route_kind resnet;
} plan;

/* FLOPs of one window through each network, counted from the layers
 * (multiply-adds x 2; MODELS.md shapes). */
static double seg_flops(void)
{
    double f = 15975.0 * 80 * 251 * 2;                     /* sinc filterbank (float64) */
    f += 5321.0 * 60 * 400 * 2 + 1769.0 * 60 * 300 * 2;    /* the two convolutions */
    for (int l = 0; l < 4; l++)                            /* BiLSTM */
        f += 2.0 * 589 * 512 * ((l ? 256 : 60) + 128) * 2;
    f += 589.0 * (256 * 128 + 128 * 128 + 128 * 7) * 2;    /* dense head */
    return f;
}

static double emb_flops(void)
{
    static const int blocks[4] = { 3, 4, 6, 3 }, widths[4] = { 32, 64, 128, 256 };
    int h = 80, w = 998, cin = 32;
    double f = 80.0 * 998 * 32 * 9 * 2;                    /* conv1 */
    for (int l = 0; l < 4; l++)
        for (int b = 0; b < blocks[l]; b++) {
            int s = (l > 0 && b == 0) ? 2 : 1, c = widths[l];
            int ho = (h + 2 - 3) / s + 1, wo = (w + 2 - 3) / s + 1;
            f += (double)ho * wo * c * cin * 9 * 2 + (double)ho * wo * c * c * 9 * 2;
            if (s != 1 || cin != c)
                f += (double)ho * wo * c * cin * 2;         /* 1x1 shortcut */
            h = ho, w = wo, cin = c;
        }
    return f + 5120.0 * 256 * 2;                           /* seg_1 (one speaker) */
}

/* The card's measured SGEMM rate (FLOP/s) in a math mode: 8192^3 products
 * on random data, 10 timed after 2 warm-ups, median. */
static double gemm_rate(gf_gpu *gpu, gf_blas_gpu *blas, gf_math math)
{
    const int n = 8192;
    size_t bytes = sizeof(float) * (size_t)n * n;
    float *host = gf_malloc(bytes);
    unsigned s = 7;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        s = s * 1664525u + 1013904223u;
        host[i] = (float)(s >> 9) / 8388608.0f - 1.0f;
    }
    gf_cu_ptr a, b, c;
    if (gf_gpu_alloc(gpu, bytes, &a) || gf_gpu_alloc(gpu, bytes, &b) ||
        gf_gpu_alloc(gpu, bytes, &c) || gf_gpu_upload(gpu, a, host, bytes) ||
        gf_gpu_upload(gpu, b, host, bytes)) {
        free(host);
        return 0;
    }
    free(host);
    double ms[10];
    for (int r = -2; r < 10; r++) {
        gf_devstats *st = gf_devstats_new();
        gf_gpu_timing_begin(gpu, "gemm", "library");
        gf_blas_gpu_gemm(blas, math, false, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        gf_gpu_timing_end(gpu);
        gf_gpu_timing_collect(gpu, st);
        const gf_devstats_row *rows;
        if (r >= 0 && gf_devstats_rows(st, &rows) == 1)
            ms[r] = (double)rows[0].total_ns / 1e6;
        gf_devstats_destroy(&st);
    }
    gf_gpu_free(gpu, a), gf_gpu_free(gpu, b), gf_gpu_free(gpu, c);
    for (int i = 1; i < 10; i++)
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            double t = ms[j]; ms[j] = ms[j - 1]; ms[j - 1] = t;
        }
    return 2.0 * n * n * (double)n / (0.5 * (ms[4] + ms[5]) / 1e3);
}

static double stage_ms(const gf_devstats *st, double *total)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        double ms = rows[i].count ? (double)rows[i].total_ns / 1e6 / (double)rows[i].count : 0;
        printf("    %-26s %-8s %10.3f ms/batch (%llu samples, max %.3f ms)\n", rows[i].stage,
               rows[i].route, ms, (unsigned long long)rows[i].count,
               (double)rows[i].max_ns / 1e6);
        sum += ms;
    }
    *total = sum;
    return sum;
}

/* Put the three networks on plan pl's routes for batches of B: the route
 * plan rp's (GF_ENOENT without one), or pl's routes by hand. 0, or the first
 * setter's error: the plan is not available on this card. */
static int use_plan(const plan *pl, gf_route_plan *rp, int B, gf_segmentation_gpu *sg,
                    gf_embedding_gpu *eg, gf_fbank_gpu *fb)
{
    if (pl->planned) {
        if (!rp)
            return GF_ENOENT;
        GF_TRY(gf_segmentation_gpu_apply_plan(sg, rp, B, pl->math));
        GF_TRY(gf_embedding_gpu_apply_plan(eg, rp, B));
        return gf_fbank_gpu_apply_plan(fb, rp, B, pl->math);
    }
    GF_TRY(gf_fbank_gpu_set_route(fb, "fbank.dft", pl->seg, NULL));
    GF_TRY(gf_fbank_gpu_set_route(fb, "fbank.mel", pl->seg, NULL));
    static const char *const own_seg[] = { "sincnet.conv0.abs_pool", "segconv.conv1",
                                           "segconv.conv2", "lstm.stack", "dense.linear0",
                                           "dense.linear1", "dense.classifier" };
    for (size_t i = 0; i < GF_ARRAY_LEN(own_seg); i++)
        GF_TRY(gf_segmentation_gpu_set_route(sg, own_seg[i], pl->seg));
    GF_TRY(gf_embedding_gpu_set_route(eg, "resnet", pl->resnet));
    GF_TRY(gf_embedding_gpu_set_route(eg, "pooling.stats", pl->seg));
    return gf_embedding_gpu_set_route(eg, "embedding.seg_1", pl->seg);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_gpu_nets MODELS_DIR [BATCH] [REPEATS]\n");
        return 64;
    }
    int B = argc > 2 ? atoi(argv[2]) : 32;
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    char seg[4096], emb[4096];
    snprintf(seg, sizeof seg, "%s/segmentation.safetensors", argv[1]);
    snprintf(emb, sizeof emb, "%s/embedding.safetensors", argv[1]);
    gf_gpu *gpu = NULL;
    gf_blas_gpu *blas = NULL;
    if (gf_gpu_open(0, &gpu) || gf_blas_gpu_open(gpu, &blas)) {
        fprintf(stderr, "bench_gpu_nets: no usable CUDA device\n");
        return 69;
    }
    float *wave = gf_malloc(sizeof(float) * (size_t)B * GF_SEG_SAMPLES);
    float *logp = gf_malloc(sizeof(float) * (size_t)B * GF_SEG_FRAMES * GF_SEG_CLASSES);
    float *feats = gf_malloc(sizeof(float) * (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS);
    float *masks = gf_malloc(sizeof(float) * 3 * (size_t)B * GF_SEG_FRAMES);
    float *out = gf_malloc(sizeof(float) * 3 * (size_t)B * GF_EMB_DIM);
    int *jw = gf_malloc(sizeof(int) * 3 * (size_t)B);
    unsigned s = 99;
    for (size_t i = 0; i < (size_t)B * GF_SEG_SAMPLES; i++) {
        s = s * 1664525u + 1013904223u;
        wave[i] = 0.2f * sinf((float)(i % 16000) * 0.05f) + ((float)(s >> 9) / 8388608.0f - 1.0f) * 0.02f;
    }
    for (int j = 0; j < 3 * B; j++) {
        jw[j] = j / 3;
        for (int t = 0; t < GF_SEG_FRAMES; t++)
            masks[(size_t)j * GF_SEG_FRAMES + t] = ((t / 50 + j) % 3 == 0) ? 1.0f : 0.0f;
    }
    const plan plans[] = {
        { "library fp32", GF_MATH_FP32, GF_ROUTE_LIBRARY, false, GF_ROUTE_LIBRARY },
        { "library tf32", GF_MATH_TF32, GF_ROUTE_LIBRARY, false, GF_ROUTE_LIBRARY },
        { "own segmentation, fbank, pooling + library fp32", GF_MATH_FP32, GF_ROUTE_OWN, false, GF_ROUTE_LIBRARY },
        { "own segmentation, fbank, pooling + library tf32", GF_MATH_TF32, GF_ROUTE_OWN, false, GF_ROUTE_LIBRARY },
        { "own segmentation, fbank, pooling, resnet tf32", GF_MATH_TF32, GF_ROUTE_OWN, false, GF_ROUTE_OWN },
        { "planned fp32 (evidence/)", GF_MATH_FP32, GF_ROUTE_LIBRARY, true, GF_ROUTE_LIBRARY },
        { "planned tf32 (evidence/)", GF_MATH_TF32, GF_ROUTE_LIBRARY, true, GF_ROUTE_LIBRARY },
    };
    /* The card's route plan, made as its worker makes it (diar/kernel_plan.h). */
    gf_card_identity card;
    gf_device_conf conf = { .index = 0, .kind = GF_DEVICE_CUDA };
    gf_route_plan *rp = gf_card_identify(&conf, &card) == 0 ? gf_kernel_plan_new(&card) : NULL;
    if (rp && gf_route_plan_problem(rp))
        gf_route_plan_destroy(&rp);
    if (!rp)
        fprintf(stderr, "bench_gpu_nets: no route plan (card or %s): planned plans skipped\n",
                gf_evidence_default_dir());
    double peak[2] = { gemm_rate(gpu, blas, GF_MATH_FP32), gemm_rate(gpu, blas, GF_MATH_TF32) };
    double net_flops = B * (seg_flops() + emb_flops());
    printf("measured SGEMM rate 8192^3: fp32 %.1f TFLOP/s, tf32 %.1f TFLOP/s\n", peak[0] / 1e12,
           peak[1] / 1e12);
    printf("network work: %.2f GFLOP per window (segmentation %.2f, embedding %.2f)\n",
           net_flops / B / 1e9, seg_flops() / 1e9, emb_flops() / 1e9);
    printf("batch %d windows, %d timed repeats after one warm-up\n", B, reps);
    for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++) {
        gf_segmentation_gpu *sg = gf_segmentation_gpu_new(gpu, blas, seg, NULL, B, plans[p].math);
        gf_embedding_gpu *eg = gf_embedding_gpu_new(gpu, blas, emb, NULL, B, plans[p].math);
        gf_fbank_gpu *fb = gf_fbank_gpu_new(gpu, blas, B);
        if (!sg || !eg || !fb || use_plan(&plans[p], rp, B, sg, eg, fb) != 0) {
            printf("plan %s: not available on this card\n", plans[p].name);
            gf_segmentation_gpu_destroy(&sg);
            gf_embedding_gpu_destroy(&eg);
            gf_fbank_gpu_destroy(&fb);
            continue;
        }
        gf_segmentation_gpu_run(sg, wave, B, logp, NULL);   /* warm-up */
        gf_fbank_gpu_run(fb, wave, B, feats, NULL);
        gf_embedding_gpu_run(eg, feats, B, jw, masks, 3 * B, out, NULL);
        gf_devstats *st = gf_devstats_new();
        for (int r = 0; r < reps; r++) {
            if (gf_segmentation_gpu_run(sg, wave, B, logp, st) ||
                gf_fbank_gpu_run(fb, wave, B, feats, st) ||
                gf_embedding_gpu_run(eg, feats, B, jw, masks, 3 * B, out, st)) {
                fprintf(stderr, "plan %s: run failed\n", plans[p].name);
                return 1;
            }
        }
        printf("plan %s:\n", plans[p].name);
        double total = 0;
        stage_ms(st, &total);
        /* Each window advances the recording by 1 s (10 s windows every 1 s). */
        printf("    total %.3f ms per batch: networks at %.0fx real time (%d s of audio per batch)\n",
               total, B * 1000.0 / total, B);
        double rate = net_flops / (total / 1e3);
        printf("    achieved %.1f TFLOP/s = %.0f%% of the measured %s GEMM rate\n", rate / 1e12,
               100.0 * rate / peak[plans[p].math], gf_math_name(plans[p].math));
        gf_devstats_destroy(&st);
        gf_segmentation_gpu_destroy(&sg);
        gf_embedding_gpu_destroy(&eg);
        gf_fbank_gpu_destroy(&fb);
    }
    gf_route_plan_destroy(&rp);
    gf_blas_gpu_destroy(&blas);
    gf_gpu_destroy(&gpu);
    free(wave), free(logp), free(feats), free(masks), free(out), free(jw);
    return 0;
}
