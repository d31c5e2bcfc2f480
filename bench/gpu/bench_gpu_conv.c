/* bench_gpu_conv.c — the own ResNet kernel's variants side by side on the
 * trunk's 3x3 stride-1 layer shapes (one per stage, batch B, with the ReLU;
 * with the residual, as a block's second convolution runs, and without, as
 * its first) and on its three stride-2 layers (without), each against the library route (im2col + cuBLAS) in the same
 * run: device time by events, median of R after two warm-ups, and the rate
 * in useful TFLOP/s. The
 * variant the planner's table picks for this card is marked. Variants that
 * cannot run a shape on this card are left out.
 * Usage: bench_gpu_conv [B] [R] */
#include "common/devstats.h"
#include "common/util.h"
#include "gpu/blas.h"
#include "kernels/resnet/resnet_gpu.h"
#include "gpu/device.h"
#include "bench/gpu/devtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int c, cout, stride, h, w;   /* channels in and out, stride, input extent */
} layer;

/* resnet.conv1 (one input channel), one 3x3 stride-1 layer per stage, then
 * the three strided layers that open stages 2-4 (no residual: a block's
 * first convolution). */
static const layer layers[] = {
    { 1, 32, 1, 80, 998 },
    { 32, 32, 1, 80, 998 }, { 64, 64, 1, 40, 499 }, { 128, 128, 1, 20, 250 },
    { 256, 256, 1, 10, 125 },
    { 32, 64, 2, 80, 998 }, { 64, 128, 2, 40, 499 }, { 128, 256, 2, 20, 250 },
};

typedef struct {
    gf_conv_gpu *c;
    int B;
    const layer *l;
    gf_cu_ptr x, out, res, col;
    gf_math math;   /* the library route's GEMM math (the own kernels have theirs) */
} conv_run;

static int run_conv(void *arg)
{
    conv_run *r = arg;
    return gf_conv_gpu_run(r->c, r->math, r->B, r->x, r->l->h, r->l->w, r->out, r->res, 1,
                           r->col);
}

/* Median device ms of reps runs of the layer's current route; res 0: none. */
static double time_conv(gf_gpu *gpu, gf_conv_gpu *c, int B, const layer *l, gf_cu_ptr x,
                        gf_cu_ptr out, gf_cu_ptr res, gf_cu_ptr col, int reps, gf_math math)
{
    conv_run r = { c, B, l, x, out, res, col, math };
    return bench_median_ms(gpu, run_conv, &r, reps);
}

