/* reconstruct.c — frame-level diarization and turns (reconstruct.h),
 * following pyannote's SpeakerDiarization.reconstruct / to_diarization and
 * the Binarize of its to_annotation (onset = offset = 0.5, no padding). */
#include "diar/cluster/reconstruct.h"

#include "common/util.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Global frames per reconstruction task: tasks write disjoint rows. */
#define FRAMES_PER_TASK 4096

typedef struct {
    const float *seg;       /* n_chunks x n_frames x n_spk */
    size_t n_chunks, n_frames, n_spk;
    const int8_t *hard;     /* n_chunks x n_spk */
    const uint8_t *count;   /* n_total */
    const size_t *off;      /* n_chunks: first global frame of each chunk */
    size_t n_total;         /* global frames */
    size_t K, W;            /* clusters; output columns (K padded to max(count)) */
    float *act;             /* per worker: FRAMES_PER_TASK x K activity */
    size_t *order;          /* per worker: W cluster indices */
    float *out;             /* n_total x W */
} recon_job;

/* Frames [t0, t1): the clustered segmentation (per chunk and cluster, the
 * maximum over its speakers; NaN where the cluster has none) added up in
 * chunk order on the global grid, as gf_aggregate(skip_average, missing 0)
 * would, then the count[t] most active clusters marked. */
static void recon_task(void *arg, int worker, int task)
{
    recon_job *j = arg;
    size_t K = j->K, W = j->W, S = j->n_spk, F = j->n_frames;
    size_t t0 = (size_t)task * FRAMES_PER_TASK;
    size_t t1 = t0 + FRAMES_PER_TASK < j->n_total ? t0 + FRAMES_PER_TASK : j->n_total;
    float *act = j->act + (size_t)worker * FRAMES_PER_TASK * (K ? K : 1);
    size_t *order = j->order + (size_t)worker * (W ? W : 1);
    memset(act, 0, (t1 - t0) * K * sizeof *act);
    for (size_t c = 0; c < j->n_chunks; c++) {
        size_t off = j->off[c];
        if (off >= t1 || off + F <= t0)
            continue;
        size_t f0 = off < t0 ? t0 - off : 0;
        size_t f1 = off + F < t1 ? F : t1 - off;
        const int8_t *h = j->hard + c * S;
        for (size_t s = 0; s < S; s++) {
            int k = h[s];
            bool first = k >= 0;
            for (size_t q = 0; q < s && first; q++)
                first = h[q] != k;
            if (!first)
                continue;   /* no cluster, or taken with an earlier speaker */
            for (size_t f = f0; f < f1; f++) {
                const float *row = j->seg + (c * F + f) * S;
                float m = row[s];
                for (size_t q = s + 1; q < S; q++)
                    if (h[q] == k && (isnan(m) || row[q] > m))
                        m = row[q];
                if (isnan(m))
                    continue;
                float *a = act + (off + f - t0) * K + (size_t)k;
                *a = (float)((double)*a + (double)m);
            }
        }
    }
    for (size_t t = t0; t < t1; t++) {
        if (j->count[t] == 0)
            continue;
        const float *a = act + (t - t0) * K;
        /* stable sort of clusters by decreasing activity */
        for (size_t i = 0; i < W; i++)
            order[i] = i;
        for (size_t i = 1; i < W; i++) {
            size_t x = order[i];
            float vx = x < K ? a[x] : 0.0f;
            size_t b = i;
            while (b > 0) {
                size_t y = order[b - 1];
                float vy = y < K ? a[y] : 0.0f;
                if (vy >= vx)
                    break;
                order[b] = y;
                b--;
            }
            order[b] = x;
        }
        for (size_t i = 0; i < j->count[t] && i < W; i++)
            j->out[t * W + order[i]] = 1.0f;
    }
}

