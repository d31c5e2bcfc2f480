/* dense_gpu.c — a layer of the segmentation head on the card, library and
 * own routes (see dense_gpu.h). */
#include "kernels/dense/dense_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Must match kernels/dense/dense.cu: 128 threads a block; the linear kernels own
 * 32, 16 or 8 rows (m32, m16, m8) x 128 outputs and walk K 16 at a time;
 * the classifier kernel owns 16 rows of 7 outputs over 128 inputs. */
#define OWN_THREADS 128
#define OWN_N 128
#define OWN_BK 16
#define OWN_CLS_C 7
#define OWN_CLS_K 128
#define OWN_CLS_ROWS 16
/* The linear kernels by the rows they own and the fewest rows each takes:
 * a batch of 32 windows (18,848 rows) gives 589 blocks of 32 rows, about
 * 4.5 for each of an H200's 132 multiprocessors; a batch of 8 (4,712 rows)
 * 295 blocks of 16, where 32-row blocks would leave 148; a batch of 1 (589
 * rows) 74 blocks of 8 rather than 37 of 16. */
static const struct {
    const char *name;
    int rows, min_rows;
} own_linear[3] = {
    { "gf_dense_lrelu_m32", 32, 8192 },
    { "gf_dense_lrelu_m16", 16, 2048 },
    { "gf_dense_lrelu_m8", 8, 0 },
};
/* The tf32 kernels (math mode tf32, cc >= 9.0: the sm90 tier; the sm75 tier
 * traps) by the rows they own: a batch of 32 (18,848 rows) gives 295 blocks
 * of 64, three fit an SM by shared memory (69.6 KB each at K 256), so one
 * wave on an H200; a batch of 8 (4,712) 295 of 16 and a batch of 1 (589) 37
 * of 16, where 64-row blocks would leave 74 and 10. Each block reads all the
 * weights (from L2 / L1), so the larger tile reads them fewer times. Both
 * need K a multiple of 64 (256 and 128 here); other shapes keep the float32
 * kernels in tf32 too. */
static const struct {
    const char *name;
    int rows, min_rows;
} own_tf32[2] = {
    { "gf_dense_lrelu_tf32_m64", 64, 8192 },
    { "gf_dense_lrelu_tf32_m16", 16, 0 },
};
#define OWN_TF32_CC 90
#define OWN_TF32_K 64      /* K a multiple of this */
#define OWN_TF32_PAD 16    /* x tile rows padded by 16 floats */

/* w [128][in] rounded to tf32 and packed for the tf32 kernels: for the
 * pair of k-tiles p (16 k), n-tile nt (8 outputs) and lane (4g + t), the
 * four words w[8nt + g][16p + 4t .. 16p + 4t + 3] at word 4 · ((p · 16 +
 * nt) · 32 + lane): the lane's B fragments of the pair's two mma, in the
 * kernel's order of k (kernels/dense/dense.cu). The caller frees. */
static float *pack_tf32(const float *w, int in)
{
    float *p = gf_malloc(sizeof(float) * (size_t)in * OWN_N);
    for (int kp = 0; kp < in / 16; kp++)
        for (int nt = 0; nt < OWN_N / 8; nt++)
            for (int lane = 0; lane < 32; lane++) {
                const int g = lane / 4, t = lane % 4;
                const float *wr = w + (size_t)(8 * nt + g) * in + 16 * kp + 4 * t;
                float *q = p + 4 * (((size_t)kp * (OWN_N / 8) + nt) * 32 + lane);
                for (int e = 0; e < 4; e++)
                    q[e] = gf_round_tf32(wr[e]);
            }
    return p;
}

/* The shapes the tf32 kernels run: 128 outputs with leaky ReLU and K a
 * multiple of 64 (whole k pairs in each quarter of K). */
static bool tf32_shape(gf_dense_act act, int in, int out)
{
    return act == GF_DENSE_LEAKY_RELU && out == OWN_N && in >= OWN_TF32_K && in % OWN_TF32_K == 0;
}