int main(int argc, char **argv)
{
    int B = argc > 1 ? atoi(argv[1]) : 32, reps = argc > 2 ? atoi(argv[2]) : 10;
    gf_gpu *gpu = NULL;
    gf_blas_gpu *blas = NULL;
    if (gf_gpu_open(0, &gpu) != 0 || gf_blas_gpu_open(gpu, &blas) != 0) {
        fprintf(stderr, "bench_gpu_conv: no CUDA card 0\n");
        return 1;
    }
    int cc = gf_gpu_cc(gpu);
    printf("own ResNet kernel variants, 3x3 + bias (+ residual) + ReLU, batch %d, median of %d "
           "(cc %d.%d); tf32 unless named f3 (3xTF32, math mode fp32), against cuBLAS in both\n",
           B, reps, cc / 10, cc % 10);
    size_t nk = 0;
    const gf_conv_own_kernel *ks = gf_conv_own_kernels(&nk);
    for (size_t li = 0; li < GF_ARRAY_LEN(layers); li++) {
        const layer *l = &layers[li];
        gf_conv_shape shape = { l->c, l->cout, 3, l->stride };
        const int ho = (l->h - 1) / l->stride + 1, wo = (l->w - 1) / l->stride + 1;
        size_t n = (size_t)B * l->c * l->h * l->w, nw = (size_t)l->cout * l->c * 9;
        size_t n_out = (size_t)B * l->cout * ho * wo;
        float *hx = gf_malloc(sizeof(float) * n), *hw = gf_malloc(sizeof(float) * nw);
        float *hb = gf_calloc((size_t)l->cout, sizeof(float));
        unsigned s = 11;
        for (size_t i = 0; i < n; i++) {
            s = s * 1664525u + 1013904223u;
            hx[i] = (float)(s >> 9) / 8388608.0f - 1.0f;
        }
        for (size_t i = 0; i < nw; i++) {
            s = s * 1664525u + 1013904223u;
            hw[i] = ((float)(s >> 9) / 8388608.0f - 1.0f) * 0.05f;
        }
        gf_conv_gpu *c = gf_conv_gpu_new(gpu, blas, "bench.conv", shape, hw, hb);
        gf_cu_ptr x, out, res = 0, col;
        size_t col_n = gf_conv_gpu_col_floats(c, B, l->h, l->w);
        if (!c || gf_gpu_alloc(gpu, sizeof(float) * n, &x) ||
            gf_gpu_alloc(gpu, sizeof(float) * n_out, &out) ||
            (l->stride == 1 && l->c == l->cout && gf_gpu_alloc(gpu, sizeof(float) * n, &res)) ||
            gf_gpu_alloc(gpu, sizeof(float) * col_n, &col) ||
            gf_gpu_upload(gpu, x, hx, sizeof(float) * n) ||
            (res && gf_gpu_upload(gpu, res, hx, sizeof(float) * n))) {
            fprintf(stderr, "bench_gpu_conv: device memory\n");
            return 1;
        }
        double flop = 2.0 * B * l->cout * l->c * 9.0 * ho * wo;
        const gf_conv_own_kernel *pick = gf_conv_gpu_own_kernel(shape, cc, GF_MATH_TF32);
        const gf_conv_own_kernel *pick32 = gf_conv_gpu_own_kernel(shape, cc, GF_MATH_FP32);
        double lib = 0.0;
        for (int m = 0; m < 2; m++) {   /* the library route in tf32, then in fp32 */
            gf_math math = m ? GF_MATH_FP32 : GF_MATH_TF32;
            gf_conv_gpu_set_route(c, GF_ROUTE_LIBRARY, math, NULL);
            /* stride 2 and resnet.conv1: no residual run (the column shows the time without) */
            double l0 = time_conv(gpu, c, B, l, x, out, 0, col, reps, math);
            double l1 = res ? time_conv(gpu, c, B, l, x, out, res, col, reps, math) : l0;
            printf("%3d->%3d s%d %3dx%-4d  %-22s %8.3f ms %7.1f TFLOP/s   no residual %8.3f ms\n",
                   l->c, l->cout, l->stride, l->h, l->w,
                   m ? "library fp32 (cuBLAS)" : "library tf32 (cuBLAS)", l1, flop / l1 / 1e9, l0);
            if (m == 0)
                lib = l1;
        }
        for (size_t k = 0; k < nk; k++) {
            const gf_conv_own_kernel *kn = &ks[k];
            /* every variant for resnet.conv1; else the halo variants at their
             * stride, v3 too for the strided layers */
            if (l->c > 1 && (kn->version < (l->stride == 1 ? 4 : 3) || kn->version == 6))
                continue;
            if (!kn->name3 || (kn->version == 5 && l->cout % kn->tile_m != 0))
                continue;
            if (gf_conv_gpu_set_own_variant(c, kn, NULL) != 0)
                continue;
            double ms0 = time_conv(gpu, c, B, l, x, out, 0, col, reps, GF_MATH_TF32);
            double ms = res ? time_conv(gpu, c, B, l, x, out, res, col, reps, GF_MATH_TF32) : ms0;
            printf("%3d->%3d s%d %3dx%-4d  %-22s %8.3f ms %7.1f TFLOP/s   no residual %8.3f ms   "
                   "%5.2fx library tf32%s\n", l->c, l->cout, l->stride, l->h, l->w, kn->name3, ms,
                   flop / ms / 1e9, ms0, lib / ms,
                   kn == pick ? "  (picked)" : kn == pick32 ? "  (picked in fp32)" : "");
        }
        gf_gpu_free(gpu, x), gf_gpu_free(gpu, out), gf_gpu_free(gpu, col);
        if (res)
            gf_gpu_free(gpu, res);
        gf_conv_gpu_destroy(&c);
        free(hx), free(hw), free(hb);
    }
    gf_blas_gpu_destroy(&blas);
    gf_gpu_destroy(&gpu);
    return 0;
}
