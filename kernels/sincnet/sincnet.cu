// sincnet.cu — the project's own kernel for the boundary
// sincnet.conv0.abs_pool: the SincNet filterbank (80 filters of 251 taps,
// stride 10) over the normalised waveform in float64, then |.| and max-pooling
// by 3, fused. The library route writes the im2col matrix of the waveform in
// float64 (251 doubles per output frame: 1 GB at a batch of 32), multiplies
// it by cuBLAS's DGEMM into another float64 matrix and pools that; this
// module keeps both in shared memory and registers. Two kernels: the DMMA
// kernel below on the float64 tensor cores, where the sm90 tier loads, and
// this FMA kernel for cards below it (kernels/sincnet/sincnet_gpu.c picks).
// CPU reference: the float64 sums of kernels/sincnet/sincnet_gpu.h's definition
// (tests/gpu/test_gpu_sinc.c, gpuflock qualify).
//
// FMA kernel. Block: 256 threads, one pooled output each (three frames, 10 samples
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
// (SINC_SPAN_PAD + 16·251) doubles (gf_sinc_own_smem in kernels/sincnet/sincnet_gpu.c).
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

// The DMMA kernel (float64 tensor cores, mma.sync m16n8k4 f64: sm_90; the
// route takes it where the sm90 tier loads, cc >= 9.0; in the sm75 tier it
// traps). m16n8k4 rather than Ampere's m8n8k4: on Hopper the m8n8k4 shape
// falls well short of the float64 tensor rate (Triton's DGEMM on an H100:
// about 31 TFLOP/s with m8n8k4, 53 with m16n8k4, triton-lang/triton#10313;
// not measured here), near what FMAs give. Per window
// a GEMM: M frames, N filters, K 251 taps padded to 252 with a zero tap,
// A[m][k] = x[10m + k] read straight from the waveform span in shared memory,
// B[k][n] = filter n's tap k. Fragments (PTX ISA, m16n8k4 .f64): A two
// doubles a lane at rows lane/4 and lane/4 + 8, column lane%4; B one double
// at row lane%4, column lane/4; C/D four doubles at rows lane/4 (c0, c1) and
// lane/4 + 8 (c2, c3), columns 2(lane%4) and 2(lane%4)+1.
// M is ordered by phase: a warp owns 16 pooled outputs and takes three
// m-tiles, tile j holding frame 3p + j of each, so the three frames of a
// pooled output land in the same thread's registers and |.| and the max
// need no shuffle. Rows r and r + 8 of a tile are pooled outputs q and q + 8
// of the warp's 16, q = 2r (r < 4) or 2(r - 4) + 1 (r >= 4): with rows 30
// samples apart this makes the A loads of each half-warp hit 16 distinct
// banks (30·2r mod 16 = 0, 12, 8, 4 plus column 0..3), and a filter pitch of
// 252 doubles does the same for B.
// Block: 128 threads, 4 warps of 16 pooled outputs (64 a block), 40 filters
// (5 n-tiles of 8), 15 m16n8k4 a warp per step of 4 taps, 60 float64
// accumulators a thread; grid (pooled outputs / 64, 80 / 40, windows); two
// blocks a multiprocessor. Shared memory: the span, 30·64 + 242 samples, and
// the 40 filters [filter][252], float64: 97,936 bytes.
#define SINC_MMA_FB 40                                // filters per block
#define SINC_MMA_NT (SINC_MMA_FB / 8)                 // n-tiles
#define SINC_MMA_THREADS 128
#define SINC_MMA_PT (SINC_MMA_THREADS / 32 * 16)     // pooled outputs per block: 64
#define SINC_MMA_K 252                                // taps padded to a multiple of 4
#define SINC_MMA_SPAN (SINC_MMA_PT * 3 * SINC_STRIDE + SINC_MMA_K - SINC_STRIDE)   // 2162

