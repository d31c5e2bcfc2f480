/* test_gpu_conv.c — every variant of the own ResNet kernel (kernels/resnet/resnet.cu:
 * v1, v3, v4, and v5 and v5w on a cc 9.0 card) against the CPU reference (kernels/resnet/resnet_cpu.c) on small shapes
 * chosen to end tiles part-way: output planes that are not whole tiles, odd
 * and even widths (v4's paired stores), output channels that do not fill a
 * block, several windows, with and without the residual. Each element must
 * lie within the tf32 bound: both operands rounded to 10 mantissa bits give
 * at most 2^-10 of each product, so |got - ref| <= 1.05e-3 * sum |x||w|.
 * Skips cleanly where there is no CUDA device. Run by `make gpu-check`. */
#include "common/error.h"
#include "kernels/resnet/resnet_cpu.h"
#include "gpu/blas.h"
#include "kernels/resnet/resnet_gpu.h"
#include "gpu/device.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/gpu/gpu_fixture.h"

typedef struct {
    int cin, cout, k, stride, h, w, windows, residual, relu;
    const char *variant;   /* the entry point gf_conv_gpu_own_kernel must pick */
    const char *variant90; /* the same on a cc 9.0 card (wgmma); NULL: variant */
    const char *force90;   /* on a cc 9.0 card, run this variant instead of the pick */
    int fp32;              /* math mode fp32 (3xTF32 variants): float32's bound */
} conv_case;

/* The variant whose 3x3 entry point is name. */
static const gf_conv_own_kernel *variant_named(const char *name)
{
    size_t n = 0;
    const gf_conv_own_kernel *ks = gf_conv_own_kernels(&n);
    for (size_t i = 0; i < n; i++)
        if (ks[i].name3 && strcmp(ks[i].name3, name) == 0)
            return &ks[i];
    fail_msg("no variant %s", name);
    return NULL;
}

/* The reference for all windows: out = conv(x) (+ residual), and the bound's
 * sum of |x||w| per output (abs: true). */
static void reference(const conv_case *t, const float *x, const float *w, const float *bias,
                      const float *res, bool abs_sum, float *out)
{
    int pad = t->k / 2, ho = gf_conv2d_out(t->h, t->k, t->stride, pad);
    int wo = gf_conv2d_out(t->w, t->k, t->stride, pad);
    long in_n = (long)t->cin * t->h * t->w, out_n = (long)t->cout * ho * wo;
    long wn = (long)t->cout * t->cin * t->k * t->k, col_n = (long)t->cin * t->k * t->k * ho * wo;
    float *col = malloc(sizeof(float) * (size_t)col_n);
    float *ax = malloc(sizeof(float) * (size_t)in_n), *aw = malloc(sizeof(float) * (size_t)wn);
    float *zero = calloc((size_t)t->cout, sizeof(float));
    for (long i = 0; i < wn; i++)
        aw[i] = fabsf(w[i]);
    for (int b = 0; b < t->windows; b++) {
        const float *xb = x + b * in_n;
        if (abs_sum) {
            for (long i = 0; i < in_n; i++)
                ax[i] = fabsf(xb[i]);
            gf_conv2d_cpu(ax, t->cin, t->h, t->w, aw, zero, t->cout, t->k, t->stride, pad, NULL,
                          0, out + b * out_n, col, col_n);
        } else {
            gf_conv2d_cpu(xb, t->cin, t->h, t->w, w, bias, t->cout, t->k, t->stride, pad,
                          t->residual ? res + b * out_n : NULL, t->relu, out + b * out_n, col,
                          col_n);
        }
    }
    free(col), free(ax), free(aw), free(zero);
}

