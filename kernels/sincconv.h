/* sincconv.h — SincNet's parametric band-pass filterbank and its first
 * convolution (CPU reference).
 *
 * The learned (low, band) pairs give 2·P filters of K taps: P cosine (even)
 * filters then P sine (odd) ones, built exactly as the reference does, in
 * float32, from the half window and time axis buffers. */
#ifndef GF_KERNELS_SINCCONV_H
#define GF_KERNELS_SINCCONV_H

/* Build filters [2P, 2H+1] from low_hz_ [P], band_hz_ [P], window_ [H] and
 * n_ [H] (H = K/2). Frequencies in Hz at `sample_rate`; min low and min band
 * 50 Hz. */
void gf_sincfb_build_ref(const float *low_hz, const float *band_hz, const float *window,
                         const float *n, int P, int H, float sample_rate, float *filters);

/* |conv1d(x, filters)| with stride `stride`, no padding: x [n_in], out
 * [F, n_out] with n_out = (n_in - K) / stride + 1. Accumulates in float64
 * (see MODELS.md on bands at the quantisation floor). col: workspace of
 * gf_sincconv_col_size(K, F) doubles; fd: the filters as doubles [F, K]. */
void gf_sincconv_ref(const double *fd, int F, int K, const float *x, int n_in, int stride,
                     float *out, double *col);
int gf_sincconv_col_size(int K, int F);

#endif
