/* sincnet_ref.c — the SincNet filterbank stage's float64 truth (see
 * sincnet_ref.h): the definition the qualification (qualify/seg.c) and the
 * GPU tests (tests/gpu/test_gpu_sinc.c) compare both card routes with. */
#include "kernels/sincnet/sincnet_ref.h"

#include <math.h>

double gf_sinc_ref(const double *filters, const float *wave, size_t o)
{
    const size_t per = (size_t)GF_SINC_FILTERS * GF_SINC_POOLED;
    const size_t b = o / per, f = (o % per) / GF_SINC_POOLED, p = o % GF_SINC_POOLED;
    double m = 0.0;
    for (int j = 0; j < 3; j++) {
        const float *x = wave + b * GF_SINC_SAMPLES + (size_t)GF_SINC_STRIDE * (3 * p + j);
        double acc = 0.0;
        for (int k = 0; k < GF_SINC_TAPS; k++)
            acc += filters[f * GF_SINC_TAPS + k] * x[k];
        m = fmax(m, fabs(acc));
    }
    return m;
}
