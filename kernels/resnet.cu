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
// v2 (layers with Cin a multiple of 16: all but resnet.conv1) walks K in
// (tap, channel) order instead of (channel, tap): a K tile of 16 is then 16
// channels of one tap (ky, kx), so each thread checks the tap's bounds once
// per tile and its eight gathers are one address plus a constant channel
// stride, where v1 divides each K index by 9 and 3 and checks each one.
// Nsight Compute on v1 (stage-1 3x3, H200): the integer pipeline was the
// busiest (44-56 % of cycles), ahead of the tensor cores. The sum runs in
// another order than v1's and the library route's; it is checked against
// the float64 reference like v1.
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

template <int KS, bool TAPMAJOR>
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
    const long HWin = (long)H * W;

    float a_reg[4], b_reg[8];
    auto load_tile_tap = [&](int k0) {
        // K index k = tap * Cin + c; the whole tile is channels c0.. of one tap.
        const int tap = k0 / Cin, c0 = k0 - tap * Cin;
        const int ky = tap / KS, kx = tap - ky * KS;
#pragma unroll
        for (int i = 0; i < 4; i++) {                 // A: weights stored (Cout, Cin, KS, KS)
            int idx = tid + i * THREADS, m = idx >> 4, kk = idx & 15;
            int gm = m0 + m;
            a_reg[i] = gm < Cout ? w[(long)gm * K + (long)(c0 + kk) * (KS * KS) + tap] : 0.0f;
        }
        const int iy = iy0 + ky, ix = ix0 + kx;
        const bool in = p_ok && iy >= 0 && iy < H && ix >= 0 && ix < W;
        const float *src = xb + (long)(c0 + bk0) * HWin + (long)iy * W + ix;
#pragma unroll
        for (int i = 0; i < 8; i++)                   // channels c0 + bk0 + 2i
            b_reg[i] = in ? src[(long)(2 * i) * HWin] : 0.0f;
    };
    auto load_tile_chan = [&](int k0) {
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
    auto load_tile = [&](int k0) {
        if constexpr (TAPMAJOR)
            load_tile_tap(k0);
        else
            load_tile_chan(k0);
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
                    asm volatile(
                        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                        : "+f"(acc[mi][ni][0]), "+f"(acc[mi][ni][1]), "+f"(acc[mi][ni][2]),
                          "+f"(acc[mi][ni][3])
                        : "r"(a[mi][0]), "r"(a[mi][1]), "r"(a[mi][2]), "r"(a[mi][3]),
                          "r"(b[ni][0]), "r"(b[ni][1]));
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
                    long o = (nb * Cout + m) * HW + q;
                    float v = acc[mi][ni][half * 2 + j] + bm;
                    if (residual)
                        v += residual[o];
                    out[o] = relu ? fmaxf(v, 0.0f) : v;
                }
        }
#else
    __trap();
#endif
}

// 3x3 convolutions (pad 1) and 1x1 shortcuts (pad 0). Grid (ceil(N/128),
// ceil(Cout/64)), 256 threads, static shared memory. v2: Cin % 16 == 0.
#define CONV_ENTRY(name, KS, TAPMAJOR)                                                          \
    extern "C" __global__ void __launch_bounds__(THREADS)                                       \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        conv_tf32<KS, TAPMAJOR>(x, w, bias, residual, out, B, Cin, H, W, Cout, stride, pad, Ho, \
                                Wo, relu);                                                      \
    }
CONV_ENTRY(gf_conv3_tf32_v1, 3, false)
CONV_ENTRY(gf_conv1_tf32_v1, 1, false)
CONV_ENTRY(gf_conv3_tf32_v2, 3, true)
CONV_ENTRY(gf_conv1_tf32_v2, 1, true)
