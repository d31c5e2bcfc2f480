/* test_lsa.c — linear sum assignment: hand-solved cases, rectangular both
 * ways, maximisation, scipy's tie convention (a constant matrix gives the
 * identity), and random matrices against brute force. */
#include "diar/cluster/lsa.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

static void test_square(void **state)
{
    (void)state;
    const double c[9] = { 4, 1, 3, 2, 0, 5, 3, 2, 2 };   /* scipy docs example: 5 */
    int col[3];
    assert_int_equal(gf_lsa_solve(c, 3, 3, false, col), 0);
    assert_int_equal(col[0], 1);
    assert_int_equal(col[1], 0);
    assert_int_equal(col[2], 2);
    assert_int_equal(gf_lsa_solve(c, 3, 3, true, col), 0);
    double tot = c[col[0]] + c[3 + col[1]] + c[6 + col[2]];
    assert_true(tot == 11.0);   /* 4 + 5 + 2 */
}

static void test_rectangular_and_ties(void **state)
{
    (void)state;
    /* 3 speakers, 2 clusters, maximise: speaker 2 left out */
    const double s[6] = { 1.9, 1.2, 1.1, 1.8, 0.5, 0.4 };
    int col[3];
    assert_int_equal(gf_lsa_solve(s, 3, 2, true, col), 0);
    assert_int_equal(col[0], 0);
    assert_int_equal(col[1], 1);
    assert_int_equal(col[2], -1);
    /* 2 x 3 */
    const double w[6] = { 1, 5, 3, 2, 4, 0 };
    assert_int_equal(gf_lsa_solve(w, 2, 3, false, col), 0);
    assert_int_equal(col[0], 0);
    assert_int_equal(col[1], 2);
    /* constant matrix: identity, as scipy */
    const double k[9] = { 2, 2, 2, 2, 2, 2, 2, 2, 2 };
    assert_int_equal(gf_lsa_solve(k, 3, 3, true, col), 0);
    assert_int_equal(col[0], 0);
    assert_int_equal(col[1], 1);
    assert_int_equal(col[2], 2);
    const double bad[4] = { 1, NAN, 0, 1 };
    assert_int_equal(gf_lsa_solve(bad, 2, 2, false, col), -1);
}

static double best_brute(const double *c, int n, int m, int row, unsigned used)
{
    if (row == n)
        return 0.0;
    double best = INFINITY;
    for (int j = 0; j < m; j++)
        if (!(used & (1u << j))) {
            double v = c[row * m + j] + best_brute(c, n, m, row + 1, used | (1u << j));
            if (v < best)
                best = v;
        }
    return best;
}

static void test_random_against_brute_force(void **state)
{
    (void)state;
    srand(12345);
    for (int trial = 0; trial < 300; trial++) {
        int n = 1 + rand() % 5, m = n + rand() % 3;
        double c[5 * 7];
        for (int i = 0; i < n * m; i++)
            c[i] = (double)(rand() % 1000) / 37.0 - 7.0;
        int col[5];
        assert_int_equal(gf_lsa_solve(c, (size_t)n, (size_t)m, false, col), 0);
        double tot = 0.0;
        unsigned used = 0;
        for (int i = 0; i < n; i++) {
            assert_true(col[i] >= 0 && col[i] < m);
            assert_false(used & (1u << col[i]));
            used |= 1u << col[i];
            tot += c[i * m + col[i]];
        }
        assert_true(fabs(tot - best_brute(c, n, m, 0, 0)) < 1e-9);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_square),
        cmocka_unit_test(test_rectangular_and_ties),
        cmocka_unit_test(test_random_against_brute_force),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
