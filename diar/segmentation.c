/* segmentation.c — segmentation-3.0 forward pass on the CPU.
 *
 * Composes the CPU reference ops of kernels/: per window, SincNet (waveform
 * instance norm, sinc filterbank |conv|, then three stages of max-pool 3,
 * instance norm, leaky ReLU with conv 80→60 and 60→60 in between); then for
 * the whole batch at once the 4-layer bidirectional LSTM (input projections
 * for all steps in one sgemm, each recurrent step one sgemm over the batch),
 * the linear head and the log-softmax. Tensor names and conventions:
 * MODELS.md and docs/models.md. */
#include "diar/segmentation.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "kernels/segconv/segconv_cpu.h"
#include "kernels/segconv/segconv_cpu.h"
#include "kernels/dense/dense_cpu.h"
#include "kernels/dense/dense_cpu.h"
#include "kernels/lstm/lstm_cpu.h"
#include "kernels/segconv/segconv_cpu.h"
#include "kernels/sincnet/sincnet_cpu.h"
#include "common/par.h"
#include "diar/io/safetensors.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NF 80           /* sinc filters */
#define NP (NF / 2)     /* learned (low, band) pairs */
#define KS 251          /* sinc taps */
#define HK (KS / 2)     /* half window */
#define STRIDE 10
#define C2 GF_SEG_LSTM_IN /* channels after the two convs */
#define KC 5            /* conv kernel */
#define H GF_SEG_LSTM_HIDDEN
#define LAYERS GF_SEG_LSTM_LAYERS
#define L0 128          /* linear sizes */
#define SLOPE 0.01f
#define EPS 1e-5f

typedef struct {
    float *w_ih;     /* both directions' input weights stacked [8H, In] */
    float *bias;     /* b_ih + b_hh of both directions [8H] */
    float *whT[2];   /* recurrent weights packed by gf_lstm_pack_cpu, per direction */
} lstm_layer;

/* Workspace for SincNet on one window. */
typedef struct {
    float *wn;                   /* normalised waveform [GF_SEG_SAMPLES] */
    float *sinc;                 /* [NF, t_sinc] */
    double *col;                 /* sinc im2col tile */
    float *p1, *c2, *p2, *c3;    /* stage outputs */
    float *p3;                   /* [C2, t_p3] */
} sinc_ws;

struct gf_segmentation {
    gf_safetensors *st;          /* the mapped file the weights point into */
    int max_batch;               /* workspace capacity in windows */
    /* sizes along the way (frames) */
    int t_sinc, t_p1, t_c2, t_p2, t_c3, t_p3;
    /* weights */
    const float *wav_w, *wav_b;  /* waveform instance norm [1] */
    double *fb_cos, *fb_sin;     /* sinc filterbank halves [NP, HK+1], [NP, HK] */
    float *conv1_wk, *conv2_wk;  /* packed [KC, C2, Cin] */
    const float *conv1_b, *conv2_b;
    const float *norm_w[3], *norm_b[3];
    lstm_layer lstm[LAYERS];     /* packed at load time */
    const float *lin_w[2], *lin_b[2], *cls_w, *cls_b;
    gf_par *par;                 /* threads: windows of SincNet, LSTM directions */
    sinc_ws *sws;                /* one SincNet workspace per thread */
    /* workspace, whole batch */
    float *x0;                   /* LSTM input [B, T, C2] */
    float *ha, *hb;              /* LSTM layer outputs [B, T, 2H] */
    float *gates;                /* [B*T, 8H]: both directions */
    float *cell[2];              /* [B, H] per direction */
    float *lin0, *lin1;          /* [B*T, L0] */
};

