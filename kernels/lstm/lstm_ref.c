/* lstm_ref.c — the stacked bidirectional LSTM's float64 truth (see
 * lstm_ref.h): the definition the qualification (qualify/seg.c) and the GPU
 * tests (tests/gpu/test_gpu_lstm.c) compare both card routes with. */
#include "kernels/lstm/lstm_ref.h"
#include "common/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double sigm(double v) { return 1.0 / (1.0 + exp(-v)); }

void gf_lstm_ref(const gf_lstm_gpu_dir (*w)[2], int layers, int in0, int hidden, int T,
                 const float *x, double *out)
{
    const int H = hidden, G = 4 * H, width = in0 > 2 * H ? in0 : 2 * H;
    double *in = gf_malloc(sizeof(double) * (size_t)T * width);
    double *gates = gf_malloc(sizeof(double) * (size_t)G);
    double *h = gf_malloc(sizeof(double) * (size_t)H), *c = gf_malloc(sizeof(double) * (size_t)H);
    int in_w = in0;
    for (size_t i = 0; i < (size_t)T * in0; i++)
        in[i] = x[i];
    for (int l = 0; l < layers; l++) {
        for (int d = 0; d < 2; d++) {
            const gf_lstm_gpu_dir *dw = &w[l][d];
            memset(h, 0, sizeof(double) * (size_t)H);
            memset(c, 0, sizeof(double) * (size_t)H);
            for (int s = 0; s < T; s++) {
                int t = d ? T - 1 - s : s;
                for (int g = 0; g < G; g++) {
                    double acc = (double)dw->b_ih[g] + dw->b_hh[g];
                    for (int i = 0; i < in_w; i++)
                        acc += (double)dw->w_ih[(size_t)g * in_w + i] * in[(size_t)t * in_w + i];
                    for (int k = 0; k < H; k++)
                        acc += (double)dw->w_hh[(size_t)g * H + k] * h[k];
                    gates[g] = acc;
                }
                for (int j = 0; j < H; j++) {
                    double ig = sigm(gates[j]), fg = sigm(gates[H + j]);
                    double gg = tanh(gates[2 * H + j]), og = sigm(gates[3 * H + j]);
                    c[j] = fg * c[j] + ig * gg;
                    h[j] = og * tanh(c[j]);
                    out[(size_t)t * 2 * H + (size_t)d * H + j] = h[j];
                }
            }
        }
        in_w = 2 * H;
        memcpy(in, out, sizeof(double) * (size_t)T * 2 * H);
    }
    free(in);
    free(gates);
    free(h);
    free(c);
}
