/* test_boundary.c — the boundary registry: names, areas, keys, tuples. */
#include "route/boundary.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

static void test_every_named_boundary_is_there(void **state)
{
    (void)state;
    static const char *const named[] = {
        "fbank.dft", "fbank.mel", "sincnet.conv0.abs_pool", "segconv.conv1", "segconv.conv2",
        "lstm.stack", "dense.linear0", "dense.linear1", "dense.classifier", "resnet.conv1",
        "resnet.layer2.0.shortcut", "resnet.layer3.0.shortcut", "resnet.layer4.0.shortcut",
        "pooling.stats", "embedding.seg_1",
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        const gf_boundary *b = gf_boundary_find(named[i]);
        assert_non_null(b);
        assert_int_equal(strncmp(b->name, b->area, strlen(b->area)), 0);
    }
    /* ResNet34: layer1 3 blocks, layer2 4, layer3 6, layer4 3, two convs each. */
    static const int blocks[4] = { 3, 4, 6, 3 };
    size_t resnet = 0;
    for (int l = 0; l < 4; l++)
        for (int b = 0; b < blocks[l]; b++)
            for (int c = 1; c <= 2; c++) {
                char name[64];
                snprintf(name, sizeof name, "resnet.layer%d.%d.conv%d", l + 1, b, c);
                assert_non_null(gf_boundary_find(name));
                resnet++;
            }
    assert_null(gf_boundary_find("resnet.layer1.3.conv1"));
    assert_null(gf_boundary_find("resnet.layer1.0.shortcut"));
    assert_null(gf_boundary_find("linear0"));
    assert_int_equal(gf_boundary_count(), 14 + 1 + resnet);
}

static void test_areas_and_keys(void **state)
{
    (void)state;
    for (size_t i = 0; i < gf_boundary_count(); i++) {
        const gf_boundary *b = gf_boundary_at(i);
        assert_true(gf_area_known(b->area));
        assert_true(gf_area_runs(b->area, b->name));
    }
    assert_true(gf_area_runs("dense", "embedding.seg_1"));
    assert_false(gf_area_runs("lstm", "dense.linear0"));
    /* resnet32 (the trunk's fp32 module) runs every resnet boundary and only those */
    assert_true(gf_area_known("resnet32"));
    for (size_t i = 0; i < gf_boundary_count(); i++) {
        const gf_boundary *b = gf_boundary_at(i);
        assert_int_equal(gf_area_runs("resnet32", b->name), strcmp(b->area, "resnet") == 0);
    }
    assert_true(gf_area_config_key("resnet32", "halo"));
    assert_true(gf_area_config_key("resnet", "tile_m"));
    assert_true(gf_area_config_key("dense", "tile_m"));
    assert_false(gf_area_config_key("lstm", "tile_m"));
    assert_string_equal(gf_area_key_owner("hidden_per_block"), "lstm");
    assert_null(gf_area_key_owner("no_such_key"));
}

static void test_production_tuples(void **state)
{
    (void)state;
    const int *b = gf_production_batches();
    assert_int_equal(b[0], 1);
    assert_int_equal(b[1], 8);
    assert_int_equal(b[2], 32);
    assert_int_equal(GF_DEFAULT_BATCH, 32);
    assert_true(gf_batch_is_production(8));
    assert_false(gf_batch_is_production(16));
    gf_math m;
    assert_int_equal(gf_math_parse("tf32", &m), 0);
    assert_int_equal(m, GF_MATH_TF32);
    assert_string_equal(gf_math_name(m), "tf32");
    assert_int_equal(gf_math_parse("fp16", &m), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_named_boundary_is_there),
        cmocka_unit_test(test_areas_and_keys),
        cmocka_unit_test(test_production_tuples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
