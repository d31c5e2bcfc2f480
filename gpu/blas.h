/* blas_gpu.h — the library route: cuBLAS, loaded at run time with dlopen.
 *
 * Row-major helpers over cuBLAS's column-major GEMM, the only shapes the
 * networks need: C[m×n] = A[m×k] · op(B) (+ beta·C), single or strided
 * batched. Math mode fp32 (pedantic: no tensor cores) or tf32 (tensor-op
 * math), set per call. Without libcublas the open fails with a reason. */
#ifndef GF_BLAS_GPU_H
#define GF_BLAS_GPU_H

#include "common/mathmode.h"
#include "gpu/device.h"

#include <stdbool.h>

typedef struct gf_blas_gpu gf_blas_gpu;

/* A cuBLAS handle bound to the gpu's stream. Returns 0 or GF_EDEVICE. */
int gf_blas_gpu_open(gf_gpu *gpu, gf_blas_gpu **out);
void gf_blas_gpu_destroy(gf_blas_gpu **self_p);

/* Row-major C[m×n] = alpha·A[m×k]·B + beta·C, where B is [k×n] (trans_b
 * false) or [n×k] (trans_b true); lda/ldb/ldc are row strides. */
int gf_blas_gpu_gemm(gf_blas_gpu *self, gf_math math, bool trans_b, int m, int n, int k,
                     float alpha, gf_cu_ptr a, int lda, gf_cu_ptr b, int ldb, float beta,
                     gf_cu_ptr c, int ldc);

/* The same over `batch` problems at the given element strides. */
int gf_blas_gpu_gemm_batched(gf_blas_gpu *self, gf_math math, bool trans_b, int m, int n,
                             int k, float alpha, gf_cu_ptr a, int lda, long long stride_a,
                             gf_cu_ptr b, int ldb, long long stride_b, float beta, gf_cu_ptr c,
                             int ldc, long long stride_c, int batch);

/* Double precision, row-major, strided batched, B transposed ([n×k]):
 * C[m×n] = A[m×k]·Bᵀ for each of `batch` problems. */
int gf_blas_gpu_dgemm_nt_batched(gf_blas_gpu *self, int m, int n, int k, gf_cu_ptr a, int lda,
                                 long long stride_a, gf_cu_ptr b, int ldb, long long stride_b,
                                 gf_cu_ptr c, int ldc, long long stride_c, int batch);

#endif
