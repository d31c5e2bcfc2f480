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
void gf_sincfb_build_cpu(const float *low_hz, const float *band_hz, const float *window,
                         const float *n, int P, int H, float sample_rate, float *filters);

/* The half filters the convolution uses, in float64: hc [P, H+1] (cosine
 * filters, taps 0..H, the centre last) and hs [P, H] (sine filters, taps
 * 0..H-1); the other halves follow by symmetry. */
void gf_sincfb_halves_cpu(const float *filters, int P, int H, double *hc, double *hs);

/* |conv1d(x, filters)| with stride `stride`, no padding, for the 2P filters
 * of gf_sincfb_build_cpu given as halves: x [n_in] → out [2P, n_out] with
 * n_out = (n_in - 2H - 1) / stride + 1. Accumulates in float64 (see
 * MODELS.md on bands at the quantisation floor). col: workspace of
 * gf_sincconv_col_size(P, H) doubles. */
void gf_sincconv_cpu(const double *hc, const double *hs, int P, int H, const float *x, int n_in,
                     int stride, float *out, double *col);
int gf_sincconv_col_size(int P, int H);

#endif
