// dense.cu — the project's own kernels for the segmentation network's head:
// dense.linear0 (256 → 128) and dense.linear1 (128 → 128), each a matrix
// product with bias and leaky ReLU fused, and dense.classifier (128 → 7) with
// bias and log-softmax over the 7 classes fused. The linear layers in
// float32 FMAs (math mode fp32) or on the tensor cores in tf32 (math mode
// tf32, as the library then runs); the classifier in float32 FMAs in both
// modes. The library route runs cuBLAS's SGEMM, which
// tiles these N = 128 and N = 7 shapes poorly, then one or two glue kernels
// that read and write the whole output again.
// CPU reference: kernels/dense/dense_cpu.c and kernels/dense/dense_cpu.c; the float64
// definition the checks use is gf_dense_ref (kernels/dense/dense_gpu.c).
//
// gf_dense_lrelu_m32 / _m16 / _m8: out[r][c] = lrelu(sum_k x[r][k] · w[c][k]
// + b[c]) for 128 outputs c. Block of 128 threads owns 4·TM rows (32, 16 or
// 8) x all 128 columns; a warp owns 32 columns, its lanes a 4 x 8 grid of
// threads, each TM rows x 4 columns in registers. K is walked 16 at a time
// through two shared-memory stages (x transposed to [k][row], the weights
// [k][128] as repacked at upload), the next slice held in registers while
// the current one is multiplied; per k a thread reads its TM row values
// (float4 or float2, broadcast to 8 lanes) and one float4 of weights (one
// 128-byte wavefront a warp) for 4·TM FMAs. Static shared memory: 21.0 KB
// (m32), 18.9 KB (m16), 17.9 KB (m8). Grid: rows / (4·TM).
//
// gf_dense_logsoftmax7: a row's 7 logits by 8 lanes (16 of the 128 inputs
// each, reduced by shuffles), bias, then log-softmax with exp and log in
// float64 as the glue kernel does; lanes 0-6 write one class each. The
// classifier's weights (3.5 KB) in shared memory. Block of 128 threads, 16
// rows; grid rows / 16.
//
// gf_dense_lrelu_tf32_m64 / _m16 (math mode tf32): the same product on the
// tensor cores, mma.sync m16n8k8 tf32 with float32 accumulation, operands
// rounded to tf32 as cvt.rna does, as cuBLAS does (the weights at upload,
// x as its fragments are read, by an integer add and mask). Block of 128
// threads owns BM rows (64 or 16) x all 128 outputs; warp w the columns
// 32w .. 32w + 31 (4 n-tiles of 8) of all BM rows (BM / 16 m-tiles), so
// each weight fragment is read by one warp of a block and the x tile is
// shared by the four. x's whole [BM][K] tile comes into dynamic shared
// memory by 16-byte cp.async in four groups (K's quarters), each quarter
// multiplied as soon as it lands while the later ones are in flight. K is
// walked 16 at a time (two k-tiles of 8) with k permuted inside those 16,
// the same way for x and the weights (a sum does not care in which order
// it adds): lane 4g + t holds k 4t .. 4t + 3, so one 16-byte shared load
// gives a row's fragment words for both k-tiles and one 16-byte global load
// the weights'. Rows are padded to K + 16 floats, so the 16-byte loads of
// eight lanes (rows g and g + 1) fall in 32 banks. The weights come rounded
// and packed at upload as [K/16][16 n-tiles][32 lanes] x 4 words (the four
// k of the lane, of output 8·nt + g), read PF pairs ahead (2 for m64, 4 for
// m16, where fewer warps an SM hide L2's latency). Dynamic shared memory
// BM x (K + 16) x 4 bytes: 69.6 KB (m64, K 256: three blocks an SM), 17.4 KB
// (m16, K 256). Grid: rows / BM. K a multiple of 64. Needs sm_80: the sm75
// tier traps (kernels/dense/dense_gpu.c runs the float32 kernels there).

#include "kernels/tf32.cuh"

