// resnet_v5.cuh — v5 and v5w, the 3x3 stride-1 layers on wgmma (Hopper, sm_90a): part of the
// device code kernels/resnet/resnet.cuh gathers (included there, in order,
// after the helpers they share).
#ifndef GF_KERNELS_RESNET_V5_CUH
#define GF_KERNELS_RESNET_V5_CUH

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

#endif
