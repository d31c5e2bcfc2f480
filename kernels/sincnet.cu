// sincnet.cu — the project's own kernel for the boundary
// sincnet.conv0.abs_pool: the SincNet filterbank (80 filters of 251 taps,
// stride 10) over the normalised waveform in float64, then |.| and max-pooling
// by 3, fused. The library route writes the im2col matrix of the waveform in
// float64 (251 doubles per output frame: 1 GB at a batch of 32), multiplies
// it by cuBLAS's DGEMM into another float64 matrix and pools that; this
// kernel keeps both in shared memory and registers.
// CPU reference: the float64 sums of worker/sinc_gpu.h's definition
// (tests/gpu/test_gpu_sinc.c, gpuflock qualify).
//
// Block: 256 threads, one pooled output each (three frames, 10 samples
// apart), for 16 filters; grid (pooled outputs / 256, 80 / 16, windows).
// Shared memory: the block's waveform span, 30·256 + 241 samples as
// float64, and the 16 filters transposed to [tap][filter], so the filter
// values a tap needs are one 16-byte broadcast per pair; per tap a
// thread does 16 x 3 fused multiply-adds from 3 samples and 16 filter values.
// Sums tap by tap from tap 0, float64 throughout, one rounding to float at
// the end, as on the library route (whose DGEMM sums in its own order).

#define SINC_TAPS 251
#define SINC_STRIDE 10
#define SINC_FB 16                                    // filters per block
#define SINC_PT 256                                   // pooled outputs per block = threads
#define SINC_SPAN (SINC_PT * 3 * SINC_STRIDE + SINC_TAPS - SINC_STRIDE)   // 7921 samples
#define SINC_SPAN_PAD (SINC_SPAN + 1)                 // filters start 16-byte aligned

// wave [B][n] float (normalised); filters [nf][251] float64; out [B][nf][t_pool]
// float, t_pool = ((n - 251) / 10 + 1) / 3. Dynamic shared memory:
// (SINC_SPAN_PAD + 16·251) doubles (gf_sinc_own_smem in worker/sinc_gpu.c).
extern "C" __global__ void __launch_bounds__(SINC_PT, 2)
gf_sinc_abs_pool_f64(const float *__restrict__ wave, int n, const double *__restrict__ filters,
                     int nf, int t_pool, float *__restrict__ out)
{
    extern __shared__ __align__(16) double gf_sinc_smem[];
    double *xs = gf_sinc_smem, *ws = gf_sinc_smem + SINC_SPAN_PAD;
    const int b = blockIdx.z, f0 = blockIdx.y * SINC_FB, p0 = blockIdx.x * SINC_PT;
    const float *xb = wave + (long)b * n;
    const long s0 = (long)p0 * 3 * SINC_STRIDE;
    for (int i = threadIdx.x; i < SINC_SPAN; i += SINC_PT) {
        const long s = s0 + i;
        xs[i] = s < n ? (double)xb[s] : 0.0;
    }
    for (int i = threadIdx.x; i < SINC_FB * SINC_TAPS; i += SINC_PT) {
        const int f = i / SINC_TAPS, k = i - f * SINC_TAPS;
        ws[k * SINC_FB + f] = f0 + f < nf ? filters[(long)(f0 + f) * SINC_TAPS + k] : 0.0;
    }
    __syncthreads();

    double acc[SINC_FB][3];
#pragma unroll
    for (int f = 0; f < SINC_FB; f++)
        acc[f][0] = acc[f][1] = acc[f][2] = 0.0;
    const double *x = xs + threadIdx.x * 3 * SINC_STRIDE;
#pragma unroll 2
    for (int k = 0; k < SINC_TAPS; k++) {
        const double x0 = x[k], x1 = x[k + SINC_STRIDE], x2 = x[k + 2 * SINC_STRIDE];
        const double2 *w = reinterpret_cast<const double2 *>(ws + k * SINC_FB);
#pragma unroll
        for (int f = 0; f < SINC_FB / 2; f++) {
            const double2 wf = w[f];
            acc[2 * f][0] = fma(wf.x, x0, acc[2 * f][0]);
            acc[2 * f][1] = fma(wf.x, x1, acc[2 * f][1]);
            acc[2 * f][2] = fma(wf.x, x2, acc[2 * f][2]);
            acc[2 * f + 1][0] = fma(wf.y, x0, acc[2 * f + 1][0]);
            acc[2 * f + 1][1] = fma(wf.y, x1, acc[2 * f + 1][1]);
            acc[2 * f + 1][2] = fma(wf.y, x2, acc[2 * f + 1][2]);
        }
    }
    const int p = p0 + threadIdx.x;
    if (p >= t_pool)
        return;
#pragma unroll
    for (int f = 0; f < SINC_FB; f++)
        if (f0 + f < nf)
            out[((long)b * nf + f0 + f) * t_pool + p] =
                (float)fmax(fabs(acc[f][0]), fmax(fabs(acc[f][1]), fabs(acc[f][2])));
}
