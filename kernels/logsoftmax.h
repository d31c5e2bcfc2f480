/* logsoftmax.h — log-softmax over the last axis (CPU reference). */
#ifndef GF_KERNELS_LOGSOFTMAX_H
#define GF_KERNELS_LOGSOFTMAX_H

/* In place on x [N, C]: x - max - log Σ exp(x - max), the sum in float64. */
void gf_logsoftmax_ref(float *x, int N, int C);

#endif
