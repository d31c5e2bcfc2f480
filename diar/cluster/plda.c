/* plda.c — x-vector transform and PLDA (plda.h).
 *
 * LAPACK is called through its Fortran symbols (dgesv_, dsygvd_), which the
 * linked OpenBLAS exports; no LAPACKE needed. Matrices are handed to LAPACK
 * transposed into column order, so that LAPACK sees the same matrices and
 * triangles as numpy/scipy give it. Norms use numpy's summation order
 * (npsum.h); matrix products go through cblas_dgemm as numpy's do. */
#include "diar/cluster/plda.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/npsum.h"
#include "diar/io/npy.h"
#include "diar/io/npz.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* LAPACK (Fortran calling convention, trailing hidden string lengths). */
void dgesv_(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b,
            const int *ldb, int *info);
void dsygvd_(const int *itype, const char *jobz, const char *uplo, const int *n, double *a,
             const int *lda, double *b, const int *ldb, double *w, double *work,
             const int *lwork, int *iwork, const int *liwork, int *info, size_t jobz_len,
             size_t uplo_len);

struct gf_plda {
    size_t D;         /* embedding dimension (256) */
    size_t L;         /* LDA / PLDA dimension (128) */
    double *mean1;    /* [D] */
    double *mean2;    /* [L] */
    double *lda;      /* [D x L] */
    double *mu;       /* [L] */
    double *rot;      /* [L x L]: row r = eigenvector of the r-th largest eigenvalue */
    double *phi;      /* [L] eigenvalues, decreasing */
};

static double *take(const char *file, const gf_npz *z, const char *key, int ndim,
                    const size_t *shape, int *rc)
{
    const gf_npy_array *a = gf_npz_get(z, key);
    if (!a) {
        GF_ERROR("%s: no array '%s'", file, key);
        *rc = GF_EINVAL;
        return NULL;
    }
    if (a->dtype != GF_NPY_F32 && a->dtype != GF_NPY_F64) {
        GF_ERROR("%s: '%s' is %s, expected a float array", file, key, gf_npy_dtype_name(a->dtype));
        *rc = GF_EINVAL;
        return NULL;
    }
    char name[512];
    snprintf(name, sizeof name, "%s['%s']", file, key);
    if (gf_npy_check_shape(name, a, ndim, shape)) {
        *rc = GF_EINVAL;
        return NULL;
    }
    double *d = gf_npy_to_f64(a);
    for (size_t i = 0; i < a->count; i++) {
        if (!isfinite(d[i])) {
            GF_ERROR("%s: non-finite value at element %zu", name, i);
            free(d);
            *rc = GF_EINVAL;
            return NULL;
        }
    }
    return d;
}

/* In-place inverse of a row-major n x n matrix via LU (numpy.linalg.inv). */
static int invert(double *a, int n)
{
    double *t = gf_malloc((size_t)n * (size_t)n * sizeof *t);
    double *id = gf_calloc((size_t)n * (size_t)n, sizeof *id);
    int *piv = gf_malloc((size_t)n * sizeof *piv);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            t[(size_t)j * (size_t)n + (size_t)i] = a[(size_t)i * (size_t)n + (size_t)j];
    for (int i = 0; i < n; i++)
        id[(size_t)i * (size_t)n + (size_t)i] = 1.0;
    int info = 0;
    dgesv_(&n, &n, t, &n, piv, id, &n, &info);
    if (info == 0)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                a[(size_t)i * (size_t)n + (size_t)j] = id[(size_t)j * (size_t)n + (size_t)i];
    free(piv);
    free(id);
    free(t);
    return info;
}

