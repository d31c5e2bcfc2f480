/* lstm_gpu.c — stacked bidirectional LSTM on the card, library and own
 * routes (see lstm_gpu.h). */
#include "kernels/lstm/lstm_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 8
#define OWN_HIDDEN 128   /* the hidden size kernels/lstm/lstm.cu is built for */
#define OWN_KREG 64      /* W_hh columns the own kernel keeps in registers */
#define CL_BLOCKS 8      /* gf_lstm_rec_cluster: blocks a cluster, hidden units 16 a block */
#define CL_THREADS 256
#define CL_MAX_SEQS 32   /* sequences a cluster, at most (a multiple of 8) */
#define CL_SEQS_ALONE 8  /* the fastest alone: 64 blocks at a batch of 32 */
#define CL_SEQS_NARROW 32 /* beside other work: 16 blocks at a batch of 32 */

typedef struct {
    gf_cu_ptr w_ih, w_hh, bias;   /* [G, in], [G, H], b_ih + b_hh [G] */
    int in;                       /* input width of this layer */
} dir_weights;

struct gf_lstm_gpu {
    gf_gpu *gpu;                          /* borrowed */
    gf_blas_gpu *blas;                    /* borrowed */
    int layers, hidden, in0, T, max_batch;
    dir_weights w[MAX_LAYERS][2];
    gf_cu_ptr w_hh_pair[MAX_LAYERS];      /* [2][G][H]: both directions, own route */
    gf_cu_ptr gates;                      /* [2][B][T][G] */
    gf_cu_ptr cell;                       /* [B, H] (library route) */
    gf_cu_ptr h[2];                       /* layer outputs [B, T, 2H], ping-pong */
    gf_route_kind route;                  /* library or own */
    gf_cu_function bias_act, cell_fn, rec, rec_cl;
    size_t rec_smem;                      /* own kernel's dynamic shared memory */
    bool have_cl;                         /* gf_lstm_rec_cluster loaded (cc >= 9.0) */
    bool narrow;                          /* few multiprocessors: work runs beside */
    int cl_force;                         /* sequences a cluster set by hand; -1: none */
    gf_gpu_allocs mem;                    /* every device allocation */
};

static int dalloc(gf_lstm_gpu *s, size_t bytes, gf_cu_ptr *dev)
{
    return gf_gpu_allocs_take(&s->mem, bytes, dev);
}

static int upload(gf_lstm_gpu *s, const float *host, size_t n, gf_cu_ptr *dev)
{
    return gf_gpu_allocs_upload(&s->mem, host, n * sizeof(float), dev);
}

