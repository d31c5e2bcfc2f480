// resnet.cu — the project's own kernel for the ResNet boundaries
// (resnet.conv1, resnet.layerL.B.conv1/conv2, resnet.layerL.0.shortcut): an
// implicit-GEMM convolution on the tensor cores in tf32, with the bias
// (batch norm folded at load), the residual and the ReLU fused into its
// epilogue. The library route materialises the im2col matrix in device
// memory and calls cuBLAS; this kernel gathers the same matrix tile by tile
// into shared memory and never writes it out.
// CPU reference: kernels/conv2d.c (gf_conv2d_ref).
//
// GEMM view: M = Cout, N = B·Ho·Wo (output positions), K = Cin·KS·KS.
// Block tile 64 (M) x 128 (N) x 16 (K), 8 warps as 2 (M) x 4 (N), each warp
// 32 x 32 = 2 x 4 mma.m16n8k8 tiles. The next K tile is loaded into
// registers while the current one is multiplied. Shared-memory rows are
// padded so that fragment loads hit 32 distinct banks.
//
// v1 runs resnet.conv1 (one input channel, which does not fill a 16-channel
// K tile); v4, below, the 3x3 stride-1 layers; v3 the strided 3x3 layers
// and the 1x1 shortcuts. v2, which only walked K a tap at a time, is gone:
// v3 keeps its K order (docs/gpu.md has both measured).
//
// Needs sm_80 (mma.sync tf32); the sm_75 build traps, and the planner
// refuses the kernel on such cards.

#define BM 64
#define BN 128
#define BK 16
#define APAD 8
#define BPAD 8
#define THREADS 256

__device__ __forceinline__ unsigned to_tf32(float v)
{
    unsigned u;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(v));
#else
    u = __float_as_uint(v);
#endif
    return u;
}

// The same rounding on a value's bits (an integer add and a mask: no
// conversion unit), for operands already in registers. Finite values.
__device__ __forceinline__ unsigned round_tf32_bits(unsigned u)
{
    return (u + 0x1000u) & 0xffffe000u;
}

// The PTX the kernels share: an x4 ldmatrix (four 8x8 b16 matrices, one
// row address per lane), one tf32 mma.m16n8k8 into four accumulators, and
// 4-byte / 16-byte cp.async (src_bytes 0: the 16 bytes are zero-filled).
__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned &r0, unsigned &r1,
                                            unsigned &r2, unsigned &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void cp_async4(unsigned dst, const float *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const float *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(src_bytes));
}

// One output of the fused epilogue (bias already in v): the residual at o
// added, then the ReLU.
__device__ __forceinline__ void store_out(float *__restrict__ out,
                                          const float *__restrict__ residual, long o, float v,
                                          int relu)
{
    if (residual)
        v += residual[o];
    out[o] = relu ? fmaxf(v, 0.0f) : v;
}

