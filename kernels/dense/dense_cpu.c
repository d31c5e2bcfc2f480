/* dense_cpu.c — the segmentation head's linear layers and the embedding's
 * seg_1 on the CPU (float32): one sgemm for all rows; and the classifier's
 * powerset log-probabilities. */
#include "kernels/dense/dense_cpu.h"

#include <cblas.h>
#include <math.h>

void gf_linear_cpu(const float *x, int N, int In, int ldx, const float *w, const float *b,
                   int Out, float slope, float *out)
{
    for (int n = 0; n < N; n++)
        for (int o = 0; o < Out; o++)
            out[(long)n * Out + o] = b[o];
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, Out, In, 1.0f, x, ldx, w, In, 1.0f,
                out, Out);
    if (slope != 1.0f)
        for (long i = 0; i < (long)N * Out; i++)
            if (out[i] < 0.0f)
                out[i] *= slope;
}

void gf_logsoftmax_cpu(float *x, int N, int C)
{
    for (int n = 0; n < N; n++) {
        float *r = x + (long)n * C;
        float m = r[0];
        for (int c = 1; c < C; c++)
            if (r[c] > m)
                m = r[c];
        double s = 0.0;
        for (int c = 0; c < C; c++)
            s += exp((double)r[c] - m);
        float l = (float)log(s);
        for (int c = 0; c < C; c++)
            r[c] = (r[c] - m) - l;
    }
}
