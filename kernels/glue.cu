// glue.cu — small element-wise kernels the library route needs around its
// cuBLAS GEMMs (bias, activations, layout changes). Each has its CPU
// reference in kernels/glue.c; kernels take plain pointers and sizes and are
// launched through the driver API by name (extern "C", no mangling).

extern "C" __global__ void gf_bias_leaky_relu(float *x, const float *bias, int rows, int cols,
                                              float slope)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long n = (long)rows * cols;
    if (i >= n)
        return;
    float v = x[i] + (bias ? bias[i % cols] : 0.0f);
    x[i] = v > 0.0f ? v : v * slope;
}
