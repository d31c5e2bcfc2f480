/* dense_ref.c — the segmentation head's layers' float64 truth (see
 * dense_ref.h): the definition the qualification (qualify/seg.c) and the
 * GPU tests (tests/gpu/test_gpu_dense.c) compare both card routes with. */
#include "kernels/dense/dense_ref.h"

#include <math.h>

double gf_dense_ref(const float *w, const float *bias, int in, int out, gf_dense_act act,
                    const float *x, size_t o)
{
    const size_t r = o / (size_t)out;
    const int j = (int)(o % (size_t)out);
    const float *xr = x + r * (size_t)in;
    if (act == GF_DENSE_LEAKY_RELU) {
        double z = bias[j];
        for (int k = 0; k < in; k++)
            z += (double)w[(size_t)j * in + k] * xr[k];
        return z > 0.0 ? z : z * (double)GF_DENSE_SLOPE;
    }
    double zj = 0.0, m = -INFINITY, sum = 0.0;
    for (int pass = 0; pass < 2; pass++)   /* the maximum, then the sum of exp(z - max) */
        for (int c = 0; c < out; c++) {
            double z = bias[c];
            for (int k = 0; k < in; k++)
                z += (double)w[(size_t)c * in + k] * xr[k];
            if (pass == 0) {
                m = fmax(m, z);
                if (c == j)
                    zj = z;
            } else {
                sum += exp(z - m);
            }
        }
    return zj - m - log(sum);
}
