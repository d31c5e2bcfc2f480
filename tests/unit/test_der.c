/* test_der.c — diarization error rate on cases computed by hand, and the
 * assignment it relies on (diar/cluster/lsa, maximising) against brute force. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/score/der.h"
#include "diar/cluster/lsa.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define T(u, s, a, b) { (u), (s), (a), (b) }

static const gf_der_options plain = { 0.0, false };

/* Score and return the single file's report (asserts one file). */
static gf_der_report *score(const gf_der_turn *r, size_t nr, const gf_der_turn *h, size_t nh,
                            const gf_der_options *opt)
{
    gf_der_report *rep = NULL;
    assert_int_equal(gf_der_score(r, nr, h, nh, NULL, 0, false, opt, &rep), 0);
    assert_non_null(rep);
    return rep;
}

static void expect(const gf_der_components *c, double total, double missed, double fa,
                   double conf, double der)
{
    assert_float_equal(c->total, total, 1e-9);
    assert_float_equal(c->missed, missed, 1e-9);
    assert_float_equal(c->false_alarm, fa, 1e-9);
    assert_float_equal(c->confusion, conf, 1e-9);
    assert_float_equal(gf_der_rate(c), der, 1e-9);
}

static const char *mapped(const gf_der_file *f, const char *hyp)
{
    for (size_t i = 0; i < f->n_map; i++)
        if (strcmp(f->map_hyp[i], hyp) == 0)
            return f->map_ref[i];
    return NULL;
}

/* The example in pyannote.metrics' own tests: DER 16/31. */
static void test_pyannote_example(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("f", "A", 0, 10), T("f", "B", 12, 20), T("f", "A", 24, 27),
                        T("f", "C", 30, 40) };
    gf_der_turn h[] = { T("f", "a", 2, 13), T("f", "d", 13, 14), T("f", "b", 14, 20),
                        T("f", "c", 22, 38), T("f", "d", 38, 40) };
    gf_der_report *rep = score(r, 4, h, 5, &plain);
    assert_int_equal(rep->n_files, 1);
    expect(&rep->files[0].c, 31, 2, 7, 7, 16.0 / 31);
    assert_float_equal(rep->files[0].c.correct, 22, 1e-9);
    assert_int_equal(rep->files[0].n_map, 3);
    assert_string_equal(mapped(&rep->files[0], "a"), "A");
    assert_string_equal(mapped(&rep->files[0], "b"), "B");
    assert_string_equal(mapped(&rep->files[0], "c"), "C");
    assert_null(mapped(&rep->files[0], "d"));
    gf_der_report_destroy(&rep);
    gf_der_report_destroy(&rep);

    /* Collar 1 s: 7 s around the 8 boundaries leave 27 s of reference. */
    gf_der_options c1 = { 1.0, false };
    rep = score(r, 4, h, 5, &c1);
    expect(&rep->files[0].c, 27, 1.5, 4.5, 5, 11.0 / 27);
    gf_der_report_destroy(&rep);
}

/* Two reference speakers overlap for 5 s; the hypothesis has one there. */
static void test_overlap(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("f", "A", 0, 10), T("f", "B", 5, 15) };
    gf_der_turn h[] = { T("f", "x", 0, 10), T("f", "y", 10, 15) };
    gf_der_report *rep = score(r, 2, h, 2, &plain);
    /* [5,10] counts twice in the total and misses B there. */
    expect(&rep->files[0].c, 20, 5, 0, 0, 0.25);
    gf_der_report_destroy(&rep);

    gf_der_options skip = { 0.0, true };
    rep = score(r, 2, h, 2, &skip);
    expect(&rep->files[0].c, 10, 0, 0, 0, 0.0);
    gf_der_report_destroy(&rep);

    /* The hypothesis speaks where nobody does: false alarm, and speaks
     * twice where the reference has one speaker. */
    gf_der_turn h2[] = { T("f", "x", 0, 10), T("f", "y", 10, 15), T("f", "z", 0, 2),
                         T("f", "y", 16, 17) };
    rep = score(r, 2, h2, 4, &plain);
    /* extent [0,17]: FA 2 ([0,2] second speaker) + 1 ([16,17]); miss 5. */
    expect(&rep->files[0].c, 20, 5, 3, 0, 8.0 / 20);
    gf_der_report_destroy(&rep);
}