#define DENSE_N 128                      // outputs of the two linear layers
#define DENSE_BK 16                      // K slice per shared-memory stage
#define DENSE_THREADS 128
#define DENSE_TF32_PAD 16                // tf32 tile row padding: 16-byte fragment loads
                                         // of 8 lanes (rows g, g + 1) fall in 32 banks

#define CLS_C 7
#define CLS_K 128
#define CLS_LANES 8                      // lanes a row
#define CLS_THREADS 128
#define CLS_ROWS (CLS_THREADS / CLS_LANES)   // 16

template <int TM>
__device__ __forceinline__ void dense_lrelu(const float *__restrict__ x, int rows, int k_in,
                                            const float4 *__restrict__ wt4,
                                            const float *__restrict__ bias, float slope,
                                            float *__restrict__ out)
{
    constexpr int BM = 4 * TM;                     // rows a block
    constexpr int LDA = BM + 4;                    // padded: x stores hit 2 ways at most
    constexpr int XQ = BM * DENSE_BK / 4;          // float4 of x per slice (128 or 64)
    constexpr int WQ = DENSE_BK * DENSE_N / 4 / DENSE_THREADS;   // float4 of w per thread: 4
    __shared__ __align__(16) float as[2][DENSE_BK][LDA];
    __shared__ __align__(16) float4 bs[2][DENSE_BK][DENSE_N / 4];

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int r0 = (lane / 8) * TM;                // the thread's first row in the tile
    const int c4 = warp * 8 + lane % 8;            // its column quad: columns 4·c4 .. 4·c4 + 3
    const int m0 = blockIdx.x * BM;
    // The slice loader: x row xr, float4 xq of the slice; w rows tid / 32 + 4i.
    const int xr = tid / 4, xq = tid % 4;
    const bool xload = tid < XQ && m0 + xr < rows;
    const float4 *xp = reinterpret_cast<const float4 *>(x + (long)(m0 + xr) * k_in) + xq;
    const int nk = k_in / DENSE_BK;

    float4 xv = make_float4(0.0f, 0.0f, 0.0f, 0.0f), wv[WQ];
    float acc[TM][4];
#pragma unroll
    for (int i = 0; i < TM; i++)
        acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.0f;

    // slice 0 into stage 0
    if (xload)
        xv = __ldg(xp);
#pragma unroll
    for (int i = 0; i < WQ; i++)
        wv[i] = __ldg(wt4 + (tid / 32 + 4 * i) * (DENSE_N / 4) + tid % 32);
    if (tid < XQ) {
        as[0][4 * xq + 0][xr] = xv.x;
        as[0][4 * xq + 1][xr] = xv.y;
        as[0][4 * xq + 2][xr] = xv.z;
        as[0][4 * xq + 3][xr] = xv.w;
    }
#pragma unroll
    for (int i = 0; i < WQ; i++)
        bs[0][tid / 32 + 4 * i][tid % 32] = wv[i];
    __syncthreads();

    for (int kc = 0; kc < nk; kc++) {
        const int cur = kc & 1;
        const bool next = kc + 1 < nk;
        if (next) {
            if (xload)
                xv = __ldg(xp + (kc + 1) * (DENSE_BK / 4));
            const float4 *wn = wt4 + (long)(kc + 1) * DENSE_BK * (DENSE_N / 4);
#pragma unroll
            for (int i = 0; i < WQ; i++)
                wv[i] = __ldg(wn + (tid / 32 + 4 * i) * (DENSE_N / 4) + tid % 32);
        }
#pragma unroll
        for (int k = 0; k < DENSE_BK; k++) {
            float a[TM];
            if constexpr (TM >= 4) {
#pragma unroll
                for (int j = 0; j < TM / 4; j++) {
                    const float4 v = *reinterpret_cast<const float4 *>(&as[cur][k][r0 + 4 * j]);
                    a[4 * j + 0] = v.x;
                    a[4 * j + 1] = v.y;
                    a[4 * j + 2] = v.z;
                    a[4 * j + 3] = v.w;
                }
            } else {
                const float2 v = *reinterpret_cast<const float2 *>(&as[cur][k][r0]);
                a[0] = v.x;
                a[1] = v.y;
            }
            const float4 b = bs[cur][k][c4];
#pragma unroll
            for (int i = 0; i < TM; i++) {
                acc[i][0] = fmaf(a[i], b.x, acc[i][0]);
                acc[i][1] = fmaf(a[i], b.y, acc[i][1]);
                acc[i][2] = fmaf(a[i], b.z, acc[i][2]);
                acc[i][3] = fmaf(a[i], b.w, acc[i][3]);
            }
        }
        if (next) {
            // The other stage was last read in slice kc - 1, before the barrier that ended it.
            if (tid < XQ) {
                as[cur ^ 1][4 * xq + 0][xr] = xv.x;
                as[cur ^ 1][4 * xq + 1][xr] = xv.y;
                as[cur ^ 1][4 * xq + 2][xr] = xv.z;
                as[cur ^ 1][4 * xq + 3][xr] = xv.w;
            }
#pragma unroll
            for (int i = 0; i < WQ; i++)
                bs[cur ^ 1][tid / 32 + 4 * i][tid % 32] = wv[i];
        }
        __syncthreads();
    }

    const float4 bb = __ldg(reinterpret_cast<const float4 *>(bias) + c4);
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int row = m0 + r0 + i;
        if (row >= rows)
            break;
        float4 v;
        v.x = acc[i][0] + bb.x;
        v.y = acc[i][1] + bb.y;
        v.z = acc[i][2] + bb.z;
        v.w = acc[i][3] + bb.w;
        v.x = v.x > 0.0f ? v.x : v.x * slope;
        v.y = v.y > 0.0f ? v.y : v.y * slope;
        v.z = v.z > 0.0f ? v.z : v.z * slope;
        v.w = v.w > 0.0f ? v.w : v.w * slope;
        reinterpret_cast<float4 *>(out + (long)row * DENSE_N)[c4] = v;
    }
}

