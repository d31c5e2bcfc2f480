/* vbx.h — VBx: Bayesian HMM clustering of x-vectors, GMM variant.
 *
 * Landini, Profant, Diez, Burget: "Bayesian HMM clustering of x-vector
 * sequences (VBx) in speaker diarization" (2022), with the loop probability
 * dropped (each embedding independent), as pyannote's community-1 recipe
 * runs it: features in the PLDA space, Phi the across-class variances,
 * responsibilities initialised from AHC labels by a softmax of the one-hot
 * labels times init_smoothing, uniform priors, at most max_iters
 * iterations, stopping when the ELBO gains less than 1e-4. */
#ifndef GF_VBX_H
#define GF_VBX_H

#include <stddef.h>

#include "common/par.h"

typedef struct {
    double Fa;              /* sufficient-statistics scale (0.07) */
    double Fb;              /* speaker regularisation (0.8) */
    int max_iters;          /* 20 */
    double init_smoothing;  /* 7.0; negative: hard one-hot start */
    double epsilon;         /* ELBO stopping gain, 1e-4 */
} gf_vbx_opts;

/* The recipe's defaults. */
gf_vbx_opts gf_vbx_defaults(void);

/* fea: n x dim; phi: dim; init: n labels in 0..k-1. Writes gamma (n x k,
 * responsibilities) and pi (k, priors). Returns the iterations run. par:
 * threads to split the embeddings across (NULL: this one); the result does
 * not depend on it (every sum over embeddings stays in their order). */
int gf_vbx(const double *fea, size_t n, size_t dim, const double *phi, const int *init,
           size_t k, const gf_vbx_opts *opts, gf_par *par, double *gamma, double *pi);

#endif
