/* conv1d.h — 1-D convolution, stride 1, no padding, with bias (CPU reference).
 *
 * Runs as K matrix products, one per tap, on weights reordered once at load
 * time to [K, Cout, Cin]: no im2col buffer at all. */
#ifndef GF_KERNELS_CONV1D_H
#define GF_KERNELS_CONV1D_H

/* Reorder PyTorch weights [Cout, Cin, K] into wk [K, Cout, Cin]. */
void gf_conv1d_pack_ref(const float *w, int Cout, int Cin, int K, float *wk);

/* x [Cin, T] → out [Cout, T - K + 1] = Σ_k wk[k] · x[:, k:] + bias. */
void gf_conv1d_ref(const float *x, int Cin, int T, const float *wk, const float *bias, int Cout,
                   int K, float *out);

#endif
