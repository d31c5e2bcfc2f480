// tf32.cuh — the PTX the own kernels of the head and of seg_1 share
// (kernels/dense/dense.cu, kernels/embedding/embedding.cu): tf32 rounding, one tf32 mma,
// 16-byte cp.async and its waits. Inline only: a module's PTX holds no copy
// of its own.
#ifndef GF_KERNELS_TF32_CUH
#define GF_KERNELS_TF32_CUH

// v rounded to tf32 as cvt.rna does (to nearest, ties away from zero) by an
// integer add and a mask on its bits, which keeps the conversion unit out of
// the inner loop. Finite values; an infinity stays one.
__device__ __forceinline__ unsigned round_tf32(float v)
{
    return (__float_as_uint(v) + 0x1000u) & 0xffffe000u;
}

// One tf32 mma.m16n8k8 into four float32 accumulators. Fragments (lane =
// 4g + t): a0 (row g, k t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4);
// b0 (k t, column g), b1 (t + 4, g); c0, c1 (row g, columns 2t, 2t + 1),
// c2, c3 (row g + 8, the same columns).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                         unsigned b1)
{
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

// 16 bytes global → shared; src_bytes 0 fills the 16 bytes with zeros.
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
#if __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
                 "r"(src_bytes));
#endif
}

__device__ __forceinline__ void cp_async_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;");
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
#endif
}


// Wait until the first q + 1 of four cp.async groups, committed in order,
// have landed (q = 0 .. 3).
__device__ __forceinline__ void cp_async_wait_quarter(int q)
{
    switch (q) {
    case 0: cp_async_wait<3>(); break;
    case 1: cp_async_wait<2>(); break;
    case 2: cp_async_wait<1>(); break;
    default: cp_async_wait<0>(); break;
    }
}


// The A fragment of one m16n8k8 from two rows' float4 loads (rows g and
// g + 8, k 4t .. 4t + 3 with k permuted inside each 16): sub 0 takes k-step
// (x, y), sub 1 (z, w), each rounded to tf32.
__device__ __forceinline__ void a_fragment(const float4 &r0, const float4 &r1, int sub,
                                           unsigned (&a)[4])
{
    a[0] = round_tf32(sub ? r0.z : r0.x);
    a[1] = round_tf32(sub ? r1.z : r1.x);
    a[2] = round_tf32(sub ? r0.w : r0.y);
    a[3] = round_tf32(sub ? r1.w : r1.y);
}

#endif