int gf_plda_load(const char *dir, gf_plda **out)
{
    *out = NULL;
    char *xf = gf_strfmt("%s/xvec_transform.npz", dir);
    char *pf = gf_strfmt("%s/plda.npz", dir);
    gf_npz *xz = NULL, *pz = NULL;
    gf_plda *p = gf_calloc(1, sizeof *p);
    int rc = gf_npz_load(xf, &xz);
    if (rc)
        goto fail;
    rc = gf_npz_load(pf, &pz);
    if (rc)
        goto fail;
    const gf_npy_array *lda = gf_npz_get(xz, "lda");
    if (!lda || lda->ndim != 2 || lda->shape[0] == 0 || lda->shape[1] == 0
        || lda->shape[1] > lda->shape[0]) {
        GF_ERROR("%s: 'lda' missing or not a D x L matrix with L <= D", xf);
        rc = GF_EINVAL;
        goto fail;
    }
    p->D = lda->shape[0];
    p->L = lda->shape[1];
    size_t sD[] = { p->D }, sL[] = { p->L }, sDL[] = { p->D, p->L }, sLL[] = { p->L, p->L };
    double *tr = NULL, *psi = NULL;
    /* each take: the array, or NULL with rc set (logged) */
    if (!(p->mean1 = take(xf, xz, "mean1", 1, sD, &rc)) ||
        !(p->mean2 = take(xf, xz, "mean2", 1, sL, &rc)) ||
        !(p->lda = take(xf, xz, "lda", 2, sDL, &rc)) ||
        !(p->mu = take(pf, pz, "mu", 1, sL, &rc)) ||
        !(tr = take(pf, pz, "tr", 2, sLL, &rc)) ||
        !(psi = take(pf, pz, "psi", 1, sL, &rc)))
        goto fail_tr;
    int L = (int)p->L;
    size_t LL = p->L * p->L;
    for (size_t i = 0; i < p->L; i++) {
        if (psi[i] == 0.0) {
            GF_ERROR("%s['psi']: zero at element %zu", pf, i);
            rc = GF_EINVAL;
            goto fail_tr;
        }
    }
    /* W = inv(tr^T tr); B = inv((tr^T / psi) tr) */
    double *W = gf_malloc(LL * sizeof *W), *B = gf_malloc(LL * sizeof *B);
    double *M = gf_malloc(LL * sizeof *M);
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, L, L, L, 1.0, tr, L, tr, L, 0.0, W, L);
    for (size_t i = 0; i < p->L; i++)
        for (size_t j = 0; j < p->L; j++)
            M[i * p->L + j] = tr[j * p->L + i] / psi[j];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, L, L, 1.0, M, L, tr, L, 0.0, B, L);
    int i1 = invert(W, L), i2 = invert(B, L);
    if (i1 || i2) {
        GF_ERROR("%s: singular PLDA transform 'tr' (LAPACK dgesv info %d)", pf, i1 ? i1 : i2);
        rc = GF_EINVAL;
        goto fail_mats;
    }
    /* eigh(B, W): scipy hands LAPACK the matrices in column order and the
     * lower triangle; transposing our row-major copies does the same. */
    for (size_t i = 0; i < p->L; i++)
        for (size_t j = 0; j < p->L; j++) {
            M[j * p->L + i] = B[i * p->L + j];
        }
    memcpy(B, M, LL * sizeof *B);
    for (size_t i = 0; i < p->L; i++)
        for (size_t j = 0; j < p->L; j++)
            M[j * p->L + i] = W[i * p->L + j];
    memcpy(W, M, LL * sizeof *W);
    double *w = gf_malloc(p->L * sizeof *w);
    int itype = 1, lwork = -1, liwork = -1, info = 0, iwq = 0;
    double wq = 0;
    dsygvd_(&itype, "V", "L", &L, B, &L, W, &L, w, &wq, &lwork, &iwq, &liwork, &info, 1, 1);
    lwork = (int)wq;
    liwork = iwq;
    double *work = gf_malloc((size_t)lwork * sizeof *work);
    int *iwork = gf_malloc((size_t)liwork * sizeof *iwork);
    dsygvd_(&itype, "V", "L", &L, B, &L, W, &L, w, work, &lwork, iwork, &liwork, &info, 1, 1);
    free(work);
    free(iwork);
    if (info != 0) {
        GF_ERROR("%s: PLDA eigenproblem failed (LAPACK dsygvd info %d)", pf, info);
        free(w);
        rc = GF_EINVAL;
        goto fail_mats;
    }
    /* eigenvalues ascending; eigenvector j is column j = B[j*L ..] */
    p->phi = gf_malloc(p->L * sizeof *p->phi);
    p->rot = gf_malloc(LL * sizeof *p->rot);
    for (size_t r = 0; r < p->L; r++) {
        size_t j = p->L - 1 - r;
        p->phi[r] = w[j];
        memcpy(p->rot + r * p->L, B + j * p->L, p->L * sizeof(double));
    }
    free(w);
    free(M);
    free(B);
    free(W);
    free(tr);
    free(psi);
    gf_npz_destroy(&xz);
    gf_npz_destroy(&pz);
    free(xf);
    free(pf);
    *out = p;
    return 0;
