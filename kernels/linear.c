/* linear.c — the segmentation head's linear layers and the embedding's seg_1,
 * CPU reference: one sgemm for all rows. */
#include "kernels/linear.h"

#include <cblas.h>

void gf_linear_ref(const float *x, int N, int In, int ldx, const float *w, const float *b,
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
