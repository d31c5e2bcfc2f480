/* dense_cpu.h — fully connected layers over rows, optional leaky ReLU, and
 * log-softmax over the last axis, on the CPU (float32). */
#ifndef GF_KERNELS_DENSE_CPU_H
#define GF_KERNELS_DENSE_CPU_H

/* out [N, Out] = x [N, In] (row stride ldx) · wᵀ (w [Out, In]) + b, then leaky
 * ReLU with `slope` (1: none). */
void gf_linear_cpu(const float *x, int N, int In, int ldx, const float *w, const float *b,
                   int Out, float slope, float *out);

/* In place on x [N, C]: x - max - log Σ exp(x - max), the sum in float64. */
void gf_logsoftmax_cpu(float *x, int N, int C);

#endif
