/* dense_ref.h — one layer of the segmentation network's head in float64 on
 * the host, by the definition in dense_gpu.h, whose activations
 * (gf_dense_act) and leaky ReLU slope (GF_DENSE_SLOPE) it shares. */
#ifndef GF_KERNELS_DENSE_REF_H
#define GF_KERNELS_DENSE_REF_H

#include "kernels/dense/dense_gpu.h"

#include <stddef.h>

/* Output o (flat index into [rows][out]) of the definition in dense_gpu.h,
 * in float64 on the host, from the host copies of x [rows][in], w and bias:
 * the reference the checks compare both routes with. */
double gf_dense_ref(const float *w, const float *bias, int in, int out, gf_dense_act act,
                    const float *x, size_t o);

#endif
