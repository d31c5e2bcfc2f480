/* plda.h — the x-vector transform and PLDA of the community-1 recipe.
 *
 * Read from a directory holding xvec_transform.npz (mean1 [D], mean2 [L],
 * lda [D x L]) and plda.npz (mu [L], tr [L x L], psi [L]), as pyannote ships
 * them. Loading solves the generalised eigenproblem B v = lambda W v (W, B:
 * within- and between-class covariances rebuilt from tr and psi) with
 * LAPACK's dsygvd, the routine scipy.linalg.eigh calls, so eigenvector
 * signs, and hence feature signs, match the reference.
 *
 * Features: centre on mean1, L2-normalise, scale by sqrt(D), project by lda,
 * centre on mean2, L2-normalise, scale by sqrt(L); then centre on mu and
 * rotate into the PLDA space (eigenvalues decreasing). */
#ifndef GF_PLDA_H
#define GF_PLDA_H

#include <stddef.h>

#include "common/par.h"

typedef struct gf_plda gf_plda;

/* Load dir/xvec_transform.npz and dir/plda.npz. Returns 0 and a new model,
 * GF_ENOENT (a file missing), GF_EINVAL (a key missing, a wrong shape, a
 * non-finite value, a singular matrix) or GF_EIO, after logging the file and
 * the problem. */
int gf_plda_load(const char *dir, gf_plda **out);
void gf_plda_destroy(gf_plda **self_p);

/* Embedding dimension D (256) and PLDA dimension L (128). */
size_t gf_plda_in_dim(const gf_plda *p);
size_t gf_plda_dim(const gf_plda *p);
/* The L eigenvalues, decreasing (the across-class variances, VBx's Phi). */
const double *gf_plda_phi(const gf_plda *p);

/* PLDA features of n embeddings (n x D float32, finite) into fea (n x L).
 * par: threads for the row-wise steps (NULL: this one; the products use
 * BLAS's own threads); the result does not depend on it. */
void gf_plda_features(const gf_plda *p, const float *emb, size_t n, gf_par *par, double *fea);

#endif