gf_lstm_gpu *gf_lstm_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, int layers, int in0, int hidden,
                             const gf_lstm_gpu_dir (*w)[2], int max_batch, int T)
{
    assert(layers >= 1 && layers <= MAX_LAYERS && hidden >= 1 && max_batch >= 1 && T >= 1);
    gf_lstm_gpu *s = gf_calloc(1, sizeof *s);
    *s = (gf_lstm_gpu){ .gpu = gpu, .blas = blas, .layers = layers, .hidden = hidden,
                        .in0 = in0, .T = T, .max_batch = max_batch, .cl_force = -1 };
    s->mem.gpu = gpu;
    const size_t H = (size_t)hidden, G = 4 * H, B = (size_t)max_batch;
    int rc;
    float *bias = gf_malloc(sizeof(float) * G);
    for (int l = 0; l < layers; l++) {
        rc = dalloc(s, 2 * G * H * sizeof(float), &s->w_hh_pair[l]);
        if (rc)
            goto out_free_bias;
        for (int d = 0; d < 2; d++) {
            dir_weights *dw = &s->w[l][d];
            dw->in = l ? 2 * hidden : in0;
            for (size_t j = 0; j < G; j++)
                bias[j] = w[l][d].b_ih[j] + w[l][d].b_hh[j];
            rc = upload(s, w[l][d].w_ih, G * (size_t)dw->in, &dw->w_ih);
            if (rc)
                goto out_free_bias;
            rc = upload(s, w[l][d].w_hh, G * H, &dw->w_hh);
            if (rc)
                goto out_free_bias;
            rc = upload(s, bias, G, &dw->bias);
            if (rc)
                goto out_free_bias;
            rc = gf_gpu_upload(gpu, s->w_hh_pair[l] + (size_t)d * G * H * sizeof(float),
                               w[l][d].w_hh, G * H * sizeof(float));
            if (rc)
                goto out_free_bias;
        }
    }
    rc = dalloc(s, 2 * B * (size_t)T * G * sizeof(float), &s->gates);
    if (rc)
        goto out_free_bias;
    rc = dalloc(s, B * H * sizeof(float), &s->cell);
    if (rc)
        goto out_free_bias;
    rc = dalloc(s, B * (size_t)T * 2 * H * sizeof(float), &s->h[0]);
    if (rc)
        goto out_free_bias;
    rc = dalloc(s, B * (size_t)T * 2 * H * sizeof(float), &s->h[1]);
    if (rc)
        goto out_free_bias;
    rc = gf_gpu_function(gpu, "glue", "gf_bias_leaky_relu", &s->bias_act, NULL, NULL);
    if (rc)
        goto out_free_bias;
    rc = gf_gpu_function(gpu, "glue", "gf_lstm_cell", &s->cell_fn, NULL, NULL);
    if (rc)
        goto out_free_bias;
    rc = gf_gpu_sync(gpu);   /* the host bias buffer is freed next */
out_free_bias:
    free(bias);
    if (rc)
        gf_lstm_gpu_destroy(&s);
    return s;
}

void gf_lstm_gpu_destroy(gf_lstm_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_lstm_gpu *s = *self_p;
    gf_gpu_allocs_release(&s->mem);
    free(s);
    *self_p = NULL;
}

gf_route_kind gf_lstm_gpu_route(const gf_lstm_gpu *self)
{
    return self->route;
}

/* gf_lstm_rec_cluster's dynamic shared memory for `seqs` sequences a
 * cluster: two hidden buffers [seqs][132] and the gates [seqs][80]. */
static size_t cluster_smem(int seqs)
{
    return ((size_t)2 * seqs * (OWN_HIDDEN + 4) + (size_t)seqs * 80) * sizeof(float);
}

/* gf_lstm_rec_v1's dynamic shared memory: the W_hh columns it does not keep
 * in registers, h and the gates. */
static int rec_smem(void)
{
    return (int)(((size_t)(OWN_HIDDEN - OWN_KREG) * 4 * OWN_HIDDEN + OWN_HIDDEN + 4 * OWN_HIDDEN)
                 * sizeof(float));
}

int gf_lstm_gpu_plan(int hidden, int smem_optin, const char *area, char *why, size_t len)
{
    if (hidden != OWN_HIDDEN) {
        snprintf(why, len, "the own kernel is built for hidden size %d, not %d", OWN_HIDDEN,
                 hidden);
        return GF_EUNSUP;
    }
    GF_TRY(gf_plan_refuse_area(area, "lstm", "lstm.stack", why, len));
    return gf_plan_refuse_smem(rec_smem(), smem_optin, "gf_lstm_rec_v1", why, len);
}

