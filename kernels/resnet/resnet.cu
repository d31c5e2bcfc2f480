// resnet.cu — the entry points of the project's own kernels for the ResNet
// boundaries (resnet.conv1, resnet.layerL.B.conv1/conv2,
// resnet.layerL.0.shortcut) in math mode tf32: the resnet area. Their device
// code is kernels/resnet/resnet.cuh, which kernels/resnet/resnet32.cu shares for fp32. An
// implicit-GEMM convolution on the tensor cores in tf32, with the bias
// (batch norm folded at load), the residual and the ReLU fused into its
// epilogue. The library route materialises the im2col matrix in device
// memory and calls cuBLAS; this kernel gathers the same matrix tile by tile
// into shared memory and never writes it out.
// CPU reference: kernels/resnet/resnet_cpu.c (gf_conv2d_cpu).
//
// GEMM view: M = Cout, N = B·Ho·Wo (output positions), K = Cin·KS·KS.
// Block tile 64 (M) x 128 (N) x 16 (K), 8 warps as 2 (M) x 4 (N), each warp
// 32 x 32 = 2 x 4 mma.m16n8k8 tiles. The next K tile is loaded into
// registers while the current one is multiplied. Shared-memory rows are
// padded so that fragment loads hit 32 distinct banks.
//
// resnet.conv1 (one input channel, which does not fill a 16-channel K tile)
// runs a direct kernel, gf_conv3_cin1 below; v4 the 3x3 stride-1 layers (on
// the H200 v5 and v5w, on wgmma, those of 64 to 256 channels); v3 the strided
// 3x3 layers and the 1x1 shortcuts; v1 any other channel count. v2, which only walked K a tap at a time, is gone:
// v3 keeps its K order (docs/gpu.md has both measured).
//
// Needs sm_80 (mma.sync tf32); the sm_75 build traps, and the planner
// refuses the kernel on such cards. v5 needs sm_90a and traps elsewhere;
// kernels/resnet/resnet_gpu.c picks it at cc 9.0 only.

#include "kernels/resnet/resnet.cuh"

// 3x3 convolutions (pad 1) and 1x1 shortcuts (pad 0), 256 threads, static
// shared memory. v1: any Cin, grid (ceil(N/128), ceil(Cout/64)). v3: Cin %
// 16 == 0, weights packed (Cout, tap, Cin) in tf32, grid (ceil(N/BN),
// ceil(Cout/BM)): no suffix 64 x 128, w 128 x 128 (Cout >= 128);
// kernels/resnet/resnet_gpu.c picks by shape and Cout.
#define CONV_ENTRY(name, KS)                                                                    \
    extern "C" __global__ void __launch_bounds__(THREADS)                                       \
    name(const float *x, const float *w, const float *bias, const float *residual, float *out,  \
         int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho, int Wo, int relu) \
    {                                                                                           \
        conv_tf32<KS>(x, w, bias, residual, out, B, Cin, H, W, Cout, stride, pad, Ho, Wo, relu);  \
    }
CONV_ENTRY(gf_conv3_tf32_v1, 3)
CONV_ENTRY(gf_conv1_tf32_v1, 1)
CONV_ENTRY_V3(gf_conv3_tf32_v3, 3, 64, 128, 2, 3)
CONV_ENTRY_V3(gf_conv1_tf32_v3, 1, 64, 128, 2, 3)
CONV_ENTRY_V3(gf_conv3_tf32_v3w, 3, 128, 128, 2, 2)
CONV_ENTRY_V3(gf_conv1_tf32_v3w, 1, 128, 128, 2, 2)

