/* statspool.h — weighted statistics pooling over time (CPU reference).
 *
 * With weights w [T]: v1 = Σw + 1e-8, mean = Σ w·x / v1,
 * var = Σ w·(x - mean)² / (v1 - Σw²/v1 + 1e-8), std = sqrt(var) (the
 * reference's formulas, MODELS.md). Without weights: mean and the unbiased
 * std. Sums in float64. */
#ifndef GF_KERNELS_STATSPOOL_H
#define GF_KERNELS_STATSPOOL_H

/* x [R, T], w [T] or NULL → out [2R]: R means then R standard deviations. */
void gf_statspool_cpu(const float *x, int R, int T, const float *w, float *out);

#endif
