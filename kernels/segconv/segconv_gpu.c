/* segconv_gpu.c — a 1-D convolution stage of the segmentation network on the
 * card, library and own routes (see segconv_gpu.h). */
#include "kernels/segconv/segconv_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

/* Must match kernels/segconv/segconv.cu: 64 pooled outputs (196 input frames) and
 * all 60 channels a block of 320 threads. */
#define OWN_PT 64
#define OWN_SPAN (OWN_PT * 3 + GF_SEGCONV_TAPS - 1)
#define OWN_THREADS 320

struct gf_segconv_gpu {
    gf_gpu *gpu;                   /* borrowed */
    gf_blas_gpu *blas;             /* borrowed */
    char boundary[32];
    int cin, tin, tout, tp, max_batch;
    gf_route_kind route;
    gf_cu_ptr w, wp, bias;         /* [60][cin*5]; [cin][5][60] (own); [60] */
    gf_cu_ptr col, frames;         /* library: im2col, SGEMM output */
    gf_cu_function im2col, pool, own;   /* own: loaded when chosen */
    gf_gpu_allocs mem;
};

gf_segconv_gpu *gf_segconv_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *boundary,
                                   int cin, int tin, const float *w, const float *bias,
                                   int max_batch)
{
    gf_segconv_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    snprintf(s->boundary, sizeof s->boundary, "%s", boundary);
    s->cin = cin;
    s->tin = tin;
    s->tout = tin - GF_SEGCONV_TAPS + 1;
    s->tp = s->tout / 3;
    s->max_batch = max_batch;
    s->mem.gpu = gpu;
    const size_t kk = (size_t)cin * GF_SEGCONV_TAPS, f = sizeof(float), B = (size_t)max_batch;
    float *wp = gf_malloc(f * GF_SEGCONV_COUT * kk);
    for (int c = 0; c < GF_SEGCONV_COUT; c++)
        for (size_t i = 0; i < kk; i++)   /* i = ci * 5 + k */
            wp[i * GF_SEGCONV_COUT + c] = w[c * kk + i];
    static const char *const names[] = { "gf_im2col1d", "gf_pool_max" };
    gf_cu_function *const fns[] = { &s->im2col, &s->pool };
    int rc = gf_gpu_allocs_upload(&s->mem, w, f * GF_SEGCONV_COUT * kk, &s->w);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, wp, f * GF_SEGCONV_COUT * kk, &s->wp);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, bias, f * GF_SEGCONV_COUT, &s->bias);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_take(&s->mem, B * (size_t)s->tout * kk * f, &s->col);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_take(&s->mem, B * GF_SEGCONV_COUT * (size_t)s->tout * f, &s->frames);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    if (rc)
        goto out_free_host;
    rc = gf_gpu_sync(gpu);   /* the caller may free its host copies next */
out_free_host:
    free(wp);
    if (rc)
        gf_segconv_gpu_destroy(&s);
    return s;
}

void gf_segconv_gpu_destroy(gf_segconv_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_gpu_allocs_release(&(*self_p)->mem);
    free(*self_p);
    *self_p = NULL;
}

gf_route_kind gf_segconv_gpu_route(const gf_segconv_gpu *self) { return self->route; }
int gf_segconv_gpu_pooled(const gf_segconv_gpu *self) { return self->tp; }

/* The own kernel's dynamic shared memory for cin input channels. */
static int smem_for(int cin)
{
    return (int)sizeof(float) * cin * OWN_SPAN;
}

static int own_smem(const gf_segconv_gpu *s)
{
    return smem_for(s->cin);
}

int gf_segconv_gpu_plan(int cin, int smem_optin, const char *boundary, const char *area,
                        char *why, size_t len)
{
    GF_TRY(gf_plan_refuse_area(area, "segconv", boundary, why, len));
    return gf_plan_refuse_smem(smem_for(cin), smem_optin, "gf_segconv_pool", why, len);
}

int gf_segconv_gpu_set_route(gf_segconv_gpu *s, gf_route_kind kind, const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        s->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    const char *sha = NULL;
    int rc = gf_gpu_own_kernel(s->gpu, s->boundary, "segconv", "gf_segconv_pool", own_smem(s),
                               &s->own, &sha);
    if (rc)
        return rc;
    s->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

int gf_segconv_gpu_run(gf_segconv_gpu *s, gf_math math, gf_cu_ptr x, int B, gf_cu_ptr out)
{
    if (B < 1 || B > s->max_batch)
        return GF_EINVAL;
    int cin = s->cin, tin = s->tin, tout = s->tout, tp = s->tp;
    if (s->route == GF_ROUTE_OWN) {
        void *p[] = { &x, &cin, &tin, &s->wp, &s->bias, &tp, &out };
        return gf_gpu_launch(s->gpu, s->own, (unsigned)((tp + OWN_PT - 1) / OWN_PT), (unsigned)B,
                             1, OWN_THREADS, 1, 1, (unsigned)own_smem(s), p);
    }
    int k = GF_SEGCONV_TAPS, one = 1, kk = cin * GF_SEGCONV_TAPS;
    void *p_im[] = { &x, &B, &cin, &tin, &k, &one, &tout, &s->col };
    GF_TRY(gf_gpu_launch1d(s->gpu, s->im2col, (long)B * tout * kk, p_im));
    /* frames[b] [60, tout] = W [60, cin*5] · col[b]ᵀ */
    GF_TRY(gf_blas_gpu_gemm_batched(s->blas, math, true, GF_SEGCONV_COUT, tout, kk, 1.0f, s->w,
                                    kk, 0, s->col, kk, (long long)tout * kk, 0.0f, s->frames,
                                    tout, (long long)GF_SEGCONV_COUT * tout, B));
    int rows = B * GF_SEGCONV_COUT, three = 3, zero = 0, cout = GF_SEGCONV_COUT;
    void *p_pool[] = { &s->frames, &rows, &tout, &three, &tp, &zero, &s->bias, &cout, &out };
    return gf_gpu_launch1d(s->gpu, s->pool, (long)rows * tp, p_pool);
}
