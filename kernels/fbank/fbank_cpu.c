/* fbank.c — Kaldi-compatible log-mel filterbank (see fbank.h).
 *
 * The embedding stage's front end: the CPU reference the GPU route must
 * match, and fast enough on its own. Everything is float32 in the order of
 * operations of the reference (torchaudio's compliance.kaldi on torch's CPU
 * FFT): the window and mel banks as torchaudio builds them, the frame
 * arithmetic as its tensor ops run, and the 512-point real FFT as the
 * FFTPACK-style real transform that torch's CPU FFT (pocketfft) runs:
 * factors 2, 4, 4, 4, 4, applied from the last, twiddles rounded once from
 * double. That order matters where a mel bin holds little energy next to a
 * loud frame: there the FFT's float32 rounding is the whole answer, and
 * any other order lands up to ~1e-3 away in the log (docs/audio.md,
 * tests/integration/fbank_parity.sh). */
#include "kernels/fbank/fbank_cpu.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NBINS (GF_FBANK_FFT / 2)     /* power bins that mel banks weight (Nyquist excluded) */
#define LOW_HZ 20.0
#define HIGH_HZ 8000.0
#define PREEMPH 0.97f
#define SCALE 32768.0f

struct gf_fbank {
    float window[GF_FBANK_FRAME];   /* symmetric Hamming, float32 as torch builds it */
    /* Twiddles of the real FFT's passes, (cos, sin) of 2 pi j l1 i / 512
     * interleaved for j = 1..ip-1, i = 1..(ido-1)/2 (the last pass,
     * l1 = 128, needs none). */
    float tw2[255];                 /* radix 2: l1 = 1, ido = 256 */
    float tw4a[3 * 63];             /* radix 4: l1 = 2, ido = 64 */
    float tw4b[3 * 15];             /* radix 4: l1 = 8, ido = 16 */
    float tw4c[3 * 3];              /* radix 4: l1 = 32, ido = 4 */
    int mel_first[GF_FBANK_BINS];   /* first power bin each mel bin weights */
    int mel_len[GF_FBANK_BINS];     /* how many consecutive power bins it weights */
    int mel_off[GF_FBANK_BINS];     /* its first weight in mel_w */
    float mel_w[2 * NBINS];         /* nonzero weights, bin after bin (each power bin
                                       falls in at most two triangles) */
};

static float mel_scale_f(float hz)
{
    return 1127.0f * logf(1.0f + hz / 700.0f);
}

/* Mel banks as torchaudio's get_mel_banks: edges in float32 from float64
 * scalars, the FFT bins' mel in float32, min of the two slopes clamped at 0. */
static void build_mel(gf_fbank *self)
{
    double mel_low = 1127.0 * log(1.0 + LOW_HZ / 700.0);
    double mel_high = 1127.0 * log(1.0 + HIGH_HZ / 700.0);
    float delta = (float)((mel_high - mel_low) / (GF_FBANK_BINS + 1));
    float low = (float)mel_low;
    float bin_width = (float)(16000.0 / GF_FBANK_FFT);
    float mel[NBINS];
    for (int k = 0; k < NBINS; k++)
        mel[k] = mel_scale_f(bin_width * (float)k);
    int off = 0;
    for (int b = 0; b < GF_FBANK_BINS; b++) {
        float left = low + (float)b * delta;
        float center = low + ((float)b + 1.0f) * delta;
        float right = low + ((float)b + 2.0f) * delta;
        self->mel_first[b] = -1;
        self->mel_off[b] = off;
        for (int k = 0; k < NBINS; k++) {
            float up = (mel[k] - left) / (center - left);
            float down = (right - mel[k]) / (right - center);
            float w = up < down ? up : down;
            if (w <= 0.0f)
                continue;
            if (self->mel_first[b] < 0)
                self->mel_first[b] = k;
            /* Triangles are convex: the nonzero weights are consecutive. */
            assert(k == self->mel_first[b] + (off - self->mel_off[b]));
            assert(off < 2 * NBINS);
            self->mel_w[off++] = w;
        }
        assert(self->mel_first[b] >= 0);
        self->mel_len[b] = off - self->mel_off[b];
    }
}

