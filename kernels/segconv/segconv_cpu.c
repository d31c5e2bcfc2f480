/* segconv_cpu.c — the segmentation front's convolution stages on the CPU
 * (float32): the 80→60 and 60→60 convolutions, max-pool 3 after each stage,
 * and instance norm (+ leaky ReLU; the waveform norm is the C = 1 case with
 * slope 1). */
#include "kernels/segconv/segconv_cpu.h"

#include <cblas.h>
#include <math.h>

void gf_conv1d_pack_cpu(const float *w, int Cout, int Cin, int K, float *wk)
{
    for (int o = 0; o < Cout; o++)
        for (int i = 0; i < Cin; i++)
            for (int k = 0; k < K; k++)
                wk[((long)k * Cout + o) * Cin + i] = w[((long)o * Cin + i) * K + k];
}

void gf_conv1d_cpu(const float *x, int Cin, int T, const float *wk, const float *bias, int Cout,
                   int K, float *out)
{
    const int To = T - K + 1;
    for (int o = 0; o < Cout; o++)
        for (int t = 0; t < To; t++)
            out[(long)o * To + t] = bias[o];
    for (int k = 0; k < K; k++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Cout, To, Cin, 1.0f,
                    wk + (long)k * Cout * Cin, Cin, x + k, T, 1.0f, out, To);
}

void gf_instnorm_cpu(float *x, int C, int T, const float *weight, const float *bias, float eps,
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

void gf_maxpool1d_cpu(const float *x, int C, int T, int k, float *out)
{
    const int To = T / k;
    for (int c = 0; c < C; c++) {
        const float *xi = x + (long)c * T;
        float *o = out + (long)c * To;
        for (int t = 0; t < To; t++) {
            float m = xi[t * k];
            for (int j = 1; j < k; j++)
                if (xi[t * k + j] > m || xi[t * k + j] != xi[t * k + j])
                    m = xi[t * k + j];
            o[t] = m;
        }
    }
}
