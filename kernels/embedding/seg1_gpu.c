/* seg1_gpu.c — the seg_1 layer on the card, library and own routes (see
 * seg1_gpu.h). */
#include "kernels/embedding/seg1_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <stdlib.h>

/* Must match kernels/embedding/embedding.cu: a block of 128 threads owns 32 rows x 64
 * outputs of one slice of k, in chunks of 32 k. */
#define OWN_JT 32
#define OWN_NT 64
#define OWN_KC 32
#define OWN_THREADS 128
#define OWN_BLOCKS 256   /* the most blocks the slices make: about two an SM, so that
                          * one block's loads wait while the other multiplies */
/* The tf32 kernel (math mode tf32, cc >= 9.0: the sm90 tier; the sm75 tier
 * traps) takes a whole slice into shared memory, rows padded by 16 floats:
 * 40 slices of 128 k (55.3 KB a block) where they stay within OWN_BLOCKS
 * blocks (up to 32 jobs), else 20 of 256 k (104.4 KB, two blocks an SM):
 * 160 blocks at 1 and 64 jobs, 240 at 96. Slices are multiples of 64 k. */
#define OWN_TF32_CC 90
#define OWN_TF32_MANY 40
#define OWN_TF32_FEW 20
#define OWN_TF32_SMEM(slices) \
    ((OWN_JT + OWN_NT) * (GF_SEG1_IN / (slices) + 16) * (int)sizeof(float))
/* gf_seg1_cluster_tf32 (math mode tf32 on cc 9.0, where the card places a
 * cluster): a cluster of OWN_CL blocks owns 32 rows x OWN_CL_NT outputs, a
 * block one slice of k (640), streamed through 3 stages of 128 k, rows padded
 * by 16 floats (110.6 KB a block, two an SM); the slices are summed in the
 * cluster's shared memory. 64 blocks at 1 job, 192 at 96. */
#define OWN_CL 8          /* the portable cluster size: gf_gpu_launch_cluster asks no more */
#define OWN_CL_NT 32
#define OWN_CL_SMEM (3 * (OWN_JT + OWN_CL_NT) * (128 + 16) * (int)sizeof(float))

struct gf_seg1_gpu {
    gf_gpu *gpu;                   /* borrowed */
    gf_blas_gpu *blas;             /* borrowed */
    int max_jobs;                  /* rows a run at most */
    gf_route_kind route;
    gf_cu_ptr w, bias;             /* [256][5120], [256] */
    gf_cu_ptr part;                /* own: [slices][row tiles · 32][256] partial sums */
    gf_cu_ptr count;               /* own: arrivals per output tile, zero between runs */
    gf_cu_function bias_act, own;  /* library: the bias kernel; own: loaded when chosen */
    gf_cu_function own_tf32;       /* own, cc >= 9.0: the tensor-core kernel, for tf32 jobs */
    bool has_tf32;                 /* own_tf32 loaded */
    gf_cu_function own_cl;         /* own, cc >= 9.0: the same multiply, summed in a cluster */
    bool has_cl;                   /* own_cl loaded and the card places its cluster */
    gf_seg1_tf32_kernel tf32_pick; /* set by hand, or AUTO: the cluster kernel where has_cl */
    gf_gpu_allocs mem;
};

static int row_tiles(int jobs) { return (jobs + OWN_JT - 1) / OWN_JT; }

/* Slices of k for n_jobs rows: the most (up to 32) that divide k into whole
 * chunks and keep the grid within OWN_BLOCKS blocks: 32 up to 64 jobs, 20
 * at 96. More slices make more partial sums for the last block to add. */
static int own_slices(int n_jobs)
{
    static const int choices[] = { 32, 20, 16, 10, 8, 5, 4, 2, 1 };
    int tiles = row_tiles(n_jobs) * (GF_SEG1_OUT / OWN_NT);
    for (size_t i = 0; i < GF_ARRAY_LEN(choices); i++)
        if (tiles * choices[i] <= OWN_BLOCKS && GF_SEG1_IN % (OWN_KC * choices[i]) == 0)
            return choices[i];
    return 1;
}

static int own_tf32_slices(int n_jobs)
{
    int tiles = row_tiles(n_jobs) * (GF_SEG1_OUT / OWN_NT);
    return tiles * OWN_TF32_MANY <= OWN_BLOCKS ? OWN_TF32_MANY : OWN_TF32_FEW;
}

