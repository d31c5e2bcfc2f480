/* maxpool1d.c — SincNet's max-pool 3 after each stage, CPU reference. */
#include "kernels/maxpool1d.h"

void gf_maxpool1d_ref(const float *x, int C, int T, int k, float *out)
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
