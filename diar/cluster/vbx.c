/* vbx.c — VBx iterations (vbx.h).
 *
 * Per iteration, for speakers s and embeddings t (rho = X * sqrt(Phi)):
 *   invL[s]  = 1 / (1 + Fa/Fb * sum_t gamma[t,s] * Phi)
 *   alpha[s] = Fa/Fb * invL[s] * sum_t gamma[t,s] * rho[t]
 *   logp[t,s] = Fa * (rho[t].alpha[s] - 0.5 * (invL[s] + alpha[s]^2).Phi + G[t])
 * with G[t] = -0.5 * (|X[t]|^2 + dim * log(2 pi)); then the GMM update of
 * gamma (log-sum-exp over speakers with log(pi + 1e-8)), pi = normalised
 * column sums of gamma, and the ELBO
 *   sum_t logsumexp + Fb/2 * sum (log invL - invL - alpha^2 + 1).
 * Products go through cblas_dgemm. */
#include "diar/cluster/vbx.h"

#include "common/util.h"
#include "diar/cluster/npsum.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Embeddings per responsibility task. */
#define ROWS_PER_TASK 256

typedef struct {
    size_t n, k;
    double Fa;
    const double *quad;   /* k */
    const double *lpi;    /* k: log(pi + 1e-8) */
    const double *G;      /* n */
    double *logp;         /* n x k: rho.alpha in, Fa-scaled log-likelihoods out */
    double *lpx;          /* n: log-sum-exp per embedding */
    double *gamma;        /* n x k */
} resp_job;

/* Rows [t0, t1): log-likelihoods, their log-sum-exp and the new
 * responsibilities; each row is independent of the others. */
static void resp_task(void *arg, int worker, int task)
{
    (void)worker;
    const resp_job *j = arg;
    const size_t k = j->k;
    const double Fa = j->Fa;
    const double *restrict quad = j->quad, *restrict lpi = j->lpi;
    size_t t0 = (size_t)task * ROWS_PER_TASK;
    size_t t1 = t0 + ROWS_PER_TASK < j->n ? t0 + ROWS_PER_TASK : j->n;
    for (size_t t = t0; t < t1; t++) {
        double *restrict l = j->logp + t * k;
        double *restrict g = j->gamma + t * k;
        double Gt = j->G[t];
        double mx = -INFINITY;
        for (size_t s = 0; s < k; s++) {
            l[s] = Fa * (l[s] - 0.5 * quad[s] + Gt);
            if (l[s] + lpi[s] > mx)
                mx = l[s] + lpi[s];
        }
        double se = 0.0;
        for (size_t s = 0; s < k; s++)
            se += exp(l[s] + lpi[s] - mx);
        double lpx = isfinite(mx) ? log(se) + mx : mx;
        j->lpx[t] = lpx;
        for (size_t s = 0; s < k; s++)
            g[s] = exp(l[s] + lpi[s] - lpx);
    }
}

/* Responsibility columns per column-sum task. */
#define COLS_PER_TASK 64

typedef struct {
    const double *gamma;  /* n x k */
    size_t n, k;
    double *sum;          /* k */
} colsum_job;

/* Columns [s0, s1) of gamma summed over t in order, one pass over rows. */
static void colsum_task(void *arg, int worker, int task)
{
    (void)worker;
    const colsum_job *j = arg;
    const size_t n = j->n, k = j->k;
    const double *restrict gamma = j->gamma;
    double *restrict sum = j->sum;
    size_t s0 = (size_t)task * COLS_PER_TASK;
    size_t s1 = s0 + COLS_PER_TASK < k ? s0 + COLS_PER_TASK : k;
    for (size_t s = s0; s < s1; s++)
        sum[s] = 0.0;
    for (size_t t = 0; t < n; t++)
        for (size_t s = s0; s < s1; s++)
            sum[s] += gamma[t * k + s];
}

static void column_sums(gf_par *par, const double *gamma, size_t n, size_t k, double *sum)
{
    colsum_job j = { gamma, n, k, sum };
    int ntasks = (int)((k + COLS_PER_TASK - 1) / COLS_PER_TASK);
    gf_par_run(par, ntasks, colsum_task, &j);
}

typedef struct {
    const double *fea;     /* n x dim */
    size_t n, dim;
    const int *init;       /* n AHC labels */
    size_t k;
    double smoothing;      /* opts->init_smoothing */
    double on, off;        /* exp(label logit - max), exp(other logit - max) */
    double *sphi;          /* dim: sqrt(phi) */
    double *sq;            /* per worker: dim squares */
    double *gamma;         /* n x k: initial responsibilities */
    double *rho;           /* n x dim: fea * sqrt(phi) */
    double *G;             /* n: -0.5 (|fea|^2 + dim log(2 pi)) */
} init_job;

