/* spectral.h — spectral clustering that estimates the number of clusters
 * (NME-SC: the normalised maximum eigengap).
 *
 * Cosine affinity of the rows; each row keeps its p most similar rows as 1,
 * the rest 0; the result symmetrised, its Laplacian D - A decomposed; p is
 * the one of a few candidates that minimises p / (largest eigengap / largest
 * eigenvalue), the count k the position of the largest eigengap among the
 * smallest eigenvalues (within the speaker bounds), and the labels k-means
 * (fixed-seed k-means++) on the k eigenvectors of the smallest eigenvalues.
 *
 * Used by the weight-free mode (diar/weightfree.h) on its segment vectors,
 * which have no trained scoring to cut an AHC at. The same input gives the
 * same labels, bit for bit. Memory: m x m doubles twice for the m rows
 * clustered (m = 4,000: 0.26 GB).
 * Time: the p search runs on at most search_rows rows (evenly spaced), the
 * final decomposition on at most max_rows (LAPACK dsyevr, O(n^3)); rows
 * beyond those join the nearest cluster centroid, O(n k dim). */
#ifndef GF_SPECTRAL_H
#define GF_SPECTRAL_H

#include <stddef.h>

#define GF_SPECTRAL_MAX_SPEAKERS 10   /* the estimate's default upper bound */

typedef struct {
    int num_speakers;     /* > 0: exactly this many clusters (at most the usable rows) */
    int min_speakers;     /* the estimate's lower bound; <= 1: 1 */
    int max_speakers;     /* the estimate's upper bound; <= 0: GF_SPECTRAL_MAX_SPEAKERS */
    size_t min_rows;      /* the estimate counts at most rows / min_rows clusters (a
                             cluster needs that many rows; the bounds above go first);
                             <= 1: no such cap */
    size_t search_rows;   /* the p search uses at most this many rows; 0: 600 */
    size_t max_rows;      /* at most this many (evenly spaced) rows are clustered, the
                             others join the nearest of their clusters' centroids
                             (cosine); 0: 4000; at most 46,340 */
} gf_spectral_opts;

/* No forced count, bounds 1..GF_SPECTRAL_MAX_SPEAKERS, min_rows 1, 600
 * search rows, 4000 rows clustered. */
gf_spectral_opts gf_spectral_defaults(void);

/* Cluster the n rows of x (n x dim; need not be unit length). Rows with a
 * NaN or of zero length are skipped: their label is -1. labels[i] of the
 * others in 0..k-1, numbered in order of first appearance. Returns k (0
 * when no row is usable; 1 for a single row or rows all pointing the same
 * way, whatever the bounds: nothing tells such rows apart), GF_EINVAL for
 * min_speakers above max_speakers, GF_ETOOBIG for max_rows above 46,340, or
 * GF_EIO when LAPACK fails (all logged). A forced count or a lower bound
 * above the usable rows is capped at them. */
int gf_spectral_cluster(const float *x, size_t n, size_t dim, const gf_spectral_opts *opts,
                        int *labels);

#endif
