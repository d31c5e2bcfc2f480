/* test_segmentation.c — the segmentation network on a model file the test
 * writes (random weights under the published names): outputs are
 * log-probabilities, each window's result does not depend on the rest of its
 * batch nor on the thread count, and a file missing a tensor, with a wrong
 * shape or with an extra tensor is refused. Parity with PyTorch:
 * tests/integration/nets_parity.sh. */
#include "stwrite.h"
#include "diar/segmentation.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <unistd.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static float frand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static void fill(float *p, long n, float scale, float offset)
{
    for (long i = 0; i < n; i++)
        p[i] = offset + scale * frand();
}

static char path[64];

/* skip: index of a tensor to leave out (-1: none); bad: one to give a wrong
 * shape; extra: add an unknown tensor. */
static void write_model(int skip, int bad, int extra)
{
    stw *w = calloc(1, sizeof *w);
    int k = 0;
#define T(name, nd, s0, s1, s2, scale, off)                                     \
    do {                                                                        \
        int sh[3] = { s0, s1, s2 };                                             \
        if (k == bad)                                                           \
            sh[0] += 1;                                                         \
        if (k++ != skip) {                                                      \
            float *td_ = stw_add(w, name, nd, sh);                              \
            fill(td_, stw_numel(w, w->n - 1), scale, off);                        \
        }                                                                       \
    } while (0)
    T("sincnet.wav_norm1d.weight", 1, 1, 0, 0, 0.1f, 1.0f);
    T("sincnet.wav_norm1d.bias", 1, 1, 0, 0, 0.1f, 0.0f);
    {
        int sh[2] = { 40, 1 };
        float *lo = stw_add(w, "sincnet.conv1d.0.filterbank.low_hz_", 2, sh);
        float *bd = stw_add(w, "sincnet.conv1d.0.filterbank.band_hz_", 2, sh);
        for (int i = 0; i < 40; i++) {
            lo[i] = 30.0f + 180.0f * (float)i;
            bd[i] = 100.0f + 10.0f * (float)i;
        }
        int s1[1] = { 125 }, s2[2] = { 1, 125 };
        float *win = stw_add(w, "sincnet.conv1d.0.filterbank.window_", 1, s1);
        float *n = stw_add(w, "sincnet.conv1d.0.filterbank.n_", 2, s2);
        for (int j = 0; j < 125; j++) {
            win[j] = 0.54f - 0.46f * cosf(2.0f * 3.14159265f * (float)j / 251.0f);
            n[j] = 2.0f * 3.14159265f * (float)(j - 125) / 16000.0f;
        }
        k += 4;
    }
    T("sincnet.conv1d.1.weight", 3, 60, 80, 5, 0.05f, 0.0f);
    T("sincnet.conv1d.1.bias", 1, 60, 0, 0, 0.05f, 0.0f);
    T("sincnet.conv1d.2.weight", 3, 60, 60, 5, 0.05f, 0.0f);
    T("sincnet.conv1d.2.bias", 1, 60, 0, 0, 0.05f, 0.0f);
    char name[96];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "sincnet.norm1d.%d.weight", i);
        T(name, 1, i ? 60 : 80, 0, 0, 0.2f, 1.0f);
        snprintf(name, sizeof name, "sincnet.norm1d.%d.bias", i);
        T(name, 1, i ? 60 : 80, 0, 0, 0.1f, 0.0f);
    }
    for (int l = 0; l < 4; l++)
        for (int d = 0; d < 2; d++) {
            const char *sfx = d ? "_reverse" : "";
            snprintf(name, sizeof name, "lstm.weight_ih_l%d%s", l, sfx);
            T(name, 2, 512, l ? 256 : 60, 0, 0.15f, 0.0f);
            snprintf(name, sizeof name, "lstm.weight_hh_l%d%s", l, sfx);
            T(name, 2, 512, 128, 0, 0.15f, 0.0f);
            snprintf(name, sizeof name, "lstm.bias_ih_l%d%s", l, sfx);
            T(name, 1, 512, 0, 0, 0.1f, 0.0f);
            snprintf(name, sizeof name, "lstm.bias_hh_l%d%s", l, sfx);
            T(name, 1, 512, 0, 0, 0.1f, 0.0f);
        }
    T("linear.0.weight", 2, 128, 256, 0, 0.15f, 0.0f);
    T("linear.0.bias", 1, 128, 0, 0, 0.1f, 0.0f);
    T("linear.1.weight", 2, 128, 128, 0, 0.2f, 0.0f);
    T("linear.1.bias", 1, 128, 0, 0, 0.1f, 0.0f);
    T("classifier.weight", 2, 7, 128, 0, 1.0f, 0.0f);
    T("classifier.bias", 1, 7, 0, 0, 0.1f, 0.0f);
    if (extra)
        T("linear.2.weight", 2, 4, 4, 0, 1.0f, 0.0f);
