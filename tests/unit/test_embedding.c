/* test_embedding.c — the embedding network on a model file the test writes
 * (random weights under MODELS.md's names), on short windows: pooling follows
 * the mask (an all-zero mask gives seg_1's bias, a mask of every frame equals
 * the trunk's full statistics), a window's embedding does not depend on its
 * batch nor on the thread count, and bad files are refused. Parity with
 * PyTorch: tests/integration/nets_parity.sh. */
#include "stwrite.h"
#include "diar/embedding.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <unistd.h>

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static float frand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static char path[64];
static float seg_bias[GF_EMB_DIM];

static void conv_bn(stw *w, const char *conv, const char *bn, int co, int ci, int k, int skip_var)
{
    int sh[4] = { co, ci, k, k };
    float *c = stw_add(w, conv, 4, sh);
    float scale = sqrtf(2.0f / (float)(ci * k * k));
    for (long i = 0; i < stw_numel(w, w->n - 1); i++)
        c[i] = scale * frand();
    static const char *parts[4] = { "weight", "bias", "running_mean", "running_var" };
    char name[96];
    for (int p = 0; p < 4; p++) {
        if (p == 3 && skip_var)
            continue;
        snprintf(name, sizeof name, "%s.%s", bn, parts[p]);
        float *d = stw_add(w, name, 1, &co);
        for (int i = 0; i < co; i++)
            d[i] = p == 0 ? 0.8f + 0.2f * frand() : p == 3 ? 1.0f + 0.5f * frand() : 0.1f * frand();
    }
}

static void write_model(int skip_var, int bad_seg)
{
    stw *w = calloc(1, sizeof *w);
    char cv[96], bn[96];
    conv_bn(w, "resnet.conv1.weight", "resnet.bn1", 32, 1, 3, 0);
    static const int nb[4] = { 3, 4, 6, 3 };
    int cin = 32;
    for (int l = 0; l < 4; l++)
        for (int b = 0; b < nb[l]; b++) {
            int co = 32 << l;
            snprintf(cv, sizeof cv, "resnet.layer%d.%d.conv1.weight", l + 1, b);
            snprintf(bn, sizeof bn, "resnet.layer%d.%d.bn1", l + 1, b);
            conv_bn(w, cv, bn, co, cin, 3, skip_var && l == 2 && b == 2);
            snprintf(cv, sizeof cv, "resnet.layer%d.%d.conv2.weight", l + 1, b);
            snprintf(bn, sizeof bn, "resnet.layer%d.%d.bn2", l + 1, b);
            conv_bn(w, cv, bn, co, co, 3, 0);
            if (b == 0 && l > 0) {
                snprintf(cv, sizeof cv, "resnet.layer%d.%d.shortcut.0.weight", l + 1, b);
                snprintf(bn, sizeof bn, "resnet.layer%d.%d.shortcut.1", l + 1, b);
                conv_bn(w, cv, bn, co, cin, 1, 0);
            }
            cin = co;
        }
    int sw[2] = { GF_EMB_DIM, 5120 + bad_seg }, sb[1] = { GF_EMB_DIM };
    float *wt = stw_add(w, "resnet.seg_1.weight", 2, sw);
    for (long i = 0; i < stw_numel(w, w->n - 1); i++)
        wt[i] = 0.02f * frand();
    float *bs = stw_add(w, "resnet.seg_1.bias", 1, sb);
    for (int i = 0; i < GF_EMB_DIM; i++)
        bs[i] = seg_bias[i] = 0.1f * frand();
    assert_int_equal(stw_write(w, path), 0);
    stw_free(w);
    free(w);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/gf_emb_%d.safetensors", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void test_pooling_and_batches(void **state)
{
    (void)state;
    write_model(0, 0);
    const int B = 3, T = 64, M = 589;   /* 64 fbank frames: trunk output of 8 frames */
    float *fb = malloc(sizeof(float) * (size_t)B * T * GF_EMB_MELS);
    for (long i = 0; i < (long)B * T * GF_EMB_MELS; i++)
        fb[i] = frand();
    float *mask = malloc(sizeof(float) * M), *zero = calloc(M, sizeof(float));
    for (int i = 0; i < M; i++)
        mask[i] = (i / 50) % 2 ? 1.0f : 0.0f;
    float e[3][GF_EMB_DIM], z[GF_EMB_DIM], one[GF_EMB_DIM], full[GF_EMB_DIM];
    gf_embedding *emb = gf_embedding_new(path, NULL, T, B, 2);
    assert_non_null(emb);
    assert_int_equal(gf_embedding_trunk_frames(emb), 8);
    assert_int_equal(gf_embedding_trunk(emb, fb, B), 0);
    for (int b = 0; b < B; b++)
        assert_int_equal(gf_embedding_pool(emb, b, mask, M, e[b]), 0);
    assert_int_not_equal(gf_embedding_pool(emb, B, mask, M, z), 0);
    /* no active frame: statistics 0, so the embedding is seg_1's bias */
    assert_int_equal(gf_embedding_pool(emb, 0, zero, M, z), 0);
    for (int i = 0; i < GF_EMB_DIM; i++)
        assert_true(fabsf(z[i] - seg_bias[i]) < 1e-6f);
    double d01 = 0.0;
    for (int i = 0; i < GF_EMB_DIM; i++)
        d01 += fabs(e[0][i] - e[1][i]);
    assert_true(d01 > 1e-3);   /* different windows, different embeddings */
    gf_embedding_destroy(&emb);
    /* window 1 alone, one thread */
    emb = gf_embedding_new(path, NULL, T, 1, 1);
    assert_non_null(emb);
    assert_int_equal(gf_embedding_trunk(emb, fb + (long)T * GF_EMB_MELS, 1), 0);
    assert_int_equal(gf_embedding_pool(emb, 0, mask, M, one), 0);
    for (int i = 0; i < M; i++)
        zero[i] = 1.0f;
    assert_int_equal(gf_embedding_pool(emb, 0, zero, M, full), 0);
    double worst = 0.0, moved = 0.0;
    for (int i = 0; i < GF_EMB_DIM; i++) {
        worst = fmax(worst, fabs(one[i] - e[1][i]));
        moved += fabs(full[i] - one[i]);
    }
    assert_true(worst < 1e-5);
    assert_true(moved > 1e-4);   /* the mask matters */
    gf_embedding_destroy(&emb);
    free(fb), free(mask), free(zero);
}

static void test_refuses_bad_files(void **state)
{
    (void)state;
    write_model(1, 0);   /* a batch norm without running_var */
    assert_null(gf_embedding_new(path, NULL, 64, 1, 1));
    write_model(0, 1);   /* seg_1 with a wrong shape */
    assert_null(gf_embedding_new(path, NULL, 64, 1, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pooling_and_batches),
        cmocka_unit_test(test_refuses_bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
