/* test_gpu_nets.c — both networks on the GPU against their CPU references,
 * on random weights (GF_TEST_MODELS: a folder holding segmentation.safetensors
 * and embedding.safetensors, e.g. written by tests/ref/gpu_models.py) and
 * fresh random inputs; every route: the library route in fp32 and tf32, the
 * own LSTM kernel, the own LSTM with the head's own kernels (dense.*), and
 * the embedding's own ResNet, pooling and seg_1 kernels. Skips without a GPU
 * or without GF_TEST_MODELS. */
#include "common/error.h"
#include "gpu/blas.h"
#include "diar/embedding.h"
#include "diar/embedding_gpu.h"
#include "kernels/fbank/fbank_cpu.h"
#include "kernels/fbank/fbank_gpu.h"
#include "diar/segmentation.h"
#include "diar/segmentation_gpu.h"
#include "gpu/device.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gf_gpu *gpu;
static gf_blas_gpu *blas;
static char seg_path[4096], emb_path[4096];

static int setup(void **state)
{
    (void)state;
    const char *dir = getenv("GF_TEST_MODELS");
    if (!dir || gf_gpu_open(0, &gpu) != 0)
        return 0;
    if (gf_blas_gpu_open(gpu, &blas) != 0)
        gf_gpu_destroy(&gpu);
    snprintf(seg_path, sizeof seg_path, "%s/segmentation.safetensors", dir);
    snprintf(emb_path, sizeof emb_path, "%s/embedding.safetensors", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gf_blas_gpu_destroy(&blas);
    gf_gpu_destroy(&gpu);
    return 0;
}

#define NEED_GPU()                                                              \
    do {                                                                        \
        if (!gpu) {                                                             \
            printf("no CUDA device or GF_TEST_MODELS unset: skipping\n");       \
            skip();                                                             \
        }                                                                       \
    } while (0)

static uint64_t rng_state;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Speech-like audio: a few drifting tones with noise at a realistic level. */
static void random_audio(float *x, int windows)
{
    for (int w = 0; w < windows; w++) {
        double f1 = 100 + 300 * urand(), f2 = 500 + 2000 * urand(), amp = 0.05 + 0.3 * urand();
        for (int i = 0; i < GF_SEG_SAMPLES; i++) {
            double t = i / 16000.0;
            double env = 0.5 + 0.5 * sin(2 * M_PI * 3 * t + w);
            x[(size_t)w * GF_SEG_SAMPLES + i] =
                (float)(amp * env * (sin(2 * M_PI * f1 * t) + 0.5 * sin(2 * M_PI * f2 * t)) +
                        0.01 * (urand() - 0.5));
        }
    }
}

static void compare_seg(const char *what, const float *ref, const float *got, size_t n,
                        double tol)
{
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)ref[i] - got[i]);
        if (!(d <= worst)) {
            worst = d;
            at = i;
        }
    }
    printf("segmentation %-22s max |gpu - cpu| %.3g at %zu (tolerance %.0g)\n", what, worst, at,
           tol);
    assert_true(worst <= tol);
}

