/* conv_gpu.c — a convolution layer on the card, library and own routes (see
 * conv_gpu.h). */
#include "kernels/resnet/resnet_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_conv_gpu {
    gf_gpu *gpu;                  /* borrowed */
    gf_blas_gpu *blas;            /* borrowed */
    char boundary[48];            /* planner name */
    gf_conv_shape shape;
    int pad;                      /* k / 2 */
    gf_cu_ptr w, b;               /* folded weights and bias on the card */
    gf_cu_ptr wp;                 /* own kernel v3-v5: (cout, tap, cin) in tf32, then the
                                     low parts (pack_tap_major); 0 for v1 */
    gf_route_kind route;
    gf_cu_function im2col, epilogue, own;   /* own: loaded when chosen */
    const gf_conv_own_kernel *own_kernel;   /* the variant the own route runs */
};

/* The own kernel's variants (kernels/resnet/resnet.cu). v4 runs the 3x3 stride-1
 * layers from a halo of input loaded once per channel slab (its 64-row block
 * also serves Cout 128 and 256, where it beat v3's 128 x 128 block:
 * docs/gpu.md); on the H200 (cc 9.0) the wgmma kernels take those of 64 to
 * 256 channels: v5 (8 x 30 tiles) stage 2's 40 x 499 plane, v5w (2 x 126
 * tiles, which the 20 x 250 and 10 x 125 planes fill almost exactly) stages
 * 3 and 4, where they beat v4 by 25 %, 16 % and 21 %; stage 1 (32 channels)
 * stays on v4s, whose halo is channel-major (bench/gpu/bench_gpu_conv). The table picks by Cout, which
 * names the trunk's stage and so its plane.
 * v3 runs the other layers of whole 16-channel K tiles (the strided 3x3 and
 * the 1x1 shortcuts), with packed weights and a block that follows Cout.
 * resnet.conv1 (one input channel) runs the direct kernel, float32 FMAs
 * (version 6); v1 what is left (other channel counts that are not a
 * multiple of 16). In math mode fp32 (kernels/resnet/resnet32.cu, the resnet32
 * area) the 3x3 stride-1 layers run v4s and v4 in 3xTF32 (f3_v4s, f3_v4),
 * the strided layers and the shortcuts v3 in 3xTF32 (f3_v3); resnet.conv1
 * the direct kernel, whose float32 FMAs serve either mode (resnet module). */
enum { K_V1, K_V3, K_V3W, K_V4S, K_V4, K_V5, K_CIN1, K_V5W, K_F3S, K_F3, K_F3V3, K_COUNT };
static const gf_conv_own_kernel own_kernels[K_COUNT] = {
    [K_V1] = { 1, "gf_conv1_tf32_v1", "gf_conv3_tf32_v1", 64, 128, 16, 1, false, 0, 0, 0, false,
               false },
    [K_V3] = { 3, "gf_conv1_tf32_v3", "gf_conv3_tf32_v3", 64, 128, 16, 2, true, 0, 0, 0, false,
               false },
    [K_V3W] = { 3, "gf_conv1_tf32_v3w", "gf_conv3_tf32_v3w", 128, 128, 16, 2, true, 0, 0, 0,
                false, false },
    [K_V4S] = { 4, NULL, "gf_conv3_tf32_v4s", 32, 16 * 32, 8, 2, true, 16, 32, 0, true, false },
    [K_V4] = { 4, NULL, "gf_conv3_tf32_v4", 64, 4 * 32, 16, 2, true, 4, 32, 0, false, false },
    [K_V5] = { 5, NULL, "gf_conv3_tf32_v5", 64, 8 * 30, 8, 3, true, 8, 30, 90, false, false },
    [K_CIN1] = { 6, NULL, "gf_conv3_cin1", 32, 16 * 256, 1, 1, false, 16, 256, 0, false, false },
    [K_V5W] = { 5, NULL, "gf_conv3_tf32_v5w", 64, 2 * 126, 8, 3, true, 2, 126, 90, false, false },
    [K_F3S] = { 4, NULL, "gf_conv3_f3_v4s", 32, 16 * 16, 8, 2, true, 16, 16, 0, true, true },
    [K_F3] = { 4, NULL, "gf_conv3_f3_v4", 64, 4 * 32, 8, 2, true, 4, 32, 0, false, true },
    [K_F3V3] = { 3, "gf_conv1_f3_v3", "gf_conv3_f3_v3", 64, 128, 16, 2, true, 0, 0, 0, false,
                 true },
};

