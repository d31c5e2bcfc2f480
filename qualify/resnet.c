/* resnet.c — the ResNet trunk's candidates for `gpuflock qualify` (see
 * qualify.c): the ResNet convolution (kernels/resnet/resnet.cu, and
 * resnet32.cu for math mode fp32) for each of the trunk's layers, with the
 * pins of the variant the own route runs for its shape, each run on both
 * routes against float64 at sampled outputs. */
#include "qualify/areas.h"
#include "kernels/resnet/resnet_gpu.h"
#include "common/error.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The pins of a variant (the configuration its records name). */
static void pin_config(resnet_config *rc, const gf_conv_own_kernel *kern)
{
    snprintf(rc->tile_m, sizeof rc->tile_m, "%d", kern->tile_m);
    snprintf(rc->tile_n, sizeof rc->tile_n, "%d", kern->tile_n);
    snprintf(rc->tile_k, sizeof rc->tile_k, "%d", kern->tile_k);
    snprintf(rc->stages, sizeof rc->stages, "%d", kern->stages);
    if (kern->tile_rows)
        snprintf(rc->halo, sizeof rc->halo, "%dx%d", kern->tile_rows, kern->tile_cols);
    else
        snprintf(rc->halo, sizeof rc->halo, "none");
    const gf_pin pins[RESNET_PINS] = {
        { "tile_m", rc->tile_m }, { "tile_n", rc->tile_n }, { "tile_k", rc->tile_k },
        { "stages", rc->stages }, { "warps", "8" },
        { "implicit_gemm", kern->version == 6 ? "0" : "1" },
        { "halo", rc->halo },
    };
    memcpy(rc->pins, pins, sizeof pins);
}

static void add_conv(gfq_trunk *t, int cc, const char *name, int cin, int cout, int k,
                     int stride, int h, int w, int residual, int relu)
{
    assert(t->n < GF_ARRAY_LEN(t->layers));
    conv_layer *c = &t->layers[t->n++];
    snprintf(c->boundary, sizeof c->boundary, "%s", name);
    c->shape = (gf_conv_shape){ cin, cout, k, stride };
    c->h = h;
    c->w = w;
    c->residual = residual;
    c->relu = relu;
    pin_config(&c->config, gf_conv_gpu_own_kernel(c->shape, cc, GF_MATH_TF32));
    const gf_conv_own_kernel *k32 = gf_conv_gpu_own_kernel(c->shape, cc, GF_MATH_FP32);
    c->has32 = k32 && k32->f3;
    if (c->has32)
        pin_config(&c->config32, k32);
}

/* The ResNet34 trunk's convolutions for a card of capability cc into *t. */
void gfq_trunk_build(int cc, gfq_trunk *t)
{
    t->n = 0;
    static const int blocks[4] = { 3, 4, 6, 3 }, widths[4] = { 32, 64, 128, 256 };
    char name[48];
    int h = 80, w = 998, cin = 32;
    add_conv(t, cc, "resnet.conv1", 1, 32, 3, 1, h, w, 0, 1);
    for (int l = 0; l < 4; l++)
        for (int b = 0; b < blocks[l]; b++) {
            int stride = (l > 0 && b == 0) ? 2 : 1, width = widths[l];
            int ho = (h + 2 - 3) / stride + 1, wo = (w + 2 - 3) / stride + 1;
            snprintf(name, sizeof name, "resnet.layer%d.%d.conv1", l + 1, b);
            add_conv(t, cc, name, cin, width, 3, stride, h, w, 0, 1);
            snprintf(name, sizeof name, "resnet.layer%d.%d.conv2", l + 1, b);
            add_conv(t, cc, name, width, width, 3, 1, ho, wo, 1, 1);
            if (stride != 1 || cin != width) {
                snprintf(name, sizeof name, "resnet.layer%d.%d.shortcut", l + 1, b);
                add_conv(t, cc, name, cin, width, 1, stride, h, w, 0, 0);
            }
            h = ho;
            w = wo;
            cin = width;
        }
}

