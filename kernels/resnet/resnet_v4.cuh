// resnet_v4.cuh — v4, the 3x3 stride-1 layers from an input halo in shared memory (v4s channel-major): part of the
// device code kernels/resnet/resnet.cuh gathers (included there, in order,
// after the helpers they share).
#ifndef GF_KERNELS_RESNET_V4_CUH
#define GF_KERNELS_RESNET_V4_CUH

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

#endif
