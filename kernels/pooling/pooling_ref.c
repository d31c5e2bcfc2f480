/* pooling_ref.c — the statistics pooling's float64 truth (see pooling_ref.h):
 * the definition the qualification (qualify/emb.c) and the GPU tests
 * (tests/gpu/test_gpu_pool.c) compare both card routes with. */
#include "kernels/pooling/pooling_ref.h"

#include <assert.h>
#include <math.h>

double gf_pool_ref(const float *x, const float *w, int o)
{
    assert(o >= 0 && o < GF_POOL_OUT);
    const float *row = x + (size_t)(o % GF_POOL_ROWS) * GF_POOL_T;
    double sw = 0.0, sw2 = 0.0, s = 0.0, q = 0.0;
    for (int t = 0; t < GF_POOL_T; t++) {
        sw += w[t];
        sw2 += (double)w[t] * w[t];
        s += (double)w[t] * row[t];
    }
    double v1 = sw + 1e-8, mean = s / v1;
    if (o < GF_POOL_ROWS)
        return mean;
    for (int t = 0; t < GF_POOL_T; t++) {
        double d = row[t] - mean;
        q += w[t] * d * d;
    }
    return sqrt(q / (v1 - sw2 / v1 + 1e-8));
}
