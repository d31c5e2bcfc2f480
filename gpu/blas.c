/* blas_gpu.c — cuBLAS through dlopen (see blas_gpu.h).
 *
 * Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: we call cuBLAS with the
 * operands swapped, so no transposes are materialised. */
#include "gpu/blas.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int cublas_status;
typedef struct cublas_ctx *cublas_handle;
enum { OP_N = 0, OP_T = 1 };
enum { MATH_DEFAULT = 0, MATH_PEDANTIC = 2, MATH_TF32 = 3 };

struct gf_blas_gpu {
    void *lib;                                   /* dlopen handle */
    cublas_handle handle;                        /* bound to the gpu's stream */
    int math;                                    /* math mode currently set */
    cublas_status (*create)(cublas_handle *);
    cublas_status (*destroy)(cublas_handle);
    cublas_status (*set_stream)(cublas_handle, gf_cu_stream);
    cublas_status (*set_math)(cublas_handle, int);
    cublas_status (*sgemm)(cublas_handle, int, int, int, int, int, const float *,
                           const float *, int, const float *, int, const float *, float *, int);
    cublas_status (*sgemm_batched)(cublas_handle, int, int, int, int, int, const float *,
                                   const float *, int, long long, const float *, int, long long,
                                   const float *, float *, int, long long, int);
    cublas_status (*dgemm_batched)(cublas_handle, int, int, int, int, int, const double *,
                                   const double *, int, long long, const double *, int,
                                   long long, const double *, double *, int, long long, int);
};

static void *open_lib(void)
{
    static const char *names[] = { "libcublas.so.13", "libcublas.so.12", "libcublas.so" };
    for (size_t i = 0; i < GF_ARRAY_LEN(names); i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

int gf_blas_gpu_open(gf_gpu *gpu, gf_blas_gpu **out)
{
    *out = NULL;
    gf_blas_gpu *self = gf_calloc(1, sizeof *self);
    self->math = -1;
    self->lib = open_lib();
    if (!self->lib) {
        GF_ERROR("library route: cuBLAS (libcublas.so) cannot be loaded: %s", dlerror());
        goto fail;
    }
    struct { void *slot; const char *name; } syms[] = {
        { &self->create, "cublasCreate_v2" },   { &self->destroy, "cublasDestroy_v2" },
        { &self->set_stream, "cublasSetStream_v2" }, { &self->set_math, "cublasSetMathMode" },
        { &self->sgemm, "cublasSgemm_v2" },     { &self->sgemm_batched, "cublasSgemmStridedBatched" },
        { &self->dgemm_batched, "cublasDgemmStridedBatched" },
    };
    for (size_t i = 0; i < GF_ARRAY_LEN(syms); i++) {
        void *fn = dlsym(self->lib, syms[i].name);
        if (!fn) {
            GF_ERROR("library route: cuBLAS lacks %s", syms[i].name);
            goto fail;
        }
        memcpy(syms[i].slot, &fn, sizeof fn);
    }
    cublas_status st = self->create(&self->handle);
    if (st != 0) {
        GF_ERROR("library route: cublasCreate failed (status %d)", st);
        self->handle = NULL;
        goto fail;
    }
    st = self->set_stream(self->handle, gf_gpu_stream(gpu));
    if (st != 0) {
        GF_ERROR("library route: cublasSetStream failed (status %d)", st);
        goto fail;
    }
    *out = self;
    return 0;
fail:
    gf_blas_gpu_destroy(&self);
    return GF_EDEVICE;
}

void gf_blas_gpu_destroy(gf_blas_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_blas_gpu *self = *self_p;
    if (self->handle)
        self->destroy(self->handle);
    /* The library stays loaded: cuBLAS does not support being unloaded and
     * reloaded within a process. */
    free(self);
    *self_p = NULL;
}

static int set_math(gf_blas_gpu *self, gf_math math)
{
    int mode = math == GF_MATH_TF32 ? MATH_TF32 : MATH_PEDANTIC;
    if (mode == self->math)
        return 0;
    cublas_status st = self->set_math(self->handle, mode);
    if (st != 0) {
        GF_ERROR("library route: cublasSetMathMode(%d) failed (status %d)", mode, st);
        return GF_EDEVICE;
    }
    self->math = mode;
    return 0;
}

int gf_blas_gpu_gemm(gf_blas_gpu *self, gf_math math, bool trans_b, int m, int n, int k,
                     float alpha, gf_cu_ptr a, int lda, gf_cu_ptr b, int ldb, float beta,
                     gf_cu_ptr c, int ldc)
{
    return gf_blas_gpu_gemm_batched(self, math, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0,
                                    beta, c, ldc, 0, 1);
}

int gf_blas_gpu_gemm_batched(gf_blas_gpu *self, gf_math math, bool trans_b, int m, int n,
                             int k, float alpha, gf_cu_ptr a, int lda, long long stride_a,
                             gf_cu_ptr b, int ldb, long long stride_b, float beta, gf_cu_ptr c,
                             int ldc, long long stride_c, int batch)
{
    int rc = set_math(self, math);
    if (rc)
        return rc;
    /* Column-major view: Cᵀ[n×m] = op(B)ᵀ[n×k] · Aᵀ[k×m]. */
    const float *pa = (const float *)(uintptr_t)a;
    const float *pb = (const float *)(uintptr_t)b;
    float *pc = (float *)(uintptr_t)c;
    cublas_status st;
    if (batch == 1)
        st = self->sgemm(self->handle, trans_b ? OP_T : OP_N, OP_N, n, m, k, &alpha, pb, ldb,
                         pa, lda, &beta, pc, ldc);
    else
        st = self->sgemm_batched(self->handle, trans_b ? OP_T : OP_N, OP_N, n, m, k, &alpha,
                                 pb, ldb, stride_b, pa, lda, stride_a, &beta, pc, ldc,
                                 stride_c, batch);
    if (st != 0) {
        GF_ERROR("library route: cublasSgemm%s %dx%dx%d (batch %d) failed (status %d)",
                 batch == 1 ? "" : "StridedBatched", m, n, k, batch, st);
        return GF_EDEVICE;
    }
    return 0;
}

int gf_blas_gpu_dgemm_nt_batched(gf_blas_gpu *self, int m, int n, int k, gf_cu_ptr a, int lda,
                                 long long stride_a, gf_cu_ptr b, int ldb, long long stride_b,
                                 gf_cu_ptr c, int ldc, long long stride_c, int batch)
{
    const double one = 1.0, zero = 0.0;
    cublas_status st = self->dgemm_batched(
        self->handle, OP_T, OP_N, n, m, k, &one, (const double *)(uintptr_t)b, ldb, stride_b,
        (const double *)(uintptr_t)a, lda, stride_a, &zero, (double *)(uintptr_t)c, ldc,
        stride_c, batch);
    if (st != 0) {
        GF_ERROR("library route: cublasDgemmStridedBatched %dx%dx%d (batch %d) failed (status %d)",
                 m, n, k, batch, st);
        return GF_EDEVICE;
    }
    return 0;
}
