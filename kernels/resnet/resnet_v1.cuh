// resnet_v1.cuh — v1, the general kernel (any channel count): each K tile one tap of 16 channels at a time: part of the
// device code kernels/resnet/resnet.cuh gathers (included there, in order,
// after the helpers they share).
#ifndef GF_KERNELS_RESNET_V1_CUH
#define GF_KERNELS_RESNET_V1_CUH

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

#endif