const gf_conv_own_kernel *gf_conv_gpu_own_kernel(gf_conv_shape s, int cc, gf_math math)
{
    if (s.cin == 1 && s.cout <= 32 && s.k == 3 && s.stride == 1)
        return &own_kernels[K_CIN1];   /* float32 FMAs: either math mode */
    if (math == GF_MATH_FP32) {        /* 3xTF32 (the resnet32 module) */
        if (s.k == 3 && s.stride == 1 && s.cin % 8 == 0)
            return &own_kernels[s.cout <= 32 ? K_F3S : K_F3];
        return s.cin % 16 == 0 ? &own_kernels[K_F3V3] : NULL;
    }
    if (s.cin % 16 != 0)
        return &own_kernels[K_V1];
    if (s.k == 3 && s.stride == 1) {
        if (cc == 90 && s.cout == 64)
            return &own_kernels[K_V5];
        if (cc == 90 && (s.cout == 128 || s.cout == 256))
            return &own_kernels[K_V5W];
        return &own_kernels[s.cout <= 32 ? K_V4S : K_V4];
    }
    return &own_kernels[s.cout <= 64 ? K_V3 : K_V3W];
}

/* Must match the kernels' layouts. v4: two stages, each a halo of
 * (rows + 2) x (cols + 2) positions of tile_k + 4 words (v4c: tile_k
 * channels of (rows + 2) x (cols + 4) words) and the weights, tile_m rows
 * of 9 * tile_k + 4 words. v5: three stages, each tile_k / 4
 * planes of NH = (rows + 2) * (cols + 2) + 8 positions at 16 bytes and the
 * weights, 9 * tile_k / 4 planes of tile_m channels at 16 bytes. */
int gf_conv_own_smem(const gf_conv_own_kernel *k)
{
    if (k->version == 6)   /* static shared memory only */
        return 0;
    if (k->version == 5) {
        int nh = (k->tile_rows + 2) * (k->tile_cols + 2) + 8, quads = k->tile_k / 4;
        return k->stages * 16 * (quads * nh + 9 * quads * k->tile_m);
    }
    if (!k->tile_rows)
        return 0;
    int weights = (k->f3 ? 2 : 1) * k->tile_m * (9 * k->tile_k + 4);   /* f3: high, low */
    if (k->channel_major)
        return 2 * 4 * (k->tile_k * (k->tile_rows + 2) * (k->tile_cols + 4) + weights);
    return 2 * 4 * ((k->tile_rows + 2) * (k->tile_cols + 2) * (k->tile_k + 4) + weights);
}


/* w (cout, cin, k, k) -> (cout, k*k, cin) rounded to tf32, for v3, v4 and
 * v5, followed by the same layout of what that rounding left out, itself
 * rounded to tf32: the low parts the fp32 (3xTF32) variants add. */
static float *pack_tap_major(gf_conv_shape s, const float *w)
{
    int taps = s.k * s.k;
    size_t n = (size_t)s.cout * s.cin * taps;
    float *p = gf_malloc(sizeof(float) * 2 * n);
    for (int o = 0; o < s.cout; o++)
        for (int c = 0; c < s.cin; c++)
            for (int t = 0; t < taps; t++) {
                size_t i = ((size_t)o * taps + t) * s.cin + c;
                float v = w[((size_t)o * s.cin + c) * taps + t], hi = gf_round_tf32(v);
                p[i] = hi;
                p[n + i] = gf_round_tf32(v - hi);
            }
    return p;
}

/* The packed weights of w (pack_tap_major) to the card, at c->wp, for the
 * variants that read them. */
static int upload_packed(gf_conv_gpu *c, const float *w, size_t kk)
{
    float *p = pack_tap_major(c->shape, w);
    int rc = gf_gpu_alloc(c->gpu, sizeof(float) * 2 * c->shape.cout * kk, &c->wp);
    if (rc)
        goto out_free;
    rc = gf_gpu_upload(c->gpu, c->wp, p, sizeof(float) * 2 * c->shape.cout * kk);
    if (rc)
        goto out_free;
    rc = gf_gpu_sync(c->gpu);
out_free:
    free(p);
    return rc;
}

