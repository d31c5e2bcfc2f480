/* seg1_ref.c — the seg_1 layer's float64 truth (see seg1_ref.h): the
 * definition the qualification (qualify/emb.c) and the GPU tests
 * (tests/gpu/test_gpu_pool.c) compare both card routes with. */
#include "kernels/embedding/seg1_ref.h"

double gf_seg1_ref(const float *w, const float *bias, const float *pooled, size_t o)
{
    const size_t j = o / GF_SEG1_OUT, n = o % GF_SEG1_OUT;
    double acc = bias[n];
    for (int k = 0; k < GF_SEG1_IN; k++)
        acc += (double)pooled[j * GF_SEG1_IN + k] * w[n * GF_SEG1_IN + k];
    return acc;
}