static int load(gf_segmentation *s)
{
    gf_safetensors *st = s->st;
    char name[96];
    s->wav_w = gf_safetensors_get(st, "sincnet.wav_norm1d.weight", 1, 1);
    s->wav_b = gf_safetensors_get(st, "sincnet.wav_norm1d.bias", 1, 1);
    const float *low = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.low_hz_", 2, NP, 1);
    const float *band = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.band_hz_", 2, NP, 1);
    const float *win = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.window_", 1, HK);
    const float *n = gf_safetensors_get(st, "sincnet.conv1d.0.filterbank.n_", 2, 1, HK);
    const float *w1 = gf_safetensors_get(st, "sincnet.conv1d.1.weight", 3, C2, NF, KC);
    s->conv1_b = gf_safetensors_get(st, "sincnet.conv1d.1.bias", 1, C2);
    const float *w2 = gf_safetensors_get(st, "sincnet.conv1d.2.weight", 3, C2, C2, KC);
    s->conv2_b = gf_safetensors_get(st, "sincnet.conv1d.2.bias", 1, C2);
    int ok = s->wav_w && s->wav_b && low && band && win && n && w1 && s->conv1_b && w2 &&
             s->conv2_b;
    for (int i = 0; i < 3; i++) {
        int c = i == 0 ? NF : C2;
        snprintf(name, sizeof name, "sincnet.norm1d.%d.weight", i);
        s->norm_w[i] = gf_safetensors_get(st, name, 1, c);
        snprintf(name, sizeof name, "sincnet.norm1d.%d.bias", i);
        s->norm_b[i] = gf_safetensors_get(st, name, 1, c);
        ok = ok && s->norm_w[i] && s->norm_b[i];
    }
    for (int l = 0; l < LAYERS; l++) {
        const int in = l == 0 ? C2 : 2 * H;
        lstm_layer *ll = &s->lstm[l];
        ll->w_ih = gf_malloc(sizeof(float) * 8 * H * (size_t)in);
        ll->bias = gf_malloc(sizeof(float) * 8 * H);
        for (int d = 0; d < 2; d++) {
            const char *sfx = d ? "_reverse" : "";
            snprintf(name, sizeof name, "lstm.weight_ih_l%d%s", l, sfx);
            const float *w_ih = gf_safetensors_get(st, name, 2, 4 * H, in);
            snprintf(name, sizeof name, "lstm.weight_hh_l%d%s", l, sfx);
            const float *w_hh = gf_safetensors_get(st, name, 2, 4 * H, H);
            snprintf(name, sizeof name, "lstm.bias_ih_l%d%s", l, sfx);
            const float *b_ih = gf_safetensors_get(st, name, 1, 4 * H);
            snprintf(name, sizeof name, "lstm.bias_hh_l%d%s", l, sfx);
            const float *b_hh = gf_safetensors_get(st, name, 1, 4 * H);
            if (!(w_ih && w_hh && b_ih && b_hh)) {
                ok = 0;
                continue;
            }
            memcpy(ll->w_ih + (size_t)d * 4 * H * in, w_ih, sizeof(float) * 4 * H * (size_t)in);
            for (int j = 0; j < 4 * H; j++)
                ll->bias[d * 4 * H + j] = b_ih[j] + b_hh[j];
            ll->whT[d] = gf_malloc(sizeof(float) * 4 * H * H);
            gf_lstm_pack_cpu(w_hh, H, ll->whT[d]);
        }
    }
    s->lin_w[0] = gf_safetensors_get(st, "linear.0.weight", 2, L0, 2 * H);
    s->lin_b[0] = gf_safetensors_get(st, "linear.0.bias", 1, L0);
    s->lin_w[1] = gf_safetensors_get(st, "linear.1.weight", 2, L0, L0);
    s->lin_b[1] = gf_safetensors_get(st, "linear.1.bias", 1, L0);
    s->cls_w = gf_safetensors_get(st, "classifier.weight", 2, GF_SEG_CLASSES, L0);
    s->cls_b = gf_safetensors_get(st, "classifier.bias", 1, GF_SEG_CLASSES);
    ok = ok && s->lin_w[0] && s->lin_b[0] && s->lin_w[1] && s->lin_b[1] && s->cls_w && s->cls_b;
    if (!ok)
        return GF_EINVAL;
    if (gf_safetensors_unused(st) != 0)
        return GF_EINVAL;

    float *f = gf_malloc(sizeof(float) * NF * KS);
    gf_sincfb_build_cpu(low, band, win, n, NP, HK, 16000.0f, f);
    s->fb_cos = gf_malloc(sizeof(double) * NP * (HK + 1));
    s->fb_sin = gf_malloc(sizeof(double) * NP * HK);
    gf_sincfb_halves_cpu(f, NP, HK, s->fb_cos, s->fb_sin);
    free(f);
    s->conv1_wk = gf_malloc(sizeof(float) * KC * C2 * NF);
    gf_conv1d_pack_cpu(w1, C2, NF, KC, s->conv1_wk);
    s->conv2_wk = gf_malloc(sizeof(float) * KC * C2 * C2);
    gf_conv1d_pack_cpu(w2, C2, C2, KC, s->conv2_wk);
    return 0;
}

