/* spectral.c — NME-SC spectral clustering with an estimated cluster count
 * (spectral.h).
 *
 * The affinity is binarised per row (each row's p nearest rows by cosine),
 * which makes the Laplacian's spectrum depend on the graph's structure
 * rather than on how the embedding space scales similarities: a recording's
 * speakers show up as nearly disconnected groups, one eigenvalue near zero
 * each. p trades connectivity within a speaker against leaks between them;
 * the candidate with the best ratio of p to the normalised largest eigengap
 * wins. LAPACK (dsyevr, through its Fortran symbol as plda.c does) gives the
 * eigenvalues; k-means (diar/cluster/assign.h, fixed seed) the labels. */
#include "diar/cluster/spectral.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/assign.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void dsyevr_(const char *jobz, const char *range, const char *uplo, const int *n, double *a,
             const int *lda, const double *vl, const double *vu, const int *il, const int *iu,
             const double *abstol, int *m, double *w, double *z, const int *ldz, int *isuppz,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info,
             size_t jobz_len, size_t range_len, size_t uplo_len);

#define SEARCH_ROWS 600         /* default rows of the p search */
#define MAX_ROWS 4000           /* default rows clustered; more: landmarks */
#define SEARCH_CANDIDATES 20    /* p values tried at most */
#define MAX_P_FRACTION 0.25     /* p at most this share of the rows */
#define SAME_DIRECTION 1e-9     /* 1 - cosine under which all rows count as one */
#define KMEANS_INIT 10          /* k-means restarts on the eigenvectors */
#define KMEANS_SEED 20261202u   /* their fixed seed */

gf_spectral_opts gf_spectral_defaults(void)
{
    return (gf_spectral_opts){ .min_speakers = 1, .max_speakers = GF_SPECTRAL_MAX_SPEAKERS,
                               .min_rows = 1, .search_rows = SEARCH_ROWS,
                               .max_rows = MAX_ROWS };
}

/* a row's neighbour while its neighbours are sorted */
typedef struct {
    const double *s;   /* the row's similarities */
    int i;             /* this neighbour's index in them */
} cand;

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->s[x->i] != y->s[y->i])
        return x->s[x->i] < y->s[y->i] ? 1 : -1;
    return (x->i > y->i) - (x->i < y->i);
}

/* ord (n x q): for each row the q other rows of largest similarity in S
 * (row stride ld; the n rows picked by idx, or the first n when idx is
 * NULL), ties to the lower index: a total order, so that the neighbours do
 * not depend on how qsort breaks ties. */
static void nearest(const double *S, size_t ld, const size_t *idx, size_t n, size_t q, int *ord)
{
    double *row = gf_malloc(n * sizeof *row);
    cand *c = gf_malloc(n * sizeof *c);
    for (size_t i = 0; i < n; i++) {
        size_t ri = idx ? idx[i] : i, m = 0;
        for (size_t j = 0; j < n; j++)
            row[j] = S[ri * ld + (idx ? idx[j] : j)];
        for (size_t j = 0; j < n; j++)
            if (j != i)
                c[m++] = (cand){ row, (int)j };
        qsort(c, m, sizeof *c, cmp_cand);
        for (size_t t = 0; t < q; t++)
            ord[i * q + t] = c[t].i;
    }
    free(row);
    free(c);
}

/* L = D - (A + A^T) / 2 of the graph where each row links its p nearest
 * (ord, q per row, p <= q). */
static void laplacian(const int *ord, size_t n, size_t q, size_t p, double *L)
{
    memset(L, 0, n * n * sizeof *L);
    for (size_t i = 0; i < n; i++)
        for (size_t t = 0; t < p; t++) {
            size_t j = (size_t)ord[i * q + t];
            L[i * n + j] -= 0.5;
            L[j * n + i] -= 0.5;
        }
    for (size_t i = 0; i < n; i++) {
        double d = 0.0;
        for (size_t j = 0; j < n; j++)
            if (j != i)
                d -= L[i * n + j];
        L[i * n + i] = d;
    }
}

