// resnet.cuh — the ResNet convolution kernels' device code, shared by the
// modules that define their entry points: kernels/resnet/resnet.cu (tf32: the
// resnet area) and kernels/resnet/resnet32.cu (math mode fp32 in 3xTF32: the
// resnet32 area). One module per math mode, so that a change to the kernels
// of one leaves the other's PTX, and so its evidence, as it was. The
// kernels are described where they are defined below; resnet.cu's opening
// comment has the GEMM view.
#ifndef GF_KERNELS_RESNET_CUH
#define GF_KERNELS_RESNET_CUH

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

// 3xTF32 (math mode fp32 on the tensor cores): a float32 value u is split
// into hi = u rounded to tf32 and lo = the remainder (exact in float32)
// rounded to tf32; a product then goes in as hi·hi' + hi·lo' + lo·hi' with
// float32 accumulation, leaving out lo·lo' and lo's own rounding (each about
// 2^-22 of the product): float32's accuracy, not tf32's 2^-11.
__device__ __forceinline__ void split_tf32(unsigned u, unsigned &hi, unsigned &lo)
{
    hi = round_tf32_bits(u);
    lo = round_tf32_bits(__float_as_uint(__uint_as_float(u) - __uint_as_float(hi)));
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

// One fragment column in 3xTF32: B arrives as float32 bits r0 (k t) and r1
// (k t + 4), is split (split_tf32), and goes into the accumulators of every
// m-tile mi with the weights' high parts a and low parts al, the small terms
// first.
template <int MI, int NI>
__device__ __forceinline__ void mma_3xtf32_column(float (&acc)[MI][NI][4], int ni,
                                                  const unsigned (&a)[MI][4],
                                                  const unsigned (&al)[MI][4], unsigned r0,
                                                  unsigned r1)
{
    unsigned b0, b1, l0, l1;
    split_tf32(r0, b0, l0);
    split_tf32(r1, b1, l1);
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
        mma_tf32(acc[mi][ni], al[mi], b0, b1);
        mma_tf32(acc[mi][ni], a[mi], l0, l1);
        mma_tf32(acc[mi][ni], a[mi], b0, b1);
    }
}

__device__ __forceinline__ void cp_async4(unsigned dst, const float *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src));
}

