/* glue.h — element-wise glue the routes need around their GEMMs: the CPU
 * references of the kernels in kernels/glue/glue.cu. */
#ifndef GF_KERNELS_GLUE_H
#define GF_KERNELS_GLUE_H

/* x[r][c] = leaky_relu(x[r][c] + bias[c]) in place; bias may be NULL. */
void gf_bias_leaky_relu_cpu(float *x, const float *bias, int rows, int cols, float slope);

#endif