template <int BM, int PF>
__device__ __forceinline__ void dense_lrelu_tf32(const float *__restrict__ x, int rows, int k_in,
                                                 const uint4 *__restrict__ wp,
                                                 const float *__restrict__ bias, float slope,
                                                 float *__restrict__ out)
{
#if __CUDA_ARCH__ >= 800
    constexpr int MT = BM / 16;                    // m-tiles a warp
    constexpr int NT = 4;                          // n-tiles a warp: 32 columns
    extern __shared__ __align__(16) float xs[];    // [BM][k_in + 16]
    const int pitch = k_in + DENSE_TF32_PAD;
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int m0 = blockIdx.x * BM;
    const int gq = k_in / 16;                      // float4s of a row's quarter of K
    const int np = k_in / 16, ppg = np / 4;        // k pairs (16 k), pairs a quarter

    // The four quarters of the tile in flight; rows past the end read as
    // zeros (from row 0's address, which exists: rows >= 1).
#pragma unroll
    for (int q = 0; q < 4; q++) {
        for (int i = tid; i < BM * gq; i += DENSE_THREADS) {
            const int r = i / gq, c = q * (k_in / 4) + 4 * (i % gq);
            const bool ok = m0 + r < rows;
            cp_async16(xs + r * pitch + c, x + (long)(ok ? m0 + r : 0) * k_in + c, ok ? 16 : 0);
        }
        cp_async_commit();
    }

    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;

    // The packed weights: pair p, n-tile 4·warp + j, this lane; PF pairs
    // ahead in registers.
    const uint4 *wl = wp + warp * NT * 32 + lane;
    uint4 b[PF][NT];
#pragma unroll
    for (int f = 0; f < PF; f++)
#pragma unroll
        for (int j = 0; j < NT; j++)
            b[f][j] = __ldg(wl + (f * (DENSE_N / 8) + j) * 32);
    const float *xa = xs + g * pitch + 4 * t;      // this lane's k of pair 0, m-tile 0, row g
    for (int p0 = 0; p0 < np; p0 += PF) {
#pragma unroll
        for (int f = 0; f < PF; f++) {
            const int p = p0 + f;
            if (p % ppg == 0) {                    // a quarter begins: its copies landed
                cp_async_wait_quarter(p / ppg);
                __syncthreads();
            }
            float4 va[MT][2];
#pragma unroll
            for (int i = 0; i < MT; i++) {
                va[i][0] = *reinterpret_cast<const float4 *>(xa + i * 16 * pitch + 16 * p);
                va[i][1] = *reinterpret_cast<const float4 *>(xa + (i * 16 + 8) * pitch + 16 * p);
            }
#pragma unroll
            for (int sub = 0; sub < 2; sub++)
#pragma unroll
                for (int i = 0; i < MT; i++) {
                    unsigned a[4];
                    a_fragment(va[i][0], va[i][1], sub, a);
#pragma unroll
                    for (int j = 0; j < NT; j++)
                        mma_tf32(acc[i][j], a, sub ? b[f][j].z : b[f][j].x,
                                 sub ? b[f][j].w : b[f][j].y);
                }
            if (p + PF < np)
#pragma unroll
                for (int j = 0; j < NT; j++)
                    b[f][j] = __ldg(wl + ((p + PF) * (DENSE_N / 8) + j) * 32);
        }
    }

#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int n = warp * 32 + j * 8 + 2 * t;
        const float2 bb = __ldg(reinterpret_cast<const float2 *>(bias + n));
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int row = m0 + i * 16 + g + 8 * hf;
                if (row >= rows)
                    continue;
                float2 v;
                v.x = acc[i][j][2 * hf] + bb.x;
                v.y = acc[i][j][2 * hf + 1] + bb.y;
                v.x = v.x > 0.0f ? v.x : v.x * slope;
                v.y = v.y > 0.0f ? v.y : v.y * slope;
                *reinterpret_cast<float2 *>(out + (long)row * DENSE_N + n) = v;
            }
    }