gf_segmentation *gf_segmentation_new(const char *path, const char *sha256_hex, int max_batch,
                                     int threads)
{
    assert(max_batch >= 1 && threads >= 1);
    gf_segmentation *s = gf_calloc(1, sizeof *s);
    s->max_batch = max_batch;
    s->st = gf_safetensors_open(path, sha256_hex);
    if (!s->st || load(s) != 0) {
        if (s->st)
            GF_ERROR("%s: not a segmentation-3.0 model file", path);
        goto fail;
    }
    s->t_sinc = (GF_SEG_SAMPLES - KS) / STRIDE + 1;
    s->t_p1 = s->t_sinc / 3;
    s->t_c2 = s->t_p1 - KC + 1;
    s->t_p2 = s->t_c2 / 3;
    s->t_c3 = s->t_p2 - KC + 1;
    s->t_p3 = s->t_c3 / 3;
    assert(s->t_p3 == GF_SEG_FRAMES);
    const long B = max_batch, T = GF_SEG_FRAMES;
    s->par = gf_par_new(threads);
    s->sws = gf_calloc((size_t)threads, sizeof *s->sws);
    for (int i = 0; i < threads; i++) {
        sinc_ws *w = &s->sws[i];
        w->wn = gf_malloc(sizeof(float) * GF_SEG_SAMPLES);
        w->sinc = gf_malloc(sizeof(float) * NF * (size_t)s->t_sinc);
        w->col = gf_malloc(sizeof(double) * (size_t)gf_sincconv_col_size(NP, HK));
        w->p1 = gf_malloc(sizeof(float) * NF * (size_t)s->t_p1);
        w->c2 = gf_malloc(sizeof(float) * C2 * (size_t)s->t_c2);
        w->p2 = gf_malloc(sizeof(float) * C2 * (size_t)s->t_p2);
        w->c3 = gf_malloc(sizeof(float) * C2 * (size_t)s->t_c3);
        w->p3 = gf_malloc(sizeof(float) * C2 * (size_t)s->t_p3);
    }
    s->x0 = gf_malloc(sizeof(float) * (size_t)(B * T * C2));
    s->ha = gf_malloc(sizeof(float) * (size_t)(B * T * 2 * H));
    s->hb = gf_malloc(sizeof(float) * (size_t)(B * T * 2 * H));
    s->gates = gf_malloc(sizeof(float) * (size_t)(B * T * 8 * H));
    s->cell[0] = gf_malloc(sizeof(float) * (size_t)(B * H));
    s->cell[1] = gf_malloc(sizeof(float) * (size_t)(B * H));
    s->lin0 = gf_malloc(sizeof(float) * (size_t)(B * T * L0));
    s->lin1 = gf_malloc(sizeof(float) * (size_t)(B * T * L0));
    return s;
fail:
    gf_segmentation_destroy(&s);
    return NULL;
}

void gf_segmentation_destroy(gf_segmentation **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_segmentation *s = *self_p;
    gf_safetensors_destroy(&s->st);
    free(s->fb_cos);
    free(s->fb_sin);
    free(s->conv1_wk);
    free(s->conv2_wk);
    for (int l = 0; l < LAYERS; l++) {
        free(s->lstm[l].w_ih);
        free(s->lstm[l].bias);
        free(s->lstm[l].whT[0]);
        free(s->lstm[l].whT[1]);
    }
    if (s->par) {
        for (int i = 0; i < gf_par_threads(s->par); i++) {
            sinc_ws *w = &s->sws[i];
            free(w->wn);
            free(w->sinc);
            free(w->col);
            free(w->p1);
            free(w->c2);
            free(w->p2);
            free(w->c3);
            free(w->p3);
        }
    }
    free(s->sws);
    gf_par_destroy(&s->par);
    free(s->x0);
    free(s->ha);
    free(s->hb);
    free(s->gates);
    free(s->cell[0]);
    free(s->cell[1]);
    free(s->lin0);
    free(s->lin1);
    free(s);
    *self_p = NULL;
}