/* Eigenvalues (ascending) of the symmetric L (n x n, destroyed; w has n
 * entries, which LAPACK needs whatever it is asked for): all of them
 * into w when z is NULL, else the iu smallest into w and their vectors into
 * z (column-major n x iu: vector t at z + t * n). Returns 0 or GF_EIO. */
static int eig(double *L, size_t n, int iu, double *w, double *z)
{
    int N = (int)n, lda = N, il = 1, m = 0, info = 0, lwork = -1, liwork = -1, iwq = 0;
    double vl = 0.0, vu = 0.0, abstol = 0.0, wq = 0.0;
    const char *jobz = z ? "V" : "N", *range = z ? "I" : "A";
    int ldz = z ? N : 1;
    int *isuppz = gf_malloc(2 * n * sizeof *isuppz);
    double zdummy = 0.0;
    dsyevr_(jobz, range, "L", &N, L, &lda, &vl, &vu, &il, &iu, &abstol, &m, w, z ? z : &zdummy,
            &ldz, isuppz, &wq, &lwork, &iwq, &liwork, &info, 1, 1, 1);
    int rc = 0;
    if (info == 0) {
        lwork = (int)wq;
        liwork = iwq;
        double *work = gf_malloc((size_t)lwork * sizeof *work);
        int *iwork = gf_malloc((size_t)liwork * sizeof *iwork);
        dsyevr_(jobz, range, "L", &N, L, &lda, &vl, &vu, &il, &iu, &abstol, &m, w,
                z ? z : &zdummy, &ldz, isuppz, work, &lwork, iwork, &liwork, &info, 1, 1, 1);
        free(work);
        free(iwork);
    }
    if (info != 0 || (z && m != iu)) {
        GF_ERROR("spectral clustering: LAPACK dsyevr failed on %zu rows (info %d)", n, info);
        rc = GF_EIO;
    }
    free(isuppz);
    return rc;
}

/* The count among kmin..kmax (<= n - 1) at the largest gap of the ascending
 * eigenvalues w: k eigenvalues below the gap; ties to the smaller count. */
static size_t largest_gap(const double *w, size_t kmin, size_t kmax, double *gap)
{
    size_t k = kmin;
    double best = -INFINITY;
    for (size_t i = kmin; i <= kmax; i++) {
        double g = w[i] - w[i - 1];
        if (g > best) {
            best = g;
            k = i;
        }
    }
    *gap = best;
    return k;
}

/* The p search on n_s rows of S (idx): p of the smallest ratio p / (largest
 * gap / largest eigenvalue), as a share of the rows. */
static int search_p(const double *S, size_t ld, const size_t *idx, size_t n_s, size_t kmax,
                    double *share)
{
    size_t pmax = (size_t)(MAX_P_FRACTION * (double)n_s);
    if (pmax < 2)
        pmax = 2;
    if (pmax > n_s - 1)
        pmax = n_s - 1;
    size_t pmin = pmax >= 2 ? 2 : 1;
    int *ord = gf_malloc(n_s * pmax * sizeof *ord);
    nearest(S, ld, idx, n_s, pmax, ord);
    double *L = gf_malloc(n_s * n_s * sizeof *L), *w = gf_malloc(n_s * sizeof *w);
    size_t km = kmax < n_s - 1 ? kmax : n_s - 1, best_p = pmin;
    double best = INFINITY;
    int rc = 0;
    size_t span = pmax - pmin, steps = span + 1 < SEARCH_CANDIDATES ? span + 1 : SEARCH_CANDIDATES;
    for (size_t t = 0; t < steps; t++) {
        size_t p = pmin + (steps > 1 ? (t * span + (steps - 1) / 2) / (steps - 1) : 0);
        laplacian(ord, n_s, pmax, p, L);
        rc = eig(L, n_s, 0, w, NULL);
        if (rc)
            break;
        double gap;
        largest_gap(w, 1, km, &gap);
        double g = gap / (w[n_s - 1] + 1e-10);
        double r = g > 0.0 ? (double)p / g : INFINITY;
        if (r < best) {
            best = r;
            best_p = p;
        }
    }
    *share = (double)best_p / (double)n_s;
    free(ord);
    free(L);
    free(w);
    return rc;
}

