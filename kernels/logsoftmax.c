/* logsoftmax.c — the segmentation classifier's powerset log-probabilities. */
#include "kernels/logsoftmax.h"

#include <math.h>

void gf_logsoftmax_ref(float *x, int N, int C)
{
    for (int n = 0; n < N; n++) {
        float *r = x + (long)n * C;
        float m = r[0];
        for (int c = 1; c < C; c++)
            if (r[c] > m)
                m = r[c];
        double s = 0.0;
        for (int c = 0; c < C; c++)
            s += exp((double)r[c] - m);
        float l = (float)log(s);
        for (int c = 0; c < C; c++)
            r[c] = (r[c] - m) - l;
    }
}