static void check_case(gf_blas_gpu *blas, const conv_case *t, unsigned *seed)
{
    gf_conv_shape shape = { t->cin, t->cout, t->k, t->stride };
    const gf_math math = t->fp32 ? GF_MATH_FP32 : GF_MATH_TF32;
    const gf_conv_own_kernel *kern = gf_conv_gpu_own_kernel(shape, gf_gpu_cc(gpu), math);
    assert_non_null(kern);
    const char *variant = gf_gpu_cc(gpu) == 90 && t->variant90 ? t->variant90 : t->variant;
    if (gf_gpu_cc(gpu) == 90 && t->force90)
        kern = variant_named(variant = t->force90);
    else if (t->force90) {   /* a wgmma variant on another card: nothing to run */
        printf("%-18s needs cc 9.0 (this card is %d.%d): case skipped\n", t->force90,
               gf_gpu_cc(gpu) / 10, gf_gpu_cc(gpu) % 10);
        return;
    }
    else
        assert_string_equal(t->k == 3 ? kern->name3 : kern->name1, variant);

    int pad = t->k / 2, ho = gf_conv2d_out(t->h, t->k, t->stride, pad);
    int wo = gf_conv2d_out(t->w, t->k, t->stride, pad);
    long in_n = (long)t->windows * t->cin * t->h * t->w;
    long out_n = (long)t->windows * t->cout * ho * wo;
    long wn = (long)t->cout * t->cin * t->k * t->k;
    float *x = malloc(sizeof(float) * (size_t)in_n), *w = malloc(sizeof(float) * (size_t)wn);
    float *bias = malloc(sizeof(float) * (size_t)t->cout);
    float *res = malloc(sizeof(float) * (size_t)out_n), *ref = malloc(sizeof(float) * (size_t)out_n);
    float *bound = malloc(sizeof(float) * (size_t)out_n), *got = malloc(sizeof(float) * (size_t)out_n);
    for (long i = 0; i < in_n; i++)
        x[i] = frand(seed) * 2.0f;
    for (long i = 0; i < wn; i++)
        w[i] = frand(seed) * 0.3f;
    for (int i = 0; i < t->cout; i++)
        bias[i] = frand(seed) * 0.5f;
    for (long i = 0; i < out_n; i++)
        res[i] = frand(seed);
    reference(t, x, w, bias, res, false, ref);
    reference(t, x, w, bias, res, true, bound);

    char name[48];
    snprintf(name, sizeof name, "test.%s", variant);
    gf_conv_gpu *c = gf_conv_gpu_new(gpu, blas, name, shape, w, bias);
    assert_non_null(c);
    if (t->force90)
        assert_int_equal(gf_conv_gpu_set_own_variant(c, kern, NULL), 0);
    else
        assert_int_equal(gf_conv_gpu_set_route(c, GF_ROUTE_OWN, math, NULL), 0);
    gf_cu_ptr dx, dres = 0, dout;
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * (size_t)in_n, &dx), 0);
    assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * (size_t)out_n, &dout), 0);
    assert_int_equal(gf_gpu_upload(gpu, dx, x, sizeof(float) * (size_t)in_n), 0);
    if (t->residual) {
        assert_int_equal(gf_gpu_alloc(gpu, sizeof(float) * (size_t)out_n, &dres), 0);
        assert_int_equal(gf_gpu_upload(gpu, dres, res, sizeof(float) * (size_t)out_n), 0);
    }
    assert_int_equal(gf_conv_gpu_run(c, math, t->windows, dx, t->h, t->w, dout, dres,
                                     t->relu, 0),
                     0);
    assert_int_equal(gf_gpu_download(gpu, got, dout, sizeof(float) * (size_t)out_n), 0);

    long bad = 0;
    double worst = 0.0;
    for (long i = 0; i < out_n; i++) {
        /* tf32: 2^-10 of the sum of |x||w|; fp32 (3xTF32): 2e-5, against a
         * float32 reference whose own rounding is of that order */
        double lim = t->fp32 ? 2e-5 * bound[i] + 1e-6 : 1.05e-3 * bound[i] + 1e-5;
        double err = fabs((double)got[i] - ref[i]);
        if (!(err <= lim)) {   /* NaN fails too */
            if (bad++ < 5)
                fprintf(stderr, "%s %dx%d s%d %d->%d %dx%d: [%ld] got %g want %g (bound %g)\n",
                        variant, t->k, t->k, t->stride, t->cin, t->cout, t->h, t->w, i,
                        got[i], ref[i], lim);
        } else if (err / lim > worst) {
            worst = err / lim;
        }
    }
    printf("%-18s %s %dx%d s%d %3d->%3d in %2dx%-3d x%d: %ld outputs, worst error %.2f of the "
           "bound, %ld outside\n",
           variant, gf_math_name(math), t->k, t->k, t->stride, t->cin, t->cout, t->h, t->w,
           t->windows, out_n, worst, bad);
    assert_int_equal(bad, 0);

    gf_gpu_free(gpu, dx);
    gf_gpu_free(gpu, dout);
    if (dres)
        gf_gpu_free(gpu, dres);
    gf_conv_gpu_destroy(&c);
    free(x), free(w), free(bias), free(res), free(ref), free(bound), free(got);
}