gf_seg1_gpu *gf_seg1_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const float *w, const float *bias,
                             int max_jobs)
{
    assert(max_jobs >= 1);
    gf_seg1_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    s->max_jobs = max_jobs;
    s->mem.gpu = gpu;
    const size_t f = sizeof(float), rows = (size_t)row_tiles(max_jobs) * OWN_JT;
    const size_t tiles = (size_t)row_tiles(max_jobs) * (GF_SEG1_OUT / OWN_NT);
    /* The most slices any run takes: own_slices(1) (fewest tiles) or the
     * tf32 kernel's OWN_TF32_MANY. */
    const int most = own_slices(1) > OWN_TF32_MANY ? own_slices(1) : OWN_TF32_MANY;
    const size_t part = (size_t)most * rows * GF_SEG1_OUT * f;
    static const char *const names[] = { "gf_bias_leaky_relu" };
    gf_cu_function *const fns[] = { &s->bias_act };
    int rc = gf_gpu_allocs_upload(&s->mem, w, f * GF_SEG1_OUT * GF_SEG1_IN, &s->w);
    if (rc)
        goto fail;
    rc = gf_gpu_allocs_upload(&s->mem, bias, f * GF_SEG1_OUT, &s->bias);
    if (rc)
        goto fail;
    rc = gf_gpu_allocs_take(&s->mem, part, &s->part);
    if (rc)
        goto fail;
    rc = gf_gpu_allocs_take(&s->mem, sizeof(unsigned) * tiles, &s->count);
    if (rc)
        goto fail;
    rc = gf_gpu_fill32(gpu, s->count, 0, tiles);
    if (rc)
        goto fail;
    rc = gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    if (rc)
        goto fail;
    rc = gf_gpu_sync(gpu);   /* the caller may free its host copies next */
    if (rc)
        goto fail;
    return s;
fail:
    gf_seg1_gpu_destroy(&s);
    return NULL;
}

void gf_seg1_gpu_destroy(gf_seg1_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_gpu_allocs_release(&(*self_p)->mem);
    free(*self_p);
    *self_p = NULL;
}

gf_route_kind gf_seg1_gpu_route(const gf_seg1_gpu *self) { return self->route; }

/* The own kernel a run in math mode math launches. */
typedef enum { K_SPLITK, K_SPLITK_TF32, K_CLUSTER_TF32 } own_kernel;

static own_kernel own_pick(const gf_seg1_gpu *s, gf_math math)
{
    if (math != GF_MATH_TF32 || !s->has_tf32)
        return K_SPLITK;
    if (s->has_cl && s->tf32_pick != GF_SEG1_TF32_SPLITK)
        return K_CLUSTER_TF32;
    return K_SPLITK_TF32;
}

const char *gf_seg1_gpu_kernel(const gf_seg1_gpu *s, gf_math math)
{
    static const char *const names[] = {
        [K_SPLITK] = "gf_seg1_splitk",
        [K_SPLITK_TF32] = "gf_seg1_splitk_tf32",
        [K_CLUSTER_TF32] = "gf_seg1_cluster_tf32",
    };
    return s->route == GF_ROUTE_OWN ? names[own_pick(s, math)] : NULL;
}

int gf_seg1_gpu_set_tf32_kernel(gf_seg1_gpu *s, gf_seg1_tf32_kernel which)
{
    switch (which) {
    case GF_SEG1_TF32_AUTO:
        break;
    case GF_SEG1_TF32_SPLITK:
        if (!s->has_tf32)
            return GF_EUNSUP;
        break;
    case GF_SEG1_TF32_CLUSTER:
        if (!s->has_cl)
            return GF_EUNSUP;
        break;
    default:
        return GF_EINVAL;
    }
    s->tf32_pick = which;
    return 0;
}

int gf_seg1_gpu_plan(const char *area, char *why, size_t len)
{
    return gf_plan_refuse_area(area, "embedding", "embedding.seg_1", why, len);
}

