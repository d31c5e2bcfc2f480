/* ahc.h — centroid-linkage agglomerative clustering, cut at a distance.
 *
 * The community-1 recipe initialises VBx with scipy's
 * linkage(X, method="centroid", metric="euclidean") on L2-normalised
 * embeddings followed by fcluster(Z, threshold, criterion="distance"). This
 * module reproduces both: the same generic algorithm (Müllner's, with a
 * heap of nearest-neighbour candidates and Lance-Williams updates on
 * Euclidean distances), the same merge order and node numbering, and the
 * same depth-first numbering of flat clusters, so labels match exactly.
 *
 * Memory: the condensed distance matrix, n(n-1)/2 doubles (n = 20,000:
 * 1.6 GB; n = 60,000: 14.4 GB). Time: O(n^2) typical, O(n^3) worst case.
 * ahc_gpu.h runs the same linkage with the matrix on a CUDA card. */
#ifndef GF_AHC_H
#define GF_AHC_H

#include <stddef.h>

#include "common/devstats.h"

/* Centroid linkage of n points (rows of x, dim columns, double). Writes the
 * (n-1) x 4 linkage matrix Z (left id, right id, distance, size) in scipy's
 * format. Returns 0, or GF_ETOOBIG if the distance matrix cannot be held. */
int gf_ahc_linkage_centroid(const double *x, size_t n, size_t dim, double *Z);

/* Flat clusters from Z: leaves under a node whose largest merge distance is
 * <= threshold share a cluster. labels[i] in 0..k-1 numbered as scipy's
 * fcluster (minus one). Returns k. */
size_t gf_ahc_fcluster_distance(const double *Z, size_t n, double threshold, int *labels);

/* The recipe's AHC: L2-normalise the float32 rows of emb (n x dim) in
 * float32 as numpy does, link, cut at threshold. Returns the number of
 * clusters (labels in 0..k-1), or a negative GF_E* code. n == 1 gives one
 * cluster. */
int gf_ahc_cluster(const float *emb, size_t n, size_t dim, double threshold, int *labels);

/* gf_ahc_cluster with another linkage: link(ctx, stats, x, n, dim, Z) has
 * gf_ahc_linkage_centroid's contract (ahc_gpu.h runs it on a card) and adds
 * its device time, if it has one, to stats (may be NULL). */
typedef int (*gf_ahc_link_fn)(void *ctx, gf_devstats *stats, const double *x, size_t n,
                              size_t dim, double *Z);
int gf_ahc_cluster_with(gf_ahc_link_fn link, void *ctx, gf_devstats *stats, const float *emb,
                        size_t n, size_t dim, double threshold, int *labels);

#endif
