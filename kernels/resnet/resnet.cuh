// resnet.cuh — the ResNet convolution kernels' device code, shared by the
// modules that define their entry points: kernels/resnet/resnet.cu (tf32: the
// resnet area) and kernels/resnet/resnet32.cu (math mode fp32 in 3xTF32: the
// resnet32 area). One module per math mode, so that a change to the kernels
// of one leaves the other's PTX, and so its evidence, as it was. The
// helpers the kernels share are here; each variant's kernel and its
// description in resnet_v1/v3/v4/v5.cuh; resnet.cu's opening comment has
// the GEMM view.
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

// The kernels, one file per variant (described there).
#include "kernels/resnet/resnet_v1.cuh"
#include "kernels/resnet/resnet_v3.cuh"
#include "kernels/resnet/resnet_v4.cuh"
#include "kernels/resnet/resnet_v5.cuh"

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
