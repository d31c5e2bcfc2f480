/* sincconv.c — SincNet filterbank and first convolution, CPU reference.
 *
 * The filters follow the reference's float32 arithmetic step by step so the
 * taps agree to the last bit or two. The convolution itself runs as im2col
 * tiles times the filter matrix (dgemm): a 251-tap float32 dot product loses
 * the small outputs of bands where the signal sits at the quantisation floor,
 * and instance norm then blows that error up; float64 keeps them. The cosine
 * filters are even and the sine filters odd about the centre tap, so the
 * tiles hold x[j] + x[K-1-j] and x[j] - x[K-1-j] and each filter needs only
 * its first half: half the multiplications. */
#include "kernels/sincnet/sincnet_cpu.h"

#include <cblas.h>
#include <math.h>

/* Output positions per im2col tile: big enough for dgemm, small enough for L2. */
#define TILE 512

void gf_sincfb_build_cpu(const float *low_hz, const float *band_hz, const float *window,
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

void gf_sincfb_halves_cpu(const float *filters, int P, int H, double *hc, double *hs)
{
    const int K = 2 * H + 1;
    for (int p = 0; p < P; p++)
        for (int j = 0; j <= H; j++) {
            hc[(long)p * (H + 1) + j] = filters[(long)p * K + j];
            if (j < H)
                hs[(long)p * H + j] = filters[(long)(P + p) * K + j];
        }
}

int gf_sincconv_col_size(int P, int H)
{
    return (2 * H + 1 + 2 * P) * TILE;
}

void gf_sincconv_cpu(const double *hc, const double *hs, int P, int H, const float *x, int n_in,
                     int stride, float *out, double *col)
{
    const int K = 2 * H + 1;
    const int n_out = (n_in - K) / stride + 1;
    double *S = col;                              /* [nt, H+1]: x[j] + x[K-1-j], centre once */
    double *D = S + (long)(H + 1) * TILE;         /* [nt, H]:   x[j] - x[K-1-j] */
    double *acc = D + (long)H * TILE;             /* [2P, nt] */
    for (int t0 = 0; t0 < n_out; t0 += TILE) {
        int nt = n_out - t0 < TILE ? n_out - t0 : TILE;
        for (int t = 0; t < nt; t++) {
            const float *src = x + (long)(t0 + t) * stride;
            double *s = S + (long)t * (H + 1), *d = D + (long)t * H;
            for (int j = 0; j < H; j++) {
                s[j] = (double)src[j] + src[K - 1 - j];
                d[j] = (double)src[j] - src[K - 1 - j];
            }
            s[H] = src[H];
        }
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, nt, H + 1, 1.0, hc, H + 1, S,
                    H + 1, 0.0, acc, nt);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P, nt, H, 1.0, hs, H, D, H, 0.0,
                    acc + (long)P * nt, nt);
        for (int f = 0; f < 2 * P; f++) {
            float *o = out + (long)f * n_out + t0;
            const double *a = acc + (long)f * nt;
            for (int t = 0; t < nt; t++)
                o[t] = (float)fabs(a[t]);
        }
    }
}