#else
    __trap();
#endif
}

// x [rows][k_in] (k_in a multiple of 16, rows 16-byte aligned); wt4 the
// weights [k_in][128] (transposed at upload) as float4; bias [128];
// out [rows][128]. Grid ceil(rows / 32), 128 threads.
extern "C" __global__ void __launch_bounds__(DENSE_THREADS)
gf_dense_lrelu_m32(const float *__restrict__ x, int rows, int k_in, const float4 *__restrict__ wt4,
                   const float *__restrict__ bias, float slope, float *__restrict__ out)
{
    dense_lrelu<8>(x, rows, k_in, wt4, bias, slope, out);
}

// The same with 16 rows a block, for fewer rows: grid ceil(rows / 16).
extern "C" __global__ void __launch_bounds__(DENSE_THREADS)
gf_dense_lrelu_m16(const float *__restrict__ x, int rows, int k_in, const float4 *__restrict__ wt4,
                   const float *__restrict__ bias, float slope, float *__restrict__ out)
{
    dense_lrelu<4>(x, rows, k_in, wt4, bias, slope, out);
}

// The same with 8 rows a block, for a batch of one window: grid ceil(rows / 8).
extern "C" __global__ void __launch_bounds__(DENSE_THREADS)
gf_dense_lrelu_m8(const float *__restrict__ x, int rows, int k_in, const float4 *__restrict__ wt4,
                  const float *__restrict__ bias, float slope, float *__restrict__ out)
{
    dense_lrelu<2>(x, rows, k_in, wt4, bias, slope, out);
}