static const conv_layer *conv_layer_find(const gfq_trunk *t, const char *boundary)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->layers[i].boundary, boundary) == 0)
            return &t->layers[i];
    return NULL;
}

/* ---- the ResNet convolution candidates ------------------------------------ */

#define CONV_SAMPLES 4096   /* output elements checked against float64 per tuple */

static double conv_ref_at(const conv_layer *L, const float *x, const float *w, const float *bias,
                          const float *res, int B, size_t o)
{
    const gf_conv_shape *sh = &L->shape;
    int pad = sh->k / 2;
    int ho = (L->h + 2 * pad - sh->k) / sh->stride + 1, wo = (L->w + 2 * pad - sh->k) / sh->stride + 1;
    size_t hw = (size_t)ho * wo;
    size_t b = o / ((size_t)sh->cout * hw), rem = o % ((size_t)sh->cout * hw);
    int m = (int)(rem / hw), q = (int)(rem % hw), oy = q / wo, ox = q % wo;
    double acc = bias[m];
    (void)B;
    for (int c = 0; c < sh->cin; c++)
        for (int ky = 0; ky < sh->k; ky++)
            for (int kx = 0; kx < sh->k; kx++) {
                int iy = oy * sh->stride - pad + ky, ix = ox * sh->stride - pad + kx;
                if (iy < 0 || iy >= L->h || ix < 0 || ix >= L->w)
                    continue;
                acc += (double)w[((size_t)m * sh->cin + c) * sh->k * sh->k + ky * sh->k + kx] *
                       x[(((size_t)b * sh->cin + c) * L->h + iy) * L->w + ix];
            }
    if (res)
        acc += res[o];
    return L->relu && acc < 0 ? 0.0 : acc;
}

typedef struct {
    gf_conv_gpu *c;
    gf_math math;
    int B;
    const conv_layer *L;
    gf_cu_ptr x, out, res, col;
} conv_subject;

static int conv_set_route(void *arg, gf_route_kind kind)
{
    conv_subject *t = arg;
    return gf_conv_gpu_set_route(t->c, kind, t->math, NULL);
}

static int conv_run(void *arg, gf_devstats *stats)
{
    conv_subject *t = arg;
    (void)stats;   /* timed by the A/B driver (gfq_ab_subject.gpu) */
    return gf_conv_gpu_run(t->c, t->math, t->B, t->x, t->L->h, t->L->w, t->out, t->res,
                           t->L->relu, t->col);
}