template <int KS>
__device__ __forceinline__ void conv_tf32(const float *__restrict__ x, const float *__restrict__ w,
                                          const float *__restrict__ bias,
                                          const float *__restrict__ residual,
                                          float *__restrict__ out, int B, int Cin, int H, int W,
                                          int Cout, int stride, int pad, int Ho, int Wo, int relu)
{
#if __CUDA_ARCH__ >= 800
    __shared__ unsigned As[BK][BM + APAD];
    __shared__ unsigned Bs[BK][BN + BPAD];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp >> 2, wn = warp & 3;          // warp position: 2 x 4
    const int g = lane >> 2, t4 = lane & 3;           // mma fragment coordinates
    const int K = Cin * KS * KS;
    const long HW = (long)Ho * Wo, N = (long)B * HW;
    const int m0 = blockIdx.y * BM;
    const long n0 = (long)blockIdx.x * BN;

    // This thread's B column (one output position) and its two K rows per pass.
    const int bn = tid & (BN - 1), bk0 = tid >> 7;    // bk0 in {0, 1}
    const long p = n0 + bn;
    const bool p_ok = p < N;
    int pb = 0, oy = 0, ox = 0;
    if (p_ok) {
        pb = (int)(p / HW);
        int q = (int)(p - (long)pb * HW);
        oy = q / Wo;
        ox = q - oy * Wo;
    }
    const float *xb = x + (long)pb * Cin * H * W;
    const int iy0 = oy * stride - pad, ix0 = ox * stride - pad;

    float a_reg[4], b_reg[8];
    auto load_tile = [&](int k0) {
#pragma unroll
        for (int i = 0; i < 4; i++) {                 // A: 64 x 16 weights
            int idx = tid + i * THREADS, m = idx >> 4, kk = idx & 15;
            int gm = m0 + m, gk = k0 + kk;
            a_reg[i] = (gm < Cout && gk < K) ? w[(long)gm * K + gk] : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {                 // B: 16 x 128 gathered inputs
            int gk = k0 + bk0 + 2 * i;
            float v = 0.0f;
            if (p_ok && gk < K) {
                int c = gk / (KS * KS), r = gk - c * (KS * KS);
                int ky = r / KS, kx = r - ky * KS;
                int iy = iy0 + ky, ix = ix0 + kx;
                if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                    v = xb[((long)c * H + iy) * W + ix];
            }
            b_reg[i] = v;
        }
    };
    auto store_tile = [&]() {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int idx = tid + i * THREADS, m = idx >> 4, kk = idx & 15;
            As[kk][m] = to_tf32(a_reg[i]);
        }
#pragma unroll
        for (int i = 0; i < 8; i++)
            Bs[bk0 + 2 * i][bn] = to_tf32(b_reg[i]);
    };

    float acc[2][4][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[mi][ni][r] = 0.0f;

    load_tile(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
        store_tile();
        __syncthreads();
        if (k0 + BK < K)
            load_tile(k0 + BK);                       // in flight during the mma below
#pragma unroll
        for (int ks = 0; ks < BK; ks += 8) {
            unsigned a[2][4], b[4][2];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                int m = wm * 32 + mi * 16 + g;
                a[mi][0] = As[ks + t4][m];
                a[mi][1] = As[ks + t4][m + 8];
                a[mi][2] = As[ks + t4 + 4][m];
                a[mi][3] = As[ks + t4 + 4][m + 8];
            }
#pragma unroll
            for (int ni = 0; ni < 4; ni++) {
                int n = wn * 32 + ni * 8 + g;
                b[ni][0] = Bs[ks + t4][n];
                b[ni][1] = Bs[ks + t4 + 4][n];
            }
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++)
                    mma_tf32(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
        }
        __syncthreads();
    }

    // Epilogue: bias, residual, ReLU; straight from the accumulators.
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int m = m0 + wm * 32 + mi * 16 + g + half * 8;
            if (m >= Cout)
                continue;
            float bm = bias[m];
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    long n = n0 + wn * 32 + ni * 8 + 2 * t4 + j;
                    if (n >= N)
                        continue;
                    long nb = n / HW, q = n - nb * HW;
                    store_out(out, residual, (nb * Cout + m) * HW + q, acc[mi][ni][half * 2 + j] + bm,
                              relu);
                }
        }
#else
    __trap();
#endif
}