int gf_seg1_gpu_set_route(gf_seg1_gpu *s, gf_route_kind kind, const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        s->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    const char *sha = NULL;
    s->has_tf32 = false;
    s->has_cl = false;
    s->tf32_pick = GF_SEG1_TF32_AUTO;
    GF_TRY(gf_gpu_own_kernel(s->gpu, "embedding.seg_1", "embedding", "gf_seg1_splitk", 0,
                             &s->own, &sha));
    /* The tensor-core kernel where the sm90 tier loads; elsewhere the
     * float32 kernel serves tf32 jobs too. */
    GF_TRY(gf_gpu_own_kernel_extra(s->gpu, OWN_TF32_CC, "embedding.seg_1", "embedding",
                                   "gf_seg1_splitk_tf32", OWN_TF32_SMEM(OWN_TF32_FEW),
                                   &s->own_tf32, &sha, &s->has_tf32));
    /* Beside it the cluster kernel, where the driver launches clusters. */
    if (s->has_tf32 && gf_gpu_can_launch_clusters(s->gpu))
        GF_TRY(gf_gpu_own_kernel_extra(s->gpu, OWN_TF32_CC, "embedding.seg_1", "embedding",
                                       "gf_seg1_cluster_tf32", OWN_CL_SMEM, &s->own_cl, &sha,
                                       &s->has_cl));
    /* a card partition (MIG) or a driver may not place a cluster of 8 */
    if (s->has_cl && gf_gpu_max_active_clusters(s->gpu, s->own_cl, OWN_THREADS,
                                                (unsigned)OWN_CL_SMEM, OWN_CL) < 1) {
        GF_WARN("embedding.seg_1: this card cannot place a cluster of %d blocks: tf32 runs "
                "gf_seg1_splitk_tf32", OWN_CL);
        s->has_cl = false;
    }
    s->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

int gf_seg1_gpu_run(gf_seg1_gpu *s, gf_math math, gf_cu_ptr pooled, int n_jobs, gf_cu_ptr emb)
{
    if (n_jobs < 0 || n_jobs > s->max_jobs) {
        GF_ERROR("embedding.seg_1 (gpu): %d rows, capacity %d", n_jobs, s->max_jobs);
        return GF_EINVAL;
    }
    if (n_jobs == 0)
        return 0;
    int k = GF_SEG1_IN, n = GF_SEG1_OUT;
    const own_kernel kern = own_pick(s, math);
    if (s->route == GF_ROUTE_OWN && kern == K_CLUSTER_TF32) {
        void *p[] = { &pooled, &n_jobs, &k, &s->w, &s->bias, &n, &emb };
        return gf_gpu_launch_cluster(s->gpu, s->own_cl, OWN_CL * (GF_SEG1_OUT / OWN_CL_NT),
                                     (unsigned)row_tiles(n_jobs), 1, OWN_THREADS,
                                     (unsigned)OWN_CL_SMEM, OWN_CL, p);
    }
    if (s->route == GF_ROUTE_OWN && kern == K_SPLITK_TF32) {
        int slices = own_tf32_slices(n_jobs);
        void *p[] = { &pooled, &n_jobs, &k, &s->w, &s->bias, &n, &s->part, &s->count, &emb };
        return gf_gpu_launch(s->gpu, s->own_tf32, GF_SEG1_OUT / OWN_NT,
                             (unsigned)row_tiles(n_jobs), (unsigned)slices, OWN_THREADS, 1, 1,
                             (unsigned)OWN_TF32_SMEM(slices), p);
    }
    if (s->route == GF_ROUTE_OWN) {
        void *p[] = { &pooled, &n_jobs, &k, &s->w, &s->bias, &n, &s->part, &s->count, &emb };
        return gf_gpu_launch(s->gpu, s->own, GF_SEG1_OUT / OWN_NT, (unsigned)row_tiles(n_jobs),
                             (unsigned)own_slices(n_jobs), OWN_THREADS, 1, 1, 0, p);
    }
    GF_TRY(gf_blas_gpu_gemm(s->blas, math, true, n_jobs, GF_SEG1_OUT, GF_SEG1_IN, 1.0f, pooled,
                            GF_SEG1_IN, s->w, GF_SEG1_IN, 0.0f, emb, GF_SEG1_OUT));
    float one = 1.0f;
    void *p_b[] = { &emb, &s->bias, &n_jobs, &n, &one };
    return gf_gpu_launch1d(s->gpu, s->bias_act, (long)n_jobs * GF_SEG1_OUT, p_b);
}
