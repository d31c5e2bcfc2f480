/* assign.h — from clusters of the kept embeddings to every (window, local
 * speaker): embedding filtering, centroids, cosine scores, constrained
 * assignment, and k-means when a speaker count is forced.
 *
 * Layouts: segmentation n_chunks x n_frames x n_spk (0/1 float32, C order);
 * embeddings n_chunks x n_spk x dim (float32, NaN rows for no embedding).
 * Functions taking a gf_par spread their work across its threads (NULL:
 * this thread only); their results do not depend on it. */
#ifndef GF_ASSIGN_H
#define GF_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/par.h"

/* Keep (chunk, speaker) pairs whose embedding has no NaN and whose speaker
 * is the only active one on at least min_active_ratio * n_frames frames
 * (0.2 in the recipe). Writes their indices in row-major order into
 * chunk_idx / spk_idx (room for n_chunks * n_spk) and returns how many.
 * act (n_chunks x n_spk, may be NULL): each speaker's activity summed over
 * its chunk's frames in frame order, 0 exactly when it is never active (as
 * gf_assign_hard and the reconstruction need). */
size_t gf_assign_filter(const float *seg, const float *emb, size_t n_chunks, size_t n_frames,
                        size_t n_spk, size_t dim, double min_active_ratio, gf_par *par,
                        int64_t *chunk_idx, int64_t *spk_idx, float *act);

/* Centroids (k x dim) of n float32 embeddings weighted by the k columns of
 * w (n x k): sum_t w[t,c] emb[t] / sum_t w[t,c]. */
void gf_assign_centroids(const float *emb, size_t n, size_t dim, const double *w, size_t k,
                         gf_par *par, double *centroids);

/* soft[c,s,j] = 2 - cosine distance between embedding (c,s) and centroid j
 * (NaN where the embedding is NaN). soft: n_chunks x n_spk x k. */
void gf_assign_scores(const float *emb, size_t n_chunks, size_t n_spk, size_t dim,
                      const double *centroids, size_t k, gf_par *par, double *soft);

/* hard[c,s] (int8 -2 = unassigned): with 'constrained', per chunk the
 * assignment maximising the total score with distinct clusters (speakers
 * with no active frame, act[c,s] == 0 from gf_assign_filter, first get a
 * score below every other; NaN scores become the smallest score); else the
 * best-scoring cluster (argmax, NaN rows to cluster 0 as numpy does).
 * Modifies soft as the reference does. */
void gf_assign_hard(double *soft, const float *act, size_t n_chunks, size_t n_spk, size_t k,
                    bool constrained, gf_par *par, int8_t *hard);

/* k-means (k-means++ seeding from a fixed seed, n_init restarts, Lloyd
 * iterations) of n rows of x (n x dim, double). labels[n] in 0..k-1. Not
 * scikit-learn's random stream: same method, different draws. */
void gf_assign_kmeans(const double *x, size_t n, size_t dim, size_t k, int n_init, uint64_t seed,
                      gf_par *par, int *labels);

#endif