#undef T
    assert_int_equal(stw_write(w, path), 0);
    stw_free(w);
    free(w);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/gf_seg_%d.safetensors", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void test_runs_and_is_batch_independent(void **state)
{
    (void)state;
    write_model(-1, -1, 0);
    const int B = 3, N = GF_SEG_SAMPLES, O = GF_SEG_FRAMES * GF_SEG_CLASSES;
    float *wave = malloc(sizeof(float) * (size_t)B * N);
    for (long i = 0; i < (long)B * N; i++)   /* a different chirp-ish signal per window */
        wave[i] = 0.1f * sinf((float)(i % N) * (0.01f + 0.003f * (float)(i / N))) + 0.02f * frand();
    float *out = malloc(sizeof(float) * (size_t)B * O), *one = malloc(sizeof(float) * O);
    gf_segmentation *seg = gf_segmentation_new(path, NULL, B, 2);
    assert_non_null(seg);
    assert_int_equal(gf_segmentation_run(seg, wave, B, out), 0);
    assert_int_not_equal(gf_segmentation_run(seg, wave, B + 1, out), 0);
    double spread = 0.0;
    for (int r = 0; r < B * GF_SEG_FRAMES; r++) {
        double s = 0.0;
        for (int c = 0; c < GF_SEG_CLASSES; c++) {
            float v = out[r * GF_SEG_CLASSES + c];
            assert_true(isfinite(v) && v <= 1e-6f);
            s += exp(v);
            spread += fabs(v - out[c]);
        }
        assert_true(fabs(s - 1.0) < 1e-5);
    }
    assert_true(spread > 1.0);   /* not a constant output */
    gf_segmentation_destroy(&seg);
    /* window 2 alone, one thread: same as in the batch */
    seg = gf_segmentation_new(path, NULL, 1, 1);
    assert_non_null(seg);
    assert_int_equal(gf_segmentation_run(seg, wave + 2L * N, 1, one), 0);
    double worst = 0.0;
    for (int i = 0; i < O; i++)
        worst = fmax(worst, fabs(one[i] - out[2L * O + i]));
    printf("batch vs alone: largest difference %.3g\n", worst);
    assert_true(worst < 1e-4);
    gf_segmentation_destroy(&seg);
    assert_null(seg);
    free(wave), free(out), free(one);
}

static void test_refuses_bad_files(void **state)
{
    (void)state;
    write_model(20, -1, 0);   /* a missing LSTM tensor */
    assert_null(gf_segmentation_new(path, NULL, 1, 1));
    write_model(-1, 6, 0);    /* conv1d.1.weight with a wrong shape */
    assert_null(gf_segmentation_new(path, NULL, 1, 1));
    write_model(-1, -1, 1);   /* a tensor of another architecture */
    assert_null(gf_segmentation_new(path, NULL, 1, 1));
    assert_null(gf_segmentation_new("/nonexistent.safetensors", NULL, 1, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_and_is_batch_independent),
        cmocka_unit_test(test_refuses_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
