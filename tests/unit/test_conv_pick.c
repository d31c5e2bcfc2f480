/* test_conv_pick.c — which own ResNet kernel runs each layer of the trunk,
 * by card and math mode (gf_conv_gpu_own_kernel), and the qualify
 * candidates that follow from it: tf32 from the resnet module, fp32 from
 * resnet32 (3xTF32), resnet.conv1's float32 direct kernel from resnet in
 * both. No card: the table is plain data. */
#include "kernels/resnet/resnet_gpu.h"
#include "qualify/areas.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static const gf_conv_own_kernel *pick(int cin, int cout, int k, int stride, int cc, gf_math m)
{
    return gf_conv_gpu_own_kernel((gf_conv_shape){ cin, cout, k, stride }, cc, m);
}

static void test_tf32_picks(void **state)
{
    (void)state;
    assert_string_equal(pick(1, 32, 3, 1, 90, GF_MATH_TF32)->name3, "gf_conv3_cin1");
    assert_string_equal(pick(32, 32, 3, 1, 90, GF_MATH_TF32)->name3, "gf_conv3_tf32_v4s");
    assert_string_equal(pick(64, 64, 3, 1, 90, GF_MATH_TF32)->name3, "gf_conv3_tf32_v5");
    assert_string_equal(pick(256, 256, 3, 1, 90, GF_MATH_TF32)->name3, "gf_conv3_tf32_v5w");
    assert_string_equal(pick(64, 64, 3, 1, 80, GF_MATH_TF32)->name3, "gf_conv3_tf32_v4");
    assert_string_equal(pick(32, 64, 3, 2, 90, GF_MATH_TF32)->name3, "gf_conv3_tf32_v3");
    assert_string_equal(pick(128, 256, 1, 2, 90, GF_MATH_TF32)->name1, "gf_conv1_tf32_v3w");
    assert_string_equal(pick(3, 32, 3, 1, 90, GF_MATH_TF32)->name3, "gf_conv3_tf32_v1");
    const int couts[] = { 32, 64, 128, 256 };
    for (size_t i = 0; i < sizeof couts / sizeof couts[0]; i++) {
        const gf_conv_own_kernel *k = pick(couts[i], couts[i], 3, 1, 90, GF_MATH_TF32);
        assert_string_equal(gf_conv_own_module(k), "resnet");
        assert_false(k->f3);
    }
}

static void test_fp32_picks(void **state)
{
    (void)state;
    /* the direct kernel is float32 already: the resnet module in both modes */
    const gf_conv_own_kernel *c1 = pick(1, 32, 3, 1, 90, GF_MATH_FP32);
    assert_string_equal(c1->name3, "gf_conv3_cin1");
    assert_string_equal(gf_conv_own_module(c1), "resnet");
    /* the same 3xTF32 kernels on any card from 8.0: no wgmma */
    for (int cc = 80; cc <= 90; cc += 10) {
        const gf_conv_own_kernel *s1 = pick(32, 32, 3, 1, cc, GF_MATH_FP32);
        assert_string_equal(s1->name3, "gf_conv3_f3_v4s");
        assert_true(s1->f3 && s1->channel_major);
        assert_string_equal(pick(128, 128, 3, 1, cc, GF_MATH_FP32)->name3, "gf_conv3_f3_v4");
        assert_string_equal(pick(64, 128, 3, 2, cc, GF_MATH_FP32)->name3, "gf_conv3_f3_v3");
        assert_string_equal(pick(64, 128, 1, 2, cc, GF_MATH_FP32)->name1, "gf_conv1_f3_v3");
    }
    const int couts[] = { 32, 64, 128, 256 };
    for (size_t i = 0; i < sizeof couts / sizeof couts[0]; i++) {
        const gf_conv_own_kernel *k = pick(couts[i], couts[i], 3, 1, 90, GF_MATH_FP32);
        assert_string_equal(gf_conv_own_module(k), "resnet32");
        assert_true(k->f3 && k->packed);
        /* two blocks an SM: at most half of the H200's 227 KiB each */
        assert_true(gf_conv_own_smem(k) <= 227 * 1024 / 2);
    }
    /* no 3xTF32 kernel for channel counts v3 cannot tile (16 a K step) */
    assert_null(pick(3, 32, 3, 2, 90, GF_MATH_FP32));
    assert_null(pick(24, 32, 1, 1, 90, GF_MATH_FP32));
}

/* qualify's candidates: every trunk layer in the resnet area; every layer
 * but resnet.conv1 (whose fp32 kernel is resnet's) in resnet32, with pins
 * of the kernel that runs there. */
static void test_candidates(void **state)
{
    (void)state;
    gf_candidate c[GFQ_MAX_CANDIDATES];
    gfq_trunk trunk;
    size_t n = gfq_emb_candidates(90, &trunk, c, GFQ_MAX_CANDIDATES);
    size_t resnet = 0, resnet32 = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(c[i].area, "resnet") == 0)
            resnet++;
        if (strcmp(c[i].area, "resnet32") != 0)
            continue;
        resnet32++;
        assert_string_not_equal(c[i].boundary, "resnet.conv1");
        for (size_t k = 0; k < c[i].n_config; k++)
            if (strcmp(c[i].config[k].key, "tile_k") == 0)   /* the 3xTF32 kernels' slabs */
                assert_true(strcmp(c[i].config[k].value, "8") == 0 ||
                            strcmp(c[i].config[k].value, "16") == 0);
    }
    assert_int_equal(resnet, 36);
    assert_int_equal(resnet32, 35);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tf32_picks),
        cmocka_unit_test(test_fp32_picks),
        cmocka_unit_test(test_candidates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
