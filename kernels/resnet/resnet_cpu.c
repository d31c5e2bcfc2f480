/* conv2d.c — the ResNet34 trunk's convolutions, CPU reference. */
#include "kernels/resnet/resnet_cpu.h"

#include <cblas.h>
#include <string.h>

int gf_conv2d_out(int n, int k, int stride, int pad)
{
    return (n + 2 * pad - k) / stride + 1;
}

long gf_conv2d_col_min(int Cin, int k, int Wo)
{
    return (long)Cin * k * k * Wo;
}

/* col [Cin*k*k, nrows*Wo] for output rows oy0 .. oy0+nrows-1. */
static void im2col(const float *x, int Cin, int H, int W, int k, int stride, int pad, int Wo,
                   int oy0, int nrows, float *col)
{
    const long n = (long)nrows * Wo;
    for (int ci = 0; ci < Cin; ci++)
        for (int ky = 0; ky < k; ky++)
            for (int kx = 0; kx < k; kx++) {
                float *dst = col + ((long)(ci * k + ky) * k + kx) * n;
                for (int r = 0; r < nrows; r++, dst += Wo) {
                    int iy = (oy0 + r) * stride - pad + ky;
                    if (iy < 0 || iy >= H) {
                        memset(dst, 0, sizeof(float) * (size_t)Wo);
                        continue;
                    }
                    const float *src = x + ((long)ci * H + iy) * W;
                    /* ox range with 0 <= ox*stride - pad + kx < W */
                    int lo = 0, hi = Wo;
                    while (lo < Wo && lo * stride - pad + kx < 0)
                        dst[lo++] = 0.0f;
                    while (hi > lo && (hi - 1) * stride - pad + kx >= W)
                        dst[--hi] = 0.0f;
                    if (stride == 1) {
                        memcpy(dst + lo, src + lo - pad + kx, sizeof(float) * (size_t)(hi - lo));
                    } else {
                        for (int ox = lo; ox < hi; ox++)
                            dst[ox] = src[ox * stride - pad + kx];
                    }
                }
            }
}

void gf_conv2d_cpu(const float *x, int Cin, int H, int W, const float *w, const float *bias,
                   int Cout, int k, int stride, int pad, const float *residual, int relu,
                   float *out, float *col, long col_floats)
{
    const int Ho = gf_conv2d_out(H, k, stride, pad), Wo = gf_conv2d_out(W, k, stride, pad);
    const int K = Cin * k * k;
    const long HWo = (long)Ho * Wo;
    int rows = (int)(col_floats / ((long)K * Wo));
    if (rows < 1)
        rows = 1;   /* the caller sized col for one row at least */
    for (int oy0 = 0; oy0 < Ho; oy0 += rows) {
        int nr = Ho - oy0 < rows ? Ho - oy0 : rows;
        long n = (long)nr * Wo, p0 = (long)oy0 * Wo;
        const float *B;
        int ldb;
        if (k == 1 && stride == 1 && pad == 0) {
            B = x + p0;   /* a 1×1 stride-1 conv reads the input directly */
            ldb = (int)HWo;
        } else {
            im2col(x, Cin, H, W, k, stride, pad, Wo, oy0, nr, col);
            B = col;
            ldb = (int)n;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Cout, (int)n, K, 1.0f, w, K, B,
                    ldb, 0.0f, out + p0, (int)HWo);
        for (int co = 0; co < Cout; co++) {
            float *o = out + co * HWo + p0;
            const float *res = residual ? residual + co * HWo + p0 : NULL;
            float bb = bias[co];
            if (res && relu) {
                for (long i = 0; i < n; i++) {
                    float v = o[i] + bb + res[i];
                    o[i] = v > 0.0f ? v : 0.0f;
                }
            } else if (relu) {
                for (long i = 0; i < n; i++) {
                    float v = o[i] + bb;
                    o[i] = v > 0.0f ? v : 0.0f;
                }
            } else if (res) {
                for (long i = 0; i < n; i++)
                    o[i] += bb + res[i];
            } else {
                for (long i = 0; i < n; i++)
                    o[i] += bb;
            }
        }
    }
}