int gf_lstm_gpu_set_route(gf_lstm_gpu *s, gf_route_kind kind, const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        s->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    char why[200];
    if (gf_lstm_gpu_plan(s->hidden, 0, NULL, why, sizeof why) != 0) {
        GF_WARN("lstm.stack: %s: refused", why);   /* shared memory: gf_gpu_own_kernel */
        return GF_EUNSUP;
    }
    size_t smem = (size_t)rec_smem();
    const char *sha = NULL;
    int rc = gf_gpu_own_kernel(s->gpu, "lstm.stack", "lstm", "gf_lstm_rec_v1", (int)smem, &s->rec,
                               &sha);
    if (rc)
        return rc;
    s->rec_smem = smem;
    s->have_cl = false;
    s->cl_force = -1;
    if (gf_gpu_can_launch_clusters(s->gpu)) {
        rc = gf_gpu_own_kernel_extra(s->gpu, 90, "lstm.stack", "lstm", "gf_lstm_rec_cluster",
                                     (int)cluster_smem(CL_MAX_SEQS), &s->rec_cl, NULL,
                                     &s->have_cl);
        if (rc)
            return rc;
        /* a card partition (MIG) or a driver may not place a cluster of 8 */
        if (s->have_cl && gf_gpu_max_active_clusters(s->gpu, s->rec_cl, CL_THREADS,
                                                     (unsigned)cluster_smem(CL_MAX_SEQS),
                                                     CL_BLOCKS) < 1) {
            GF_WARN("lstm.stack: this card cannot place a cluster of %d blocks: the "
                    "cluster kernel is not used", CL_BLOCKS);
            s->have_cl = false;
        }
    }
    s->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

void gf_lstm_gpu_set_narrow(gf_lstm_gpu *s, bool narrow)
{
    s->narrow = narrow;
}

int gf_lstm_gpu_set_seqs_per_cluster(gf_lstm_gpu *s, int seqs)
{
    if (seqs == 0 || (s->have_cl && seqs % 8 == 0 && seqs >= 8 && seqs <= CL_MAX_SEQS)) {
        s->cl_force = seqs;
        return 0;
    }
    return s->have_cl ? GF_EINVAL : GF_EUNSUP;
}

int gf_lstm_gpu_seqs_per_cluster(const gf_lstm_gpu *s)
{
    if (s->route != GF_ROUTE_OWN || !s->have_cl)
        return 0;
    if (s->cl_force >= 0)
        return s->cl_force;
    return s->narrow ? CL_SEQS_NARROW : CL_SEQS_ALONE;
}

int gf_lstm_gpu_poison(gf_lstm_gpu *s)
{
    size_t words = (size_t)s->max_batch * s->T * 2 * s->hidden;
    GF_TRY(gf_gpu_fill32(s->gpu, s->h[0], 0x7fc00000u, words));
    return gf_gpu_fill32(s->gpu, s->h[1], 0x7fc00000u, words);
}


static int launch1d(gf_lstm_gpu *s, gf_cu_function f, long n, void **params)
{
    return gf_gpu_launch1d(s->gpu, f, n, params);
}

/* gates_d [B*T, G] = x · W_ihᵀ + (b_ih + b_hh) for one direction. */
static int project(gf_lstm_gpu *s, gf_math math, const dir_weights *dw, gf_cu_ptr x, int ldx,
                   int B, gf_cu_ptr gates_d)
{
    int rows = B * s->T, g = 4 * s->hidden;
    GF_TRY(gf_blas_gpu_gemm(s->blas, math, true, rows, g, dw->in, 1.0f, x, ldx, dw->w_ih, dw->in,
                         0.0f, gates_d, g));
    float one = 1.0f;
    gf_cu_ptr bias = dw->bias;
    void *p[] = { &gates_d, &bias, &rows, &g, &one };
    return launch1d(s, s->bias_act, (long)rows * g, p);
}

static int recur_library(gf_lstm_gpu *s, gf_math math, const dir_weights *dw, int d, int B,
                         gf_cu_ptr gates_d, gf_cu_ptr out)
{
    const int T = s->T, H = s->hidden, G = 4 * H;
    const size_t f = sizeof(float);
    GF_TRY(gf_gpu_fill32(s->gpu, s->cell, 0, (size_t)B * H));
    long gstride = (long)T * G, hstride = (long)T * 2 * H;
    int h = H;
    for (int step = 0; step < T; step++) {
        int t = d ? T - 1 - step : step;
        gf_cu_ptr gt = gates_d + (size_t)t * G * f;
        if (step > 0) {
            int tp = d ? t + 1 : t - 1;
            gf_cu_ptr hprev = out + ((size_t)tp * 2 * H + (size_t)d * H) * f;
            GF_TRY(gf_blas_gpu_gemm(s->blas, math, true, B, G, H, 1.0f, hprev, T * 2 * H, dw->w_hh,
                                 H, 1.0f, gt, T * G));
        }
        gf_cu_ptr ho = out + ((size_t)t * 2 * H + (size_t)d * H) * f;
        gf_cu_ptr cell = s->cell;
        void *p[] = { &gt, &gstride, &cell, &B, &h, &ho, &hstride };
        GF_TRY(launch1d(s, s->cell_fn, (long)B * H, p));
    }
    return 0;
}

int gf_lstm_gpu_run(gf_lstm_gpu *s, gf_math math, gf_cu_ptr x, int B, gf_cu_ptr *out)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("lstm.stack (gpu): batch of %d sequences, capacity %d", B, s->max_batch);
        return GF_EINVAL;
    }
    const size_t half = (size_t)B * s->T * 4 * s->hidden * sizeof(float);
    gf_cu_ptr in = x;
    int ldx = s->in0;
    for (int l = 0; l < s->layers; l++) {
        gf_cu_ptr o = s->h[l % 2];
        for (int d = 0; d < 2; d++)
            GF_TRY(project(s, math, &s->w[l][d], in, ldx, B, s->gates + (size_t)d * half));
        const int sb = gf_lstm_gpu_seqs_per_cluster(s);
        if (sb && math == GF_MATH_TF32) {
            gf_cu_ptr gates = s->gates, w = s->w_hh_pair[l];
            int t = s->T;
            int seqs = sb;
            void *p[] = { &gates, &w, &o, &B, &t, &seqs };
            GF_TRY(gf_gpu_launch_cluster(s->gpu, s->rec_cl, CL_BLOCKS,
                                         (unsigned)((B + sb - 1) / sb), 2, CL_THREADS,
                                         (unsigned)cluster_smem(sb), CL_BLOCKS, p));
        } else if (s->route == GF_ROUTE_OWN) {
            gf_cu_ptr gates = s->gates, w = s->w_hh_pair[l];
            int t = s->T;
            void *p[] = { &gates, &w, &o, &B, &t };
            GF_TRY(gf_gpu_launch(s->gpu, s->rec, (unsigned)B, 2, 1, 4 * OWN_HIDDEN, 1, 1,
                                 (unsigned)s->rec_smem, p));
        } else {
            for (int d = 0; d < 2; d++)
                GF_TRY(recur_library(s, math, &s->w[l][d], d, B, s->gates + (size_t)d * half, o));
        }
        in = o;
        ldx = 2 * s->hidden;
    }
    *out = in;
    return 0;
}

