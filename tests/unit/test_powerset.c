/* test_powerset.c — hard powerset decoding against the reference's
 * decoding of random logits (powerset_input_logits / powerset_hard_output). */
#include "tests/unit/fixtures.h"
#include "diar/powerset.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static void test_fixture_exact(void **state)
{
    (void)state;
    gf_npy_array *in = fx_load("powerset_input_logits.npy");
    gf_npy_array *want = fx_load("powerset_hard_output.npy");
    float out[589 * 3];
    gf_powerset_decode(in->data, 589, out);
    size_t bad = 0;
    for (size_t i = 0; i < 589 * 3; i++)
        if (out[i] != ((float *)want->data)[i] && bad++ < 8)
            fprintf(stderr, "powerset: frame %zu speaker %zu: got %g want %g\n", i / 3, i % 3,
                    (double)out[i], (double)((float *)want->data)[i]);
    assert_int_equal(bad, 0);
    gf_npy_destroy(&in);
    gf_npy_destroy(&want);
}

static void test_classes_and_ties(void **state)
{
    (void)state;
    /* one frame per class, then a tie between classes 4 and 6 */
    float l[8 * 7];
    for (int f = 0; f < 8; f++)
        for (int c = 0; c < 7; c++)
            l[f * 7 + c] = -1.0f - 0.1f * (float)c;
    for (int f = 0; f < 7; f++)
        l[f * 7 + f] = 3.0f;
    l[7 * 7 + 4] = 2.0f;
    l[7 * 7 + 6] = 2.0f;
    float out[8 * 3];
    gf_powerset_decode(l, 8, out);
    const float want[8 * 3] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
                                1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 0 };
    assert_memory_equal(out, want, sizeof want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_exact),
        cmocka_unit_test(test_classes_and_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
