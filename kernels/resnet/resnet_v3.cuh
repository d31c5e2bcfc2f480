// resnet_v3.cuh — v3, the strided 3x3 layers and the 1x1 shortcuts (Cin a multiple of 16): part of the
// device code kernels/resnet/resnet.cuh gathers (included there, in order,
// after the helpers they share).
#ifndef GF_KERNELS_RESNET_V3_CUH
#define GF_KERNELS_RESNET_V3_CUH


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

#endif
