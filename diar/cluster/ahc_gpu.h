/* ahc_gpu.h — centroid linkage on a CUDA card (kernels/ahc/ahc.cu).
 *
 * The same linkage as gf_ahc_linkage_centroid (ahc.h), with the condensed
 * distance matrix in device memory: n(n-1)/2 doubles on the card (111,802
 * embeddings, 16 hours of speech: 50 GB), the host holding only the points
 * and Z. Distances and Lance-Williams updates are computed in the CPU
 * module's order without fused multiply-adds, so they are bit-identical to
 * it; it runs the same generic algorithm (candidates, lower bounds, stale
 * rows scanned again when their bound is the smallest), so each step merges
 * the globally closest pair as the CPU does. Only exactly equal candidate
 * bounds may be taken in another order (lowest row here, scipy's heap order
 * there). */
#ifndef GF_AHC_GPU_H
#define GF_AHC_GPU_H

#include <stddef.h>

#include "gpu/device.h"

/* Linkage of n points (rows of x, dim columns, double) on gpu into Z
 * ((n-1) x 4, scipy's format). Returns 0; GF_ETOOBIG (logged with the size)
 * when the distance matrix does not fit on the card or n is beyond the
 * kernels' grid; GF_EDEVICE on a device failure; GF_EINVAL when no pair has
 * a finite distance. */
int gf_ahc_linkage_centroid_gpu(gf_gpu *gpu, const double *x, size_t n, size_t dim, double *Z);

/* gf_ahc_linkage_centroid_gpu as a gf_ahc_link_fn (ahc.h): ctx is the gf_gpu;
 * its device time goes to stats (may be NULL) as "clustering.ahc", route own,
 * timed by events. Where the distance matrix does not fit on the card
 * (GF_ETOOBIG: other jobs hold its memory, or n is too large) it warns and
 * links on the CPU, whose result is the same, and counts the stage as
 * unavailable there. */
int gf_ahc_link_gpu(void *gpu, gf_devstats *stats, const double *x, size_t n, size_t dim,
                    double *Z);

#endif