__device__ __forceinline__ void cp_async8(unsigned dst, const float *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(dst), "l"(src));
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
//   (kernels/resnet/resnet_gpu.c), so a thread's share of the A tile is 16-byte loads
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
// WARPS_MF: WARPS_M, or WARPS_M + V3_F3 for the 3xTF32 instances (math mode
// fp32, kernels/resnet/resnet32.cu). A template parameter of its own would change
// the tf32 instances' names, and with them the resnet module's PTX and its
// evidence.
constexpr int V3_F3 = 16;
template <int KS, int BM_, int BN_, int WARPS_MF>
__device__ __forceinline__ void conv_tf32_v3(const float *__restrict__ x,
                                             const float *__restrict__ wp,
                                             const float *__restrict__ bias,
                                             const float *__restrict__ residual,
                                             float *__restrict__ out, int B, int Cin, int H, int W,
                                             int Cout, int stride, int pad, int Ho, int Wo,
                                             int relu)
{
#if __CUDA_ARCH__ >= 800
    constexpr bool F3 = WARPS_MF >= V3_F3;
    constexpr int WARPS_M = WARPS_MF % V3_F3;
    constexpr int WARPS_N = 8 / WARPS_M;
    constexpr int MI = BM_ / WARPS_M / 16, NI = BN_ / WARPS_N / 8;
    constexpr int KPT = 16 * BN_ / THREADS;           // B values a thread gathers per tile
    constexpr int AQ = (BM_ * 4 + THREADS - 1) / THREADS;   // A quads a thread moves per tile
    constexpr int LD = BK + 4;                        // row stride in floats (80 bytes)
    static_assert(MI * 16 * WARPS_M == BM_ && NI * 8 * WARPS_N == BN_ && NI % 2 == 0,
                  "warps cover the block");
    static_assert(KPT % 4 == 0 && KPT <= 16, "whole quads of a 16-channel tile per thread");
    __shared__ __align__(16) float As[2][BM_][LD];
    __shared__ __align__(16) float Bs[2][BN_][LD];   // F3: float32, split when read
    __shared__ __align__(16) float Al[F3 ? 2 : 1][F3 ? BM_ : 1][LD];   // F3: low parts
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

    float4 a_reg[AQ], al_reg[F3 ? AQ : 1];
#pragma unroll
    for (int r = 0; r < AQ; r++)
        a_reg[r] = make_float4(0.f, 0.f, 0.f, 0.f);
    if constexpr (F3)
#pragma unroll
        for (int r = 0; r < AQ; r++)
            al_reg[r] = make_float4(0.f, 0.f, 0.f, 0.f);
    float b_reg[KPT];
    int ky = 0, kx = 0, c0 = 0;                       // the next tile to load
    auto load_tile = [&]() {
#pragma unroll
        for (int r = 0; r < AQ; r++)
            if (am + 64 * r < BM_ && m0 + am + 64 * r < Cout) {
                const float *wq = wrow + (long)64 * r * KK + (ky * KS + kx) * Cin + c0;
                a_reg[r] = *reinterpret_cast<const float4 *>(wq);
                if constexpr (F3)   // the low parts: the packed buffer's second half
                    al_reg[r] = *reinterpret_cast<const float4 *>(wq + (long)Cout * KK);
            }
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
            if (am + 64 * r < BM_) {
                *reinterpret_cast<float4 *>(&As[buf][am + 64 * r][aq]) = a_reg[r];
                if constexpr (F3)
                    *reinterpret_cast<float4 *>(&Al[buf][am + 64 * r][aq]) = al_reg[r];
            }
#pragma unroll
        for (int i = 0; i < KPT; i += 4) {
            float4 v;
            if constexpr (F3) {
                v = make_float4(b_reg[i], b_reg[i + 1], b_reg[i + 2], b_reg[i + 3]);
            } else {
                v.x = __uint_as_float(to_tf32(b_reg[i]));
                v.y = __uint_as_float(to_tf32(b_reg[i + 1]));
                v.z = __uint_as_float(to_tf32(b_reg[i + 2]));
                v.w = __uint_as_float(to_tf32(b_reg[i + 3]));
            }
            *reinterpret_cast<float4 *>(&Bs[buf][bn][bk + i]) = v;
        }
    };

    // ldmatrix row addresses of this lane (bytes in the shared window).
    // A, per 16-row fragment: lanes 0-7 rows 0-7 k 0-3, 8-15 rows 8-15 k 0-3,
    // 16-23 rows 0-7 k 4-7, 24-31 rows 8-15 k 4-7 -> a0..a3.
    // B, per pair of 8-column fragments: lanes 0-7 cols 0-7 k 0-3, 8-15
    // cols 0-7 k 4-7, 16-23 cols 8-15 k 0-3, 24-31 cols 8-15 k 4-7.
    const unsigned as0 = (unsigned)__cvta_generic_to_shared(&As[0][0][0]);
    const unsigned al0 = (unsigned)__cvta_generic_to_shared(&Al[0][0][0]);
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
            unsigned a[MI][4], al[F3 ? MI : 1][4], b[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; mi++) {
                const unsigned o = cur * A_BUF + a_off + (unsigned)(mi * 16 * LD + ks) * 4u;
                ldmatrix_x4(as0 + o, a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
                if constexpr (F3)
                    ldmatrix_x4(al0 + o, al[mi][0], al[mi][1], al[mi][2], al[mi][3]);
            }
#pragma unroll
            for (int nj = 0; nj < NI / 2; nj++) {
                unsigned addr = bs0 + cur * B_BUF + b_off + (unsigned)(nj * 16 * LD + ks) * 4u;
                ldmatrix_x4(addr, b[2 * nj][0], b[2 * nj][1], b[2 * nj + 1][0], b[2 * nj + 1][1]);
            }
            if constexpr (F3) {
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
                    mma_3xtf32_column(acc, ni, a, al, b[ni][0], b[ni][1]);
            } else {
#pragma unroll
                for (int mi = 0; mi < MI; mi++)
#pragma unroll
                    for (int ni = 0; ni < NI; ni++)
                        mma_tf32(acc[mi][ni], a[mi], b[ni][0], b[ni][1]);
            }
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
//   words, so ldmatrix's eight rows hit distinct banks) or, with CM (v4s),
//   channel-major as the input is (below); the padding's zeros are written
//   once, at the start;
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
// (kernels/resnet/resnet_gpu.c: 2 x 4 bytes x ((R+2)(C+2)(BKC+4) + BM_(9·BKC+4))).
// The grid is (tiles of the output plane, Cout / BM_, windows).
extern __shared__ __align__(16) unsigned char gf_resnet_smem[];

template <int BM_, int R, int C, int BKC, int WARPS_M, bool CM = false, int TU = 9,
          bool F3 = false>
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
    // CM: the halo channel-major, each channel's (R + 2) rows of CW columns
    // from ox0 - 2 (so that a pair of positions starts 8 bytes aligned), CP
    // words a channel; P2 pairs a channel, PP a thread.
    constexpr int CW = C + 4, CP = (R + 2) * CW, P2 = CP / 2;
    constexpr int PP = (P2 + THREADS - 1) / THREADS;
    // F3 (3xTF32): each weight stage holds the weights' tf32 high parts, then
    // their low parts (the packed buffer's second half, from Cout·9·Cin on).
    constexpr unsigned H_BUF = CM ? BKC * CP * 4u : NH * LDH * 4u, A_ONE = BM_ * LDA * 4u;
    constexpr unsigned A_BUF = (F3 ? 2u : 1u) * A_ONE;
    static_assert(MI * 16 * WARPS_M == BM_ && NI * 8 * WARPS_N == BN_ && NI % 2 == 0,
                  "warps cover the block");
    static_assert(!CM || CP % 32 == 8 || CP % 32 == 24,
                  "a B fragment's 32 loads (8 positions x 4 channels) hit 32 banks");
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
    // The halo goes by cp.async too. Position-major (CM false), four bytes
    // at a time: this thread's positions are tid/4 + 64 i and its channels
    // tid%4 + 4 c, so a warp writes 8 positions x 4 channels (32 distinct
    // banks) and reads four 32-byte runs. h_src: the global offset of
    // (channel tid%4, iy, ix) from the slab's first channel; -1 for padding,
    // whose zeros are written once into both stages here; -2 past the halo.
    // Channel-major (CM true), a pair of positions at a time: this thread's
    // pairs p = tid + THREADS·i of each channel's P2 (row, column pair) lie
    // at words 2(c·P2 + p), + 1 of the slab for channel c; h_src is the
    // pair's first position's offset in a channel's plane, h_in two bits a
    // pair, which of its positions lie inside the input. Where the width,
    // the plane and the input are all even (the trunk's), a pair is all in
    // or all out and 8-byte aligned: one 8-byte copy; elsewhere two 4-byte
    // ones.
    const int c_lo = tid & 3, p_first = tid >> 2;
    const unsigned h_dst = CM ? (unsigned)tid * 8u : (unsigned)(p_first * LDH + c_lo) * 4u;
    int h_src[CM ? PP : HP];
    unsigned h_in = 0;
    const bool pairs8 = ((W | HWin) & 1) == 0 && (reinterpret_cast<unsigned long long>(x) & 7) == 0;
    if constexpr (CM) {
#pragma unroll
        for (int i = 0; i < PP; i++) {
            const int p = tid + THREADS * i;
            h_src[i] = -2;
            if (p < P2) {
                const int iy = oy0 - 1 + p / (CW / 2), ix = ox0 - 2 + 2 * (p % (CW / 2));
                const bool row = iy >= 0 && iy < H;
                const unsigned in = (row && ix >= 0 && ix < W ? 1u : 0u) |
                                    (row && ix + 1 >= 0 && ix + 1 < W ? 2u : 0u);
                h_in |= in << (2 * i);
                h_src[i] = in ? iy * W + ix : -1;
                for (int c = 0; c < BKC; c++) {
                    float *z = reinterpret_cast<float *>(gf_resnet_smem) + 2 * (c * P2 + p);
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        if (!(in & (1u << e)))
                            z[e] = z[H_BUF / 4 + e] = 0.0f;
                }
            }
        }
    } else {
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
    }
    auto load_halo = [&](int c0, int buf) {
        const float *src = xb + (long)c0 * HWin;
        const unsigned dst = hs0 + buf * H_BUF + h_dst;
        if constexpr (CM) {
#pragma unroll
            for (int i = 0; i < PP; i++) {
                if (h_src[i] < 0)
                    continue;
                const unsigned in = (h_in >> (2 * i)) & 3u;
                const float *g = src + h_src[i];
#pragma unroll
                for (int c = 0; c < BKC; c++, g += HWin) {
                    const unsigned d = dst + (unsigned)(c * P2 + i * THREADS) * 8u;
                    if (pairs8) {
                        cp_async8(d, g);
                    } else {
                        if (in & 1u)
                            cp_async4(d, g);
                        if (in & 2u)
                            cp_async4(d + 4u, g + 1);
                    }
                }
            }
        } else {
#pragma unroll
            for (int i = 0; i < HP; i++)
                if (h_src[i] >= 0)
#pragma unroll
                    for (int c = 0; c < BKC; c += 4)
                        cp_async4(dst + (unsigned)(i * 64 * LDH + c) * 4u,
                                  src + h_src[i] + c * HWin);
        }
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
                if constexpr (F3)
                    cp_async16(dst + A_ONE, ok ? src + (long)Cout * KK : wp, ok ? 16 : 0);
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
    // CM: B fragments by plain loads, b0 = (channel t4, position g of the
    // tile), b1 four channels on; in words, from b_cm (the warp's first
    // position) plus a constant per fragment column, a tap moving it by
    // ky·CW + kx (the halo's columns start one left of the padding).
    const unsigned b_cm = (unsigned)(((wn * NI * 8) / C) * CW + (wn * NI * 8) % C + g + 1 +
                                     t4 * CP);
    unsigned b_off[CM ? 1 : NI / 2];
#pragma unroll
    for (int nj = 0; nj < (CM ? 0 : NI / 2); nj++) {
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
#pragma unroll TU
        for (int tap = 0; tap < 9; tap++) {
            const unsigned tap_off = CM ? (unsigned)((tap / 3) * CW + tap % 3)
                                        : (unsigned)(((tap / 3) * HC + tap % 3) * LDH) * 4u;
#pragma unroll
            for (int ks = 0; ks < BKC; ks += 8) {
                unsigned a[MI][4], al[F3 ? MI : 1][4];
#pragma unroll
                for (int mi = 0; mi < MI; mi++) {
                    const unsigned addr = a_base + (unsigned)(mi * 16 * LDA + tap * BKC + ks) * 4u;
                    ldmatrix_x4(addr, a[mi][0], a[mi][1], a[mi][2], a[mi][3]);
                    if constexpr (F3)
                        ldmatrix_x4(addr + A_ONE, al[mi][0], al[mi][1], al[mi][2], al[mi][3]);
                }
                if constexpr (CM) {   // a fragment column at a time: loaded, rounded, used
                    const unsigned *hb = reinterpret_cast<const unsigned *>(gf_resnet_smem +
                                                                            cur * H_BUF);
#pragma unroll
                    for (int ni = 0; ni < NI; ni++) {
                        const unsigned o = b_cm + (unsigned)(((ni * 8) / C) * CW + (ni * 8) % C) +
                                           tap_off + (unsigned)(ks * CP);
                        if constexpr (F3) {
                            mma_3xtf32_column(acc, ni, a, al, hb[o], hb[o + 4 * CP]);
                        } else {
                            const unsigned b0 = round_tf32_bits(hb[o]);
                            const unsigned b1 = round_tf32_bits(hb[o + 4 * CP]);
#pragma unroll
                            for (int mi = 0; mi < MI; mi++)
                                mma_tf32(acc[mi][ni], a[mi], b0, b1);
                        }
                    }
                } else {
                    unsigned bf[NI][2];
#pragma unroll
                    for (int nj = 0; nj < NI / 2; nj++) {
                        const unsigned addr = b_base + b_off[nj] + tap_off + (unsigned)ks * 4u;
                        ldmatrix_x4(addr, bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0],
                                    bf[2 * nj + 1][1]);
                    }
                    if constexpr (F3) {
#pragma unroll
                        for (int ni = 0; ni < NI; ni++)
                            mma_3xtf32_column(acc, ni, a, al, bf[ni][0], bf[ni][1]);
                    } else {
#pragma unroll
                        for (int ni = 0; ni < NI; ni++) {   // the halo is fp32: round as cvt.rna
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
            }
        }
        asm volatile("cp.async.wait_all;");
        __syncthreads();
    }

    // Epilogue: bias, residual, ReLU. A fragment's column pair (2·t4, 2·t4+1)
    // lies in one output row (C is even); with Wo even it is one aligned float2.
    // Two fragment columns (ni) at a time, their residual pairs all requested
    // before the first is used (one at a time, each load waited out its
    // latency alone: half of v4s's stall samples in Nsight Compute).
    const bool pairs = (Wo & 1) == 0;
    const float *res_s = reinterpret_cast<const float *>(gf_resnet_smem + 2 * H_BUF +
                                                         (((slabs - 1) & 1) ^ 1) * A_BUF);
    constexpr int NCH = 1;
    static_assert(NI % NCH == 0, "whole chunks of fragment columns");
#pragma unroll
    for (int n0 = 0; n0 < NI; n0 += NCH) {
        float2 rr[NCH][MI][2];
#pragma unroll
        for (int c = 0; c < NCH; c++) {
            const int n = wn * NI * 8 + (n0 + c) * 8 + 2 * t4;
            const int oy = oy0 + n / C, ox = ox0 + n % C;
            const bool in = oy < Ho && ox < Wo, second = ox + 1 < Wo;
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    const int mb = wm * MI * 16 + mi * 16 + g + half * 8, m = m0 + mb;
                    const long o = (((long)b * Cout + m) * Ho + oy) * Wo + ox;
                    float2 r = make_float2(0.0f, 0.0f);
                    if (residual && in && m < Cout) {
                        if (STAGE_RES) {
                            r = *reinterpret_cast<const float2 *>(res_s + mb * LDR + n);
                        } else if (pairs) {
                            r = *reinterpret_cast<const float2 *>(residual + o);
                        } else {
                            r.x = residual[o];
                            r.y = second ? residual[o + 1] : 0.0f;
                        }
                    }
                    rr[c][mi][half] = r;
                }
        }
#pragma unroll
        for (int c = 0; c < NCH; c++) {
            const int ni = n0 + c, n = wn * NI * 8 + ni * 8 + 2 * t4;
            const int oy = oy0 + n / C, ox = ox0 + n % C;
            if (oy >= Ho || ox >= Wo)
                continue;
            const bool second = ox + 1 < Wo;
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    const int m = m0 + wm * MI * 16 + mi * 16 + g + half * 8;
                    if (m >= Cout)
                        continue;
                    const float bm = bias[m];
                    const long o = (((long)b * Cout + m) * Ho + oy) * Wo + ox;
                    float v0 = acc[mi][ni][half * 2] + bm + rr[c][mi][half].x;
                    float v1 = acc[mi][ni][half * 2 + 1] + bm + rr[c][mi][half].y;
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
    }
#else
    __trap();
#endif
}

// v5 (Hopper, sm_90a: the sm90 tier of this module is built for it): the
// 3x3 stride-1 layers on warpgroup MMAs (wgmma), which read both operands
// straight from shared memory, so no warp spends issue slots on ldmatrix.
// GEMM view turned round: M = output positions, N = output channels (wgmma's
// M is 64 rows a warpgroup, more than stage 1's 32 channels). The block owns
// R output rows x HC - 2 columns of one window and N = 64 channels; two
// warpgroups, each MB m64 blocks of positions (v5: 8 x 30, HC 32; v5w: 2 x
// 126, HC 128).
// - The input halo, (R + 2) rows x HC columns, is laid out flat with a row
//   pitch of HC positions, and the block computes all HC columns of each of
//   its R rows: output q = (row, col) reads tap (ky, kx) at halo position
//   q + HC·ky + kx. So a tap's A operand is the same 64-row matrix with its
//   start moved by HC·ky + kx positions, and one descriptor walk serves all
//   nine taps; the last two columns of each row are computed and thrown
//   away (6 % at HC 32, 1.6 % at 128).
// - Shared-memory layout: wgmma's canonical K-major layout without swizzle.
//   A core matrix is 8 rows x 16 bytes (4 channels); a channel quad's plane
//   holds every halo position at 16 bytes each, so 8 consecutive positions
//   are one core matrix (SBO 128 bytes) and the next quad's plane is the
//   next core matrix along K (LBO: the plane's size). The weights, N
//   channels x 8 input channels per tap, the same way (LBO N·16).
// - The halo arrives by 4-byte cp.async as in v4 (a warp writes 8 positions
//   x 4 channels: 128 contiguous bytes), the weights by 16-byte cp.async;
//   wgmma reads fp32 bits as tf32 by dropping the low 13 mantissa bits, so
//   each thread rounds the halo values it copied (round_tf32_bits, as
//   cvt.rna) before the slab is fenced to the async proxy; the packed
//   weights are rounded at upload.
// - Three stages of 8-channel slabs: during slab t the copies of slab t + 1
//   are in flight and the MMAs of slab t - 1 may still run (wait_group 1 at
//   the barrier); the slab loaded next goes into the stage slab t - 2 used.
// - Epilogue: wgmma's accumulator rows are positions, its columns channels;
//   they go through shared memory, so that bias, residual and ReLU are
//   applied along output rows, up to 32 consecutive floats a warp access.
// The host sizes the dynamic shared memory with the same formula
// (kernels/resnet/resnet_gpu.c): 3 x 16 bytes x (2·NH + 9·2·N), NH = (R + 2)·HC + 8.
// Grid: (tiles of the output plane, Cout / N, windows); 256 threads.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GF_WGMMA 1

// A shared-memory matrix descriptor, no swizzle: start address, LBO (the
// next core matrix along K), SBO (the next along M or N), all in bytes.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned lbo,
                                                         unsigned sbo)
{
    return (unsigned long long)((addr & 0x3ffffu) >> 4) |
           ((unsigned long long)((lbo & 0x3ffffu) >> 4) << 16) |
           ((unsigned long long)((sbo & 0x3ffffu) >> 4) << 32);
}

// D (64 x 64, f32) += A (64 x 8) · B (8 x 64), tf32, both from shared memory.
__device__ __forceinline__ void wgmma_tf32_n64(float (&d)[32], unsigned long long a,
                                               unsigned long long b)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
                 "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
                 "%24, %25, %26, %27, %28, %29, %30, %31"
                 "}, %32, %33, p, 1, 1;\n}"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(a), "l"(b), "r"(1));
}

// Keeps the compiler from moving reads or writes of an accumulator across
// the wgmma fences and waits (the registers change asynchronously).
template <int n>
__device__ __forceinline__ void pin_acc(float (&d)[n])
{
#pragma unroll
    for (int i = 0; i < n; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}
#endif

template <int R, int HC, int N, int MB, int STAGES, int DIST>
__device__ __forceinline__ void conv3_tf32_v5(const float *__restrict__ x,
                                              const float *__restrict__ wp,
                                              const float *__restrict__ bias,
                                              const float *__restrict__ residual,
                                              float *__restrict__ out, int Cin, int H, int W,
                                              int Cout, int Ho, int Wo, int relu)
{
#if defined(GF_WGMMA)
    constexpr int C = HC - 2, BKC = 8, QC = BKC / 4;
    constexpr int NH = (R + 2) * HC + 8;              // halo positions (the tail: zeros)
    constexpr unsigned QS = NH * 16u;                 // one channel quad's plane, bytes
    constexpr unsigned H_BUF = QC * QS, W_BUF = 9u * QC * N * 16u, STAGE = H_BUF + W_BUF;
    constexpr int HP = (NH + 63) / 64;                // halo positions per thread
    constexpr int WQ = 9 * QC * N, WQT = (WQ + THREADS - 1) / THREADS;
    static_assert(R * HC == 2 * MB * 64, "two warpgroups of MB m64 blocks cover the tile");
    static_assert(N == 64, "the n64 wgmma only (the n32 block lost to v4 at stage 1)");
    static_assert(HC % 32 == 0, "the epilogue walks rows in whole warps");
    static_assert(STAGES >= DIST + 2, "the stage loaded next is free of loads and MMAs");
    const int tid = threadIdx.x, wg = tid >> 7;
    const int tiles_x = (Wo + C - 1) / C;
    const int oy0 = (blockIdx.x / tiles_x) * R, ox0 = (blockIdx.x % tiles_x) * C;
    const int n0 = blockIdx.y * N, b = blockIdx.z;
    const long HWin = (long)H * W;
    const float *xb = x + (long)b * Cin * HWin;
    const int KK = 9 * Cin;                           // packed weights per output channel
    const unsigned s0 = (unsigned)__cvta_generic_to_shared(gf_resnet_smem);

    // The halo copy: this thread's positions are tid/4 + 64 i, its channels
    // tid%4 + 4 q. h_src: the global offset of (channel tid%4, iy, ix) from
    // the slab's first channel; -1 for padding (zeros written once into
    // every stage here), -2 past the halo.
    const int c_lo = tid & 3, p_first = tid >> 2;
    int h_src[HP];
#pragma unroll
    for (int i = 0; i < HP; i++) {
        const int pos = p_first + 64 * i;
        h_src[i] = -2;
        if (pos < NH) {
            const int hr = pos / HC, iy = oy0 - 1 + hr, ix = ox0 - 1 + pos % HC;
            if (hr < R + 2 && iy >= 0 && iy < H && ix >= 0 && ix < W) {
                h_src[i] = (int)(c_lo * HWin) + iy * W + ix;
            } else {
                h_src[i] = -1;
#pragma unroll
                for (int st = 0; st < STAGES; st++)
#pragma unroll
                    for (int q = 0; q < QC; q++)
                        *reinterpret_cast<float *>(gf_resnet_smem + st * STAGE + q * QS +
                                                   pos * 16 + c_lo * 4) = 0.0f;
            }
        }
    }
    auto load_slab = [&](int c0, int buf) {
        if (c0 >= Cin) {                              // past the end: an empty group
            asm volatile("cp.async.commit_group;");
            return;
        }
        const float *src = xb + (long)c0 * HWin;
        const unsigned hdst = s0 + buf * STAGE + (unsigned)(p_first * 16 + c_lo * 4);
#pragma unroll
        for (int i = 0; i < HP; i++)
            if (h_src[i] >= 0)
#pragma unroll
                for (int q = 0; q < QC; q++)
                    cp_async4(hdst + q * QS + i * 64 * 16u, src + h_src[i] + 4 * q * HWin);
        // Weights: chunk idx is (tap, quad, channel n), n fastest, so a warp
        // writes 32 consecutive 16-byte rows.
#pragma unroll
        for (int j = 0; j < WQT; j++) {
            const int idx = tid + j * THREADS;
            if (WQ % THREADS == 0 || idx < WQ) {
                const int n = idx % N, r = idx / N, tap = r / QC, q = r % QC;
                cp_async16(s0 + buf * STAGE + H_BUF + (unsigned)idx * 16u,
                           wp + (long)(n0 + n) * KK + tap * Cin + c0 + 4 * q, 16);
            }
        }
        asm volatile("cp.async.commit_group;");
    };
    // This thread's halo values of a landed slab, rounded to tf32 in place.
    auto round_slab = [&](int buf) {
        unsigned char *h = gf_resnet_smem + buf * STAGE + p_first * 16 + c_lo * 4;
#pragma unroll
        for (int i = 0; i < HP; i++)
            if (h_src[i] >= 0)
#pragma unroll
                for (int q = 0; q < QC; q++) {
                    unsigned *v = reinterpret_cast<unsigned *>(h + q * QS + i * 64 * 16);
                    *v = round_tf32_bits(*v);
                }
    };

    float acc[MB][N / 2];
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
#pragma unroll
        for (int i = 0; i < N / 2; i++)
            acc[mb][i] = 0.0f;

    const int slabs = Cin / BKC;
    const unsigned a_row = (unsigned)(wg * MB * 64) * 16u;   // this warpgroup's first position
#pragma unroll
    for (int d = 0; d < DIST; d++)
        load_slab(d * BKC, d);
    for (int t = 0; t < slabs; t++) {
        const int buf = t % STAGES;
        asm volatile("cp.async.wait_group %0;" ::"n"(DIST - 1));
        round_slab(buf);
        asm volatile("fence.proxy.async.shared::cta;");   // generic writes -> wgmma's reads
        asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
        __syncthreads();
        load_slab((t + DIST) * BKC, (t + DIST) % STAGES);
#pragma unroll
        for (int mb = 0; mb < MB; mb++)
            pin_acc(acc[mb]);
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        const unsigned a0 = s0 + buf * STAGE + a_row, w0 = s0 + buf * STAGE + H_BUF;
#pragma unroll
        for (int tap = 0; tap < 9; tap++)
#pragma unroll
            for (int ks = 0; ks < QC; ks += 2) {      // 8 channels: two quad planes
                const unsigned long long bd =
                    wgmma_desc(w0 + (tap * QC + ks) * N * 16u, N * 16u, 128u);
#pragma unroll
                for (int mb = 0; mb < MB; mb++) {
                    const unsigned a = a0 + ks * QS +
                                       (unsigned)(mb * 64 + (tap / 3) * HC + tap % 3) * 16u;
                    wgmma_tf32_n64(acc[mb], wgmma_desc(a, QS, 128u), bd);
                }
            }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#pragma unroll
        for (int mb = 0; mb < MB; mb++)
            pin_acc(acc[mb]);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
        pin_acc(acc[mb]);

    // Epilogue through shared memory: the accumulators (warp w of the
    // warpgroup, lane: rows = positions 16 w + lane/4 and + 8, columns =
    // channels 8 j + 2 (lane%4) and + 1) go into a channel-major tile of
    // pitch M + 4 words (a warp's 32 writes hit 32 banks), then each warp
    // walks whole rows of 32 positions of one channel: the residual read and
    // the output written 30 consecutive floats at a time. (Written straight
    // from the fragments, a warp touched 8 scattered 32-byte pieces per
    // access, and the residual's reads took a third of the stage-1 time.)
    constexpr int M = R * HC, P = M + 4;
    static_assert(N * P * 4 <= (int)(STAGES * STAGE), "the tile fits in the stages");
    __syncthreads();                                  // every warpgroup's MMAs are done
    float *ep = reinterpret_cast<float *>(gf_resnet_smem);
    const int lane = tid & 31, wq = (tid >> 5) & 3;
#pragma unroll
    for (int mb = 0; mb < MB; mb++)
#pragma unroll
        for (int half = 0; half < 2; half++) {
            const int q = wg * MB * 64 + mb * 64 + wq * 16 + (lane >> 2) + half * 8;
#pragma unroll
            for (int j = 0; j < N / 8; j++)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    ep[(8 * j + 2 * (lane & 3) + e) * P + q] = acc[mb][4 * j + 2 * half + e];
        }
    __syncthreads();
    // Each warp's rows in chunks of 16: the chunk's residual values are all
    // requested before the first is used (one row at a time, every load
    // waited out its latency alone: the residual then cost more than the
    // MMAs at stage 1).
    constexpr int WARPS = THREADS / 32, ROWS = N * R / WARPS, CH = 16;
    static_assert(ROWS % CH == 0, "whole chunks of rows");
    const int warp = tid >> 5;
#pragma unroll
    for (int seg = 0; seg < HC / 32; seg++) {
        const int col = seg * 32 + lane, ox = ox0 + col;
        if (col >= C || ox >= Wo)
            continue;
#pragma unroll
        for (int c0 = 0; c0 < ROWS; c0 += CH) {
            float rv[CH];
#pragma unroll
            for (int i = 0; i < CH; i++) {
                const int row = warp + (c0 + i) * WARPS, n = row / R, oy = oy0 + row % R;
                rv[i] = residual && oy < Ho
                            ? residual[(((long)b * Cout + n0 + n) * Ho + oy) * Wo + ox]
                            : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < CH; i++) {
                const int row = warp + (c0 + i) * WARPS, n = row / R, r = row % R;
                const int oy = oy0 + r, m = n0 + n;
                if (oy < Ho) {
                    const float v = ep[n * P + r * HC + col] + bias[m] + rv[i];
                    out[(((long)b * Cout + m) * Ho + oy) * Wo + ox] = relu ? fmaxf(v, 0.0f) : v;
                }
            }
        }
    }
#else
    __trap();
#endif
}

// Entry points (each module defines its own, extern "C"): v3 takes the
// template's arguments, KS then the block and the minimum blocks an SM.
#define CONV_ENTRY_V3(name, KS, BM_, BN_, WARPS_M, MIN_BLOCKS)                                  \
    extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)                           \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        conv_tf32_v3<KS, BM_, BN_, WARPS_M>(x, w, bias, residual, out, B, Cin, H, W, Cout,      \
                                            stride, pad, Ho, Wo, relu);                         \
    }

// The halo variants, v4 and v5: 3x3, stride 1, pad 1 only (stride and pad
// are taken for the common signature and not read); dynamic shared memory.
// The variant's device function, a template instance, is the last argument.
#define CONV_ENTRY_HALO(name, MIN_BLOCKS, ...)                                                  \
    extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)                           \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        (void)B, (void)stride, (void)pad;                                                       \
        __VA_ARGS__(x, w, bias, residual, out, Cin, H, W, Cout, Ho, Wo, relu);                  \
    }

#endif