static void test_own_conv_variants(void **state)
{
    (void)state;
    NEED_GPU();
    if (gf_gpu_cc(gpu) < 80) {
        printf("cc %d.%d: the own ResNet kernel needs 8.0: skipping\n", gf_gpu_cc(gpu) / 10,
               gf_gpu_cc(gpu) % 10);
        skip();
    }
    gf_blas_gpu *blas = NULL;
    assert_int_equal(gf_blas_gpu_open(gpu, &blas), 0);
    static const conv_case cases[] = {
        /* v4s (its halo channel-major, 16 x 32 tiles): 9 rows end the row
         * tile early, 70 columns the third column tile; even width: 8-byte
         * pair copies and paired stores; four 8-channel slabs; then an odd
         * width (4-byte copies, pairs cut by the edge; single stores)
         * without the residual; 17 rows without the ReLU; 64 input channels
         * on an odd plane (6 x 31: every other channel's plane starts
         * unaligned); stage 1's own plane, 80 x 998. */
        { 32, 32, 3, 1, 9, 70, 3, 1, 1, "gf_conv3_tf32_v4s", NULL, NULL, 0 },
        { 32, 32, 3, 1, 9, 71, 2, 0, 1, "gf_conv3_tf32_v4s", NULL, NULL, 0 },
        { 32, 32, 3, 1, 17, 40, 2, 1, 0, "gf_conv3_tf32_v4s", NULL, NULL, 0 },
        { 64, 32, 3, 1, 6, 31, 3, 1, 1, "gf_conv3_tf32_v4s", NULL, NULL, 0 },
        { 32, 32, 3, 1, 80, 998, 1, 1, 1, "gf_conv3_tf32_v4s", NULL, NULL, 0 },
        /* math mode fp32 (3xTF32, the resnet32 module): f3_v4s on the same
         * edges and stage 1's plane; f3_v4 at 64-256 channels, odd widths;
         * resnet.conv1's direct kernel serves fp32 as it is; f3_v3 on the
         * strided 3x3 layers and the 1x1 shortcuts. */
        { 32, 32, 3, 1, 9, 70, 3, 1, 1, "gf_conv3_f3_v4s", NULL, NULL, 1 },
        { 32, 32, 3, 1, 9, 71, 2, 0, 1, "gf_conv3_f3_v4s", NULL, NULL, 1 },
        { 64, 32, 3, 1, 6, 31, 3, 1, 0, "gf_conv3_f3_v4s", NULL, NULL, 1 },
        { 32, 32, 3, 1, 80, 998, 1, 1, 1, "gf_conv3_f3_v4s", NULL, NULL, 1 },
        { 64, 64, 3, 1, 7, 37, 2, 1, 1, "gf_conv3_f3_v4", NULL, NULL, 1 },
        { 128, 128, 3, 1, 20, 62, 1, 1, 1, "gf_conv3_f3_v4", NULL, NULL, 1 },
        { 256, 256, 3, 1, 3, 9, 2, 1, 0, "gf_conv3_f3_v4", NULL, NULL, 1 },
        { 1, 32, 3, 1, 11, 29, 2, 0, 1, "gf_conv3_cin1", NULL, NULL, 1 },
        { 32, 64, 3, 2, 9, 21, 2, 0, 1, "gf_conv3_f3_v3", NULL, NULL, 1 },
        { 128, 256, 3, 2, 8, 13, 2, 0, 1, "gf_conv3_f3_v3", NULL, NULL, 1 },
        { 32, 64, 1, 2, 9, 21, 2, 0, 0, "gf_conv1_f3_v3", NULL, NULL, 1 },
        { 128, 256, 1, 2, 6, 11, 2, 0, 0, "gf_conv1_f3_v3", NULL, NULL, 1 },
        /* v4: odd width (single stores); one 16-channel slab and 48 of 64
         * rows. v5 (cc 9.0): the 30-column tile ends at 7, one row tile
         * ends early; eight 8-channel slabs. */
        { 64, 64, 3, 1, 7, 37, 2, 1, 1, "gf_conv3_tf32_v4", "gf_conv3_tf32_v5", NULL, 0 },
        { 16, 48, 3, 1, 6, 20, 2, 1, 1, "gf_conv3_tf32_v4", NULL, NULL, 0 },
        /* 17 rows (v5: three 8-row tiles, the last of one row), 31 columns. */
        { 64, 64, 3, 1, 17, 31, 1, 0, 1, "gf_conv3_tf32_v4", "gf_conv3_tf32_v5", NULL, 0 },
        /* v4 at Cout 96-256: two to four blocks of rows; odd rows and width.
         * v5w (cc 9.0) at 128 and 256: two and four blocks of 64 channels. */
        { 128, 128, 3, 1, 5, 67, 2, 0, 1, "gf_conv3_tf32_v4", "gf_conv3_tf32_v5w", NULL, 0 },
        { 128, 128, 3, 1, 20, 62, 1, 1, 1, "gf_conv3_tf32_v4", "gf_conv3_tf32_v5w", NULL, 0 },
        { 128, 96, 3, 1, 4, 16, 1, 1, 0, "gf_conv3_tf32_v4", NULL, NULL, 0 },
        { 256, 256, 3, 1, 3, 9, 2, 1, 1, "gf_conv3_tf32_v4", "gf_conv3_tf32_v5w", NULL, 0 },
        /* v3: the strided 3x3 and the 1x1 shortcuts. */
        { 32, 64, 3, 2, 9, 21, 2, 0, 1, "gf_conv3_tf32_v3", NULL, NULL, 0 },
        { 64, 128, 3, 2, 8, 13, 2, 0, 1, "gf_conv3_tf32_v3w", NULL, NULL, 0 },
        { 32, 64, 1, 2, 9, 21, 2, 0, 0, "gf_conv1_tf32_v3", NULL, NULL, 0 },
        { 128, 256, 1, 2, 6, 11, 2, 0, 0, "gf_conv1_tf32_v3w", NULL, NULL, 0 },
        /* the direct kernel: one input channel (resnet.conv1). Odd width
         * (single stores); two column tiles and two row tiles, both ending
         * early, with the residual; 16 output channels without the ReLU. */
        { 1, 32, 3, 1, 11, 29, 2, 0, 1, "gf_conv3_cin1", NULL, NULL, 0 },
        { 1, 32, 3, 1, 20, 300, 2, 1, 1, "gf_conv3_cin1", NULL, NULL, 0 },
        { 1, 16, 3, 1, 9, 998, 1, 0, 0, "gf_conv3_cin1", NULL, NULL, 0 },
        /* v1: other channel counts that are not a multiple of 16. */
        { 3, 32, 3, 1, 11, 29, 2, 0, 1, "gf_conv3_tf32_v1", NULL, NULL, 0 },
        /* Variants run whichever the table picks (on a cc 9.0 card), on
         * shapes their tiles fit badly. v5w: 130 columns (a second
         * 126-column tile of 4), 5 rows (a last 2-row tile of 1); 125
         * columns, Cout 128; a plane smaller than a tile at 256 channels;
         * 253 columns (a third tile of one column) without the ReLU. v5 and
         * v5w at stage 4's plane. */
        { 64, 64, 3, 1, 5, 130, 2, 1, 1, NULL, NULL, "gf_conv3_tf32_v5w", 0 },
        { 128, 128, 3, 1, 4, 125, 1, 0, 1, NULL, NULL, "gf_conv3_tf32_v5w", 0 },
        { 256, 256, 3, 1, 3, 9, 2, 1, 1, NULL, NULL, "gf_conv3_tf32_v5w", 0 },
        { 64, 64, 3, 1, 2, 253, 1, 1, 0, NULL, NULL, "gf_conv3_tf32_v5w", 0 },
        { 256, 256, 3, 1, 10, 125, 1, 1, 1, NULL, NULL, "gf_conv3_tf32_v5", 0 },
        { 256, 256, 3, 1, 10, 125, 1, 1, 1, NULL, NULL, "gf_conv3_tf32_v5w", 0 },
    };
    unsigned seed = 2024;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_case(blas, &cases[i], &seed);
    gf_blas_gpu_destroy(&blas);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_conv_variants),
    };
    return cmocka_run_group_tests(tests, gpu_setup, gpu_teardown);
}
