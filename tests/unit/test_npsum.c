/* test_npsum.c — sums in numpy's pairwise order, bit for bit: expected
 * values printed by numpy 1.24's np.add.reduce on the same arrays (they
 * differ from a plain left-to-right sum in the last bits, which the
 * float64 cases check too). */
#include "diar/cluster/npsum.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

static void test_against_numpy(void **state)
{
    (void)state;
    static const struct {
        size_t n;
        double f64;   /* np.add.reduce(a) */
        double f32;   /* np.add.reduce(a.astype(np.float32)) */
        double seq;   /* sum(a.tolist()) */
    } cases[] = {
        { 5, -92.06125766547018, -92.06121826171875, -92.06125766547018 },
        { 100, 1413.844883962207, 1413.8450927734375, 1413.844883962207 },
        { 256, 444.34176033039125, 444.3416748046875, 444.34176033039137 },
        { 1000, 5407.426953901293, 5407.4267578125, 5407.4269539012885 },
        { 3001, 45379.56924404557, 45379.5703125, 45379.56924404558 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = cases[c].n;
        double *a = malloc(n * sizeof *a);
        float *f = malloc(n * sizeof *f);
        double seq = 0.0;
        for (size_t i = 0; i < n; i++) {
            a[i] = sin((double)i * 1.3) * 1e3 + (double)i * 0.01;
            f[i] = (float)a[i];
            seq += a[i];
        }
        assert_true(gf_npsum_f64(a, n, 1) == cases[c].f64);
        assert_true((double)gf_npsum_f32(f, n, 1) == cases[c].f32);
        assert_true(seq == cases[c].seq);
        free(a);
        free(f);
    }
}

static void test_stride(void **state)
{
    (void)state;
    double m[300 * 2];
    for (size_t i = 0; i < 300; i++) {
        m[2 * i] = 1.0 / (double)(i + 1);
        m[2 * i + 1] = 1e9;
    }
    double col[300];
    for (size_t i = 0; i < 300; i++)
        col[i] = m[2 * i];
    assert_true(gf_npsum_f64(m, 300, 2) == gf_npsum_f64(col, 300, 1));
    assert_true(gf_npsum_f64(m, 0, 2) == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_numpy),
        cmocka_unit_test(test_stride),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