gf_conv_gpu *gf_conv_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *boundary,
                             gf_conv_shape shape, const float *w, const float *bias)
{
    gf_conv_gpu *c = gf_calloc(1, sizeof *c);
    c->gpu = gpu;
    c->blas = blas;
    c->shape = shape;
    c->pad = shape.k / 2;
    snprintf(c->boundary, sizeof c->boundary, "%s", boundary);
    size_t kk = (size_t)shape.cin * shape.k * shape.k;
    const gf_conv_own_kernel *f3 = gf_conv_gpu_own_kernel(shape, gf_gpu_cc(gpu), GF_MATH_FP32);
    int rc = gf_gpu_alloc(gpu, sizeof(float) * shape.cout * kk, &c->w);
    if (rc)
        goto fail;
    rc = gf_gpu_upload(gpu, c->w, w, sizeof(float) * shape.cout * kk);
    if (rc)
        goto fail;
    rc = gf_gpu_alloc(gpu, sizeof(float) * shape.cout, &c->b);
    if (rc)
        goto fail;
    rc = gf_gpu_upload(gpu, c->b, bias, sizeof(float) * shape.cout);
    if (rc)
        goto fail;
    if (gf_conv_gpu_own_kernel(shape, gf_gpu_cc(gpu), GF_MATH_TF32)->packed ||
        (f3 && f3->packed)) {
        rc = upload_packed(c, w, kk);
        if (rc)
            goto fail;
    }
    rc = gf_gpu_function(gpu, "glue", "gf_im2col2d", &c->im2col, NULL, NULL);
    if (rc)
        goto fail;
    rc = gf_gpu_function(gpu, "glue", "gf_bias_residual_relu", &c->epilogue, NULL, NULL);
    if (rc)
        goto fail;
    rc = gf_gpu_sync(gpu);   /* the caller may free its host copies next */
    if (rc)
        goto fail;
    return c;
fail:
    gf_conv_gpu_destroy(&c);
    return NULL;
}

void gf_conv_gpu_destroy(gf_conv_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_conv_gpu *c = *self_p;
    if (c->w)
        gf_gpu_free(c->gpu, c->w);
    if (c->b)
        gf_gpu_free(c->gpu, c->b);
    if (c->wp)
        gf_gpu_free(c->gpu, c->wp);
    free(c);
    *self_p = NULL;
}

const char *gf_conv_gpu_boundary(const gf_conv_gpu *self) { return self->boundary; }
gf_conv_shape gf_conv_gpu_shape(const gf_conv_gpu *self) { return self->shape; }
gf_route_kind gf_conv_gpu_route(const gf_conv_gpu *self) { return self->route; }

int gf_conv_gpu_out(const gf_conv_gpu *self, int n)
{
    return (n + 2 * self->pad - self->shape.k) / self->shape.stride + 1;
}

size_t gf_conv_gpu_col_floats(const gf_conv_gpu *self, int B, int h, int w)
{
    return (size_t)B * gf_conv_gpu_out(self, h) * gf_conv_gpu_out(self, w) * self->shape.cin *
           self->shape.k * self->shape.k;
}

/* Whether variant kern has an entry for a layer of shape s on a card of
 * compute capability cc: 0, or GF_EUNSUP with the reason in why. */
static int variant_fits(const gf_conv_own_kernel *kern, gf_conv_shape s, int cc, char *why,
                        size_t len)
{
    if (kern->only_cc && kern->only_cc != cc) {
        snprintf(why, len, "%s runs on cc %d.%d only", kern->name3, kern->only_cc / 10,
                 kern->only_cc % 10);
        return GF_EUNSUP;
    }
    if ((s.k == 3 ? kern->name3 : kern->name1) == NULL ||
        (kern->tile_rows && s.stride != 1) ||   /* the halo variants: stride 1 only */
        (kern->version == 6 && (s.cin != 1 || s.cout > 32))) {
        snprintf(why, len, "the own kernel's v%d has no entry for this shape", kern->version);
        return GF_EUNSUP;
    }
    return 0;
}

int gf_conv_gpu_plan(gf_conv_shape s, gf_math math, int cc, int smem_optin, const char *area,
                     char *why, size_t len)
{
    if (cc < 80) {
        snprintf(why, len, "the own kernel needs cc >= 8.0 (tf32 mma), this card is %d.%d",
                 cc / 10, cc % 10);
        return GF_EUNSUP;
    }
    if (s.k != 3 && s.k != 1) {
        snprintf(why, len, "the own kernel has no %dx%d variant", s.k, s.k);
        return GF_EUNSUP;
    }
    const gf_conv_own_kernel *kern = gf_conv_gpu_own_kernel(s, cc, math);
    if (!kern) {
        snprintf(why, len, "the own kernel has no %s variant for this shape (%dx%d, stride %d)",
                 gf_math_name(math), s.k, s.k, s.stride);
        return GF_EUNSUP;
    }
    GF_TRY(variant_fits(kern, s, cc, why, len));
    GF_TRY(gf_plan_refuse_area(area, gf_conv_own_module(kern), math == GF_MATH_FP32
                               ? "this layer in fp32" : "this layer in tf32", why, len));
    return gf_plan_refuse_smem(gf_conv_own_smem(kern), smem_optin,
                               s.k == 3 ? kern->name3 : kern->name1, why, len);
}