/* The clustering proper of m unit rows u (m x dim) within kmin..kmax:
 * labels into lab (0..k-1 as k-means gives them). Returns k or a GF_E*. */
static int cluster_rows(const double *u, size_t m, size_t dim, const gf_spectral_opts *o,
                        size_t kmin, size_t kmax, int *lab)
{
    memset(lab, 0, m * sizeof *lab);
    double *S = gf_malloc(m * m * sizeof *S);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)m, (int)dim, 1.0, u,
                (int)dim, u, (int)dim, 0.0, S, (int)m);
    double lowest = 1.0;
    for (size_t i = 0; i < m * m; i++) {
        S[i] = S[i] > 1.0 ? 1.0 : S[i] < -1.0 ? -1.0 : S[i];
        lowest = S[i] < lowest ? S[i] : lowest;
    }
    int rc = 0;
    size_t k = 1;
    if (kmin > m)
        kmin = m;
    if (kmax > m - 1)
        kmax = m > 1 ? m - 1 : 1;
    /* a cluster the estimate counts needs min_rows rows (a forced count or
     * a lower bound goes first) */
    if (o->num_speakers <= 0 && o->min_rows > 1 && kmax > m / o->min_rows) {
        kmax = m / o->min_rows;
        kmax = kmax < 1 ? 1 : kmax;
    }
    if (kmax < kmin)
        kmax = kmin;
    /* one row, or rows all pointing the same way: nothing to split them by */
    if (m < 3 || lowest > 1.0 - SAME_DIRECTION) {
        k = m == 2 && kmin == 2 ? 2 : 1;
        if (k == 2)
            lab[1] = 1;
        goto out_free;
    }
    size_t n_s = o->search_rows && o->search_rows < m ? o->search_rows : m;
    if (n_s < 3)
        n_s = 3;
    size_t *idx = gf_malloc(n_s * sizeof *idx);
    for (size_t t = 0; t < n_s; t++)
        idx[t] = t * m / n_s;
    double share = 0.0;
    rc = search_p(S, m, idx, n_s, kmax, &share);
    free(idx);
    if (rc)
        goto out_free;
    size_t p = (size_t)floor(share * (double)m + 0.5);
    p = p < 1 ? 1 : p > m - 1 ? m - 1 : p;
    int *ord = gf_malloc(m * p * sizeof *ord);
    nearest(S, m, NULL, m, p, ord);
    double *L = gf_malloc(m * m * sizeof *L);
    laplacian(ord, m, p, p, L);
    free(ord);
    size_t iu = kmax + 1 < m ? kmax + 1 : m;
    /* dsyevr uses all n entries of w, whatever the eigenvalues asked for */
    double *w = gf_malloc(m * sizeof *w), *z = gf_malloc(m * iu * sizeof *z);
    rc = eig(L, m, (int)iu, w, z);
    free(L);
    if (rc == 0) {
        double gap;
        k = kmin == kmax || kmax >= iu ? kmin : largest_gap(w, kmin, kmax, &gap);
        if (k > 1) {
            double *y = gf_malloc(m * k * sizeof *y);
            for (size_t i = 0; i < m; i++)
                for (size_t t = 0; t < k; t++)
                    y[i * k + t] = z[t * m + i];
            gf_assign_kmeans(y, m, k, k, KMEANS_INIT, KMEANS_SEED, NULL, lab);
            free(y);
        }
    }
    free(w);
    free(z);
out_free:
    free(S);
    return rc ? rc : (int)k;
}

