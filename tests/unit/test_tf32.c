/* test_tf32.c — gf_round_tf32 (gpu/device.c), the host's rounding of
 * weights packed in tf32 for the own kernels: the same as the kernels'
 * cvt.rna (to nearest on the 10-bit mantissa, ties away from zero), with
 * an infinity or NaN left alone. */
#include "gpu/device.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

static float from_bits(uint32_t u)
{
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static uint32_t bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static void test_rounding(void **state)
{
    (void)state;
    static const struct {
        uint32_t in, out;
    } cases[] = {
        { 0x3f800000u, 0x3f800000u },   /* 1: already tf32 */
        { 0x3f800fffu, 0x3f800000u },   /* just below half an ulp: down */
        { 0x3f801000u, 0x3f802000u },   /* exactly half: away from zero */
        { 0xbf801000u, 0xbf802000u },   /* the same for a negative value */
        { 0x3f801001u, 0x3f802000u },   /* above half: up */
        { 0x3fffffffu, 0x40000000u },   /* the carry into the exponent */
        { 0x00000fffu, 0x00000000u },   /* a subnormal rounds like the rest */
        { 0x00000000u, 0x00000000u },
        { 0x80000000u, 0x80000000u },   /* -0 keeps its sign */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(bits(gf_round_tf32(from_bits(cases[i].in))), cases[i].out);
    assert_true(isinf(gf_round_tf32(INFINITY)) && gf_round_tf32(-INFINITY) < 0);
    assert_int_equal(bits(gf_round_tf32(from_bits(0x7fc01234u))), 0x7fc01234u);   /* NaN as is */
    assert_int_equal(bits(gf_round_tf32(from_bits(0x7f7fffffu))), 0x7f800000u);   /* the largest float rounds up to infinity */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