struct gf_dense_gpu {
    gf_gpu *gpu;                   /* borrowed */
    gf_blas_gpu *blas;             /* borrowed */
    char boundary[32];             /* the layer's name in logs */
    int in, out;                   /* the layer's shape: inputs and outputs a row */
    int max_rows;                  /* the most rows a run may bring */
    gf_dense_act act;              /* leaky ReLU or log-softmax after the bias */
    gf_route_kind route;           /* the route runs take */
    gf_cu_ptr w, wt, bias;         /* [out][in]; [in][out] (own, leaky ReLU layers); [out] */
    gf_cu_ptr wp;                  /* own tf32: w rounded to tf32, packed in mma fragment order */
    gf_cu_function bias_act, logsoftmax;   /* the library route's glue */
    gf_cu_function own[3];         /* own: own_linear's kernels, or [0] the classifier's */
    gf_cu_function tf32[2];        /* own, leaky ReLU layers on cc >= 9.0: own_tf32's kernels */
    bool has_tf32;                 /* tf32[] loaded: math mode tf32 runs them */
    gf_gpu_allocs mem;
};

gf_dense_gpu *gf_dense_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *boundary, int in,
                               int out, const float *w, const float *bias, gf_dense_act act,
                               int max_rows)
{
    assert(act == GF_DENSE_LEAKY_RELU || out <= 32);   /* the glue's one warp a row */
    gf_dense_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    snprintf(s->boundary, sizeof s->boundary, "%s", boundary);
    s->in = in;
    s->out = out;
    s->act = act;
    s->max_rows = max_rows;
    s->mem.gpu = gpu;
    const size_t f = sizeof(float), n = (size_t)in * out;
    float *wt = gf_malloc(f * n);
    for (int o = 0; o < out; o++)
        for (int k = 0; k < in; k++)
            wt[(size_t)k * out + o] = w[(size_t)o * in + k];
    /* The tf32 kernels' weights, for the shapes they run (see set_route). */
    float *wp = NULL;
    if (tf32_shape(act, in, out))
        wp = pack_tf32(w, in);
    static const char *const names[] = { "gf_bias_leaky_relu", "gf_logsoftmax_rows" };
    gf_cu_function *const fns[] = { &s->bias_act, &s->logsoftmax };
    int rc = gf_gpu_allocs_upload(&s->mem, w, f * n, &s->w);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, wt, f * n, &s->wt);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, bias, f * (size_t)out, &s->bias);
    if (rc)
        goto out_free_host;
    if (wp) {
        rc = gf_gpu_allocs_upload(&s->mem, wp, f * n, &s->wp);
        if (rc)
            goto out_free_host;
    }
    rc = gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    if (rc)
        goto out_free_host;
    rc = gf_gpu_sync(gpu);   /* the caller may free its host copies next */
out_free_host:
    free(wt);
    free(wp);
    if (rc)
        gf_dense_gpu_destroy(&s);
    return s;
}

void gf_dense_gpu_destroy(gf_dense_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_gpu_allocs_release(&(*self_p)->mem);
    free(*self_p);
    *self_p = NULL;
}

gf_route_kind gf_dense_gpu_route(const gf_dense_gpu *self) { return self->route; }

int gf_dense_gpu_plan(int in, int out, gf_dense_act act, const char *boundary, const char *area,
                      char *why, size_t len)
{
    bool leaky = act == GF_DENSE_LEAKY_RELU;
    if (leaky ? (out != OWN_N || in < OWN_BK || in % OWN_BK != 0)
              : (out != OWN_CLS_C || in != OWN_CLS_K)) {
        snprintf(why, len, "no own kernel for %d inputs and %d outputs with %s", in, out,
                 leaky ? "leaky ReLU" : "log-softmax");
        return GF_EUNSUP;
    }
    return gf_plan_refuse_area(area, "dense", boundary, why, len);
}

