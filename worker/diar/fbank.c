/* fbank.c — Kaldi-compatible log-mel filterbank (see fbank.h).
 *
 * The embedding stage's front end: the CPU reference the GPU route must
 * match, and fast enough on its own (a radix-2 FFT of 256 complex points
 * computes each 512-point real FFT). The tables are built the way
 * torchaudio's compliance.kaldi builds them, in float32 and in the same
 * order of operations, so that the features agree with the reference to a
 * few float32 ulps wherever the spectrum is well above rounding noise
 * (docs/audio.md, tests/integration/fbank_parity.sh). */
#include "worker/diar/fbank.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NC (GF_FBANK_FFT / 2)        /* complex FFT length for the real FFT */
#define NBINS (GF_FBANK_FFT / 2)     /* power bins that mel banks weight (Nyquist excluded) */
#define LOW_HZ 20.0
#define HIGH_HZ 8000.0
#define PREEMPH 0.97f
#define SCALE 32768.0f

struct gf_fbank {
    float window[GF_FBANK_FRAME];   /* symmetric Hamming, float32 as torch builds it */
    float tw_re[NC / 2];            /* e^{-2 pi i k / 256}: the complex FFT's twiddles */
    float tw_im[NC / 2];
    float rt_re[NC];                /* e^{-2 pi i k / 512}: the real-FFT split */
    float rt_im[NC];
    unsigned short bitrev[NC];      /* bit-reversal permutation of 0..255 */
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

gf_fbank *gf_fbank_new(void)
{
    gf_fbank *self = gf_calloc(1, sizeof *self);
    /* torch.hamming_window(400, periodic=False): arange * (2 pi / 399) in
     * float32, cos, * -0.46, + 0.54. */
    float step = (float)(M_PI * 2.0 / (GF_FBANK_FRAME - 1));
    for (int n = 0; n < GF_FBANK_FRAME; n++)
        self->window[n] = cosf((float)n * step) * -0.46f + 0.54f;
    for (int k = 0; k < NC / 2; k++) {
        self->tw_re[k] = (float)cos(-2.0 * M_PI * k / NC);
        self->tw_im[k] = (float)sin(-2.0 * M_PI * k / NC);
    }
    for (int k = 0; k < NC; k++) {
        self->rt_re[k] = (float)cos(-2.0 * M_PI * k / GF_FBANK_FFT);
        self->rt_im[k] = (float)sin(-2.0 * M_PI * k / GF_FBANK_FFT);
    }
    int bits = 0;
    while ((1 << bits) < NC)
        bits++;
    for (int i = 0; i < NC; i++) {
        int r = 0;
        for (int b = 0; b < bits; b++)
            if (i & (1 << b))
                r |= 1 << (bits - 1 - b);
        self->bitrev[i] = (unsigned short)r;
    }
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

/* In-place iterative radix-2 FFT of NC complex points (input already in
 * bit-reversed order). */
static void fft_nc(const gf_fbank *self, float *re, float *im)
{
    for (int len = 2; len <= NC; len <<= 1) {
        int half = len >> 1, tstep = NC / len;
        for (int i = 0; i < NC; i += len) {
            for (int j = 0; j < half; j++) {
                float wr = self->tw_re[j * tstep], wi = self->tw_im[j * tstep];
                int a = i + j, b = a + half;
                float xr = re[b] * wr - im[b] * wi;
                float xi = re[b] * wi + im[b] * wr;
                re[b] = re[a] - xr;
                im[b] = im[a] - xi;
                re[a] += xr;
                im[a] += xi;
            }
        }
    }
}

/* Power spectrum bins 0..255 of a 512-point real frame x (zero beyond 400). */
static void power_spectrum(const gf_fbank *self, const float *x, float *power)
{
    float re[NC], im[NC];
    for (int n = 0; n < NC; n++) {
        int r = self->bitrev[n];
        re[r] = x[2 * n];
        im[r] = x[2 * n + 1];
    }
    fft_nc(self, re, im);
    /* X[k] = E[k] + W^k O[k], E = (Z[k] + conj Z[N-k]) / 2,
     * O = (Z[k] - conj Z[N-k]) / 2i, W = e^{-2 pi i / 512}. */
    for (int k = 0; k < NC; k++) {
        int m = (NC - k) & (NC - 1);
        float zr = re[k], zi = im[k], cr = re[m], ci = -im[m];
        float er = 0.5f * (zr + cr), ei = 0.5f * (zi + ci);
        float dr = zr - cr, di = zi - ci;
        float or_ = 0.5f * di, oi = -0.5f * dr; /* (d) / (2i) */
        float wr = self->rt_re[k], wi = self->rt_im[k];
        float xr = er + (or_ * wr - oi * wi);
        float xi = ei + (or_ * wi + oi * wr);
        power[k] = xr * xr + xi * xi;
    }
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