static void test_segmentation_routes(void **state)
{
    (void)state;
    NEED_GPU();
    enum { B = 3 };
    rng_state = 20261130;
    float *wave = malloc(sizeof(float) * B * GF_SEG_SAMPLES);
    size_t n = (size_t)B * GF_SEG_FRAMES * GF_SEG_CLASSES;
    float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    random_audio(wave, B);
    gf_segmentation *cpu = gf_segmentation_new(seg_path, NULL, B, 2);
    assert_non_null(cpu);
    assert_int_equal(gf_segmentation_run(cpu, wave, B, ref), 0);
    gf_segmentation_destroy(&cpu);

    static const char *const head[] = { "dense.linear0", "dense.linear1", "dense.classifier" };
    struct {
        const char *name;
        gf_math math;
        gf_route_kind lstm, dense;
        double tol;
    } runs[] = {
        { "fp32 library", GF_MATH_FP32, GF_ROUTE_LIBRARY, GF_ROUTE_LIBRARY, 1e-3 },
        { "fp32 own lstm", GF_MATH_FP32, GF_ROUTE_OWN, GF_ROUTE_LIBRARY, 1e-3 },
        { "fp32 own lstm + head", GF_MATH_FP32, GF_ROUTE_OWN, GF_ROUTE_OWN, 1e-3 },
        { "tf32 library", GF_MATH_TF32, GF_ROUTE_LIBRARY, GF_ROUTE_LIBRARY, 5e-2 },
        { "tf32 own lstm + head", GF_MATH_TF32, GF_ROUTE_OWN, GF_ROUTE_OWN, 5e-2 },
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        gf_segmentation_gpu *g = gf_segmentation_gpu_new(gpu, blas, seg_path, NULL, B,
                                                         runs[r].math);
        assert_non_null(g);
        assert_int_equal(gf_segmentation_gpu_set_route(g, "lstm.stack", runs[r].lstm), 0);
        for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
            assert_int_equal(gf_segmentation_gpu_set_route(g, head[i], runs[r].dense), 0);
        for (size_t i = 0; i < n; i++)
            got[i] = NAN;
        assert_int_equal(gf_segmentation_gpu_run(g, wave, B, got, NULL), 0);
        compare_seg(runs[r].name, ref, got, n, runs[r].tol);
        gf_segmentation_gpu_destroy(&g);
    }
    free(wave), free(ref), free(got);
}

static double cosine(const float *a, const float *b, int n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / (sqrt(aa * bb) + 1e-30);
}