int gf_dense_gpu_set_route(gf_dense_gpu *s, gf_route_kind kind, const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        s->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    bool leaky = s->act == GF_DENSE_LEAKY_RELU;
    char why[200];
    if (gf_dense_gpu_plan(s->in, s->out, s->act, s->boundary, NULL, why, sizeof why) != 0) {
        GF_WARN("%s: %s: refused", s->boundary, why);
        return GF_EUNSUP;
    }
    const char *sha = NULL;
    int rc = 0;
    for (int i = 0; i < (leaky ? 3 : 1) && !rc; i++)
        rc = gf_gpu_own_kernel(s->gpu, s->boundary, "dense",
                               leaky ? own_linear[i].name : "gf_dense_logsoftmax7", 0, &s->own[i],
                               &sha);
    /* The tf32 kernels where the sm90 tier loads (the x tile's dynamic shared
     * memory is largest for 64 rows); elsewhere the float32 kernels serve
     * tf32 jobs too. */
    s->has_tf32 = false;
    if (!rc && tf32_shape(s->act, s->in, s->out)) {
        const int smem = own_tf32[0].rows * (s->in + OWN_TF32_PAD) * (int)sizeof(float);
        bool have[2] = { false, false };
        for (int i = 0; i < 2 && !rc; i++)
            rc = gf_gpu_own_kernel_extra(s->gpu, OWN_TF32_CC, s->boundary, "dense",
                                         own_tf32[i].name, smem, &s->tf32[i], &sha, &have[i]);
        s->has_tf32 = have[0] && have[1];
    }
    if (rc)
        return rc;
    s->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

const char *gf_dense_gpu_kernel(const gf_dense_gpu *s, gf_math math, int rows)
{
    if (s->route != GF_ROUTE_OWN)
        return NULL;
    if (s->act != GF_DENSE_LEAKY_RELU)
        return "gf_dense_logsoftmax7";
    int t = 0;   /* the last kernel of each table takes any rows */
    if (math == GF_MATH_TF32 && s->has_tf32) {
        while (t + 1 < (int)GF_ARRAY_LEN(own_tf32) && rows < own_tf32[t].min_rows)
            t++;
        return own_tf32[t].name;
    }
    while (t + 1 < (int)GF_ARRAY_LEN(own_linear) && rows < own_linear[t].min_rows)
        t++;
    return own_linear[t].name;
}

int gf_dense_gpu_run(gf_dense_gpu *s, gf_math math, gf_cu_ptr x, int rows, gf_cu_ptr out)
{
    if (rows < 1 || rows > s->max_rows) {
        GF_ERROR("%s: %d rows, capacity %d", s->boundary, rows, s->max_rows);
        return GF_EINVAL;
    }
    if (x % 16 != 0 || out % 16 != 0) {
        GF_ERROR("%s: input or output buffer not 16-byte aligned", s->boundary);
        return GF_EINVAL;
    }
    int in = s->in, n = s->out;
    if (s->route == GF_ROUTE_OWN && s->act == GF_DENSE_LEAKY_RELU && math == GF_MATH_TF32 &&
        s->has_tf32) {
        int t = 0;
        while (rows < own_tf32[t].min_rows)
            t++;
        unsigned bm = (unsigned)own_tf32[t].rows;
        unsigned smem = bm * (unsigned)(in + OWN_TF32_PAD) * (unsigned)sizeof(float);
        float slope = GF_DENSE_SLOPE;
        void *p[] = { &x, &rows, &in, &s->wp, &s->bias, &slope, &out };
        return gf_gpu_launch(s->gpu, s->tf32[t], ((unsigned)rows + bm - 1) / bm, 1, 1,
                             OWN_THREADS, 1, 1, smem, p);
    }
    if (s->route == GF_ROUTE_OWN && s->act == GF_DENSE_LEAKY_RELU) {
        int t = 0;
        while (rows < own_linear[t].min_rows)
            t++;
        unsigned bm = (unsigned)own_linear[t].rows;
        float slope = GF_DENSE_SLOPE;
        void *p[] = { &x, &rows, &in, &s->wt, &s->bias, &slope, &out };
        return gf_gpu_launch(s->gpu, s->own[t], ((unsigned)rows + bm - 1) / bm, 1, 1,
                             OWN_THREADS, 1, 1, 0, p);
    }
    if (s->route == GF_ROUTE_OWN) {
        void *p[] = { &x, &rows, &s->w, &s->bias, &out };
        return gf_gpu_launch(s->gpu, s->own[0],
                             ((unsigned)rows + OWN_CLS_ROWS - 1) / OWN_CLS_ROWS, 1, 1,
                             OWN_THREADS, 1, 1, 0, p);
    }
    GF_TRY(gf_blas_gpu_gemm(s->blas, math, true, rows, n, in, 1.0f, x, in, s->w, in, 0.0f, out,
                            n));
    float slope = s->act == GF_DENSE_LEAKY_RELU ? GF_DENSE_SLOPE : 1.0f;
    void *p_act[] = { &out, &s->bias, &rows, &n, &slope };
    GF_TRY(gf_gpu_launch1d(s->gpu, s->bias_act, (long)rows * n, p_act));
    if (s->act == GF_DENSE_LEAKY_RELU)
        return 0;
    void *p_ls[] = { &out, &rows, &n };
    return gf_gpu_launch1d(s->gpu, s->logsoftmax, (long)rows * 32, p_ls);
}
