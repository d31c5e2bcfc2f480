/* seg1_ref.h — the embedding network's last layer (seg_1) in float64 on the
 * host, by the definition in seg1_gpu.h, whose shapes (GF_SEG1_IN,
 * GF_SEG1_OUT) it shares. */
#ifndef GF_KERNELS_SEG1_REF_H
#define GF_KERNELS_SEG1_REF_H

#include "kernels/embedding/seg1_gpu.h"

#include <stddef.h>

/* Output o (flat index into [jobs][256]) in float64 on the host: the
 * reference the checks compare both routes with. */
double gf_seg1_ref(const float *w, const float *bias, const float *pooled, size_t o);

#endif
