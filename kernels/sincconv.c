/* sincconv.c — SincNet filterbank and first convolution, CPU reference.
 *
 * The filters follow the reference's float32 arithmetic step by step so the
 * taps agree to the last bit or two. The convolution itself runs as im2col
 * tiles times the filter matrix (dgemm): a 251-tap float32 dot product loses
 * the small outputs of bands where the signal sits at the quantisation floor,
 * and instance norm then blows that error up; float64 keeps them. */
#include "kernels/sincconv.h"

#include <cblas.h>
#include <math.h>

/* Output positions per im2col tile: big enough for dgemm, small enough for L2. */
#define TILE 512

void gf_sincfb_build_ref(const float *low_hz, const float *band_hz, const float *window,
                         const float *n, int P, int H, float sample_rate, float *filters)
{
    const float min_low = 50.0f, min_band = 50.0f;
    const int K = 2 * H + 1;
    for (int p = 0; p < P; p++) {
        float low = min_low + fabsf(low_hz[p]);
        float high = low + min_band + fabsf(band_hz[p]);
        if (high < min_low)
            high = min_low;
        if (high > sample_rate / 2)
            high = sample_rate / 2;
        float band = high - low;
        float *fc = filters + (size_t)p * K, *fs = filters + (size_t)(P + p) * K;
        for (int j = 0; j < H; j++) {
            float ft_low = low * n[j], ft_high = high * n[j];
            float half = n[j] / 2;
            float left_c = ((sinf(ft_high) - sinf(ft_low)) / half) * window[j];
            float left_s = ((cosf(ft_low) - cosf(ft_high)) / half) * window[j];
            fc[j] = left_c / (2 * band);
            fc[K - 1 - j] = left_c / (2 * band);
            fs[j] = left_s / (2 * band);
            fs[K - 1 - j] = -left_s / (2 * band);
        }
        fc[H] = (2 * band) / (2 * band);
        fs[H] = 0.0f / (2 * band);
    }
}

int gf_sincconv_col_size(int K, int F)
{
    return (K + F) * TILE;
}

void gf_sincconv_ref(const double *fd, int F, int K, const float *x, int n_in, int stride,
                     float *out, double *col)
{
    const int n_out = (n_in - K) / stride + 1;
    double *acc = col + (size_t)K * TILE;   /* [F, nt] results of one tile */
    for (int t0 = 0; t0 < n_out; t0 += TILE) {
        int nt = n_out - t0 < TILE ? n_out - t0 : TILE;
        /* col [nt, K]: row t is the input seen by output t0 + t. */
        for (int t = 0; t < nt; t++) {
            const float *src = x + (size_t)(t0 + t) * stride;
            double *dst = col + (size_t)t * K;
            for (int k = 0; k < K; k++)
                dst[k] = src[k];
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, F, nt, K, 1.0, fd, K, col, K,
                    0.0, acc, nt);
        for (int f = 0; f < F; f++) {
            float *o = out + (size_t)f * n_out + t0;
            const double *a = acc + (size_t)f * nt;
            for (int t = 0; t < nt; t++)
                o[t] = (float)fabs(a[t]);
        }
    }
}
