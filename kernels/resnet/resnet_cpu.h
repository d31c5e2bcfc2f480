/* conv2d.h — 2-D convolution with bias, optional residual and ReLU (CPU reference).
 *
 * Square kernels k×k, stride s on both axes, zero padding `pad`; batch norm in
 * inference form is expected folded into w and bias. Runs as im2col over
 * tiles of whole output rows times the weight matrix (sgemm), with the
 * epilogue (bias, residual, ReLU) applied to each tile while it is in cache. */
#ifndef GF_KERNELS_CONV2D_H
#define GF_KERNELS_CONV2D_H

/* Output extent of one axis. */
int gf_conv2d_out(int n, int k, int stride, int pad);

/* Floats of im2col workspace needed for at least one output row. */
long gf_conv2d_col_min(int Cin, int k, int Wo);

/* x [Cin, H, W] → out [Cout, Ho, Wo]. w [Cout, Cin*k*k], bias [Cout];
 * residual: NULL or [Cout, Ho, Wo] added before the ReLU; relu: 0 or 1.
 * col: workspace of col_floats floats (≥ gf_conv2d_col_min). */
void gf_conv2d_cpu(const float *x, int Cin, int H, int W, const float *w, const float *bias,
                   int Cout, int k, int stride, int pad, const float *residual, int relu,
                   float *out, float *col, long col_floats);

#endif
