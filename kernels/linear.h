/* linear.h — fully connected layer over rows, optional leaky ReLU (CPU reference). */
#ifndef GF_KERNELS_LINEAR_H
#define GF_KERNELS_LINEAR_H

/* out [N, Out] = x [N, In] (row stride ldx) · wᵀ (w [Out, In]) + b, then leaky
 * ReLU with `slope` (1: none). */
void gf_linear_ref(const float *x, int N, int In, int ldx, const float *w, const float *b,
                   int Out, float slope, float *out);

#endif
