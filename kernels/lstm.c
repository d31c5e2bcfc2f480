/* lstm.c — the segmentation network's bidirectional LSTM, CPU reference. */
#include "kernels/lstm.h"

#include <cblas.h>
#include <math.h>

static inline float sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

void gf_lstm_dir_ref(const float *x, int B, int T, int In, int ldx, const float *w_ih,
                     const float *w_hh, const float *b_ih, const float *b_hh, int H, int reverse,
                     float *out, int ldo, int off, float *gates, float *c)
{
    const int G = 4 * H;
    const long rows = (long)B * T;
    for (long r = 0; r < rows; r++) {
        float *g = gates + r * G;
        for (int j = 0; j < G; j++)
            g[j] = b_ih[j] + b_hh[j];
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, G, In, 1.0f, x, ldx, w_ih,
                In, 1.0f, gates, G);
    for (long i = 0; i < (long)B * H; i++)
        c[i] = 0.0f;
    for (int s = 0; s < T; s++) {
        int t = reverse ? T - 1 - s : s;
        if (s > 0) {
            int tp = reverse ? t + 1 : t - 1;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, G, H, 1.0f,
                        out + (long)tp * ldo + off, T * ldo, w_hh, H, 1.0f, gates + (long)t * G,
                        T * G);
        }
        for (int b = 0; b < B; b++) {
            const float *g = gates + ((long)b * T + t) * G;
            float *cb = c + (long)b * H;
            float *h = out + ((long)b * T + t) * ldo + off;
            for (int j = 0; j < H; j++) {
                float ig = sigmoid(g[j]), fg = sigmoid(g[H + j]);
                float gg = tanhf(g[2 * H + j]), og = sigmoid(g[3 * H + j]);
                cb[j] = fg * cb[j] + ig * gg;
                h[j] = og * tanhf(cb[j]);
            }
        }
    }
}
