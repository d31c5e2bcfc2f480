/* bench_gpu_nets.c — device time of both networks on a CUDA card, per
 * boundary and route, at a batch of windows (default 32), for each plan:
 * library fp32, library tf32, and own kernels where they exist. Prints one
 * table per plan and the real-time factor of the networks (seconds of audio
 * per second of device time, counting each 10 s window as the 1 s of new
 * audio it covers at the pipeline's 1 s step).
 * Usage: bench_gpu_nets MODELS_DIR [BATCH] [REPEATS] */
#include "common/devstats.h"
#include "common/util.h"
#include "worker/blas_gpu.h"
#include "worker/diar/embedding_gpu.h"
#include "worker/diar/segmentation.h"
#include "worker/diar/segmentation_gpu.h"
#include "worker/evidence.h"
#include "worker/gpu.h"
#include "worker/planner.h"

#include <stdbool.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *name;     /* plan name */
    gf_math math;
    gf_route_kind lstm;
    bool planned;         /* routes from the planner and evidence/ instead */
    gf_route_kind resnet;
} plan;

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
    for (size_t i = 0; i < (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS; i++) {
        s = s * 1664525u + 1013904223u;
        feats[i] = (float)(s >> 9) / 8388608.0f - 1.0f;
    }
    for (int j = 0; j < 3 * B; j++) {
        jw[j] = j / 3;
        for (int t = 0; t < GF_SEG_FRAMES; t++)
            masks[(size_t)j * GF_SEG_FRAMES + t] = ((t / 50 + j) % 3 == 0) ? 1.0f : 0.0f;
    }
    const plan plans[] = {
        { "library fp32", GF_MATH_FP32, GF_ROUTE_LIBRARY, false, GF_ROUTE_LIBRARY },
        { "library tf32", GF_MATH_TF32, GF_ROUTE_LIBRARY, false, GF_ROUTE_LIBRARY },
        { "own lstm + library fp32", GF_MATH_FP32, GF_ROUTE_OWN, false, GF_ROUTE_LIBRARY },
        { "own lstm + library tf32", GF_MATH_TF32, GF_ROUTE_OWN, false, GF_ROUTE_LIBRARY },
        { "own lstm + own resnet tf32", GF_MATH_TF32, GF_ROUTE_OWN, false, GF_ROUTE_OWN },
        { "planned fp32 (evidence/)", GF_MATH_FP32, GF_ROUTE_LIBRARY, true, GF_ROUTE_LIBRARY },
        { "planned tf32 (evidence/)", GF_MATH_TF32, GF_ROUTE_LIBRARY, true, GF_ROUTE_LIBRARY },
    };
    /* The planner over this binary's modules and the evidence tables. */
    gf_card_identity card;
    gf_device_conf conf = { .index = 0, .kind = GF_DEVICE_CUDA };
    gf_evidence *ev = NULL;
    const char *evdir = gf_evidence_default_dir();
    if (gf_card_identify(&conf, &card) != 0 || gf_evidence_open(evdir, &ev) != 0)
        fprintf(stderr, "bench_gpu_nets: no planner (card or %s): planned plans skipped\n", evdir);
    gf_planner pl = { ev, &card, &gf_module_provider_embedded, gf_planner_force_library_env() };
    printf("batch %d windows, %d timed repeats after one warm-up\n", B, reps);
    for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++) {
        gf_segmentation_gpu *sg = gf_segmentation_gpu_new(gpu, blas, seg, NULL, B, plans[p].math);
        gf_embedding_gpu *eg = gf_embedding_gpu_new(gpu, blas, emb, NULL, B, plans[p].math);
        int rc = !sg || !eg;
        if (!rc && plans[p].planned) {
            rc = ev ? gf_segmentation_gpu_apply_plan(sg, &pl, B, plans[p].math) : 1;
            rc = rc ? rc : gf_embedding_gpu_apply_plan(eg, &pl, B);
        } else if (!rc) {
            rc = gf_segmentation_gpu_set_route(sg, "lstm.stack", plans[p].lstm);
            rc = rc ? rc : gf_embedding_gpu_set_route(eg, "resnet", plans[p].resnet);
        }
        if (rc) {
            printf("plan %s: not available on this card\n", plans[p].name);
            gf_segmentation_gpu_destroy(&sg);
            gf_embedding_gpu_destroy(&eg);
            continue;
        }
        gf_segmentation_gpu_run(sg, wave, B, logp, NULL);   /* warm-up */
        gf_embedding_gpu_run(eg, feats, B, jw, masks, 3 * B, out, NULL);
        gf_devstats *st = gf_devstats_new();
        for (int r = 0; r < reps; r++) {
            if (gf_segmentation_gpu_run(sg, wave, B, logp, st) ||
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
        gf_devstats_destroy(&st);
        gf_segmentation_gpu_destroy(&sg);
        gf_embedding_gpu_destroy(&eg);
    }
    gf_evidence_destroy(&ev);
    gf_blas_gpu_destroy(&blas);
    gf_gpu_destroy(&gpu);
    free(wave), free(logp), free(feats), free(masks), free(out), free(jw);
    return 0;
}
