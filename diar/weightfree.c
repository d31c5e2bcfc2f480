/* weightfree.c — the pipeline's weight-free mode (weightfree.h): energy
 * voice activity on the segmentation's frame grid, cepstral statistics of
 * the fbank per half-second block, and the block clustering that gives each
 * window its local speakers. Everything here is plain C on the host; the
 * run loop (pipeline.c) streams the windows and calls it per batch. */
#include "diar/weightfree.h"

#include "common/error.h"
#include "common/util.h"
#include "diar/io/audio.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the segmentation frame grid in samples: 0.0619375 s long, 0.016875 s apart */
#define VAD_FRAME_LEN 991
#define VAD_FRAME_STEP 270
#define VAD_ABS_FLOOR_DB (-60.0)  /* never speech below this (dBFS) */
#define VAD_MARGIN_DB 12.0        /* speech: this far above the noise floor */
#define VAD_FLOOR_RISE_DB 3.0     /* how fast the floor may rise per window */
#define VAD_MIN_SPEECH 4          /* frames: shorter speech runs are dropped */
#define VAD_MAX_GAP 20            /* frames: shorter pauses are bridged */

#define WF_BLOCK_FBANK ((int)(GF_DIAR_WF_BLOCK * 100.0 + 0.5))  /* fbank frames per block */
#define WF_BLOCKS_PER_STEP ((size_t)(1.0 / GF_DIAR_WF_BLOCK + 0.5))
#define WF_BLOCKS_PER_WINDOW (10 * WF_BLOCKS_PER_STEP)

static double secs(uint64_t t0)
{
    return (double)(gf_now_ns() - t0) * 1e-9;
}

/* ---- energy voice activity -------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void gf_diar_energy_vad(const float *win, size_t valid, double *noise_db, float *act)
{
    double db[GF_DIAR_FRAMES], sorted[GF_DIAR_FRAMES];
    int n_valid = 0;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        size_t a = (size_t)f * VAD_FRAME_STEP;
        size_t b = a + VAD_FRAME_LEN;
        act[f] = 0.0f;
        /* a frame counts when most of it is audio, not padding */
        if (a >= valid || (b > valid && valid - a < VAD_FRAME_LEN / 2)) {
            db[f] = -INFINITY;
            continue;
        }
        if (b > valid)
            b = valid;
        double e = 0.0;
        for (size_t i = a; i < b; i++)
            e += (double)win[i] * win[i];
        db[f] = 10.0 * log10(e / (double)(b - a) + 1e-12);
        sorted[n_valid++] = db[f];
    }
    if (n_valid == 0)
        return;
    qsort(sorted, (size_t)n_valid, sizeof *sorted, cmp_double);
    double p10 = sorted[n_valid / 10];
    if (isnan(*noise_db) || p10 < *noise_db)
        *noise_db = p10;
    else if (p10 > *noise_db + VAD_FLOOR_RISE_DB)
        *noise_db += VAD_FLOOR_RISE_DB;
    else
        *noise_db = p10;
    double thr = *noise_db + VAD_MARGIN_DB;
    if (thr < VAD_ABS_FLOOR_DB)
        thr = VAD_ABS_FLOOR_DB;
    for (int f = 0; f < GF_DIAR_FRAMES; f++)
        act[f] = db[f] > thr ? 1.0f : 0.0f;
    /* drop speech blips, then bridge short pauses between speech */
    for (int f = 0; f < GF_DIAR_FRAMES;) {
        if (act[f] == 0.0f) {
            f++;
            continue;
        }
        int e = f;
        while (e < GF_DIAR_FRAMES && act[e] != 0.0f)
            e++;
        if (e - f < VAD_MIN_SPEECH)
            for (int k = f; k < e; k++)
                act[k] = 0.0f;
        f = e;
    }
    int last = -1;
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        if (act[f] == 0.0f)
            continue;
        if (last >= 0 && f - last - 1 > 0 && f - last - 1 < VAD_MAX_GAP)
            for (int k = last + 1; k < f; k++)
                act[k] = 1.0f;
        last = f;
    }
}