/* The same speaker in two overlapping turns counts twice (as pyannote). */
static void test_self_overlap(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("f", "A", 0, 10), T("f", "A", 5, 10) };
    gf_der_turn h[] = { T("f", "a", 0, 10) };
    gf_der_report *rep = score(r, 2, h, 1, &plain);
    expect(&rep->files[0].c, 15, 5, 0, 0, 5.0 / 15);
    gf_der_report_destroy(&rep);
}

static void test_empty_sides(void **state)
{
    (void)state;
    gf_der_turn h[] = { T("f", "x", 1, 3) };
    gf_der_report *rep = score(NULL, 0, h, 1, &plain);
    /* No reference speech: DER is 1 when there is any error (pyannote). */
    expect(&rep->files[0].c, 0, 0, 2, 0, 1.0);
    gf_der_report_destroy(&rep);

    gf_der_turn r[] = { T("f", "A", 0, 4), T("f", "B", 6, 8) };
    rep = score(r, 2, NULL, 0, &plain);
    expect(&rep->files[0].c, 6, 6, 0, 0, 1.0);
    assert_int_equal(rep->files[0].n_map, 0);
    gf_der_report_destroy(&rep);

    rep = score(NULL, 0, NULL, 0, &plain);
    assert_int_equal(rep->n_files, 0);
    expect(&rep->total, 0, 0, 0, 0, 0.0);
    gf_der_report_destroy(&rep);

    /* Zero-length turns are ignored. */
    gf_der_turn z[] = { T("f", "A", 3, 3) };
    rep = score(z, 1, z, 1, &plain);
    expect(&rep->files[0].c, 0, 0, 0, 0, 0.0);
    gf_der_report_destroy(&rep);
}

static void test_collar(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("f", "A", 0, 10) };
    gf_der_turn h[] = { T("f", "a", 1, 10) };
    gf_der_report *rep = score(r, 1, h, 1, &plain);
    expect(&rep->files[0].c, 10, 1, 0, 0, 0.1);
    gf_der_report_destroy(&rep);
    /* Collar 2 s: +-1 s around 0 and 10; scored [1, 9]. */
    gf_der_options c2 = { 2.0, false };
    rep = score(r, 1, h, 1, &c2);
    expect(&rep->files[0].c, 8, 0, 0, 0, 0.0);
    gf_der_report_destroy(&rep);
    /* Collar 1 s: scored [0.5, 9.5]; 0.5 s missed. */
    gf_der_options c1 = { 1.0, false };
    rep = score(r, 1, h, 1, &c1);
    expect(&rep->files[0].c, 9, 0.5, 0, 0, 0.5 / 9);
    gf_der_report_destroy(&rep);
    /* Collars come from the reference only: a hypothesis boundary at 3 is
     * scored. */
    gf_der_turn h2[] = { T("f", "a", 0, 3), T("f", "b", 3, 10) };
    rep = score(r, 1, h2, 2, &c1);
    expect(&rep->files[0].c, 9, 0, 0, 2.5, 2.5 / 9);
    gf_der_report_destroy(&rep);

    gf_der_options bad = { -1.0, false };
    gf_der_report *none = NULL;
    assert_int_equal(gf_der_score(r, 1, h, 1, NULL, 0, false, &bad, &none), GF_EINVAL);
    assert_null(none);
}

/* Greedy would map x to A (10 s) and leave y nothing; the optimum maps
 * x -> B and y -> A for 18 s of agreement. */
static void test_hungarian_not_greedy(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("f", "A", 0, 19), T("f", "B", 19, 28) };
    gf_der_turn h[] = { T("f", "x", 0, 10), T("f", "y", 10, 19), T("f", "x", 19, 28) };
    gf_der_report *rep = score(r, 2, h, 3, &plain);
    expect(&rep->files[0].c, 28, 0, 0, 10, 10.0 / 28);
    assert_string_equal(mapped(&rep->files[0], "x"), "B");
    assert_string_equal(mapped(&rep->files[0], "y"), "A");
    gf_der_report_destroy(&rep);
}

static void test_multiple_files(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("one", "A", 0, 10), T("two", "A", 0, 4), T("one", "B", 5, 15),
                        T("two", "B", 4, 8) };
    gf_der_turn h[] = { T("two", "a", 0, 5), T("one", "x", 0, 10), T("one", "y", 10, 15),
                        T("three", "q", 2, 3) };
    gf_der_report *rep = score(r, 4, h, 4, &plain);
    assert_int_equal(rep->n_files, 3);
    assert_string_equal(rep->files[0].uri, "one");
    assert_string_equal(rep->files[1].uri, "two");
    assert_string_equal(rep->files[2].uri, "three");
    expect(&rep->files[0].c, 20, 5, 0, 0, 0.25);
    expect(&rep->files[1].c, 8, 3, 0, 1, 0.5);
    expect(&rep->files[2].c, 0, 0, 1, 0, 1.0);
    /* The total sums the components, not the rates. */
    expect(&rep->total, 28, 8, 1, 1, 10.0 / 28);
    gf_der_report_destroy(&rep);
}