/* Rows [t0, t1): initial responsibilities, rho and G. */
static void init_task(void *arg, int worker, int task)
{
    const init_job *j = arg;
    const size_t k = j->k, dim = j->dim;
    double *sq = j->sq + (size_t)worker * dim;
    size_t t0 = (size_t)task * ROWS_PER_TASK;
    size_t t1 = t0 + ROWS_PER_TASK < j->n ? t0 + ROWS_PER_TASK : j->n;
    for (size_t t = t0; t < t1; t++) {
        double *g = j->gamma + t * k;
        size_t label = (size_t)j->init[t];
        if (j->smoothing < 0) {
            for (size_t s = 0; s < k; s++)
                g[s] = label == s ? 1.0 : 0.0;
        } else {
            double sum = 0.0;
            for (size_t s = 0; s < k; s++) {
                g[s] = label == s ? j->on : j->off;
                sum += g[s];
            }
            for (size_t s = 0; s < k; s++)
                g[s] /= sum;
        }
        for (size_t d = 0; d < dim; d++) {
            double x = j->fea[t * dim + d];
            sq[d] = x * x;
            j->rho[t * dim + d] = x * j->sphi[d];
        }
        j->G[t] = -0.5 * (gf_npsum_f64(sq, dim, 1) + (double)dim * log(2.0 * M_PI));
    }
}

gf_vbx_opts gf_vbx_defaults(void)
{
    gf_vbx_opts o = { .Fa = 0.07, .Fb = 0.8, .max_iters = 20, .init_smoothing = 7.0,
                      .epsilon = 1e-4 };
    return o;
}

int gf_vbx(const double *fea, size_t n, size_t dim, const double *phi, const int *init,
           size_t k, const gf_vbx_opts *opts, gf_par *par, double *gamma, double *pi)
{
    const double Fa = opts->Fa, Fb = opts->Fb;
    double *G = gf_malloc((n ? n : 1) * sizeof *G);
    double *rho = gf_malloc((n ? n : 1) * dim * sizeof *rho);
    int workers = gf_par_threads(par);
    init_job ij = { fea, n, dim, init, k, opts->init_smoothing, 0.0, 0.0,
                    gf_malloc(dim * sizeof(double)),
                    gf_malloc((size_t)workers * dim * sizeof(double)), gamma, rho, G };
    /* softmax(onehot * smoothing) takes two values per row: exp of the
     * label's and of the others' logit minus the maximum, the same for
     * every row */
    double mx = opts->init_smoothing > 0 ? opts->init_smoothing : 0.0;
    ij.on = exp(opts->init_smoothing - mx);
    ij.off = exp(0.0 - mx);
    for (size_t d = 0; d < dim; d++)
        ij.sphi[d] = sqrt(phi[d]);
    int nrows = (int)((n + ROWS_PER_TASK - 1) / ROWS_PER_TASK);
    gf_par_run(par, nrows, init_task, &ij);
    free(ij.sq);
    free(ij.sphi);
    for (size_t s = 0; s < k; s++)
        pi[s] = 1.0 / (double)k;
    double *invL = gf_malloc(k * dim * sizeof *invL);
    double *alpha = gf_malloc(k * dim * sizeof *alpha);
    double *gsum = gf_malloc(k * sizeof *gsum);
    double *quad = gf_malloc(k * sizeof *quad);
    double *logp = gf_malloc(n * k * sizeof *logp);
    double *lpi = gf_malloc(k * sizeof *lpi);
    double *lpx = gf_malloc((n ? n : 1) * sizeof *lpx);
    double prev_elbo = 0.0;
    int iters = 0;
    for (int ii = 0; ii < opts->max_iters; ii++) {
        iters = ii + 1;
        column_sums(par, gamma, n, k, gsum);
        for (size_t s = 0; s < k; s++)
            for (size_t d = 0; d < dim; d++)
                invL[s * dim + d] = 1.0 / (1.0 + Fa / Fb * gsum[s] * phi[d]);
        /* alpha = gamma^T rho, then scaled */
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)dim, (int)n, 1.0, gamma,
                    (int)k, rho, (int)dim, 0.0, alpha, (int)dim);
        for (size_t i = 0; i < k * dim; i++)
            alpha[i] = Fa / Fb * invL[i] * alpha[i];
        for (size_t s = 0; s < k; s++) {
            double q = 0.0;
            for (size_t d = 0; d < dim; d++) {
                double a = alpha[s * dim + d];
                q += (invL[s * dim + d] + a * a) * phi[d];
            }
            quad[s] = q;
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, (int)k, (int)dim, 1.0, rho,
                    (int)dim, alpha, (int)dim, 0.0, logp, (int)k);
        for (size_t s = 0; s < k; s++)
            lpi[s] = log(pi[s] + 1e-8);
        resp_job rj = { n, k, Fa, quad, lpi, G, logp, lpx, gamma };
        int ntasks = (int)((n + ROWS_PER_TASK - 1) / ROWS_PER_TASK);
        gf_par_run(par, ntasks, resp_task, &rj);
        double total = 0.0;
        for (size_t t = 0; t < n; t++)
            total += lpx[t];
        column_sums(par, gamma, n, k, pi);
        double psum = 0.0;
        for (size_t s = 0; s < k; s++)
            psum += pi[s];
        for (size_t s = 0; s < k; s++)
            pi[s] /= psum;
        double reg = 0.0;
        for (size_t i = 0; i < k * dim; i++)
            reg += log(invL[i]) - invL[i] - alpha[i] * alpha[i] + 1.0;
        double elbo = total + Fb * 0.5 * reg;
        if (ii > 0 && elbo - prev_elbo < opts->epsilon)
            break;
        prev_elbo = elbo;
    }
    free(lpx);
    free(lpi);
    free(logp);
    free(quad);
    free(gsum);
    free(alpha);
    free(invL);
    free(rho);
    free(G);
    return iters;
}