int gfq_conv(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
             gf_qualify_result *res)
{
    gfq_trunk trunk;   /* the layers of this card's trunk: their geometry and index */
    gfq_trunk_build(gf_gpu_cc(ctx->gpu), &trunk);
    const conv_layer *L = conv_layer_find(&trunk, cand->boundary);
    if (!L)
        return GF_EINVAL;
    const gf_conv_shape *sh = &L->shape;
    /* Each area's module runs one math mode: tf32 the resnet area's kernels,
     * fp32 the resnet32 area's (and resnet.conv1's direct kernel, of resnet). */
    const gf_conv_own_kernel *kern = gf_conv_gpu_own_kernel(*sh, gf_gpu_cc(ctx->gpu), math);
    if (!kern || strcmp(gf_conv_own_module(kern), cand->area) != 0)
        return GF_EUNSUP;
    uint64_t seed = ctx->seed ^ ((uint64_t)B << 32) ^ (uint64_t)math ^ (uint64_t)(L - trunk.layers);
    uint64_t rng = seed;
    int pad = sh->k / 2;
    int ho = (L->h + 2 * pad - sh->k) / sh->stride + 1, wo = (L->w + 2 * pad - sh->k) / sh->stride + 1;
    size_t nx = (size_t)B * sh->cin * L->h * L->w, no = (size_t)B * sh->cout * ho * wo;
    size_t nw = (size_t)sh->cout * sh->cin * sh->k * sh->k;
    float *x = gf_malloc(sizeof(float) * nx), *w = gf_malloc(sizeof(float) * nw);
    float *bias = gf_malloc(sizeof(float) * sh->cout), *r = NULL, *got = gf_malloc(sizeof(float) * no);
    float wk = 1.0f / sqrtf((float)(sh->cin * sh->k * sh->k));
    for (size_t i = 0; i < nx; i++)
        x[i] = gf_rand_sym(&rng, 1.0f);
    for (size_t i = 0; i < nw; i++)
        w[i] = gf_rand_sym(&rng, wk);
    for (int i = 0; i < sh->cout; i++)
        bias[i] = gf_rand_sym(&rng, 0.1f);
    if (L->residual) {
        r = gf_malloc(sizeof(float) * no);
        for (size_t i = 0; i < no; i++)
            r[i] = gf_rand_sym(&rng, 0.5f);
    }
    gf_cu_ptr dx = 0, dout = 0, dres = 0, dcol = 0;
    const char *sha = NULL;
    gf_conv_gpu *c = gf_conv_gpu_new(ctx->gpu, ctx->blas, L->boundary, *sh, w, bias);
    int rc = c ? 0 : GF_EDEVICE;
    if (rc)
        goto out_free;
    rc = gf_conv_gpu_set_route(c, GF_ROUTE_OWN, math, &sha);
    if (rc)
        goto out_free;
    rc = gfq_check_module(L->boundary, sha, res);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * nx, &dx);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * no, &dout);
    if (rc)
        goto out_free;
    rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * gf_conv_gpu_col_floats(c, B, L->h, L->w), &dcol);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(ctx->gpu, dx, x, sizeof(float) * nx);
    if (rc)
        goto out_free;
    if (r) {
        rc = gf_gpu_alloc(ctx->gpu, sizeof(float) * no, &dres);
        if (rc)
            goto out_free;
        rc = gf_gpu_upload(ctx->gpu, dres, r, sizeof(float) * no);
        if (rc)
            goto out_free;
    }
    rc = gf_gpu_fill32(ctx->gpu, dout, 0x7fc00000u, no);   /* NaN poison */
    if (rc)
        goto out_free;
    rc = gf_conv_gpu_run(c, math, B, dx, L->h, L->w, dout, dres, L->relu, dcol);
    if (rc)
        goto out_free;
    rc = gf_gpu_download(ctx->gpu, got, dout, sizeof(float) * no);
    if (rc)
        goto out_free;
    gfq_acc_errors e = gfq_acc_layer(math);
    for (int k = 0; k < CONV_SAMPLES; k++) {
        size_t o = (size_t)(gf_splitmix64(&rng) % no);
        gfq_acc_add(&e, got[o], conv_ref_at(L, x, w, bias, r, B, o));
    }
    rc = gfq_acc_record(ctx, cand, B, math, res, seed, &e, gfq_count_unwritten(got, no), no,
                        "sampled outputs", "outputs_written_checked", (int64_t)no);
    if (rc)
        goto out_free;
    if (res->accurate) {
        conv_subject t = { c, math, B, L, dx, dout, dres, dcol };
        gfq_ab_subject sub = { conv_set_route, conv_run, &t, ctx->gpu, cand->boundary };
        rc = gfq_measure_speed(ctx, cand, B, math, res, &sub, &rng);
    }
out_free:
    if (dx) gf_gpu_free(ctx->gpu, dx);
    if (dout) gf_gpu_free(ctx->gpu, dout);
    if (dres) gf_gpu_free(ctx->gpu, dres);
    if (dcol) gf_gpu_free(ctx->gpu, dcol);
    gf_conv_gpu_destroy(&c);
    free(x), free(w), free(bias), free(r), free(got);
    return rc;
}
