/* sinc_gpu.c — the SincNet filterbank stage on the card, library and own
 * routes (see sinc_gpu.h). */
#include "kernels/sincnet/sincnet_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <stdbool.h>
#include <stdlib.h>

/* Must match kernels/sincnet/sincnet.cu: 16 filters and 256 pooled outputs a block,
 * 256 threads; shared memory for the block's span of samples (padded by one)
 * and its 16 filters, all float64. */
#define OWN_FB 16
#define OWN_PT 256
#define OWN_SPAN (OWN_PT * 3 * GF_SINC_STRIDE + GF_SINC_TAPS - GF_SINC_STRIDE)
#define OWN_SMEM ((int)sizeof(double) * (OWN_SPAN + 1 + OWN_FB * GF_SINC_TAPS))

/* The DMMA kernel (float64 tensor cores, mma.sync m16n8k4 f64: sm_90),
 * where the sm90 tier loads (below it, it traps): 40 filters and 64 pooled
 * outputs a block, 128 threads; shared memory for the span (taps padded to
 * 252) and the 40 filters of 252 taps, all float64. Must match
 * kernels/sincnet/sincnet.cu. */
#define OWN_DMMA_CC 90
#define OWN_DMMA_FB 40
#define OWN_DMMA_PT 64
#define OWN_DMMA_THREADS 128
#define OWN_DMMA_K 252
#define OWN_DMMA_SPAN (OWN_DMMA_PT * 3 * GF_SINC_STRIDE + OWN_DMMA_K - GF_SINC_STRIDE)
#define OWN_DMMA_SMEM ((int)sizeof(double) * (OWN_DMMA_SPAN + OWN_DMMA_FB * OWN_DMMA_K))

struct gf_sinc_gpu {
    gf_gpu *gpu;                   /* borrowed */
    gf_blas_gpu *blas;             /* borrowed */
    int max_batch;
    gf_route_kind route;
    gf_cu_ptr filters, col, frames;   /* [80][251]; im2col and DGEMM output (library) */
    gf_cu_function im2col, pool, own; /* own: loaded when chosen */
    gf_cu_function own_dmma;          /* own on cc >= 9.0: the DMMA kernel */
    bool has_dmma;                    /* the own route runs own_dmma, not own */
    gf_gpu_allocs mem;
};

gf_sinc_gpu *gf_sinc_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const double *filters,
                             int max_batch)
{
    gf_sinc_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    s->max_batch = max_batch;
    s->mem.gpu = gpu;
    const size_t B = (size_t)max_batch, d = sizeof(double);
    static const char *const names[] = { "gf_im2col1d_f64", "gf_pool_absmax_f64" };
    gf_cu_function *const fns[] = { &s->im2col, &s->pool };
    int rc = gf_gpu_allocs_upload(&s->mem, filters, d * GF_SINC_FILTERS * GF_SINC_TAPS,
                                  &s->filters);
    if (rc)
        goto fail;
    rc = gf_gpu_allocs_take(&s->mem, B * GF_SINC_FRAMES * GF_SINC_TAPS * d, &s->col);
    if (rc)
        goto fail;
    rc = gf_gpu_allocs_take(&s->mem, B * GF_SINC_FILTERS * GF_SINC_FRAMES * d, &s->frames);
    if (rc)
        goto fail;
    rc = gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    if (rc)
        goto fail;
    rc = gf_gpu_sync(gpu);   /* the caller may free its host copy next */
    if (rc)
        goto fail;
    return s;
fail:
    gf_sinc_gpu_destroy(&s);
    return NULL;
}

void gf_sinc_gpu_destroy(gf_sinc_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_gpu_allocs_release(&(*self_p)->mem);
    free(*self_p);
    *self_p = NULL;
}

gf_route_kind gf_sinc_gpu_route(const gf_sinc_gpu *self) { return self->route; }

int gf_sinc_gpu_plan(int smem_optin, const char *area, char *why, size_t len)
{
    GF_TRY(gf_plan_refuse_area(area, "sincnet", "sincnet.conv0.abs_pool", why, len));
    return gf_plan_refuse_smem(OWN_SMEM, smem_optin, "gf_sinc_abs_pool_f64", why, len);
}

int gf_sinc_gpu_set_route(gf_sinc_gpu *s, gf_route_kind kind, const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        s->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    const char *sha = NULL;
    s->has_dmma = false;
    GF_TRY(gf_gpu_own_kernel(s->gpu, "sincnet.conv0.abs_pool", "sincnet", "gf_sinc_abs_pool_f64",
                             OWN_SMEM, &s->own, &sha));
    /* The DMMA kernel where the sm90 tier loads; elsewhere the FMA kernel. */
    GF_TRY(gf_gpu_own_kernel_extra(s->gpu, OWN_DMMA_CC, "sincnet.conv0.abs_pool", "sincnet",
                                   "gf_sinc_abs_pool_dmma", OWN_DMMA_SMEM, &s->own_dmma, &sha,
                                   &s->has_dmma));
    s->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

const char *gf_sinc_gpu_kernel(const gf_sinc_gpu *s)
{
    if (s->route != GF_ROUTE_OWN)
        return NULL;
    return s->has_dmma ? "gf_sinc_abs_pool_dmma" : "gf_sinc_abs_pool_f64";
}

int gf_sinc_gpu_run(gf_sinc_gpu *s, gf_cu_ptr wave, int B, gf_cu_ptr out)
{
    if (B < 1 || B > s->max_batch)
        return GF_EINVAL;
    int n = GF_SINC_SAMPLES, nf = GF_SINC_FILTERS, tp = GF_SINC_POOLED;
    if (s->route == GF_ROUTE_OWN) {
        void *p[] = { &wave, &n, &s->filters, &nf, &tp, &out };
        if (s->has_dmma)
            return gf_gpu_launch(s->gpu, s->own_dmma,
                                 (unsigned)((tp + OWN_DMMA_PT - 1) / OWN_DMMA_PT),
                                 (unsigned)((nf + OWN_DMMA_FB - 1) / OWN_DMMA_FB), (unsigned)B,
                                 OWN_DMMA_THREADS, 1, 1, (unsigned)OWN_DMMA_SMEM, p);
        return gf_gpu_launch(s->gpu, s->own, (unsigned)((tp + OWN_PT - 1) / OWN_PT),
                             (unsigned)((nf + OWN_FB - 1) / OWN_FB), (unsigned)B, OWN_PT, 1, 1,
                             (unsigned)OWN_SMEM, p);
    }
    int ks = GF_SINC_TAPS, stride = GF_SINC_STRIDE, frames = GF_SINC_FRAMES;
    void *p_im[] = { &wave, &B, &n, &ks, &stride, &frames, &s->col };
    GF_TRY(gf_gpu_launch1d(s->gpu, s->im2col, (long)B * frames * ks, p_im));
    GF_TRY(gf_blas_gpu_dgemm_nt_batched(s->blas, nf, frames, ks, s->filters, ks, 0, s->col, ks,
                                        (long long)frames * ks, s->frames, frames,
                                        (long long)nf * frames, B));
    int rows = B * nf, three = 3;
    void *p_pool[] = { &s->frames, &rows, &frames, &three, &tp, &out };
    return gf_gpu_launch1d(s->gpu, s->pool, (long)rows * tp, p_pool);
}
