/* instnorm.c — instance norm (+ leaky ReLU) for SincNet, CPU reference.
 * The waveform norm is the C = 1 case with slope 1. */
#include "kernels/instnorm.h"

#include <math.h>

void gf_instnorm_ref(float *x, int C, int T, const float *weight, const float *bias, float eps,
                     float slope)
{
    for (int c = 0; c < C; c++) {
        float *xi = x + (long)c * T;
        double s = 0.0;
        for (int t = 0; t < T; t++)
            s += xi[t];
        double mean = s / T, v = 0.0;
        for (int t = 0; t < T; t++) {
            double d = xi[t] - mean;
            v += d * d;
        }
        double inv = 1.0 / sqrt(v / T + (double)eps);
        float a = (float)(inv * weight[c]);
        float b = (float)(bias[c] - mean * inv * weight[c]);
        for (int t = 0; t < T; t++) {
            float y = xi[t] * a + b;
            xi[t] = y < 0.0f ? y * slope : y;
        }
    }
}