/* ---- fbank statistics ------------------------------------------------- */

/* a window holds WF_BLOCKS_PER_WINDOW blocks; n windows at most n times as
 * many (at the default step, (n - 1) * WF_BLOCKS_PER_STEP + WF_BLOCKS_PER_WINDOW) */
size_t gf_diar_max_blocks(size_t n_windows)
{
    return n_windows * WF_BLOCKS_PER_WINDOW;
}

static size_t step_of(const gf_diar_wf_blocks *wb)
{
    return wb->step ? wb->step : GF_DIAR_STEP;
}

/* segmentation frame (of the 589) nearest to fbank frame k, by centres */
static int seg_frame_of_fbank(size_t k)
{
    long centre = (long)k * GF_FBANK_SHIFT + GF_FBANK_FRAME / 2;
    long f = (centre - VAD_FRAME_LEN / 2 + VAD_FRAME_STEP / 2) / VAD_FRAME_STEP;
    if (f < 0)
        f = 0;
    if (f >= GF_DIAR_FRAMES)
        f = GF_DIAR_FRAMES - 1;
    return (int)f;
}

/* Mean and std of the cepstra 1..GF_DIAR_WF_CEPS (DCT-II of the log-mel
 * row; c0, the loudness, left out) of fbank rows k0..k1 under act; returns
 * the rows used. */
static size_t range_stats(const float *fbank, size_t k0, size_t k1, const float *act, float *out)
{
    enum { C = GF_DIAR_WF_CEPS };
    double dct[C][GF_FBANK_BINS];
    for (int i = 0; i < C; i++)
        for (int m = 0; m < GF_FBANK_BINS; m++)
            dct[i][m] = cos(M_PI * (i + 1) * (m + 0.5) / GF_FBANK_BINS);
    double sum[C] = { 0 }, sq[C] = { 0 };
    size_t used = 0;
    for (size_t k = k0; k < k1; k++) {
        if (act[seg_frame_of_fbank(k)] == 0.0f)
            continue;
        const float *row = fbank + k * GF_FBANK_BINS;
        for (int i = 0; i < C; i++) {
            double v = 0.0;
            for (int m = 0; m < GF_FBANK_BINS; m++)
                v += dct[i][m] * row[m];
            sum[i] += v;
            sq[i] += v * v;
        }
        used++;
    }
    for (int i = 0; i < C; i++) {
        if (!used) {
            out[i] = out[C + i] = NAN;
            continue;
        }
        double mean = sum[i] / (double)used;
        double var = sq[i] / (double)used - mean * mean;
        out[i] = (float)mean;
        out[C + i] = (float)sqrt(var > 0.0 ? var : 0.0);
    }
    return used;
}

size_t gf_diar_fbank_stats(const float *fbank, size_t n_fbank, const float *act, float *out)
{
    return range_stats(fbank, 0, n_fbank, act, out);
}

void gf_diar_wf_normalise(float *emb, size_t n, size_t dim)
{
    double *mean = gf_calloc(dim, sizeof *mean), *sd = gf_calloc(dim, sizeof *sd);
    size_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        const float *e = emb + i * dim;
        if (isnan(e[0]))
            continue;
        for (size_t d = 0; d < dim; d++)
            mean[d] += e[d];
        rows++;
    }
    if (rows == 0)
        goto out_free;
    for (size_t d = 0; d < dim; d++)
        mean[d] /= (double)rows;
    for (size_t i = 0; i < n; i++) {
        const float *e = emb + i * dim;
        if (isnan(e[0]))
            continue;
        for (size_t d = 0; d < dim; d++)
            sd[d] += (e[d] - mean[d]) * (e[d] - mean[d]);
    }
    for (size_t d = 0; d < dim; d++)
        sd[d] = sqrt(sd[d] / (double)rows);
    for (size_t i = 0; i < n; i++) {
        float *e = emb + i * dim;
        if (isnan(e[0]))
            continue;
        double norm = 0.0;
        for (size_t d = 0; d < dim; d++) {
            double v = e[d] - mean[d];
            if (sd[d] > 1e-6)
                v /= sd[d];
            e[d] = (float)v;
            norm += v * v;
        }
        norm = sqrt(norm);
        /* a row equal to the mean stays the zero vector's neighbour: tiny
         * constant direction so that it is finite */
        for (size_t d = 0; d < dim; d++)
            e[d] = norm > 1e-12 ? (float)(e[d] / norm) : (float)(1.0 / sqrt((double)dim));
    }
