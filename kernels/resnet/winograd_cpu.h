/* winograd.h — 3×3 stride-1 pad-1 convolution by Winograd F(2×2, 3×3) (CPU).
 *
 * The same op as gf_conv2d_cpu with k = 3, stride 1, pad 1 (bias, optional
 * residual, optional ReLU), with 2.25× fewer multiplications: the input is
 * cut into 4×4 patches (2×2 outputs each), patches and filters are
 * transformed, 16 matrix products (sgemm) combine them, and the output
 * transform gives back 2×2 outputs per patch. Checked against gf_conv2d_cpu
 * in tests/unit/test_kernels.c. */
#ifndef GF_KERNELS_WINOGRAD_H
#define GF_KERNELS_WINOGRAD_H

/* Transform PyTorch-layout weights w [Cout, Cin, 3, 3] (or BN-folded
 * [Cout, Cin*9]) into u [16, Cout, Cin], once at load time. */
void gf_winograd_pack_cpu(const float *w, int Cout, int Cin, float *u);

/* Floats of workspace to give gf_winograd_cpu for this convolution: the
 * budget, or what one row of tiles of a W-wide input needs if that is more. */
long gf_winograd_ws_size(int Cin, int Cout, int W, long budget);

/* x [Cin, H, W] → out [Cout, H, W] (+ bias, + residual if not NULL, ReLU if
 * relu). ws: workspace of ws_floats floats. */
void gf_winograd_cpu(const float *x, int Cin, int H, int W, const float *u, const float *bias,
                     int Cout, const float *residual, int relu, float *out, float *ws,
                     long ws_floats);

#endif