/* SincNet on one window: wave [GF_SEG_SAMPLES] → x [T, C2] (frame-major). */
static void sincnet(const gf_segmentation *s, sinc_ws *w, const float *wave, float *x)
{
    for (int i = 0; i < GF_SEG_SAMPLES; i++)
        w->wn[i] = wave[i];
    gf_instnorm_cpu(w->wn, 1, GF_SEG_SAMPLES, s->wav_w, s->wav_b, EPS, 1.0f);
    gf_sincconv_cpu(s->fb_cos, s->fb_sin, NP, HK, w->wn, GF_SEG_SAMPLES, STRIDE, w->sinc, w->col);
    gf_maxpool1d_cpu(w->sinc, NF, s->t_sinc, 3, w->p1);
    gf_instnorm_cpu(w->p1, NF, s->t_p1, s->norm_w[0], s->norm_b[0], EPS, SLOPE);
    gf_conv1d_cpu(w->p1, NF, s->t_p1, s->conv1_wk, s->conv1_b, C2, KC, w->c2);
    gf_maxpool1d_cpu(w->c2, C2, s->t_c2, 3, w->p2);
    gf_instnorm_cpu(w->p2, C2, s->t_p2, s->norm_w[1], s->norm_b[1], EPS, SLOPE);
    gf_conv1d_cpu(w->p2, C2, s->t_p2, s->conv2_wk, s->conv2_b, C2, KC, w->c3);
    gf_maxpool1d_cpu(w->c3, C2, s->t_c3, 3, w->p3);
    gf_instnorm_cpu(w->p3, C2, s->t_p3, s->norm_w[2], s->norm_b[2], EPS, SLOPE);
    for (int c = 0; c < C2; c++)
        for (int t = 0; t < GF_SEG_FRAMES; t++)
            x[t * C2 + c] = w->p3[c * GF_SEG_FRAMES + t];
}

typedef struct {
    gf_segmentation *s;   /* the network */
    const float *wave;    /* [B, GF_SEG_SAMPLES] */
    const float *in;      /* LSTM layer input */
    float *out;           /* LSTM layer output */
    int B, layer;         /* batch, current LSTM layer */
} run_ctx;

static void sinc_task(void *arg, int worker, int b)
{
    run_ctx *r = arg;
    sincnet(r->s, &r->s->sws[worker], r->wave + (long)b * GF_SEG_SAMPLES,
            r->s->x0 + (long)b * GF_SEG_FRAMES * C2);
}

static void lstm_task(void *arg, int worker, int d)
{
    (void)worker;
    run_ctx *r = arg;
    gf_segmentation *s = r->s;
    gf_lstm_dir_cpu(s->gates + d * 4 * H, 8 * H, r->B, GF_SEG_FRAMES, s->lstm[r->layer].whT[d],
                    H, d, r->out + d * H, 2 * H, s->cell[d]);
}

int gf_segmentation_run(gf_segmentation *s, const float *wave, int B, float *logp)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("segmentation: batch of %d windows (1 to %d)", B, s->max_batch);
        return GF_EINVAL;
    }
    const int T = GF_SEG_FRAMES;
    run_ctx r = { .s = s, .wave = wave, .B = B };
    gf_par_run(s->par, B, sinc_task, &r);
    const float *in = s->x0;
    int in_dim = C2;
    float *outs[2] = { s->ha, s->hb };
    for (int l = 0; l < LAYERS; l++) {
        float *out = outs[l % 2];
        const lstm_layer *ll = &s->lstm[l];
        gf_lstm_proj_cpu(in, (long)B * T, in_dim, in_dim, ll->w_ih, ll->bias, 8 * H, s->gates);
        r.layer = l;
        r.out = out;
        gf_par_run(s->par, 2, lstm_task, &r);   /* the two directions side by side */
        in = out;
        in_dim = 2 * H;
    }
    const int N = B * T;
    gf_linear_cpu(in, N, 2 * H, 2 * H, s->lin_w[0], s->lin_b[0], L0, SLOPE, s->lin0);
    gf_linear_cpu(s->lin0, N, L0, L0, s->lin_w[1], s->lin_b[1], L0, SLOPE, s->lin1);
    gf_linear_cpu(s->lin1, N, L0, L0, s->cls_w, s->cls_b, GF_SEG_CLASSES, 1.0f, logp);
    gf_logsoftmax_cpu(logp, N, GF_SEG_CLASSES);
    return 0;
}
