/* fixtures.h — helpers for tests that compare with the community-1
 * fixtures (../shared/data/fixtures/community-1): load an array as
 * float/double/int64, and compare with a tolerance, printing the first
 * mismatches and the largest error. Header-only, included by test_*.c. */
#ifndef GF_TEST_FIXTURES_H
#define GF_TEST_FIXTURES_H

#include "common/error.h"
#include "diar/io/npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define FIXDIR "../shared/data/fixtures/community-1/"
#define PLDADIR "../shared/data/community-1/plda"

/* Load FIXDIR/name; abort the test on failure. Caller destroys. */
static inline gf_npy_array *fx_load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, FIXDIR "%s", name);
    gf_npy_array *a = NULL;
    if (gf_npy_load(path, &a) != 0) {
        fprintf(stderr, "cannot load fixture %s\n", path);
        abort();
    }
    return a;
}

/* Count elements where |got - want| > atol + rtol*|want| (NaN equals NaN),
 * printing the first few and the largest error. */
static inline size_t fx_compare(const char *what, const double *got, const double *want,
                                size_t n, double atol, double rtol)
{
    size_t bad = 0;
    double worst = 0.0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i]) && isnan(want[i]))
            continue;
        double err = fabs(got[i] - want[i]);
        double lim = atol + rtol * fabs(want[i]);
        if (isnan(err) || err > lim) {
            if (bad < 8)
                fprintf(stderr, "%s: mismatch at %zu: got %.17g, want %.17g\n", what, i, got[i],
                        want[i]);
            bad++;
        }
        if (err > worst) {
            worst = err;
            worst_i = i;
        }
    }
    fprintf(stderr, "%s: %zu elements, %zu mismatches, largest error %.3g at %zu\n", what, n, bad,
            worst, worst_i);
    return bad;
}

#endif