int gf_conv_gpu_set_route(gf_conv_gpu *c, gf_route_kind kind, gf_math math,
                          const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        c->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    char why[200];
    if (gf_conv_gpu_plan(c->shape, math, gf_gpu_cc(c->gpu), 0, NULL, why, sizeof why) != 0) {
        GF_WARN("%s: %s: refused", c->boundary, why);   /* shared memory: gf_gpu_own_kernel */
        return GF_EUNSUP;
    }
    return gf_conv_gpu_set_own_variant(c, gf_conv_gpu_own_kernel(c->shape, gf_gpu_cc(c->gpu), math),
                                       module_sha256);
}

const gf_conv_own_kernel *gf_conv_own_kernels(size_t *count)
{
    *count = GF_ARRAY_LEN(own_kernels);
    return own_kernels;
}

int gf_conv_gpu_set_own_variant(gf_conv_gpu *c, const gf_conv_own_kernel *kern,
                                const char **module_sha256)
{
    char why[200];
    int rc = variant_fits(kern, c->shape, gf_gpu_cc(c->gpu), why, sizeof why);
    if (rc == 0 && kern->packed && !c->wp) {
        snprintf(why, sizeof why, "the own kernel's v%d reads packed weights, which this layer "
                 "did not upload", kern->version);
        rc = GF_EUNSUP;
    }
    if (rc) {
        GF_WARN("%s: %s: refused", c->boundary, why);
        return rc;
    }
    const char *sha = NULL;
    rc = gf_gpu_own_kernel(c->gpu, c->boundary, gf_conv_own_module(kern),
                               c->shape.k == 3 ? kern->name3 : kern->name1,
                               gf_conv_own_smem(kern), &c->own, &sha);
    if (rc)
        return rc;
    c->own_kernel = kern;
    c->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

int gf_conv_gpu_run(gf_conv_gpu *c, gf_math math, int B, gf_cu_ptr x, int h, int w,
                    gf_cu_ptr out, gf_cu_ptr residual, int relu, gf_cu_ptr col)
{
    int ho = gf_conv_gpu_out(c, h), wo = gf_conv_gpu_out(c, w);
    int cin = c->shape.cin, cout = c->shape.cout, k = c->shape.k, stride = c->shape.stride;
    int pad = c->pad;
    long kk = (long)cin * k * k, hw = (long)ho * wo;
    gf_cu_ptr wt = c->w, bias = c->b;
    if (c->route == GF_ROUTE_OWN) {
        gf_cu_ptr wk = c->wp ? c->wp : c->w;
        void *p[] = { &x, &wk, &bias, &residual, &out, &B, &cin, &h, &w, &cout, &stride, &pad,
                      &ho, &wo, &relu };
        const gf_conv_own_kernel *kern = c->own_kernel;
        unsigned gy = (unsigned)((cout + kern->tile_m - 1) / kern->tile_m);
        if (kern->tile_rows) {   /* v4, v5: tiles of the output plane x Cout x windows */
            unsigned gx = (unsigned)(((wo + kern->tile_cols - 1) / kern->tile_cols) *
                                     ((ho + kern->tile_rows - 1) / kern->tile_rows));
            return gf_gpu_launch(c->gpu, c->own, gx, gy, (unsigned)B, 256, 1, 1,
                                 (unsigned)gf_conv_own_smem(kern), p);
        }
        unsigned gx = (unsigned)(((long)B * hw + kern->tile_n - 1) / kern->tile_n);
        return gf_gpu_launch(c->gpu, c->own, gx, gy, 1, 256, 1, 1, 0, p);
    }
    long n = (long)B * hw * kk;
    void *p_im[] = { &x, &B, &cin, &h, &w, &k, &stride, &pad, &ho, &wo, &col };
    GF_TRY(gf_gpu_launch(c->gpu, c->im2col, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0,
                         p_im));
    GF_TRY(gf_blas_gpu_gemm_batched(c->blas, math, true, cout, (int)hw, (int)kk, 1.0f, wt,
                                    (int)kk, 0, col, (int)kk, hw * kk, 0.0f, out, (int)hw,
                                    (long long)cout * hw, B));
    int hwi = (int)hw;
    void *p_ep[] = { &out, &bias, &residual, &B, &cout, &hwi, &relu };
    long m = (long)B * cout * hw;
    return gf_gpu_launch(c->gpu, c->epilogue, (unsigned)((m + 255) / 256), 1, 1, 256, 1, 1, 0,
                         p_ep);
}
