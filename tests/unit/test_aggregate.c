/* test_aggregate.c — frame grid, overlap-add and speaker counting against
 * the community-1 fixtures (1601 frames; counts exact). */
#include "tests/unit/fixtures.h"
#include "diar/cluster/aggregate.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static const gf_swin chunks = { 0.0, 10.0, 1.0 };
static const gf_swin frames = { 0.0, 0.0619375, 0.016875 };

static void test_grid(void **state)
{
    (void)state;
    assert_int_equal(gf_aggregate_frames(&chunks, 18, &frames), 1601);
    assert_int_equal(gf_aggregate_offset(&chunks, 0, &frames), 0);
    assert_int_equal(gf_aggregate_offset(&chunks, 1, &frames), 59);    /* 59.26 */
    assert_int_equal(gf_aggregate_offset(&chunks, 2, &frames), 119);   /* 118.52 */
    assert_true(fabs(gf_swin_middle(&frames, 0) - 0.03096875) < 1e-15);
    assert_int_equal(gf_swin_closest(&frames, 0.03096875 + 2 * 0.016875), 2);
}

static void test_speaker_count_fixture_exact(void **state)
{
    (void)state;
    gf_npy_array *seg = fx_load("pipeline_segmentation_data.npy");
    gf_npy_array *want = fx_load("pipeline_speaker_counting_data.npy");
    uint8_t count[1601];
    gf_speaker_count(seg->data, 18, 589, 3, &chunks, &frames, NULL, count);
    size_t bad = 0;
    for (size_t t = 0; t < 1601; t++)
        if (count[t] != ((uint8_t *)want->data)[t] && bad++ < 8)
            fprintf(stderr, "count: frame %zu: got %u want %u\n", t, count[t],
                    ((uint8_t *)want->data)[t]);
    assert_int_equal(bad, 0);
    gf_npy_destroy(&seg);
    gf_npy_destroy(&want);
}

static void test_average_missing_and_sum(void **state)
{
    (void)state;
    /* 3 chunks of 600 frames, one class of constant 0.75 except NaN in
     * chunk 1: the average stays 0.75 where covered; the sum counts chunks */
    enum { C = 3, F = 600 };
    static float s[C * F];
    for (int i = 0; i < C * F; i++)
        s[i] = 0.75f;
    for (int f = 0; f < F; f++)
        s[1 * F + f] = NAN;
    size_t n = gf_aggregate_frames(&chunks, C, &frames);
    float *avg = malloc(n * sizeof *avg), *sum = malloc(n * sizeof *sum);
    gf_aggregate_opts o = { false, false, -1.0f };
    gf_aggregate(s, C, F, 1, &chunks, &frames, &o, avg);
    gf_aggregate_opts os = { false, true, 0.0f };
    gf_aggregate(s, C, F, 1, &chunks, &frames, &os, sum);
    size_t off2 = gf_aggregate_offset(&chunks, 2, &frames);
    for (size_t t = 0; t < n; t++) {
        bool covered = t < F || (t >= off2 && t < off2 + F);
        if (covered)
            assert_true(avg[t] == 0.75f);
        else
            assert_true(avg[t] == -1.0f);
    }
    assert_true(sum[off2] == 1.5f);   /* chunks 0 and 2 */
    /* Hamming weights cancel in the average of a constant */
    gf_aggregate_opts oh = { true, false, 0.0f };
    for (int f = 0; f < F; f++)
        s[1 * F + f] = 0.75f;
    gf_aggregate(s, C, F, 1, &chunks, &frames, &oh, avg);
    assert_true(fabsf(avg[300] - 0.75f) < 1e-6f);
    free(avg);
    free(sum);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid),
        cmocka_unit_test(test_speaker_count_fixture_exact),
        cmocka_unit_test(test_average_missing_and_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