/* Twiddles of one pass with radix ip over l1 sub-transforms of ido points:
 * e^{2 pi i j l1 k / 512} (the forward pass uses their conjugates). */
static void twiddles(float *tw, int ip, int l1, int ido)
{
    for (int j = 1; j < ip; j++)
        for (int i = 1; i <= (ido - 1) / 2; i++) {
            double a = 2.0 * M_PI * (double)(j * l1 * i) / GF_FBANK_FFT;
            tw[(j - 1) * (ido - 1) + 2 * i - 2] = (float)cos(a);
            tw[(j - 1) * (ido - 1) + 2 * i - 1] = (float)sin(a);
        }
}

gf_fbank *gf_fbank_new(void)
{
    gf_fbank *self = gf_calloc(1, sizeof *self);
    /* torch.hamming_window(400, periodic=False): arange * (2 pi / 399) in
     * float32, cos, * -0.46, + 0.54. */
    float step = (float)(M_PI * 2.0 / (GF_FBANK_FRAME - 1));
    for (int n = 0; n < GF_FBANK_FRAME; n++)
        self->window[n] = cosf((float)n * step) * -0.46f + 0.54f;
    twiddles(self->tw2, 2, 1, 256);
    twiddles(self->tw4a, 4, 2, 64);
    twiddles(self->tw4b, 4, 8, 16);
    twiddles(self->tw4c, 4, 32, 4);
    build_mel(self);
    return self;
}

