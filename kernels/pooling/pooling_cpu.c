/* statspool.c — the embedding's mask-weighted mean and standard deviation. */
#include "kernels/pooling/pooling_cpu.h"

#include <math.h>

void gf_statspool_cpu(const float *x, int R, int T, const float *w, float *out)
{
    double v1 = 0.0, v2 = 0.0;
    if (w) {
        for (int t = 0; t < T; t++) {
            v1 += w[t];
            v2 += (double)w[t] * w[t];
        }
        v1 += 1e-8;
    }
    for (int r = 0; r < R; r++) {
        const float *xr = x + (long)r * T;
        double s = 0.0, mean, q = 0.0, var;
        if (w) {
            for (int t = 0; t < T; t++)
                s += (double)w[t] * xr[t];
            mean = s / v1;
            for (int t = 0; t < T; t++) {
                double d = xr[t] - mean;
                q += w[t] * d * d;
            }
            var = q / (v1 - v2 / v1 + 1e-8);
        } else {
            for (int t = 0; t < T; t++)
                s += xr[t];
            mean = s / T;
            for (int t = 0; t < T; t++) {
                double d = xr[t] - mean;
                q += d * d;
            }
            var = q / (T - 1);
        }
        out[r] = (float)mean;
        out[R + r] = (float)sqrt(var);
    }
}
