/* pooling_ref.h — the embedding network's statistics pooling in float64 on
 * the host, by the definition in pooling_gpu.h, whose shapes (GF_POOL_ROWS,
 * GF_POOL_T, GF_POOL_OUT) it shares. */
#ifndef GF_KERNELS_POOLING_REF_H
#define GF_KERNELS_POOLING_REF_H

#include "kernels/pooling/pooling_gpu.h"

/* Output o (< 5120) of one job, in float64 on the host: x the job's window
 * [2560][125], w its weights [125]. The reference the checks compare both
 * routes with. */
double gf_pool_ref(const float *x, const float *w, int o);

#endif