// v3 (layers with Cin a multiple of 16: all but resnet.conv1). v2's K order
// (a tile is 16 channels of one tap), plus:
// - the weights arrive packed (Cout, tap, Cin) and already rounded to tf32
//   (worker/conv_gpu.c), so a thread's share of the A tile is 16-byte loads
//   and stores, with no conversion;
// - both tiles sit K-contiguous in shared memory ([row][16 + 4 pad]), so the
//   mma fragments come from ldmatrix (one instruction for a 16x8 A fragment
//   or two 8x8 B fragments; a tf32 word is two b16 halves) instead of one
//   32-bit load per register;
// - two shared-memory stages: one barrier per K tile instead of two;
// - the tap and the channel tile are counters, not a division of the K index;
// - the block follows Cout: 64 x 128 for Cout 64, 128 x 128 for wider
//   layers (each gathered input value then feeds twice the multiplies);
//   a 32 x 256 block (WARPS_M 1) served Cout 32 until v4 took stage 1;
// - the epilogue splits each output column into (window, position) once per
//   column pair and writes pairs when Ho*Wo is even.
// Warps: WARPS_M x (8 / WARPS_M), each a (BM_ / WARPS_M) x (BN_ / WARPS_N)
// tile of MI x NI mma tiles.
template <int KS, int BM_, int BN_, int WARPS_M>
__device__ __forceinline__ void conv_tf32_v3(const float *__restrict__ x,
                                             const float *__restrict__ wp,
                                             const float *__restrict__ bias,
                                             const float *__restrict__ residual,
                                             float *__restrict__ out, int B, int Cin, int H, int W,
                                             int Cout, int stride, int pad, int Ho, int Wo,
                                             int relu)
{
#if __CUDA_ARCH__ >= 800
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int MI = BM_ / WARPS_M / 16, NI = BN_ / WARPS_N / 8;
    constexpr int KPT = 16 * BN_ / THREADS;           // B values a thread gathers per tile
    constexpr int AQ = (BM_ * 4 + THREADS - 1) / THREADS;   // A quads a thread moves per tile
    constexpr int LD = BK + 4;                        // row stride in floats (80 bytes)
    static_assert(MI * 16 * WARPS_M == BM_ && NI * 8 * WARPS_N == BN_ && NI % 2 == 0,
                  "warps cover the block");
    static_assert(KPT % 4 == 0 && KPT <= 16, "whole quads of a 16-channel tile per thread");
    __shared__ __align__(16) float As[2][BM_][LD];
    __shared__ __align__(16) float Bs[2][BN_][LD];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int g = lane >> 2, t4 = lane & 3;
    const int HW = Ho * Wo;
    const long N = (long)B * HW;
    const int m0 = blockIdx.y * BM_;
    const long n0 = (long)blockIdx.x * BN_;
    const int KK = KS * KS * Cin;                     // packed weights per output channel

    // This thread's B column and its KPT channels per tile.
    const int bn = tid % BN_, bk = (tid / BN_) * KPT;
    const long p = n0 + bn;
    const bool p_ok = p < N;
    int pb = 0, oy = 0, ox = 0;
    if (p_ok) {
        pb = (int)(p / HW);
        int q = (int)(p - (long)pb * HW);
        oy = q / Wo;
        ox = q - oy * Wo;
    }
    const long HWin = (long)H * W;
    const float *xb = x + ((long)pb * Cin + bk) * HWin;
    const int iy0 = oy * stride - pad, ix0 = ox * stride - pad;

    // This thread's A quads: rows am + 64 r, K columns aq..aq+3.
    const int am = tid >> 2, aq = (tid & 3) * 4;
    const float *wrow = wp + (long)(m0 + am) * KK + aq;

    float4 a_reg[AQ];
#pragma unroll
    for (int r = 0; r < AQ; r++)
        a_reg[r] = make_float4(0.f, 0.f, 0.f, 0.f);
    float b_reg[KPT];
    int ky = 0, kx = 0, c0 = 0;                       // the next tile to load
    auto load_tile = [&]() {
#pragma unroll
        for (int r = 0; r < AQ; r++)
            if (am + 64 * r < BM_ && m0 + am + 64 * r < Cout)
                a_reg[r] = *reinterpret_cast<const float4 *>(wrow + (long)64 * r * KK +
                                                             (ky * KS + kx) * Cin + c0);
        const int iy = iy0 + ky, ix = ix0 + kx;
        const bool in = p_ok && iy >= 0 && iy < H && ix >= 0 && ix < W;
        const float *src = xb + (long)c0 * HWin + (long)iy * W + ix;
#pragma unroll
        for (int i = 0; i < KPT; i++)
            b_reg[i] = in ? src[(long)i * HWin] : 0.0f;
        c0 += BK;
        if (c0 == Cin) {
            c0 = 0;
            if (++kx == KS) {
                kx = 0;
                ++ky;
            }
        }
    };
    auto store_tile = [&](int buf) {
#pragma unroll
        for (int r = 0; r < AQ; r++)
            if (am + 64 * r < BM_)
                *reinterpret_cast<float4 *>(&As[buf][am + 64 * r][aq]) = a_reg[r];
#pragma unroll
        for (int i = 0; i < KPT; i += 4) {
            float4 v;
            v.x = __uint_as_float(to_tf32(b_reg[i]));
            v.y = __uint_as_float(to_tf32(b_reg[i + 1]));
            v.z = __uint_as_float(to_tf32(b_reg[i + 2]));
            v.w = __uint_as_float(to_tf32(b_reg[i + 3]));
            *reinterpret_cast<float4 *>(&Bs[buf][bn][bk + i]) = v;
        }
    };

    // ldmatrix row addresses of this lane (bytes in the shared window).
    // A, per 16-row fragment: lanes 0-7 rows 0-7 k 0-3, 8-15 rows 8-15 k 0-3,
    // 16-23 rows 0-7 k 4-7, 24-31 rows 8-15 k 4-7 -> a0..a3.
    // B, per pair of 8-column fragments: lanes 0-7 cols 0-7 k 0-3, 8-15
    // cols 0-7 k 4-7, 16-23 cols 8-15 k 0-3, 24-31 cols 8-15 k 4-7.
    const unsigned as0 = (unsigned)__cvta_generic_to_shared(&As[0][0][0]);
    const unsigned bs0 = (unsigned)__cvta_generic_to_shared(&Bs[0][0][0]);
    const int a_row = wm * MI * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 4;
    const int b_row = wn * NI * 8 + (lane & 7) + (lane >> 4) * 8, b_col = ((lane >> 3) & 1) * 4;
    const unsigned a_off = (unsigned)(a_row * LD + a_col) * 4u;
    const unsigned b_off = (unsigned)(b_row * LD + b_col) * 4u;
    constexpr unsigned A_BUF = BM_ * LD * 4u, B_BUF = BN_ * LD * 4u;

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[mi][ni][r] = 0.0f;

    const int tiles = KS * KS * (Cin / BK);
    load_tile();
    store_tile(0);
    __syncthreads();
    for (int t = 0; t < tiles; t++) {
        const int cur = t & 1;
        if (t + 1 < tiles)
            load_tile();                              // in flight during the mma below
#pragma unroll
        for (int ks = 0; ks < BK; ks += 8) {
            unsigned a[MI][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                unsigned addr = as0 + cur * A_BUF + a_off + (unsigned)(mi * 16 * LD + ks) * 4u;
                ldmatrix_x4(addr, a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
            }
#pragma unroll
            for (int nj = 0; nj < NI / 2; nj++) {
                unsigned addr = bs0 + cur * B_BUF + b_off + (unsigned)(nj * 16 * LD + ks) * 4u;
                ldmatrix_x4(addr, b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
                    mma_tf32(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
        }
        if (t + 1 < tiles)
            store_tile(cur ^ 1);                      // the other stage: read last turn
        __syncthreads();
    }

    // Epilogue: bias, residual, ReLU. Columns 2*t4 and 2*t4+1 of a fragment
    // are one even/odd pair; with Ho*Wo even they share a window and an
    // aligned float2.
    const bool pairs = (HW & 1) == 0;
#pragma unroll
    for (int ni = 0; ni < NI; ni++) {
        const long n = n0 + wn * NI * 8 + ni * 8 + 2 * t4;
        if (n >= N)
            continue;
        const long nb = n / HW;
        const long q = n - nb * HW;
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const int m = m0 + wm * MI * 16 + mi * 16 + g + half * 8;
                if (m >= Cout)
                    continue;
                const float bm = bias[m];
                const long o = (nb * Cout + m) * HW + q;
                float v0 = acc[mi][ni][half * 2] + bm, v1 = acc[mi][ni][half * 2 + 1] + bm;
                if (pairs) {
                    if (residual) {
                        float2 r = *reinterpret_cast<const float2 *>(residual + o);
                        v0 += r.x;
                        v1 += r.y;
                    }
                    if (relu) {
                        v0 = fmaxf(v0, 0.0f);
                        v1 = fmaxf(v1, 0.0f);
                    }
                    *reinterpret_cast<float2 *>(out + o) = make_float2(v0, v1);
                } else {
#pragma unroll
                    for (int j = 0; j < 2; j++) {
                        const long nj = n + j;
                        if (nj >= N)
                            continue;
                        const long bj = nj / HW;
                        store_out(out, residual, (bj * Cout + m) * HW + (nj - bj * HW), j ? v1 : v0,
                                  relu);
                    }
                }
            }
    }
#else
    __trap();
#endif
}

// v4 (3x3, stride 1, pad 1, Cin a multiple of BKC: every 3x3 layer of the
// trunk that keeps the extent). v3 gathers each input value nine times from
// global memory, once per tap, so its stage-1 layers move nine times their
// input through L2. v4's block owns a tile of R output rows x C output
// columns of one window (N = R·C) for BM_ output channels, and walks K one
// slab of BKC input channels at a time:
// - the slab's (R+2) x (C+2) input halo is copied once into shared memory by
//   cp.async, position-major with the channels contiguous (rows of BKC + 4
//   words, so ldmatrix's eight rows hit distinct banks); the padding's
//   zeros are written once, at the start;
// - the nine taps read their B fragments from that one halo: ldmatrix takes
//   a row address per lane, so a tap is the same fragment walk with every
//   row address moved by (ky·(C+2) + kx) positions; the fragments are
//   rounded to tf32 in registers (round_tf32_bits, the same rounding as
//   cvt.rna);
// - the slab's weights, BM_ x 9 taps x BKC, packed (Cout, tap, Cin) in tf32
//   as for v3, arrive by cp.async as well;
// - two stages in dynamic shared memory: the next slab is in flight while
//   the current slab's 9·BKC/8 k-steps run; one barrier per slab; during
//   the last slab the residual tile takes the free weight stage, where it
//   fits. (A first version staged the halo through registers; the compiler
//   placed those loads next to their use, and warps stalled on them: 43 %
//   of their cycles at stage 1 in Nsight Compute.)
// The host sizes the dynamic shared memory with the same formula
// (worker/conv_gpu.c: 2 x 4 bytes x ((R+2)(C+2)(BKC+4) + BM_(9·BKC+4))).
// The grid is (tiles of the output plane, Cout / BM_, windows).
extern __shared__ __align__(16) unsigned char gf_resnet_smem[];

template <int BM_, int R, int C, int BKC, int WARPS_M>
__device__ __forceinline__ void conv3_tf32_v4(const float *__restrict__ x,
                                              const float *__restrict__ wp,
                                              const float *__restrict__ bias,
                                              const float *__restrict__ residual,
                                              float *__restrict__ out, int Cin, int H, int W,
                                              int Cout, int Ho, int Wo, int relu)
{
#if __CUDA_ARCH__ >= 800
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int BN_ = R * C;
    constexpr int MI = BM_ / WARPS_M / 16, NI = BN_ / WARPS_N / 8;
    constexpr int HC = C + 2, NH = (R + 2) * HC;      // halo columns, positions
    constexpr int LDH = BKC + 4, LDA = 9 * BKC + 4;   // row strides in words
    constexpr int QC = BKC / 4;                       // channel quads per position
    constexpr int HP = (NH + 63) / 64;                // halo positions per thread
    constexpr int AQT = BM_ * 9 * QC, AQ = (AQT + THREADS - 1) / THREADS;
    constexpr unsigned H_BUF = NH * LDH * 4u, A_BUF = BM_ * LDA * 4u;
    static_assert(MI * 16 * WARPS_M == BM_ && NI * 8 * WARPS_N == BN_ && NI % 2 == 0,
                  "warps cover the block");
    static_assert(C % (NI * 8) == 0 || (NI * 8) % C == 0, "a warp's columns stay in whole rows");
    static_assert(C % 8 == 0 && BKC % 8 == 0, "fragments of eight columns and eight channels");
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;
    const int g = lane >> 2, t4 = lane & 3;
    const int tiles_x = (Wo + C - 1) / C;
    const int oy0 = (blockIdx.x / tiles_x) * R, ox0 = (blockIdx.x % tiles_x) * C;
    const int m0 = blockIdx.y * BM_, b = blockIdx.z;
    const long HWin = (long)H * W;
    const float *xb = x + (long)b * Cin * HWin;
    const int KK = 9 * Cin;                           // packed weights per output channel

    const unsigned hs0 = (unsigned)__cvta_generic_to_shared(gf_resnet_smem);
    const unsigned as0 = hs0 + 2 * H_BUF;
    // The halo goes by cp.async too, four bytes at a time: this thread's
    // positions are tid/4 + 64 i and its channels tid%4 + 4 c, so a warp
    // writes 8 positions x 4 channels (32 distinct banks) and reads four
    // 32-byte runs. h_src: the global offset of (channel tid%4, iy, ix) from
    // the slab's first channel; -1 for padding, whose zeros are written once
    // into both stages here; -2 past the halo.
    const int c_lo = tid & 3, p_first = tid >> 2;
    const unsigned h_dst = (unsigned)(p_first * LDH + c_lo) * 4u;
    int h_src[HP];
#pragma unroll
    for (int i = 0; i < HP; i++) {
        const int pos = p_first + 64 * i;
        h_src[i] = -2;
        if (pos < NH) {
            const int iy = oy0 - 1 + pos / HC, ix = ox0 - 1 + pos % HC;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W) {
                h_src[i] = (int)(c_lo * HWin) + iy * W + ix;
            } else {
                h_src[i] = -1;
                float *z = reinterpret_cast<float *>(gf_resnet_smem) + pos * LDH + c_lo;
#pragma unroll
                for (int c = 0; c < BKC; c += 4)
                    z[c] = z[H_BUF / 4 + c] = 0.0f;
            }
        }
    }
    auto load_halo = [&](int c0, int buf) {
        const float *src = xb + (long)c0 * HWin;
        const unsigned dst = hs0 + buf * H_BUF + h_dst;
#pragma unroll
        for (int i = 0; i < HP; i++)
            if (h_src[i] >= 0)
#pragma unroll
                for (int c = 0; c < BKC; c += 4)
                    cp_async4(dst + (unsigned)(i * 64 * LDH + c) * 4u, src + h_src[i] + c * HWin);
    };

    // The slab's weights: quad idx is (row m, tap, quad q); rows past Cout
    // are filled with zeros (cp.async with no source bytes).
    auto load_weights = [&](int c0, int buf) {
#pragma unroll
        for (int j = 0; j < AQ; j++) {
            const int idx = tid + j * THREADS;
            if (AQT % THREADS == 0 || idx < AQT) {
                const int m = idx / (9 * QC), r = idx % (9 * QC), tap = r / QC, q = r % QC;
                const bool ok = m0 + m < Cout;
                const float *src = ok ? wp + (long)(m0 + m) * KK + tap * Cin + c0 + 4 * q : wp;
                const unsigned dst = as0 + buf * A_BUF + (unsigned)(m * LDA + tap * BKC + 4 * q) * 4u;
                cp_async16(dst, src, ok ? 16 : 0);
            }
        }
    };
    auto load_slab = [&](int c0, int buf) {
        load_halo(c0, buf);
        load_weights(c0, buf);
        asm volatile("cp.async.commit_group;");
    };
    // The residual tile (BM_ rows of the block's BN_ positions, rows of
    // BN_ + 8 words: a half-warp's float2 reads in the epilogue hit distinct
    // banks) goes into the weights' other stage while the last slab is
    // multiplied, where it fits (not at BM_ 32 x BN_ 256); elsewhere the
    // epilogue reads it from global memory.
    constexpr int LDR = BN_ + 8;
    constexpr bool STAGE_RES = BM_ * LDR * 4 <= (int)A_BUF;
    auto load_residual = [&](int buf) {
        const unsigned dst0 = as0 + buf * A_BUF;
#pragma unroll 4
        for (int k = 0; k < BM_ * BN_ / THREADS; k++) {
            const int idx = tid + k * THREADS, m = idx / BN_, n = idx % BN_;
            const int oy = oy0 + n / C, ox = ox0 + n % C;
            if (m0 + m < Cout && oy < Ho && ox < Wo)
                cp_async4(dst0 + (unsigned)(m * LDR + n) * 4u,
                          residual + (((long)b * Cout + m0 + m) * Ho + oy) * Wo + ox);
        }
        asm volatile("cp.async.commit_group;");
    };

    // ldmatrix row addresses of this lane, as in v3; B's rows are output
    // positions, placed in the halo at tap (0, 0).
    const int a_row = wm * MI * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, a_col = (lane >> 4) * 4;
    const unsigned a_off = (unsigned)(a_row * LDA + a_col) * 4u;
    unsigned b_off[NI / 2];
#pragma unroll
    for (int nj = 0; nj < NI / 2; nj++) {
        const int n = wn * NI * 8 + nj * 16 + (lane & 7) + (lane >> 4) * 8;
        b_off[nj] = (unsigned)(((n / C) * HC + n % C) * LDH + ((lane >> 3) & 1) * 4) * 4u;
    }

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[mi][ni][r] = 0.0f;

    const int slabs = Cin / BKC;
    load_slab(0, 0);
    asm volatile("cp.async.wait_all;");
    __syncthreads();
    for (int t = 0; t < slabs; t++) {
        const int cur = t & 1;
        if (t + 1 < slabs)                            // in flight during the mma below
            load_slab((t + 1) * BKC, cur ^ 1);
        else if (STAGE_RES && residual)
            load_residual(cur ^ 1);
        const unsigned a_base = as0 + cur * A_BUF + a_off, b_base = hs0 + cur * H_BUF;
#pragma unroll
        for (int tap = 0; tap < 9; tap++) {
            const unsigned tap_off = (unsigned)(((tap / 3) * HC + tap % 3) * LDH) * 4u;
#pragma unroll
            for (int ks = 0; ks < BKC; ks += 8) {
                unsigned a[MI][4], bf[NI][2];
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    const unsigned addr = a_base + (unsigned)(mi * 16 * LDA + tap * BKC + ks) * 4u;
                    ldmatrix_x4(addr, a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
                }
#pragma unroll
                for (int nj = 0; nj < NI / 2; nj++) {
                    const unsigned addr = b_base + b_off[nj] + tap_off + (unsigned)ks * 4u;
                    ldmatrix_x4(addr, bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                                bf[2 * nj + 1][1]);
                }
#pragma unroll
                for (int ni = 0; ni < NI; ni++) {       // the halo is fp32: round as cvt.rna
                    bf[ni][0] = round_tf32_bits(bf[ni][0]);
                    bf[ni][1] = round_tf32_bits(bf[ni][1]);
                }
#pragma unroll
                for (int mi = 0; mi < MI; mi++)
#pragma unroll
                    for (int ni = 0; ni < NI; ni++)
                        mma_tf32(acc[mi][ni], a[mi], bf[ni][0], bf[ni][1]);
            }
        }
        asm volatile("cp.async.wait_all;");
        __syncthreads();
    }

    // Epilogue: bias, residual, ReLU. A fragment's column pair (2·t4, 2·t4+1)
    // lies in one output row (C is even); with Wo even it is one aligned float2.
    const bool pairs = (Wo & 1) == 0;
    const float *res_s = reinterpret_cast<const float *>(gf_resnet_smem + 2 * H_BUF +
                                                         (((slabs - 1) & 1) ^ 1) * A_BUF);
#pragma unroll
    for (int ni = 0; ni < NI; ni++) {
        const int n = wn * NI * 8 + ni * 8 + 2 * t4;
        const int oy = oy0 + n / C, ox = ox0 + n % C;
        if (oy >= Ho || ox >= Wo)
            continue;
        const bool second = ox + 1 < Wo;
#pragma unroll
        for (int mi = 0; mi < MI; mi++)
#pragma unroll
            for (int half = 0; half < 2; half++) {
                const int mb = wm * MI * 16 + mi * 16 + g + half * 8, m = m0 + mb;
                if (m >= Cout)
                    continue;
                const float bm = bias[m];
                const long o = (((long)b * Cout + m) * Ho + oy) * Wo + ox;
                float v0 = acc[mi][ni][half * 2] + bm, v1 = acc[mi][ni][half * 2 + 1] + bm;
                if (residual) {
                    float2 r;
                    if (STAGE_RES) {
                        r = *reinterpret_cast<const float2 *>(res_s + mb * LDR + n);
                    } else if (pairs) {
                        r = *reinterpret_cast<const float2 *>(residual + o);
                    } else {
                        r.x = residual[o];
                        r.y = second ? residual[o + 1] : 0.0f;
                    }
                    v0 += r.x;
                    v1 += r.y;
                }
                if (relu) {
                    v0 = fmaxf(v0, 0.0f);
                    v1 = fmaxf(v1, 0.0f);
                }
                if (pairs) {
                    *reinterpret_cast<float2 *>(out + o) = make_float2(v0, v1);
                } else {
                    out[o] = v0;
                    if (second)
                        out[o + 1] = v1;
                }
            }
    }
#else
    __trap();
#endif
}

// 3x3 convolutions (pad 1) and 1x1 shortcuts (pad 0), 256 threads, static
// shared memory. v1: any Cin, grid (ceil(N/128), ceil(Cout/64)). v3: Cin %
// 16 == 0, weights packed (Cout, tap, Cin) in tf32, grid (ceil(N/BN),
// ceil(Cout/BM)): no suffix 64 x 128, w 128 x 128 (Cout >= 128);
// worker/conv_gpu.c picks by shape and Cout.
#define CONV_ENTRY(name, KS)                                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS)                                       \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        conv_tf32<KS>(x, w, bias, residual, out, B, Cin, H, W, Cout, stride, pad, Ho, Wo, relu);  \
    }
#define CONV_ENTRY_V3(name, KS, BM_, BN_, WARPS_M, MIN_BLOCKS)                                  \
    extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)                           \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        conv_tf32_v3<KS, BM_, BN_, WARPS_M>(x, w, bias, residual, out, B, Cin, H, W, Cout,      \
                                            stride, pad, Ho, Wo, relu);                         \
    }