void gf_fbank_destroy(gf_fbank **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

size_t gf_fbank_frames(size_t n_samples)
{
    if (n_samples < GF_FBANK_FRAME)
        return 0;
    return 1 + (n_samples - GF_FBANK_FRAME) / GF_FBANK_SHIFT;
}

/* The passes of the forward real FFT, on l1 sub-transforms of ido points:
 * in[a + ido * (k + l1 * c)] (the c-th of ip inputs of sub-transform k) to
 * out[a + ido * (b + ip * k)] in FFTPACK's half-complex layout. Every sum
 * and product is its own float32 rounding, in the reference's order; the
 * build's ISO C mode keeps the compiler from fusing them. */
#define IN(a, k, c) in[(a) + ido * ((k) + l1 * (c))]
#define OUT(a, b, k) out[(a) + ido * ((b) + IP * (k))]
#define TW(x, i) tw[(i) + (x) * (ido - 1)]

/* (re, im) = conj(wr + i wi) * (xr + i xi) */
static inline void cmul_conj(float wr, float wi, float xr, float xi, float *re, float *im)
{
    *re = wr * xr + wi * xi;
    *im = wr * xi - wi * xr;
}

#define IP 4
static void rfft_pass4(int ido, int l1, const float *in, float *out, const float *tw)
{
    const float hsqt2 = 0.707106781186547524400844362104849f;
    for (int k = 0; k < l1; k++) {
        float s13 = IN(0, k, 3) + IN(0, k, 1);
        OUT(0, 2, k) = IN(0, k, 3) - IN(0, k, 1);
        float s02 = IN(0, k, 0) + IN(0, k, 2);
        OUT(ido - 1, 1, k) = IN(0, k, 0) - IN(0, k, 2);
        OUT(0, 0, k) = s02 + s13;
        OUT(ido - 1, 3, k) = s02 - s13;
    }
    if ((ido & 1) == 0)
        for (int k = 0; k < l1; k++) {
            float ti = -hsqt2 * (IN(ido - 1, k, 1) + IN(ido - 1, k, 3));
            float tr = hsqt2 * (IN(ido - 1, k, 1) - IN(ido - 1, k, 3));
            OUT(ido - 1, 0, k) = IN(ido - 1, k, 0) + tr;
            OUT(ido - 1, 2, k) = IN(ido - 1, k, 0) - tr;
            OUT(0, 3, k) = ti + IN(ido - 1, k, 2);
            OUT(0, 1, k) = ti - IN(ido - 1, k, 2);
        }
    if (ido <= 2)
        return;
    for (int k = 0; k < l1; k++)
        for (int i = 2; i < ido; i += 2) {
            int ic = ido - i;
            float cr2, ci2, cr3, ci3, cr4, ci4;
            cmul_conj(TW(0, i - 2), TW(0, i - 1), IN(i - 1, k, 1), IN(i, k, 1), &cr2, &ci2);
            cmul_conj(TW(1, i - 2), TW(1, i - 1), IN(i - 1, k, 2), IN(i, k, 2), &cr3, &ci3);
            cmul_conj(TW(2, i - 2), TW(2, i - 1), IN(i - 1, k, 3), IN(i, k, 3), &cr4, &ci4);
            float tr1 = cr4 + cr2, tr4 = cr4 - cr2;
            float ti1 = ci2 + ci4, ti4 = ci2 - ci4;
            float tr2 = IN(i - 1, k, 0) + cr3, tr3 = IN(i - 1, k, 0) - cr3;
            float ti2 = IN(i, k, 0) + ci3, ti3 = IN(i, k, 0) - ci3;
            OUT(i - 1, 0, k) = tr2 + tr1;
            OUT(ic - 1, 3, k) = tr2 - tr1;
            OUT(i, 0, k) = ti1 + ti2;
            OUT(ic, 3, k) = ti1 - ti2;
            OUT(i - 1, 2, k) = tr3 + ti4;
            OUT(ic - 1, 1, k) = tr3 - ti4;
            OUT(i, 2, k) = tr4 + ti3;
            OUT(ic, 1, k) = tr4 - ti3;
        }
}
#undef IP

#define IP 2
static void rfft_pass2(int ido, int l1, const float *in, float *out, const float *tw)
{
    for (int k = 0; k < l1; k++) {
        OUT(0, 0, k) = IN(0, k, 0) + IN(0, k, 1);
        OUT(ido - 1, 1, k) = IN(0, k, 0) - IN(0, k, 1);
    }
    if ((ido & 1) == 0)
        for (int k = 0; k < l1; k++) {
            OUT(0, 1, k) = -IN(ido - 1, k, 1);
            OUT(ido - 1, 0, k) = IN(ido - 1, k, 0);
        }
    if (ido <= 2)
        return;
    for (int k = 0; k < l1; k++)
        for (int i = 2; i < ido; i += 2) {
            int ic = ido - i;
            float tr, ti;
            cmul_conj(TW(0, i - 2), TW(0, i - 1), IN(i - 1, k, 1), IN(i, k, 1), &tr, &ti);
            OUT(i - 1, 0, k) = IN(i - 1, k, 0) + tr;
            OUT(ic - 1, 1, k) = IN(i - 1, k, 0) - tr;
            OUT(i, 0, k) = ti + IN(i, k, 0);
            OUT(ic, 1, k) = ti - IN(i, k, 0);
        }
}
#undef IP
#undef IN
#undef OUT
#undef TW

/* The passes run radix 4 over 128, 32, 8 and 2 sub-transforms, then
 * radix 2 (pocketfft's factors 2, 4, 4, 4, 4, applied from the last). */
void gf_fbank_rfft(const gf_fbank *self, float x[GF_FBANK_FFT], float out[GF_FBANK_FFT])
{
    rfft_pass4(1, 128, x, out, NULL);
    rfft_pass4(4, 32, out, x, self->tw4c);
    rfft_pass4(16, 8, x, out, self->tw4b);
    rfft_pass4(64, 2, out, x, self->tw4a);
    rfft_pass2(256, 1, x, out, self->tw2);
}

/* Power spectrum bins 0..255 of a 512-point real frame x (zero beyond 400);
 * x is overwritten. */
static void power_spectrum(const gf_fbank *self, float *x, float *power)
{
    float y[GF_FBANK_FFT];
    gf_fbank_rfft(self, x, y);
    power[0] = y[0] * y[0];
    for (int k = 1; k < NBINS; k++)
        power[k] = y[2 * k - 1] * y[2 * k - 1] + y[2 * k] * y[2 * k];
}

int gf_fbank_run(const gf_fbank *self, const float *wave, size_t n, float *out,
                 size_t *n_frames, unsigned flags)
{
    assert(self && wave && out && n_frames);
    size_t frames = gf_fbank_frames(n);
    *n_frames = frames;
    if (frames == 0) {
        GF_ERROR("fbank: %zu samples is shorter than one frame (%d)", n, GF_FBANK_FRAME);
        return GF_EINVAL;
    }
    float x[GF_FBANK_FFT];
    float power[NBINS];
    for (size_t f = 0; f < frames; f++) {
        const float *w = wave + f * GF_FBANK_SHIFT;
        double sum = 0.0;
        for (int j = 0; j < GF_FBANK_FRAME; j++) {
            x[j] = w[j] * SCALE;
            sum += x[j];
        }
        float mean = (float)(sum / GF_FBANK_FRAME);
        for (int j = 0; j < GF_FBANK_FRAME; j++)
            x[j] -= mean;
        /* Pre-emphasis from the end so each x[j-1] is still unmodified. */
        for (int j = GF_FBANK_FRAME - 1; j > 0; j--)
            x[j] -= PREEMPH * x[j - 1];
        x[0] -= PREEMPH * x[0];
        for (int j = 0; j < GF_FBANK_FRAME; j++)
            x[j] *= self->window[j];
        memset(x + GF_FBANK_FRAME, 0, (GF_FBANK_FFT - GF_FBANK_FRAME) * sizeof(float));
        power_spectrum(self, x, power);
        float *o = out + f * GF_FBANK_BINS;
        for (int b = 0; b < GF_FBANK_BINS; b++) {
            const float *mw = self->mel_w + self->mel_off[b];
            const float *p = power + self->mel_first[b];
            float e = 0.0f;
            for (int j = 0; j < self->mel_len[b]; j++)
                e += mw[j] * p[j];
            o[b] = logf(e > FLT_EPSILON ? e : FLT_EPSILON);
        }
    }
    if (flags & GF_FBANK_MEAN_NORM) {
        double mean[GF_FBANK_BINS] = { 0 };
        for (size_t f = 0; f < frames; f++)
            for (int b = 0; b < GF_FBANK_BINS; b++)
                mean[b] += out[f * GF_FBANK_BINS + b];
        for (int b = 0; b < GF_FBANK_BINS; b++)
            mean[b] /= (double)frames;
        for (size_t f = 0; f < frames; f++)
            for (int b = 0; b < GF_FBANK_BINS; b++)
                out[f * GF_FBANK_BINS + b] = (float)(out[f * GF_FBANK_BINS + b] - mean[b]);
    }
    return 0;
}

const float *gf_fbank_window(const gf_fbank *self)
{
    return self->window;
}

void gf_fbank_mel_dense(const gf_fbank *self, float out[GF_FBANK_BINS * GF_FBANK_FFT / 2])
{
    memset(out, 0, sizeof(float) * GF_FBANK_BINS * NBINS);
    for (int b = 0; b < GF_FBANK_BINS; b++)
        for (int j = 0; j < self->mel_len[b]; j++)
            out[b * NBINS + self->mel_first[b] + j] = self->mel_w[self->mel_off[b] + j];
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static gf_fbank *default_ctx; /* written once under default_once, then read-only */

static void default_init(void)
{
    default_ctx = gf_fbank_new();
}

int gf_fbank_compute(const float *wave16k, size_t n_samples, float *out, size_t *n_frames)
{
    pthread_once(&default_once, default_init);
    return gf_fbank_run(default_ctx, wave16k, n_samples, out, n_frames, GF_FBANK_MEAN_NORM);
}