out_free:
    free(mean);
    free(sd);
}

/* ---- the stream and the blocks' clustering ---------------------------- */

void gf_diar_wf_add_blocks(const float *feats, size_t nf, const float *act, size_t w,
                           size_t valid, gf_diar_wf_blocks *wb)
{
    /* the global grid's blocks from the first that starts in this window;
     * those that start before it and were not held whole by an earlier
     * window (only with steps near the window's length) stay NaN */
    const size_t blk = (size_t)WF_BLOCK_FBANK * GF_FBANK_SHIFT, w_start = w * step_of(wb);
    size_t first = (w_start + blk - 1) / blk;
    for (size_t g = wb->n; g < first; g++) {
        if (g >= wb->cap) {
            wb->cap = 2 * (g + 1);
            wb->vec = gf_realloc(wb->vec, wb->cap * GF_DIAR_WF_DIM * sizeof *wb->vec);
        }
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            wb->vec[g * GF_DIAR_WF_DIM + (size_t)k] = NAN;
        wb->n = g + 1;
    }
    for (size_t j = 0; j < WF_BLOCKS_PER_WINDOW; j++) {
        size_t g = first + j;
        size_t start = g * blk - w_start;   /* in the window; a multiple of 10 ms */
        if (g < wb->n || start >= valid || start + blk > GF_DIAR_WINDOW)
            continue;
        if (g >= wb->cap) {
            wb->cap = 2 * (g + 1);
            wb->vec = gf_realloc(wb->vec, wb->cap * GF_DIAR_WF_DIM * sizeof *wb->vec);
        }
        size_t k0 = start / GF_FBANK_SHIFT, k1 = k0 + (size_t)WF_BLOCK_FBANK;
        if (k1 > nf)
            k1 = nf;
        float *v = wb->vec + g * GF_DIAR_WF_DIM;
        if (k0 >= k1 || range_stats(feats, k0, k1, act, v) < GF_DIAR_WF_MIN_FRAMES)
            for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                v[k] = NAN;
        wb->n = g + 1;
    }
}

int gf_diar_wf_batch(const gf_fbank *fbank, float *feats, const float *wave, const size_t *valid,
                     int nb, size_t w0, float *seg, gf_diar_wf_blocks *wb, gf_devstats *stats,
                     gf_diar_result *res)
{
    for (int b = 0; b < nb; b++) {
        const float *w = wave + (size_t)b * GF_DIAR_WINDOW;
        float *act = seg + (size_t)b * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        float vad[GF_DIAR_FRAMES];
        uint64_t t0 = gf_now_ns();
        if (wb->vad.vad)
            gf_diar_vad_window(&wb->vad, w, valid[b], (w0 + (size_t)b) * step_of(wb), vad);
        else
            gf_diar_energy_vad(w, valid[b], &wb->noise_db, vad);
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            act[f * GF_DIAR_SPEAKERS] = vad[f];
            act[f * GF_DIAR_SPEAKERS + 1] = 0.0f;
            act[f * GF_DIAR_SPEAKERS + 2] = 0.0f;
        }
        res->t_segmentation += secs(t0);
        if (stats)
            gf_devstats_unavailable(stats, wb->vad.vad ? "vad.silero" : "vad.energy", "cpu",
                                    "cpu card");

        t0 = gf_now_ns();
        size_t nf = 0;
        int rc = gf_fbank_run(fbank, w, GF_DIAR_WINDOW, feats, &nf, 0);
        if (rc)
            return rc;
        res->t_fbank += secs(t0);
        if (stats)
            gf_devstats_unavailable(stats, "fbank", "cpu", "cpu card");

        /* the blocks of this window no earlier window held */
        t0 = gf_now_ns();
        gf_diar_wf_add_blocks(feats, nf, vad, w0 + (size_t)b, valid[b], wb);
        res->t_embedding += secs(t0);
        if (stats)
            gf_devstats_unavailable(stats, "embedding.fbank_stats", "cpu", "cpu card");
    }
    return 0;
}

