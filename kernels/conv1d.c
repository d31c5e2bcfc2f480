/* conv1d.c — SincNet's 80→60 and 60→60 convolutions, CPU reference. */
#include "kernels/conv1d.h"

#include <cblas.h>

void gf_conv1d_pack_ref(const float *w, int Cout, int Cin, int K, float *wk)
{
    for (int o = 0; o < Cout; o++)
        for (int i = 0; i < Cin; i++)
            for (int k = 0; k < K; k++)
                wk[((long)k * Cout + o) * Cin + i] = w[((long)o * Cin + i) * K + k];
}

void gf_conv1d_ref(const float *x, int Cin, int T, const float *wk, const float *bias, int Cout,
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
