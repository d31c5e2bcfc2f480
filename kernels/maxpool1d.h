/* maxpool1d.h — 1-D max pooling, kernel k, stride k, no padding (CPU reference). */
#ifndef GF_KERNELS_MAXPOOL1D_H
#define GF_KERNELS_MAXPOOL1D_H

/* x [C, T] → out [C, T / k] (floor). */
void gf_maxpool1d_ref(const float *x, int C, int T, int k, float *out);

#endif
