/* test_kernels.c — the CPU ops of kernels/ on fresh random inputs over
 * several shapes, edge sizes included: conv2d_ref against a direct
 * convolution in float64, the Winograd variant against conv2d_ref, and
 * statistics pooling against its formula in float64. Per element
 * |a - b| <= atol + rtol·|ref|; the first mismatches and the largest error
 * are printed. The whole networks are checked against PyTorch by
 * tests/integration/nets_parity.sh. */
#include "kernels/resnet/resnet_cpu.h"
#include "kernels/pooling/pooling_cpu.h"
#include "kernels/resnet/winograd_cpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;

static float frand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static float *rand_buf(long n)
{
    float *p = malloc(sizeof(float) * (size_t)n);
    for (long i = 0; i < n; i++)
        p[i] = frand();
    return p;
}

static int compare(const char *what, const float *got, const float *ref, long n, double atol,
                   double rtol)
{
    int bad = 0;
    double worst = 0.0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (e > worst)
            worst = e;
        if (!(e <= atol + rtol * fabs(ref[i]))) {
            if (bad < 5)
                printf("%s: element %ld: got %.8g, expected %.8g\n", what, i, got[i], ref[i]);
            bad++;
        }
    }
    if (bad)
        printf("%s: %d of %ld elements off, largest error %.3g\n", what, bad, n, worst);
    return bad;
}

/* Direct convolution in float64, the truth. */
static void conv_direct(const float *x, int Cin, int H, int W, const float *w, const float *b,
                        int Cout, int k, int s, int pad, const float *res, int relu, float *out)
{
    int Ho = gf_conv2d_out(H, k, s, pad), Wo = gf_conv2d_out(W, k, s, pad);
    for (int o = 0; o < Cout; o++)
        for (int y = 0; y < Ho; y++)
            for (int xx = 0; xx < Wo; xx++) {
                double acc = b[o];
                for (int i = 0; i < Cin; i++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = y * s - pad + ky, ix = xx * s - pad + kx;
                            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                                acc += (double)w[((o * Cin + i) * k + ky) * k + kx] *
                                       x[((long)i * H + iy) * W + ix];
                        }
                long idx = ((long)o * Ho + y) * Wo + xx;
                if (res)
                    acc += res[idx];
                if (relu && acc < 0)
                    acc = 0;
                out[idx] = (float)acc;
            }
}

static void test_conv2d_ref(void **state)
{
    (void)state;
    static const int shapes[][7] = {
        /* Cin Cout H W k stride pad */
        { 1, 8, 9, 13, 3, 1, 1 },  { 5, 7, 8, 11, 3, 2, 1 }, { 6, 4, 7, 7, 1, 2, 0 },
        { 16, 12, 10, 33, 3, 1, 1 }, { 3, 5, 1, 1, 3, 1, 1 }, { 9, 16, 6, 5, 3, 2, 1 },
    };
    int bad = 0;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const int *s = shapes[t];
        int Ho = gf_conv2d_out(s[2], s[4], s[5], s[6]), Wo = gf_conv2d_out(s[3], s[4], s[5], s[6]);
        long no = (long)s[1] * Ho * Wo;
        float *x = rand_buf((long)s[0] * s[2] * s[3]), *w = rand_buf((long)s[1] * s[0] * s[4] * s[4]);
        float *b = rand_buf(s[1]), *res = rand_buf(no), *got = malloc(sizeof(float) * no);
        float *ref = malloc(sizeof(float) * no);
        /* a deliberately small workspace: several tiles of one output row */
        long colf = gf_conv2d_col_min(s[0], s[4], Wo);
        float *col = malloc(sizeof(float) * colf);
        for (int mode = 0; mode < 2; mode++) {
            gf_conv2d_cpu(x, s[0], s[2], s[3], w, b, s[1], s[4], s[5], s[6], mode ? res : NULL,
                          mode, got, col, colf);
            conv_direct(x, s[0], s[2], s[3], w, b, s[1], s[4], s[5], s[6], mode ? res : NULL, mode,
                        ref);
            bad += compare("conv2d_ref", got, ref, no, 1e-5, 1e-5);
        }
        free(x), free(w), free(b), free(res), free(got), free(ref), free(col);
    }
    assert_int_equal(bad, 0);
}

static void test_winograd(void **state)
{
    (void)state;
    static const int shapes[][4] = {
        /* Cin Cout H W */
        { 1, 4, 5, 7 }, { 8, 8, 8, 8 }, { 7, 5, 9, 13 }, { 32, 16, 10, 125 }, { 3, 3, 1, 2 },
        { 16, 24, 20, 31 },
    };
    int bad = 0;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const int *s = shapes[t];
        int Cin = s[0], Cout = s[1], H = s[2], W = s[3];
        long no = (long)Cout * H * W;
        float *x = rand_buf((long)Cin * H * W), *w = rand_buf((long)Cout * Cin * 9);
        float *b = rand_buf(Cout), *res = rand_buf(no), *got = malloc(sizeof(float) * no);
        float *ref = malloc(sizeof(float) * no), *u = malloc(sizeof(float) * 16 * Cout * Cin);
        long colf = gf_conv2d_col_min(Cin, 3, W) * H;
        float *col = malloc(sizeof(float) * colf);
        /* the smallest workspace, so that chunking is exercised */
        long wsf = gf_winograd_ws_size(Cin, Cout, W, 0);   /* one row of tiles at a time */
        float *ws = malloc(sizeof(float) * wsf);
        gf_winograd_pack_cpu(w, Cout, Cin, u);
        for (int mode = 0; mode < 2; mode++) {
            gf_winograd_cpu(x, Cin, H, W, u, b, Cout, mode ? res : NULL, mode, got, ws, wsf);
            gf_conv2d_cpu(x, Cin, H, W, w, b, Cout, 3, 1, 1, mode ? res : NULL, mode, ref, col,
                          colf);
            bad += compare("winograd", got, ref, no, 2e-5 * sqrt(Cin * 9.0), 1e-5);
        }
        free(x), free(w), free(b), free(res), free(got), free(ref), free(u), free(col), free(ws);
    }
    assert_int_equal(bad, 0);
}

static void test_statspool(void **state)
{
    (void)state;
    const int R = 37, T = 125;
    float *x = rand_buf((long)R * T), w[125], got[74], ref[74];
    int bad = 0;
    for (int mode = 0; mode < 3; mode++) {
        for (int t = 0; t < T; t++)   /* binary, fractional, none */
            w[t] = mode == 0 ? (float)((t / 7) % 2) : 0.5f + 0.5f * frand();
        gf_statspool_cpu(x, R, T, mode == 2 ? NULL : w, got);
        for (int r = 0; r < R; r++) {
            double v1 = 0, v2 = 0, s = 0, q = 0;
            for (int t = 0; t < T; t++) {
                double wt = mode == 2 ? 1.0 : w[t];
                v1 += wt, v2 += wt * wt, s += wt * x[r * T + t];
            }
            double mean = mode == 2 ? s / T : s / (v1 + 1e-8);
            for (int t = 0; t < T; t++) {
                double wt = mode == 2 ? 1.0 : w[t], d = x[r * T + t] - mean;
                q += wt * d * d;
            }
            ref[r] = (float)mean;
            ref[R + r] = (float)sqrt(mode == 2 ? q / (T - 1)
                                               : q / (v1 + 1e-8 - v2 / (v1 + 1e-8) + 1e-8));
        }
        bad += compare("statspool", got, ref, 2 * R, 1e-6, 1e-5);
    }
    free(x);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv2d_ref),
        cmocka_unit_test(test_winograd),
        cmocka_unit_test(test_statspool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
