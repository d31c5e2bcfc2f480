/* instnorm.h — instance normalisation over time, then leaky ReLU (CPU reference).
 *
 * Per channel: (x - mean) / sqrt(var + eps) * weight + bias with the biased
 * variance over the T frames, no running statistics (InstanceNorm1d with
 * affine weights); then leaky ReLU with `slope` (slope 1: no activation). */
#ifndef GF_KERNELS_INSTNORM_H
#define GF_KERNELS_INSTNORM_H

/* In place on x [C, T]. Statistics accumulate in float64. */
void gf_instnorm_ref(float *x, int C, int T, const float *weight, const float *bias, float eps,
                     float slope);

#endif