/* Unit mean of the unit vectors among rows lo..hi-1 of vec that have one
 * (NaN rows skipped); out NaN when none has. */
static void mean_direction(const float *vec, size_t lo, size_t hi, float *out)
{
    double sum[GF_DIAR_WF_DIM] = { 0 }, norm = 0.0;
    size_t used = 0;
    for (size_t j = lo; j < hi; j++) {
        const float *v = vec + j * GF_DIAR_WF_DIM;
        if (isnan(v[0]))
            continue;
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            sum[k] += v[k];
        used++;
    }
    for (int k = 0; k < GF_DIAR_WF_DIM; k++)
        norm += sum[k] * sum[k];
    norm = sqrt(norm);
    for (int k = 0; k < GF_DIAR_WF_DIM; k++)
        out[k] = used && norm > 1e-12 ? (float)(sum[k] / norm) : NAN;
}

/* The blocks' clusters: segments of GF_DIAR_WF_SEG_BLOCKS blocks on the
 * block grid, each the mean direction of its blocks' vectors, clustered
 * spectrally (spectral.h; a speaker counted needs GF_DIAR_WF_SPEAKER_SEGS
 * segments); a block with a vector takes its segment's cluster, one without
 * -1. Returns the cluster count or a GF_E*. */
static int cluster_blocks(const float *vec, size_t nb, const gf_spectral_opts *so, int *label)
{
    enum { S = GF_DIAR_WF_SEG_BLOCKS };
    size_t ns = (nb + S - 1) / S;
    float *sv = gf_malloc((ns ? ns : 1) * GF_DIAR_WF_DIM * sizeof *sv);
    int *sl = gf_malloc((ns ? ns : 1) * sizeof *sl);
    for (size_t j = 0; j < ns; j++)
        mean_direction(vec, j * S, (j + 1) * S < nb ? (j + 1) * S : nb, sv + j * GF_DIAR_WF_DIM);
    gf_spectral_opts o = *so;
    o.min_rows = GF_DIAR_WF_SPEAKER_SEGS;
    int K = gf_spectral_cluster(sv, ns, GF_DIAR_WF_DIM, &o, sl);
    for (size_t j = 0; j < nb; j++)
        label[j] = K > 0 && !isnan(vec[j * GF_DIAR_WF_DIM]) ? sl[j / S] : -1;
    free(sv);
    free(sl);
    return K;
}

/* The blocks' clusters (cluster_blocks); those with too little speech take
 * the nearest labelled block's; each cluster's unit centroid becomes the
 * embedding of every local speaker it gives, so that the clustering proper
 * finds the same clusters. */