static void test_embedding_routes(void **state)
{
    (void)state;
    NEED_GPU();
    enum { B = 2, JOBS = 3 * B };
    rng_state = 424242;
    size_t nf = (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS;
    float *feats = malloc(nf * sizeof(float));
    for (size_t i = 0; i < nf; i++)
        feats[i] = (float)(2.0 * urand() - 1.0 + 0.5 * sin(0.01 * (double)i));
    float *masks = malloc(sizeof(float) * JOBS * GF_SEG_FRAMES);
    int job_window[JOBS];
    for (int j = 0; j < JOBS; j++) {
        job_window[j] = j / 3;
        int lo = (int)(urand() * 300), len = 1 + (int)(urand() * 280);
        for (int t = 0; t < GF_SEG_FRAMES; t++)
            masks[j * GF_SEG_FRAMES + t] = (t >= lo && t < lo + len) ? 1.0f : 0.0f;
    }
    for (int t = 0; t < GF_SEG_FRAMES; t++)   /* an all-zero mask: the bias alone */
        masks[5 * GF_SEG_FRAMES + t] = 0.0f;
    float ref[JOBS][GF_EMB_DIM], got[JOBS][GF_EMB_DIM];
    gf_embedding *cpu = gf_embedding_new(emb_path, NULL, GF_EMB_FRAMES, B, 2);
    assert_non_null(cpu);
    assert_int_equal(gf_embedding_trunk(cpu, feats, B), 0);
    for (int j = 0; j < JOBS; j++)
        assert_int_equal(gf_embedding_pool(cpu, job_window[j], masks + j * GF_SEG_FRAMES,
                                           GF_SEG_FRAMES, ref[j]), 0);
    gf_embedding_destroy(&cpu);
    struct {
        const char *name;
        gf_math math;
        gf_route_kind resnet, tail;   /* tail: pooling.stats and embedding.seg_1 */
        double min_cos;
    } runs[] = {
        { "fp32 library", GF_MATH_FP32, GF_ROUTE_LIBRARY, GF_ROUTE_LIBRARY, 0.99999 },
        { "fp32 own pool+seg_1", GF_MATH_FP32, GF_ROUTE_LIBRARY, GF_ROUTE_OWN, 0.99999 },
        { "fp32 own resnet", GF_MATH_FP32, GF_ROUTE_OWN, GF_ROUTE_LIBRARY, 0.99999 },   /* 3xTF32 */
        { "fp32 all own", GF_MATH_FP32, GF_ROUTE_OWN, GF_ROUTE_OWN, 0.99999 },
        { "tf32 library", GF_MATH_TF32, GF_ROUTE_LIBRARY, GF_ROUTE_LIBRARY, 0.999 },
        { "tf32 own resnet", GF_MATH_TF32, GF_ROUTE_OWN, GF_ROUTE_LIBRARY, 0.999 },
        { "tf32 all own", GF_MATH_TF32, GF_ROUTE_OWN, GF_ROUTE_OWN, 0.999 },
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        gf_embedding_gpu *g = gf_embedding_gpu_new(gpu, blas, emb_path, NULL, B, runs[r].math);
        assert_non_null(g);
        assert_int_equal(gf_embedding_gpu_set_route(g, "resnet", runs[r].resnet), 0);
        assert_int_equal(gf_embedding_gpu_set_route(g, "pooling.stats", runs[r].tail), 0);
        assert_int_equal(gf_embedding_gpu_set_route(g, "embedding.seg_1", runs[r].tail), 0);
        memset(got, 0xff, sizeof got);   /* NaN poison */
        assert_int_equal(gf_embedding_gpu_run(g, feats, B, job_window, masks, JOBS, &got[0][0],
                                              NULL), 0);
        double worst = 1;
        for (int j = 0; j < JOBS; j++) {
            double c = cosine(ref[j], got[j], GF_EMB_DIM);
            if (!(c >= worst))
                worst = c;
        }
        printf("embedding %-20s min cosine(gpu, cpu) %.8f (at least %.5f)\n", runs[r].name,
               worst, runs[r].min_cos);
        assert_true(worst >= runs[r].min_cos);
        gf_embedding_gpu_destroy(&g);
    }
    free(feats), free(masks);
}

/* The GPU fbank (DFT and mel banks as GEMMs) against the CPU reference
 * (kernels/fbank/fbank_cpu.c, itself within 1e-3 of torchaudio). */
static void test_fbank_gpu(void **state)
{
    (void)state;
    NEED_GPU();
    enum { B = 3 };
    rng_state = 777;
    float *wave = malloc(sizeof(float) * B * GF_SEG_SAMPLES);
    random_audio(wave, B);
    size_t nf = (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS;
    float *ref = malloc(sizeof(float) * nf), *got = malloc(sizeof(float) * nf);
    for (int b = 0; b < B; b++) {
        size_t frames = 0;
        assert_int_equal(gf_fbank_compute(wave + (size_t)b * GF_SEG_SAMPLES, GF_SEG_SAMPLES,
                                          ref + (size_t)b * GF_EMB_FRAMES * GF_EMB_MELS,
                                          &frames), 0);
        assert_int_equal(frames, GF_EMB_FRAMES);
    }
    gf_fbank_gpu *g = gf_fbank_gpu_new(gpu, blas, B);
    assert_non_null(g);
    for (size_t i = 0; i < nf; i++)
        got[i] = NAN;
    assert_int_equal(gf_fbank_gpu_run(g, wave, B, got, NULL), 0);
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < nf; i++) {
        double d = fabs((double)ref[i] - got[i]);
        if (!(d <= worst)) {
            worst = d;
            at = i;
        }
    }
    printf("fbank gpu vs cpu: max |diff| %.3g at %zu (tolerance 2e-3)\n", worst, at);
    assert_true(worst <= 2e-3);
    gf_fbank_gpu_destroy(&g);
    free(wave), free(ref), free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fbank_gpu),
        cmocka_unit_test(test_segmentation_routes),
        cmocka_unit_test(test_embedding_routes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