// Math mode tf32. x [rows][k_in] (k_in a multiple of 64, rows 16-byte
// aligned); wp the weights rounded to tf32 and packed (kernels/dense/dense_gpu.c):
// word quad [(k pair p) · 16 + n-tile nt][lane 4g + t] = w[8·nt + g][16p +
// 4t .. 16p + 4t + 3]; bias [128]; out [rows][128]. Grid ceil(rows / 64),
// 128 threads, 64 · (k_in + 16) · 4 bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(DENSE_THREADS)
gf_dense_lrelu_tf32_m64(const float *__restrict__ x, int rows, int k_in,
                        const uint4 *__restrict__ wp, const float *__restrict__ bias, float slope,
                        float *__restrict__ out)
{
    dense_lrelu_tf32<64, 2>(x, rows, k_in, wp, bias, slope, out);
}

// The same with 16 rows a block, for fewer rows: grid ceil(rows / 16),
// 16 · (k_in + 16) · 4 bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(DENSE_THREADS)
gf_dense_lrelu_tf32_m16(const float *__restrict__ x, int rows, int k_in,
                        const uint4 *__restrict__ wp, const float *__restrict__ bias, float slope,
                        float *__restrict__ out)
{
    dense_lrelu_tf32<16, 4>(x, rows, k_in, wp, bias, slope, out);
}

// x [rows][128]; w [7][128] and bias [7] as loaded; out [rows][7] the
// log-probabilities. Grid ceil(rows / 16), 128 threads.
extern "C" __global__ void __launch_bounds__(CLS_THREADS)
gf_dense_logsoftmax7(const float *__restrict__ x, int rows, const float4 *__restrict__ w4,
                     const float *__restrict__ bias, float *__restrict__ out)
{
    __shared__ float4 ws[CLS_C * CLS_K / 4];
    __shared__ float bs[CLS_C];
    for (int i = threadIdx.x; i < CLS_C * CLS_K / 4; i += CLS_THREADS)
        ws[i] = __ldg(w4 + i);
    if (threadIdx.x < CLS_C)
        bs[threadIdx.x] = __ldg(bias + threadIdx.x);
    __syncthreads();
    const int lane = threadIdx.x % CLS_LANES;
    const int row = blockIdx.x * CLS_ROWS + threadIdx.x / CLS_LANES;
    const bool valid = row < rows;   // every lane takes part in the shuffles below
    float acc[CLS_C];
#pragma unroll
    for (int c = 0; c < CLS_C; c++)
        acc[c] = 0.0f;
    if (valid) {
        const float4 *xr = reinterpret_cast<const float4 *>(x + (long)row * CLS_K);
#pragma unroll
        for (int s = 0; s < CLS_K / 4 / CLS_LANES; s++) {
            const float4 v = __ldg(xr + s * CLS_LANES + lane);
#pragma unroll
            for (int c = 0; c < CLS_C; c++) {
                const float4 wv = ws[c * (CLS_K / 4) + s * CLS_LANES + lane];
                acc[c] = fmaf(v.x, wv.x, acc[c]);
                acc[c] = fmaf(v.y, wv.y, acc[c]);
                acc[c] = fmaf(v.z, wv.z, acc[c]);
                acc[c] = fmaf(v.w, wv.w, acc[c]);
            }
        }
    }
#pragma unroll
    for (int c = 0; c < CLS_C; c++)
#pragma unroll
        for (int o = CLS_LANES / 2; o > 0; o >>= 1)
            acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], o);
    if (!valid || lane >= CLS_C)
        return;
    float z[CLS_C];
#pragma unroll
    for (int c = 0; c < CLS_C; c++)
        z[c] = acc[c] + bs[c];
    float m = z[0], mine = z[0];
#pragma unroll
    for (int c = 1; c < CLS_C; c++) {
        m = fmaxf(m, z[c]);
        if (c == lane)
            mine = z[c];
    }
    double e = 0.0;
#pragma unroll
    for (int c = 0; c < CLS_C; c++)
        e += exp((double)z[c] - (double)m);
    out[(long)row * CLS_C + lane] = (float)((double)mine - (double)m - log(e));
}
