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
#include "worker/diar/vbx.h"

#include "common/util.h"
#include "worker/diar/npsum.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

gf_vbx_opts gf_vbx_defaults(void)
{
    gf_vbx_opts o = { .Fa = 0.07, .Fb = 0.8, .max_iters = 20, .init_smoothing = 7.0,
                      .epsilon = 1e-4 };
    return o;
}

int gf_vbx(const double *fea, size_t n, size_t dim, const double *phi, const int *init,
           size_t k, const gf_vbx_opts *opts, double *gamma, double *pi)
{
    const double Fa = opts->Fa, Fb = opts->Fb;
    /* initial responsibilities: softmax(onehot * smoothing) per row */
    for (size_t t = 0; t < n; t++) {
        double *g = gamma + t * k;
        if (opts->init_smoothing < 0) {
            for (size_t s = 0; s < k; s++)
                g[s] = (size_t)init[t] == s ? 1.0 : 0.0;
            continue;
        }
        double mx = opts->init_smoothing > 0 ? opts->init_smoothing : 0.0;
        double sum = 0.0;
        for (size_t s = 0; s < k; s++) {
            double v = (size_t)init[t] == s ? opts->init_smoothing : 0.0;
            g[s] = exp(v - mx);
            sum += g[s];
        }
        for (size_t s = 0; s < k; s++)
            g[s] /= sum;
    }
    for (size_t s = 0; s < k; s++)
        pi[s] = 1.0 / (double)k;

    double *G = gf_malloc(n * sizeof *G);
    double *rho = gf_malloc(n * dim * sizeof *rho);
    double *sq = gf_malloc(dim * sizeof *sq);
    for (size_t t = 0; t < n; t++) {
        for (size_t d = 0; d < dim; d++) {
            double x = fea[t * dim + d];
            sq[d] = x * x;
            rho[t * dim + d] = x * sqrt(phi[d]);
        }
        G[t] = -0.5 * (gf_npsum_f64(sq, dim, 1) + (double)dim * log(2.0 * M_PI));
    }
    free(sq);
    double *invL = gf_malloc(k * dim * sizeof *invL);
    double *alpha = gf_malloc(k * dim * sizeof *alpha);
    double *gsum = gf_malloc(k * sizeof *gsum);
    double *quad = gf_malloc(k * sizeof *quad);
    double *logp = gf_malloc(n * k * sizeof *logp);
    double *lpi = gf_malloc(k * sizeof *lpi);
    double prev_elbo = 0.0;
    int iters = 0;
    for (int ii = 0; ii < opts->max_iters; ii++) {
        iters = ii + 1;
        for (size_t s = 0; s < k; s++) {
            double g = 0.0;
            for (size_t t = 0; t < n; t++)
                g += gamma[t * k + s];
            gsum[s] = g;
        }
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
        double total = 0.0;
        for (size_t t = 0; t < n; t++) {
            double *l = logp + t * k;
            double mx = -INFINITY;
            for (size_t s = 0; s < k; s++) {
                l[s] = Fa * (l[s] - 0.5 * quad[s] + G[t]);
                if (l[s] + lpi[s] > mx)
                    mx = l[s] + lpi[s];
            }
            double se = 0.0;
            for (size_t s = 0; s < k; s++)
                se += exp(l[s] + lpi[s] - mx);
            double lpx = isfinite(mx) ? log(se) + mx : mx;
            total += lpx;
            for (size_t s = 0; s < k; s++)
                gamma[t * k + s] = exp(l[s] + lpi[s] - lpx);
        }
        double psum = 0.0;
        for (size_t s = 0; s < k; s++) {
            double g = 0.0;
            for (size_t t = 0; t < n; t++)
                g += gamma[t * k + s];
            pi[s] = g;
            psum += g;
        }
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
