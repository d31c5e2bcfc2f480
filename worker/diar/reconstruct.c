/* reconstruct.c — frame-level diarization and turns (reconstruct.h),
 * following pyannote's SpeakerDiarization.reconstruct / to_diarization and
 * the Binarize of its to_annotation (onset = offset = 0.5, no padding). */
#include "worker/diar/reconstruct.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float *gf_reconstruct(const float *seg, size_t n_chunks, size_t n_frames, size_t n_spk,
                      const int8_t *hard, const uint8_t *count, const gf_swin *chunks,
                      const gf_swin *frames, size_t *n_clusters)
{
    int kmax = -1;
    for (size_t i = 0; i < n_chunks * n_spk; i++)
        if (hard[i] > kmax)
            kmax = hard[i];
    size_t K = (size_t)(kmax + 1);
    size_t n_total = gf_aggregate_frames(chunks, n_chunks, frames);
    /* clustered segmentation: NaN where a cluster has no speaker in a chunk */
    float *cs = gf_malloc((n_chunks * n_frames * (K ? K : 1)) * sizeof *cs);
    for (size_t i = 0; i < n_chunks * n_frames * K; i++)
        cs[i] = NAN;
    for (size_t c = 0; c < n_chunks; c++) {
        for (size_t s = 0; s < n_spk; s++) {
            int k = hard[c * n_spk + s];
            if (k < 0)
                continue;
            for (size_t f = 0; f < n_frames; f++) {
                float v = seg[(c * n_frames + f) * n_spk + s];
                float *o = cs + (c * n_frames + f) * K + (size_t)k;
                if (isnan(*o) || v > *o)
                    *o = v;
            }
        }
    }
    float *act = gf_malloc((n_total * (K ? K : 1)) * sizeof *act);
    gf_aggregate_opts o = { .hamming = false, .skip_average = true, .missing = 0.0f };
    if (K)
        gf_aggregate(cs, n_chunks, n_frames, K, chunks, frames, &o, act);
    free(cs);
    size_t maxc = 0;
    for (size_t t = 0; t < n_total; t++)
        if (count[t] > maxc)
            maxc = count[t];
    size_t W = K > maxc ? K : maxc;   /* padded with never-active columns */
    float *out = gf_calloc(n_total * (W ? W : 1), sizeof *out);
    size_t *order = gf_malloc((W ? W : 1) * sizeof *order);
    for (size_t t = 0; t < n_total; t++) {
        /* stable sort of clusters by decreasing activity */
        for (size_t j = 0; j < W; j++)
            order[j] = j;
        for (size_t a = 1; a < W; a++) {
            size_t x = order[a];
            float vx = x < K ? act[t * K + x] : 0.0f;
            size_t b = a;
            while (b > 0) {
                size_t y = order[b - 1];
                float vy = y < K ? act[t * K + y] : 0.0f;
                if (vy >= vx)
                    break;
                order[b] = y;
                b--;
            }
            order[b] = x;
        }
        for (size_t i = 0; i < count[t] && i < W; i++)
            out[t * W + order[i]] = 1.0f;
    }
    free(order);
    free(act);
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
        double t = start;
        for (size_t i = 1; i < n_total; i++) {
            t = gf_swin_middle(grid, i);
            float y = diar[i * n_clusters + k];
            if (active) {
                if (y < 0.5f) {
                    if (len == cap)
                        v = gf_realloc(v, (cap *= 2) * sizeof *v);
                    v[len++] = (gf_segment){ start, t, (int)k };
                    start = t;
                    active = 0;
                }
            } else if (y > 0.5f) {
                start = t;
                active = 1;
            }
        }
        if (active) {
            if (len == cap)
                v = gf_realloc(v, (cap *= 2) * sizeof *v);
            v[len++] = (gf_segment){ start, t, (int)k };
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
