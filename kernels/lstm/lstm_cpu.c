/* lstm.c — the segmentation network's bidirectional LSTM, CPU reference.
 *
 * The recurrent step and the gate math are written with GCC vector
 * extensions (8 lanes); target_clones builds an x86-64-v3 (AVX2) variant beside the
 * baseline (SSE2) one and picks at load time by CPU feature (the default
 * build flags target plain x86-64). The helpers are always_inline so that they
 * are compiled for the variant that calls them. */
#include "kernels/lstm/lstm_cpu.h"

#include <assert.h>
#include <cblas.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CLONES
#endif

/* The vector helpers are static and always inlined: no ABI crosses them. */
#pragma GCC diagnostic ignored "-Wpsabi"
#define INLINE static inline __attribute__((always_inline))

/* Eight lanes at a time with GCC vector extensions: AVX registers in the
 * avx2 variant, pairs of SSE registers in the baseline one. */
typedef float v8f __attribute__((vector_size(32), aligned(4)));
typedef int32_t v8i __attribute__((vector_size(32), aligned(4)));

INLINE v8f splat(float x)
{
    return (v8f){ x, x, x, x, x, x, x, x };
}

/* Cephes-style expf on [-87, 88]: 2^n · p(r), r = x - n ln 2. */
INLINE v8f vexp(v8f x)
{
    v8i lo = x < splat(-87.0f), hi = x > splat(88.0f);
    x = (v8f)((lo & (v8i)splat(-87.0f)) | (~lo & (v8i)x));
    x = (v8f)((hi & (v8i)splat(88.0f)) | (~hi & (v8i)x));
    /* round to nearest by the 1.5·2^23 trick */
    v8f fn = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    v8f r = x - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    v8f p = splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    v8i e = (__builtin_convertvector(fn, v8i) + 127) << 23;
    return p * (v8f)e;
}

INLINE v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

INLINE void store8(float *p, v8f v)
{
    memcpy(p, &v, sizeof v);
}

void gf_lstm_proj_cpu(const float *x, long rows, int In, int ldx, const float *w_ih,
                      const float *bias, int G, float *gates)
{
    for (long r = 0; r < rows; r++)
        memcpy(gates + r * G, bias, sizeof(float) * (size_t)G);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, G, In, 1.0f, x, ldx, w_ih,
                In, 1.0f, gates, G);
}

void gf_lstm_pack_cpu(const float *w_hh, int H, float *whT)
{
    /* blocks of 32 gate columns, each [H][32] contiguous (16 KB for H = 128):
     * a block streams through L1 without the set conflicts of a 2 KB stride */
    for (int j = 0; j < 4 * H; j++)
        for (int k = 0; k < H; k++)
            whT[((long)(j / 32) * H + k) * 32 + j % 32] = w_hh[(long)j * H + k];
}

/* For every sequence b: g_b[0..G) += Σ_k h_b[k] · W_hh[.., k]. Columns go
 * 32 at a time, held in four vector registers across all k; the 16 KB block
 * of packed weights they need stays in L1 while every sequence uses it. */
INLINE void recur(float *g, long gstride, const float *h, long hstride, int B,
                  const float *restrict whT, int H, int G)
{
    for (int j0 = 0; j0 < G; j0 += 32)
        for (int b = 0; b < B; b++) {
            float *gb = g + b * gstride + j0;
            const float *hb = h + b * hstride;
            v8f a0 = load8(gb), a1 = load8(gb + 8), a2 = load8(gb + 16), a3 = load8(gb + 24);
            const float *w = whT + (long)j0 * H;   /* block j0/32, [H][32] */
            for (int k = 0; k < H; k++, w += 32) {
                const float hk = hb[k];   /* vector × scalar: one broadcast */
                a0 += load8(w) * hk;
                a1 += load8(w + 8) * hk;
                a2 += load8(w + 16) * hk;
                a3 += load8(w + 24) * hk;
            }
            store8(gb, a0);
            store8(gb + 8, a1);
            store8(gb + 16, a2);
            store8(gb + 24, a3);
        }
}

INLINE v8f sigm(v8f x)
{
    return 1.0f / (1.0f + vexp(-x));
}

/* tanh(x) = 2·sigmoid(2x) - 1: absolute error about 1e-7 near 0, which is
 * what matters for a state that is summed on. */
INLINE v8f vtanh(v8f x)
{
    return 2.0f / (1.0f + vexp(-2.0f * x)) - 1.0f;
}

/* Gates to new cell and hidden state (H a multiple of 8). */
INLINE void cell(const float *restrict g, float *restrict c, float *restrict h, int H)
{
    for (int j = 0; j < H; j += 8) {
        v8f i = sigm(load8(g + j)), f = sigm(load8(g + H + j));
        v8f gg = vtanh(load8(g + 2 * H + j)), o = sigm(load8(g + 3 * H + j));
        v8f cj = f * load8(c + j) + i * gg;
        store8(c + j, cj);
        store8(h + j, o * vtanh(cj));
    }
}

CLONES
void gf_lstm_dir_cpu(float *gates, int ldg, int B, int T, const float *whT, int H, int reverse,
                     float *out, int ldo, float *c)
{
    const int G = 4 * H;
    assert(G % 32 == 0 && H % 8 == 0);
    memset(c, 0, sizeof(float) * (size_t)B * (size_t)H);
    for (int s = 0; s < T; s++) {
        int t = reverse ? T - 1 - s : s;
        int tp = reverse ? t + 1 : t - 1;
        if (s > 0)
            recur(gates + (long)t * ldg, (long)T * ldg, out + (long)tp * ldo, (long)T * ldo, B,
                  whT, H, G);
        for (int b = 0; b < B; b++)
            cell(gates + ((long)b * T + t) * ldg, c + (long)b * H, out + ((long)b * T + t) * ldo,
                 H);
    }
}
