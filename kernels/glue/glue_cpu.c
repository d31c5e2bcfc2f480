/* glue.c — CPU references of the glue kernels (kernels/glue/glue.cu). */
#include "kernels/glue/glue_cpu.h"

void gf_bias_leaky_relu_cpu(float *x, const float *bias, int rows, int cols, float slope)
{
    for (int r = 0; r < rows; r++) {
        float *row = x + (long)r * cols;
        for (int c = 0; c < cols; c++) {
            float v = row[c] + (bias ? bias[c] : 0.0f);
            row[c] = v > 0.0f ? v : v * slope;
        }
    }
}