int gf_spectral_cluster(const float *x, size_t n, size_t dim, const gf_spectral_opts *opts,
                        int *labels)
{
    gf_spectral_opts o = opts ? *opts : gf_spectral_defaults();
    size_t kmin = o.min_speakers > 1 ? (size_t)o.min_speakers : 1;
    size_t kmax = o.max_speakers > 0 ? (size_t)o.max_speakers : GF_SPECTRAL_MAX_SPEAKERS;
    if (o.num_speakers > 0)
        kmin = kmax = (size_t)o.num_speakers;
    else if (kmin > kmax) {
        GF_ERROR("spectral clustering: min_speakers must be at most max_speakers (here %zu "
                 "and %zu)", kmin, kmax);
        return GF_EINVAL;
    }
    size_t max_rows = o.max_rows ? o.max_rows : MAX_ROWS;
    if (max_rows > 46340) {   /* LAPACK's int indexing of n x n */
        GF_ERROR("spectral clustering: max_rows %zu is more than LAPACK can index (46,340)",
                 max_rows);
        return GF_ETOOBIG;
    }
    /* the usable rows, unit length */
    size_t m = 0;
    size_t *row = gf_malloc((n ? n : 1) * sizeof *row);
    double *u = gf_malloc((n ? n : 1) * (dim ? dim : 1) * sizeof *u);
    for (size_t i = 0; i < n; i++) {
        labels[i] = -1;
        double norm = 0.0;
        for (size_t d = 0; d < dim; d++)
            norm += (double)x[i * dim + d] * x[i * dim + d];
        if (!isfinite(norm) || norm <= 0.0)
            continue;
        norm = sqrt(norm);
        for (size_t d = 0; d < dim; d++)
            u[m * dim + d] = x[i * dim + d] / norm;
        row[m++] = i;
    }
    int rc = 0;
    if (m == 0)
        goto out_free;
    int *lab = gf_malloc(m * sizeof *lab);
    if (m <= max_rows) {
        rc = cluster_rows(u, m, dim, &o, kmin, kmax, lab);
    } else {
        /* evenly spaced landmarks are clustered; every other row joins the
         * cluster of the nearest landmark centroid (cosine) */
        double *lu = gf_malloc(max_rows * dim * sizeof *lu);
        int *ll = gf_malloc(max_rows * sizeof *ll);
        for (size_t t = 0; t < max_rows; t++)
            memcpy(lu + t * dim, u + (t * m / max_rows) * dim, dim * sizeof *lu);
        rc = cluster_rows(lu, max_rows, dim, &o, kmin, kmax, ll);
        if (rc > 0) {
            size_t k = (size_t)rc;
            double *cent = gf_calloc(k * dim, sizeof *cent);
            for (size_t t = 0; t < max_rows; t++)
                for (size_t d = 0; d < dim; d++)
                    cent[(size_t)ll[t] * dim + d] += lu[t * dim + d];
            for (size_t i = 0; i < m; i++) {
                double best = -INFINITY;
                lab[i] = 0;
                for (size_t c = 0; c < k; c++) {
                    double dot = 0.0, nn = 0.0;
                    for (size_t d = 0; d < dim; d++) {
                        dot += u[i * dim + d] * cent[c * dim + d];
                        nn += cent[c * dim + d] * cent[c * dim + d];
                    }
                    dot = nn > 0.0 ? dot / sqrt(nn) : -INFINITY;
                    if (dot > best) {
                        best = dot;
                        lab[i] = (int)c;
                    }
                }
            }
            for (size_t t = 0; t < max_rows; t++)   /* the landmarks keep their own */
                lab[t * m / max_rows] = ll[t];
            free(cent);
        }
        free(lu);
        free(ll);
    }
    if (rc > 0) {
        /* number the clusters by first appearance */
        int *map = gf_malloc((size_t)rc * sizeof *map), next = 0;
        for (int c = 0; c < rc; c++)
            map[c] = -1;
        for (size_t i = 0; i < m; i++) {
            if (map[lab[i]] < 0)
                map[lab[i]] = next++;
            labels[row[i]] = map[lab[i]];
        }
        free(map);
        rc = next;
    }
    free(lab);
out_free:
    free(row);
    free(u);
    return rc;
}
