/* npsum.h — sums in NumPy's order.
 *
 * numpy's add.reduce over a contiguous axis uses pairwise summation (blocks
 * of 128 with eight accumulators, split in halves above that). Reproducing
 * that order makes norms and sums match the reference bit for bit, which
 * matters where a threshold or a tie decides a cluster. */
#ifndef GF_NPSUM_H
#define GF_NPSUM_H

#include <stddef.h>

/* Sum of a[0], a[stride], ... (n terms) in numpy's pairwise order. */
double gf_npsum_f64(const double *a, size_t n, size_t stride);
/* The same in float32 arithmetic (numpy's float32 reduction). */
float gf_npsum_f32(const float *a, size_t n, size_t stride);

#endif