// resnet.conv1, the one layer with a single input channel (the fbank's 80 x
// 998 features → 32 channels): K is 9, too short for a tensor-core tile (v1
// pads it to 16 and runs it as a GEMM), and the layer is bound by its 327 MB
// of output at batch 32, not by its 0.7 G multiply-adds. So a direct
// convolution in float32 FMAs: a block owns 16 output rows x 256 columns of
// one window for all (up to 32) output channels; the input tile with its
// halo, the weights and the bias sit in shared memory; a thread keeps the 6 x
// 6 inputs of its 4 rows x 4 columns in registers and writes each channel's
// 4 x 4 outputs, bias and ReLU applied (float2 pairs where the width is
// even: a warp stores 256 consecutive bytes of a row). More accurate than
// tf32, so it serves the tf32 boundary as it is.
// Grid (column tiles x row tiles, 1, windows), 256 threads, static shared
// memory only; 3x3, stride 1, pad 1, Cin 1, Cout <= 32 (kernels/resnet/resnet_gpu.c).
#define C1_R 16
#define C1_C 256
#define C1_CO 32
extern "C" __global__ void __launch_bounds__(THREADS)
gf_conv3_cin1(const float *x, const float *w, const float *bias, const float *residual,
              float *out, int B, int Cin, int H, int W, int Cout, int stride, int pad, int Ho,
              int Wo, int relu)
{
    (void)B, (void)Cin, (void)stride, (void)pad;
    __shared__ float tile[C1_R + 2][C1_C + 4];
    __shared__ float ws[C1_CO * 9], bs[C1_CO];
    const int tid = threadIdx.x;
    const int tiles_x = (Wo + C1_C - 1) / C1_C;
    const int oy0 = (blockIdx.x / tiles_x) * C1_R, ox0 = (blockIdx.x % tiles_x) * C1_C;
    const int b = blockIdx.z;
    const float *xb = x + (long)b * H * W;
    for (int i = tid; i < (C1_R + 2) * (C1_C + 2); i += THREADS) {
        const int r = i / (C1_C + 2), c = i % (C1_C + 2);
        const int iy = oy0 - 1 + r, ix = ox0 - 1 + c;
        tile[r][c] = iy >= 0 && iy < H && ix >= 0 && ix < W ? xb[(long)iy * W + ix] : 0.0f;
    }
    for (int i = tid; i < Cout * 9; i += THREADS)
        ws[i] = w[i];
    for (int i = tid; i < Cout; i += THREADS)
        bs[i] = bias[i];
    __syncthreads();
    const int c0 = 4 * (tid % 64), r0 = 4 * (tid / 64);
    const int ox = ox0 + c0;
    if (ox >= Wo)
        return;
    float in[6][6];
#pragma unroll
    for (int r = 0; r < 6; r++)
#pragma unroll
        for (int c = 0; c < 6; c++)
            in[r][c] = tile[r0 + r][c0 + c];
    const bool pairs = (Wo & 1) == 0;
    for (int co = 0; co < Cout; co++) {
        float wv[9];
#pragma unroll
        for (int t = 0; t < 9; t++)
            wv[t] = ws[co * 9 + t];
        const float bv = bs[co];
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const int oy = oy0 + r0 + r;
            if (oy >= Ho)
                break;
            const long o = (((long)b * Cout + co) * Ho + oy) * Wo + ox;
            float v[4];
#pragma unroll
            for (int cx = 0; cx < 4; cx++) {
                float a = bv;
#pragma unroll
                for (int ky = 0; ky < 3; ky++)
#pragma unroll
                    for (int kx = 0; kx < 3; kx++)
                        a = fmaf(wv[ky * 3 + kx], in[r + ky][cx + kx], a);
                if (residual && ox + cx < Wo)
                    a += residual[o + cx];
                v[cx] = relu ? fmaxf(a, 0.0f) : a;
            }
            if (pairs && ox + 3 < Wo) {
                *reinterpret_cast<float2 *>(out + o) = make_float2(v[0], v[1]);
                *reinterpret_cast<float2 *>(out + o + 2) = make_float2(v[2], v[3]);
            } else {
#pragma unroll
                for (int cx = 0; cx < 4; cx++)
                    if (ox + cx < Wo)
                        out[o + cx] = v[cx];
            }
        }
    }
}


// v4 s: 32 channels x 16 x 32 positions in 8-channel slabs, 2 blocks a
// multiprocessor (stage 1), the halo channel-major (CM: copied a pair of
// positions at a time, 8-byte cp.async, half the copies of the
// position-major layout and whole 32-byte sectors; its B fragments read by
// plain shared loads). A warp's 64 positions let each A fragment serve 16
// MMAs (8 at 16 x 16 tiles); the taps unrolled a kernel row at a time keep
// it within 128 registers (fully unrolled: 166). No suffix: 64 channels x
// 4 x 32 positions in 16-channel slabs, 2 blocks (stages 2-4, one block per
// 64 output channels), the halo position-major (ldmatrix).
// docs/gpu.md has the shapes tried against these.
CONV_ENTRY_HALO(gf_conv3_tf32_v4s, 2, conv3_tf32_v4<32, 16, 32, 8, 1, true, 3>)
CONV_ENTRY_HALO(gf_conv3_tf32_v4, 2, conv3_tf32_v4<64, 4, 32, 16, 2>)

// v5, sm_90a only (wgmma): 8 rows x 30 columns x 64 channels, three stages
// of 8-channel slabs, the next slab in flight during the current one (stages
// 2 and 3 of the trunk, one block per 64 output channels). The shapes tried
// against it are in docs/gpu.md (bench/gpu/bench_gpu_conv measures them
// side by side).
CONV_ENTRY_HALO(gf_conv3_tf32_v5, 2, conv3_tf32_v5<8, 32, 64, 2, 3, 1>)

// v5w: the same with a halo pitch of 128 positions, 2 rows x 126 columns a
// block. The plane widths of stages 3 and 4 (250, 125) fill 126-column tiles
// almost exactly and their heights (20, 10) 2-row ones, where v5's 8 x 30
// tiles compute 1.38x (stage 3) and 1.64x (stage 4) the positions the layer
// has; the price is a halo of twice the block's rows.
CONV_ENTRY_HALO(gf_conv3_tf32_v5w, 2, conv3_tf32_v5<2, 128, 64, 2, 3, 1>)