int gf_diar_wf_local_speakers(gf_diar_wf_blocks *wb, float *seg, float *emb, size_t n_windows,
                              const gf_spectral_opts *so)
{
    size_t nb = wb->n;
    gf_diar_wf_normalise(wb->vec, nb, GF_DIAR_WF_DIM);
    int *label = gf_malloc((nb ? nb : 1) * sizeof *label);
    int rc = cluster_blocks(wb->vec, nb, so, label), K = 0;
    if (rc < 0)
        goto out_free;
    K = rc;
    rc = 0;
    /* blocks with too little speech take the label of the nearest labelled block */
    if (K > 0) {
        int *filled = gf_malloc(nb * sizeof *filled);
        for (size_t j = 0; j < nb; j++) {
            filled[j] = label[j];
            for (size_t r = 1; filled[j] < 0 && r < nb; r++) {
                if (j >= r && label[j - r] >= 0)
                    filled[j] = label[j - r];
                else if (j + r < nb && label[j + r] >= 0)
                    filled[j] = label[j + r];
            }
        }
        memcpy(label, filled, nb * sizeof *label);
        free(filled);
    }
    /* each block cluster's centroid, unit length: the embedding of every
     * local speaker it becomes, so that the clustering proper finds the
     * same clusters */
    size_t Kz = (size_t)(K ? K : 1);
    double *cent = gf_calloc(Kz * GF_DIAR_WF_DIM, sizeof *cent);
    for (size_t j = 0; j < nb; j++)
        if (label[j] >= 0 && !isnan(wb->vec[j * GF_DIAR_WF_DIM]))
            for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                cent[(size_t)label[j] * GF_DIAR_WF_DIM + (size_t)k] +=
                    wb->vec[j * GF_DIAR_WF_DIM + (size_t)k];
    for (int c = 0; c < K; c++) {
        double *v = cent + (size_t)c * GF_DIAR_WF_DIM, norm = 0.0;
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            norm += v[k] * v[k];
        norm = sqrt(norm);
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            v[k] = norm > 1e-12 ? v[k] / norm : 1.0 / sqrt((double)GF_DIAR_WF_DIM);
    }
    size_t *count = gf_calloc(Kz, sizeof *count);
    for (size_t c = 0; c < n_windows; c++) {
        float *act = seg + c * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        int fl[GF_DIAR_FRAMES];  /* block cluster of each speech frame, -1: silence */
        memset(count, 0, Kz * sizeof *count);
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            fl[f] = -1;
            if (act[f * GF_DIAR_SPEAKERS] == 0.0f)
                continue;
            double t = ((double)c * (double)step_of(wb) + f * VAD_FRAME_STEP + VAD_FRAME_LEN / 2)
                       / (double)GF_AUDIO_RATE;
            size_t j = (size_t)(t / GF_DIAR_WF_BLOCK);
            if (j >= nb)
                j = nb - 1;
            fl[f] = label[j];
            if (fl[f] >= 0)
                count[fl[f]]++;
        }
        int local[GF_DIAR_SPEAKERS];  /* block cluster of each local speaker */
        for (int s = 0; s < GF_DIAR_SPEAKERS; s++) {
            local[s] = -1;
            size_t best = 0;
            for (int k = 0; k < K; k++)
                if (count[k] > best && (s < 1 || k != local[0]) && (s < 2 || k != local[1])) {
                    best = count[k];
                    local[s] = k;
                }
        }
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            int ls = -1;
            double best = -INFINITY;
            for (int s = 0; fl[f] >= 0 && s < GF_DIAR_SPEAKERS && local[s] >= 0; s++) {
                if (fl[f] == local[s]) {
                    ls = s;
                    break;
                }
                /* a fourth cluster in this window: the closest of the three */
                double dot = 0.0;
                for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                    dot += cent[(size_t)fl[f] * GF_DIAR_WF_DIM + (size_t)k]
                           * cent[(size_t)local[s] * GF_DIAR_WF_DIM + (size_t)k];
                if (dot > best) {
                    best = dot;
                    ls = s;
                }
            }
            for (int s = 0; s < GF_DIAR_SPEAKERS; s++)
                act[f * GF_DIAR_SPEAKERS + s] = s == ls ? 1.0f : 0.0f;
        }
        for (int s = 0; s < GF_DIAR_SPEAKERS; s++) {
            float *e = emb + (c * GF_DIAR_SPEAKERS + (size_t)s) * GF_DIAR_WF_DIM;
            for (int k = 0; k < GF_DIAR_WF_DIM; k++)
                e[k] = local[s] >= 0 ? (float)cent[(size_t)local[s] * GF_DIAR_WF_DIM + (size_t)k]
                                     : NAN;
        }
    }
    free(cent);
    free(count);
out_free:
    free(label);
    return rc;
}