CONV_ENTRY(gf_conv3_tf32_v1, 3)
CONV_ENTRY(gf_conv1_tf32_v1, 1)
CONV_ENTRY_V3(gf_conv3_tf32_v3, 3, 64, 128, 2, 3)
CONV_ENTRY_V3(gf_conv1_tf32_v3, 1, 64, 128, 2, 3)
CONV_ENTRY_V3(gf_conv3_tf32_v3w, 3, 128, 128, 2, 2)
CONV_ENTRY_V3(gf_conv1_tf32_v3w, 1, 128, 128, 2, 2)

// v4: 3x3, stride 1, pad 1 only (stride and pad are taken for the common
// signature and not read); dynamic shared memory. s: 32 channels x 16 x 16
// positions in 8-channel slabs, 3 blocks a multiprocessor (stage 1); no
// suffix: 64 channels x 4 x 32 positions in 16-channel slabs, 2 blocks
// (stages 2-4, one block per 64 output channels). docs/gpu.md has the
// shapes tried against these.
#define CONV_ENTRY_V4(name, BM_, R, C, BKC, WARPS_M, MIN_BLOCKS)                                \
    extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)                           \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        (void)B, (void)stride, (void)pad;                                                       \
        conv3_tf32_v4<BM_, R, C, BKC, WARPS_M>(x, w, bias, residual, out, Cin, H, W, Cout, Ho,  \
                                               Wo, relu);                                       \
    }
CONV_ENTRY_V4(gf_conv3_tf32_v4s, 32, 16, 16, 8, 1, 3)
CONV_ENTRY_V4(gf_conv3_tf32_v4, 64, 4, 32, 16, 2, 2)