static void test_uem(void **state)
{
    (void)state;
    gf_der_turn r[] = { T("f", "A", 0, 10) };
    gf_der_turn h[] = { T("f", "a", 5, 15) };
    gf_der_report *rep = score(r, 1, h, 1, &plain);
    expect(&rep->files[0].c, 10, 5, 5, 0, 1.0);
    gf_der_report_destroy(&rep);

    gf_der_span u[] = { { "f", 0, 12 } };
    assert_int_equal(gf_der_score(r, 1, h, 1, u, 1, true, &plain, &rep), 0);
    expect(&rep->files[0].c, 10, 5, 2, 0, 0.7);
    gf_der_report_destroy(&rep);

    /* Two spans, overlapping ones merged: [2,4] and [3,6] and [8,20]. */
    gf_der_span u2[] = { { "f", 2, 4 }, { "f", 8, 20 }, { "f", 3, 6 } };
    assert_int_equal(gf_der_score(r, 1, h, 1, u2, 3, true, &plain, &rep), 0);
    /* reference in [2,6]+[8,10] = 6; missed [2,5] = 3; FA [10,15] = 5. */
    expect(&rep->files[0].c, 6, 3, 5, 0, 8.0 / 6);
    gf_der_report_destroy(&rep);

    /* A UEM that does not name a scored file is an error. */
    gf_der_span u3[] = { { "g", 0, 12 } };
    assert_int_equal(gf_der_score(r, 1, h, 1, u3, 1, true, &plain, &rep), GF_EINVAL);
    assert_null(rep);
    /* An empty UEM file scores nothing, so any file is unlisted. */
    assert_int_equal(gf_der_score(r, 1, h, 1, NULL, 0, true, &plain, &rep), GF_EINVAL);

    gf_der_turn bad[] = { T("f", "A", 0, NAN) };
    assert_int_equal(gf_der_score(bad, 1, h, 1, NULL, 0, false, &plain, &rep), GF_EINVAL);
}

/* Best assignment value by trying every injective map rows -> cols. */
static double brute(const double *w, size_t rows, size_t cols, size_t r, unsigned used)
{
    if (r == rows)
        return 0;
    double best = brute(w, rows, cols, r + 1, used); /* row r unassigned */
    for (size_t c = 0; c < cols; c++) {
        if (used & (1u << c))
            continue;
        double v = w[r * cols + c] + brute(w, rows, cols, r + 1, used | (1u << c));
        if (v > best)
            best = v;
    }
    return best;
}

static void test_assign_random(void **state)
{
    (void)state;
    srand(4);
    for (int trial = 0; trial < 300; trial++) {
        size_t rows = 1 + (size_t)(rand() % 6), cols = 1 + (size_t)(rand() % 6);
        double w[36];
        for (size_t i = 0; i < rows * cols; i++)
            w[i] = (rand() % 4 == 0) ? 0.0 : (double)(rand() % 1000) / 10.0;
        int col[6];
        assert_int_equal(gf_lsa_solve(w, rows, cols, true, col), 0);
        double got = 0;
        unsigned seen = 0;
        for (size_t r = 0; r < rows; r++) {
            if (col[r] < 0)
                continue;
            assert_true((size_t)col[r] < cols);
            assert_false(seen & (1u << col[r]));
            seen |= 1u << col[r];
            got += w[r * cols + (size_t)col[r]];
        }
        assert_float_equal(got, brute(w, rows, cols, 0, 0), 1e-9);
    }
}

int main(void)
{
    gf_log_init("test_der", GF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyannote_example),
        cmocka_unit_test(test_overlap),
        cmocka_unit_test(test_self_overlap),
        cmocka_unit_test(test_empty_sides),
        cmocka_unit_test(test_collar),
        cmocka_unit_test(test_hungarian_not_greedy),
        cmocka_unit_test(test_multiple_files),
        cmocka_unit_test(test_uem),
        cmocka_unit_test(test_assign_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