float *gf_reconstruct(const float *seg, size_t n_chunks, size_t n_frames, size_t n_spk,
                      const int8_t *hard, const uint8_t *count, const gf_swin *chunks,
                      const gf_swin *frames, gf_par *par, size_t *n_clusters)
{
    int kmax = -1;
    for (size_t i = 0; i < n_chunks * n_spk; i++)
        if (hard[i] > kmax)
            kmax = hard[i];
    size_t K = (size_t)(kmax + 1);
    size_t n_total = gf_aggregate_frames(chunks, n_chunks, frames);
    size_t maxc = 0;
    for (size_t t = 0; t < n_total; t++)
        if (count[t] > maxc)
            maxc = count[t];
    size_t W = K > maxc ? K : maxc;   /* padded with never-active columns */
    float *out = gf_calloc(n_total * (W ? W : 1), sizeof *out);
    int workers = gf_par_threads(par);
    size_t *off = gf_aggregate_offsets(chunks, n_chunks, frames);
    recon_job j = {
        .seg = seg, .n_chunks = n_chunks, .n_frames = n_frames, .n_spk = n_spk, .hard = hard,
        .count = count, .off = off, .n_total = n_total, .K = K, .W = W,
        .act = gf_malloc((size_t)workers * FRAMES_PER_TASK * (K ? K : 1) * sizeof(float)),
        .order = gf_malloc((size_t)workers * (W ? W : 1) * sizeof(size_t)),
        .out = out,
    };
    int ntasks = (int)((n_total + FRAMES_PER_TASK - 1) / FRAMES_PER_TASK);
    gf_par_run(par, ntasks, recon_task, &j);
    free(j.order);
    free(j.act);
    free(off);
    *n_clusters = W;
    return out;
}

static int seg_cmp(const void *pa, const void *pb)
{
    const gf_segment *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return (a->label > b->label) - (a->label < b->label);
}

gf_segment *gf_reconstruct_turns(const float *diar, size_t n_total, size_t n_clusters,
                                 const gf_swin *grid, double min_duration_off, size_t *n)
{
    size_t cap = 16, len = 0;
    gf_segment *v = gf_malloc(cap * sizeof *v);
    for (size_t k = 0; k < n_clusters && n_total > 0; k++) {
        size_t first = len;
        double start = gf_swin_middle(grid, 0);
        int active = diar[k] > 0.5f;
        /* frame middles are needed only where the state switches */
        for (size_t i = 1; i < n_total; i++) {
            float y = diar[i * n_clusters + k];
            if (active) {
                if (y < 0.5f) {
                    double t = gf_swin_middle(grid, i);
                    if (len == cap)
                        v = gf_realloc(v, (cap *= 2) * sizeof *v);
                    v[len++] = (gf_segment){ start, t, (int)k };
                    start = t;
                    active = 0;
                }
            } else if (y > 0.5f) {
                start = gf_swin_middle(grid, i);
                active = 1;
            }
        }
        if (active) {
            if (len == cap)
                v = gf_realloc(v, (cap *= 2) * sizeof *v);
            v[len++] = (gf_segment){ start, gf_swin_middle(grid, n_total - 1), (int)k };
        }
        /* drop empty segments (pyannote.core: duration <= 1 us) */
        size_t w = first;
        for (size_t i = first; i < len; i++)
            if (v[i].end - v[i].start > 1e-6)
                v[w++] = v[i];
        len = w;
        if (min_duration_off > 0.0 && len - first > 1) {
            /* merge same-speaker turns whose gap is shorter than the collar */
            w = first;
            for (size_t i = first + 1; i < len; i++) {
                double gap = v[i].start - v[w].end;
                if (!(gap > 1e-6) || gap < min_duration_off) {
                    if (v[i].end > v[w].end)
                        v[w].end = v[i].end;
                    if (v[i].start < v[w].start)
                        v[w].start = v[i].start;
                } else {
                    v[++w] = v[i];
                }
            }
            len = w + 1;
        }
    }
    qsort(v, len, sizeof *v, seg_cmp);
    *n = len;
    return v;
}