fail_mats:
    free(M);
    free(B);
    free(W);
fail_tr:
    free(tr);
    free(psi);
fail:
    gf_npz_destroy(&xz);
    gf_npz_destroy(&pz);
    gf_plda_destroy(&p);
    free(xf);
    free(pf);
    return rc;
}

void gf_plda_destroy(gf_plda **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_plda *p = *self_p;
    free(p->mean1);
    free(p->mean2);
    free(p->lda);
    free(p->mu);
    free(p->rot);
    free(p->phi);
    free(p);
    *self_p = NULL;
}

size_t gf_plda_in_dim(const gf_plda *p) { return p->D; }
size_t gf_plda_dim(const gf_plda *p) { return p->L; }
const double *gf_plda_phi(const gf_plda *p) { return p->phi; }

/* Row r (d values) divided by its numpy-order L2 norm, times scale; sq: d
 * doubles of workspace. */
static void l2_row(double *r, size_t d, double scale, double *sq)
{
    for (size_t k = 0; k < d; k++)
        sq[k] = r[k] * r[k];
    double norm = sqrt(gf_npsum_f64(sq, d, 1));
    for (size_t k = 0; k < d; k++)
        r[k] = scale * (r[k] / norm);
}

/* Embeddings per task of the row-wise steps. */
#define ROWS_PER_TASK 256

typedef struct {
    const gf_plda *p;
    const float *emb;   /* n x D */
    size_t n;
    double *x;          /* n x D: centred, normalised embeddings */
    double *y;          /* n x L: projected, then centred, normalised, centred */
    double *sq;         /* per worker: D doubles */
    int step;           /* 0: emb -> x; 1: y in place */
} rows_job;

static void rows_task(void *arg, int worker, int task)
{
    const rows_job *j = arg;
    const gf_plda *p = j->p;
    size_t D = p->D, L = p->L;
    double *sq = j->sq + (size_t)worker * D;
    size_t i0 = (size_t)task * ROWS_PER_TASK;
    size_t i1 = i0 + ROWS_PER_TASK < j->n ? i0 + ROWS_PER_TASK : j->n;
    for (size_t i = i0; i < i1; i++) {
        if (j->step == 0) {
            double *x = j->x + i * D;
            for (size_t k = 0; k < D; k++)
                x[k] = (double)j->emb[i * D + k] - p->mean1[k];
            l2_row(x, D, sqrt((double)D), sq);
        } else {
            double *y = j->y + i * L;
            for (size_t k = 0; k < L; k++)
                y[k] -= p->mean2[k];
            l2_row(y, L, sqrt((double)L), sq);
            for (size_t k = 0; k < L; k++)
                y[k] -= p->mu[k];
        }
    }
}

static void run_rows(gf_par *par, rows_job *j)
{
    int ntasks = (int)((j->n + ROWS_PER_TASK - 1) / ROWS_PER_TASK);
    gf_par_run(par, ntasks, rows_task, j);
}

void gf_plda_features(const gf_plda *p, const float *emb, size_t n, gf_par *par, double *fea)
{
    if (n == 0)
        return;
    size_t D = p->D, L = p->L;
    int workers = gf_par_threads(par);
    rows_job j = { p, emb, n, gf_malloc(n * D * sizeof(double)), gf_malloc(n * L * sizeof(double)),
                   gf_malloc((size_t)workers * (D > L ? D : L) * sizeof(double)), 0 };
    run_rows(par, &j);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)L, (int)D, 1.0, j.x,
                (int)D, p->lda, (int)L, 0.0, j.y, (int)L);
    j.step = 1;
    run_rows(par, &j);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)L, (int)L, 1.0, j.y,
                (int)L, p->rot, (int)L, 0.0, fea, (int)L);
    free(j.sq);
    free(j.y);
    free(j.x);
}