void gf_lstm_weights_random(gf_lstm_weights *w, int layers, int in0, int hidden,
                            uint64_t *seed)
{
    assert(layers >= 1 && layers <= GF_LSTM_MAX_LAYERS);
    const size_t G = 4 * (size_t)hidden;
    const float a = 1.0f / sqrtf((float)hidden);
    memset(w, 0, sizeof *w);
    w->layers = layers;
    for (int l = 0; l < layers; l++)
        for (int d = 0; d < 2; d++) {
            size_t n[4] = { G * (size_t)(l ? 2 * hidden : in0), G * (size_t)hidden, G, G };
            for (int k = 0; k < 4; k++) {
                w->buf[l][d][k] = gf_malloc(sizeof(float) * n[k]);
                for (size_t i = 0; i < n[k]; i++)
                    w->buf[l][d][k][i] = gf_rand_sym(seed, a);
            }
            w->dirs[l][d] = (gf_lstm_gpu_dir){ w->buf[l][d][0], w->buf[l][d][1],
                                               w->buf[l][d][2], w->buf[l][d][3] };
        }
}

void gf_lstm_weights_free(gf_lstm_weights *w)
{
    for (int l = 0; l < w->layers; l++)
        for (int d = 0; d < 2; d++)
            for (int k = 0; k < 4; k++)
                free(w->buf[l][d][k]);
    memset(w, 0, sizeof *w);
}
