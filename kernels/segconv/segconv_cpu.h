/* segconv_cpu.h — the segmentation front's convolution stages on the CPU
 * (float32).
 *
 * The 1-D convolution (stride 1, no padding, with bias) runs as K matrix
 * products, one per tap, on weights reordered once at load time to
 * [K, Cout, Cin]: no im2col buffer at all. Max pooling has kernel k, stride
 * k, no padding. Instance normalisation over time, then leaky ReLU: per
 * channel (x - mean) / sqrt(var + eps) * weight + bias with the biased
 * variance over the T frames, no running statistics (InstanceNorm1d with
 * affine weights); then leaky ReLU with `slope` (slope 1: no activation). */
#ifndef GF_KERNELS_SEGCONV_CPU_H
#define GF_KERNELS_SEGCONV_CPU_H

/* Reorder PyTorch weights [Cout, Cin, K] into wk [K, Cout, Cin]. */
void gf_conv1d_pack_cpu(const float *w, int Cout, int Cin, int K, float *wk);

/* x [Cin, T] → out [Cout, T - K + 1] = Σ_k wk[k] · x[:, k:] + bias. */
void gf_conv1d_cpu(const float *x, int Cin, int T, const float *wk, const float *bias, int Cout,
                   int K, float *out);

/* x [C, T] → out [C, T / k] (floor). */
void gf_maxpool1d_cpu(const float *x, int C, int T, int k, float *out);

/* In place on x [C, T]. Statistics accumulate in float64. */
void gf_instnorm_cpu(float *x, int C, int T, const float *weight, const float *bias, float eps,
                     float slope);

#endif
