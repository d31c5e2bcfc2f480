/* lsa.c — rectangular linear sum assignment by shortest augmenting paths
 * (lsa.h). Works on a problem with at least as many columns as rows
 * (transposing otherwise), costs shifted to be non-negative; each row in
 * turn grows a Dijkstra-like search over the columns not yet reached, in
 * decreasing column order, preferring on equal path cost a column that is
 * still free; the dual variables are updated and the path flipped. */
#include "diar/cluster/lsa.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>

static long augment(size_t nc, const double *cost, const double *u, const double *v, long *path,
                    const long *row4col, double *spc, long i, bool *SR, bool *SC, long *remaining,
                    size_t nr, double *p_min)
{
    double minval = 0.0;
    size_t n_rem = nc;
    for (size_t it = 0; it < nc; it++)
        remaining[it] = (long)(nc - it - 1);
    for (size_t r = 0; r < nr; r++)
        SR[r] = false;
    for (size_t j = 0; j < nc; j++) {
        SC[j] = false;
        spc[j] = INFINITY;
    }
    long sink = -1;
    while (sink == -1) {
        long index = -1;
        double lowest = INFINITY;
        SR[i] = true;
        for (size_t it = 0; it < n_rem; it++) {
            long j = remaining[it];
            double r = minval + cost[(size_t)i * nc + (size_t)j] - u[i] - v[j];
            if (r < spc[j]) {
                path[j] = i;
                spc[j] = r;
            }
            if (spc[j] < lowest || (spc[j] == lowest && row4col[j] == -1)) {
                lowest = spc[j];
                index = (long)it;
            }
        }
        minval = lowest;
        if (index < 0 || minval == INFINITY)
            return -1;
        long j = remaining[index];
        if (row4col[j] == -1)
            sink = j;
        else
            i = row4col[j];
        SC[j] = true;
        remaining[index] = remaining[--n_rem];
    }
    *p_min = minval;
    return sink;
}

/* nr <= nc; col4row[nr] out. */
static int solve(const double *in, size_t nr, size_t nc, long *col4row)
{
    double mn = INFINITY;
    for (size_t i = 0; i < nr * nc; i++) {
        if (!isfinite(in[i]))
            return -1;
        if (in[i] < mn)
            mn = in[i];
    }
    double *cost = gf_malloc(nr * nc * sizeof *cost);
    for (size_t i = 0; i < nr * nc; i++)
        cost[i] = in[i] - mn;
    double *u = gf_calloc(nr, sizeof *u), *v = gf_calloc(nc, sizeof *v);
    double *spc = gf_malloc(nc * sizeof *spc);
    long *path = gf_malloc(nc * sizeof *path), *row4col = gf_malloc(nc * sizeof *row4col);
    long *remaining = gf_malloc(nc * sizeof *remaining);
    bool *SR = gf_malloc(nr * sizeof *SR), *SC = gf_malloc(nc * sizeof *SC);
    for (size_t j = 0; j < nc; j++) {
        path[j] = -1;
        row4col[j] = -1;
    }
    for (size_t i = 0; i < nr; i++)
        col4row[i] = -1;
    int rc = 0;
    for (size_t cur = 0; cur < nr; cur++) {
        double minval;
        long sink = augment(nc, cost, u, v, path, row4col, spc, (long)cur, SR, SC, remaining, nr,
                            &minval);
        if (sink < 0) {
            rc = -1;
            break;
        }
        u[cur] += minval;
        for (size_t i = 0; i < nr; i++)
            if (SR[i] && i != cur)
                u[i] += minval - spc[col4row[i]];
        for (size_t j = 0; j < nc; j++)
            if (SC[j])
                v[j] -= minval - spc[j];
        long j = sink;
        for (;;) {
            long i = path[j];
            row4col[j] = i;
            long t = col4row[i];
            col4row[i] = j;
            j = t;
            if ((size_t)i == cur)
                break;
        }
    }
    free(SC);
    free(SR);
    free(remaining);
    free(row4col);
    free(path);
    free(spc);
    free(v);
    free(u);
    free(cost);
    return rc;
}

int gf_lsa_solve(const double *cost, size_t nr, size_t nc, bool maximize, int *col_for_row)
{
    for (size_t i = 0; i < nr; i++)
        col_for_row[i] = -1;
    if (nr == 0 || nc == 0)
        return 0;
    bool transpose = nc < nr;
    size_t r = transpose ? nc : nr, c = transpose ? nr : nc;
    double *m = gf_malloc(nr * nc * sizeof *m);
    for (size_t i = 0; i < nr; i++)
        for (size_t j = 0; j < nc; j++) {
            double x = maximize ? -cost[i * nc + j] : cost[i * nc + j];
            if (transpose)
                m[j * nr + i] = x;
            else
                m[i * nc + j] = x;
        }
    long *c4r = gf_malloc(r * sizeof *c4r);
    int rc = solve(m, r, c, c4r);
    if (rc == 0) {
        for (size_t i = 0; i < r; i++) {
            if (transpose)
                col_for_row[c4r[i]] = (int)i;
            else
                col_for_row[i] = (int)c4r[i];
        }
    }
    free(c4r);
    free(m);
    return rc;
}
