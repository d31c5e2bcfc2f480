// segconv.cu — the project's own kernel for the boundaries segconv.conv1 and
// segconv.conv2: a 1-D convolution of 60 output channels (5 taps, stride 1)
// and max-pooling by 3 with the bias added, fused, in float32 FMAs. The
// library route writes the im2col matrix (Cin·5 floats per frame), multiplies
// it by cuBLAS's SGEMM into a [60, frames] matrix and pools that; this kernel
// reads each input frame once into shared memory and keeps the rest in
// registers. Instance norm and leaky ReLU stay the glue kernel after it.
// CPU reference: diar/segmentation.c (gf_conv1d_cpu's sum, float64 in
// the checks).
//
// Block: 320 threads = 5 groups of 12 output channels x 64 pooled outputs
// (192 frames) of one window; grid (pooled outputs / 64, windows). Shared
// memory: the block's input span, Cin rows of 196 frames (Cin·784 bytes:
// 62.7 KB at Cin 80). Weights come repacked [Cin][tap][60] (worker/
// segconv_gpu.c), read as float4 through the read-only cache: a warp's
// lanes share their channels, so each load is one broadcast.

#define SEGC_COUT 60
#define SEGC_TAPS 5
#define SEGC_CG 12                                    // channels a thread
#define SEGC_PT 64                                    // pooled outputs a block
#define SEGC_SPAN (SEGC_PT * 3 + SEGC_TAPS - 1)       // 196 frames
#define SEGC_THREADS (SEGC_COUT / SEGC_CG * SEGC_PT)  // 320

// x [B][cin][tin]; w4 [cin][5][60] float (as float4 [cin][5][15]); bias [60];
// out [B][60][tp], tp = (tin - 4) / 3. Dynamic shared memory cin·196 floats.
extern "C" __global__ void __launch_bounds__(SEGC_THREADS)
gf_segconv_pool(const float *__restrict__ x, int cin, int tin, const float4 *__restrict__ w4,
                const float *__restrict__ bias, int tp, float *__restrict__ out)
{
    extern __shared__ float gf_segc_smem[];
    const int b = blockIdx.y, p0 = blockIdx.x * SEGC_PT, t0 = p0 * 3;
    const float *xb = x + (long)b * cin * tin;
    for (int i = threadIdx.x; i < cin * SEGC_SPAN; i += SEGC_THREADS) {
        const int c = i / SEGC_SPAN, t = t0 + i % SEGC_SPAN;
        gf_segc_smem[i] = t < tin ? xb[(long)c * tin + t] : 0.0f;
    }
    __syncthreads();
    const int lane_p = threadIdx.x % SEGC_PT, group = threadIdx.x / SEGC_PT;
    const int c0 = group * SEGC_CG;
    float acc[SEGC_CG][3];
#pragma unroll
    for (int c = 0; c < SEGC_CG; c++)
        acc[c][0] = acc[c][1] = acc[c][2] = 0.0f;
    for (int ci = 0; ci < cin; ci++) {
        const float *xr = gf_segc_smem + ci * SEGC_SPAN + lane_p * 3;
        float xv[SEGC_TAPS + 2];
#pragma unroll
        for (int j = 0; j < SEGC_TAPS + 2; j++)
            xv[j] = xr[j];
#pragma unroll
        for (int k = 0; k < SEGC_TAPS; k++) {
            const float4 *wk = w4 + ((long)ci * SEGC_TAPS + k) * (SEGC_COUT / 4) + c0 / 4;
#pragma unroll
            for (int q = 0; q < SEGC_CG / 4; q++) {
                const float4 w = __ldg(wk + q);
                const float wv[4] = { w.x, w.y, w.z, w.w };
#pragma unroll
                for (int e = 0; e < 4; e++)
#pragma unroll
                    for (int j = 0; j < 3; j++)
                        acc[4 * q + e][j] = fmaf(wv[e], xv[j + k], acc[4 * q + e][j]);
            }
        }
    }
    const int p = p0 + lane_p;
    if (p >= tp)
        return;
#pragma unroll
    for (int c = 0; c < SEGC_CG; c++)
        out[((long)b * SEGC_COUT + c0 + c) * tp + p] =
            fmaxf(acc[c][0], fmaxf(acc[c][1], acc[c][2])) + bias[c0 + c];
}