// Same arguments and output as gf_sinc_abs_pool_f64. Dynamic shared memory:
// (SINC_MMA_SPAN + 40·252) doubles (kernels/sincnet/sincnet_gpu.c).
extern "C" __global__ void __launch_bounds__(SINC_MMA_THREADS, 2)
gf_sinc_abs_pool_dmma(const float *__restrict__ wave, int n, const double *__restrict__ filters,
                      int nf, int t_pool, float *__restrict__ out)
{
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) double gf_sinc_smem[];
    double *xs = gf_sinc_smem, *ws = gf_sinc_smem + SINC_MMA_SPAN;
    const int b = blockIdx.z, f0 = blockIdx.y * SINC_MMA_FB, p0 = blockIdx.x * SINC_MMA_PT;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float *xb = wave + (long)b * n;
    const long s0 = (long)p0 * 3 * SINC_STRIDE;
    for (int i = threadIdx.x; i < SINC_MMA_SPAN; i += SINC_MMA_THREADS) {
        const long s = s0 + i;
        xs[i] = s < n ? (double)xb[s] : 0.0;
    }
    for (int i = threadIdx.x; i < SINC_MMA_FB * SINC_MMA_K; i += SINC_MMA_THREADS) {
        const int f = i / SINC_MMA_K, k = i - f * SINC_MMA_K;
        ws[i] = f0 + f < nf && k < SINC_TAPS ? filters[(long)(f0 + f) * SINC_TAPS + k] : 0.0;
    }
    __syncthreads();

    // This lane's pooled outputs within the warp's 16: q (A and C row g) and
    // q + 8 (row g + 8).
    const int q = g < 4 ? 2 * g : 2 * (g - 4) + 1;
    const double *xa = xs + (warp * 16 + q) * 3 * SINC_STRIDE + t;  // + 10j + k0, + 240: q + 8
    const double *wb = ws + g * SINC_MMA_K + t;                     // + 8·252·nt + k0
    double acc[3][SINC_MMA_NT][4];
#pragma unroll
    for (int j = 0; j < 3; j++)
#pragma unroll
        for (int nt = 0; nt < SINC_MMA_NT; nt++)
            acc[j][nt][0] = acc[j][nt][1] = acc[j][nt][2] = acc[j][nt][3] = 0.0;
#pragma unroll 3
    for (int k0 = 0; k0 < SINC_MMA_K; k0 += 4) {
        double a[3][2], bf[SINC_MMA_NT];
#pragma unroll
        for (int j = 0; j < 3; j++) {
            a[j][0] = xa[j * SINC_STRIDE + k0];
            a[j][1] = xa[8 * 3 * SINC_STRIDE + j * SINC_STRIDE + k0];
        }
#pragma unroll
        for (int nt = 0; nt < SINC_MMA_NT; nt++)
            bf[nt] = wb[nt * 8 * SINC_MMA_K + k0];
#pragma unroll
        for (int j = 0; j < 3; j++)
#pragma unroll
            for (int nt = 0; nt < SINC_MMA_NT; nt++)
                asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 "
                             "{%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                             : "+d"(acc[j][nt][0]), "+d"(acc[j][nt][1]), "+d"(acc[j][nt][2]),
                               "+d"(acc[j][nt][3])
                             : "d"(a[j][0]), "d"(a[j][1]), "d"(bf[nt]));
    }
#pragma unroll
    for (int h = 0; h < 2; h++) {   // rows g and g + 8: pooled outputs q and q + 8
        const int p = p0 + warp * 16 + q + 8 * h;
        if (p >= t_pool)
            break;
#pragma unroll
        for (int nt = 0; nt < SINC_MMA_NT; nt++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const int f = f0 + nt * 8 + 2 * t + c, i = 2 * h + c;
                if (f < nf)
                    out[((long)b * nf + f) * t_pool + p] = (float)fmax(
                        fabs(acc[0][nt][i]), fmax(fabs(acc[1][nt][i]), fabs(acc[2][nt][i])));
            }
    }
#else
    __trap();
#endif
}
