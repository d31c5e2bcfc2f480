/* aggregate.c — overlap-add of window scores onto one frame grid
 * (aggregate.h). The expressions mirror pyannote.core's SlidingWindow
 * (closest_frame, Segment.middle) term by term so that frame offsets and
 * turn boundaries come out identical in double precision. */
#include "diar/cluster/aggregate.h"

#include "common/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double gf_swin_start(const gf_swin *w, size_t i)
{
    return w->start + (double)i * w->step;
}

double gf_swin_middle(const gf_swin *w, size_t i)
{
    double s = gf_swin_start(w, i);
    return 0.5 * (s + (s + w->duration));
}

long gf_swin_closest(const gf_swin *w, double t)
{
    return (long)rint((t - w->start - 0.5 * w->duration) / w->step);
}

/* The aggregation grid starts where the chunks start. */
static gf_swin grid(const gf_swin *chunks, const gf_swin *frames)
{
    gf_swin g = { chunks->start, frames->duration, frames->step };
    return g;
}

size_t gf_aggregate_frames(const gf_swin *chunks, size_t n_chunks, const gf_swin *frames)
{
    gf_swin g = grid(chunks, frames);
    double end = chunks->start + chunks->duration + (double)(n_chunks - 1) * chunks->step
                 + 0.5 * frames->duration;
    long n = gf_swin_closest(&g, end) + 1;
    return n > 0 ? (size_t)n : 0;
}

size_t gf_aggregate_offset(const gf_swin *chunks, size_t c, const gf_swin *frames)
{
    gf_swin g = grid(chunks, frames);
    long f = gf_swin_closest(&g, gf_swin_start(chunks, c) + 0.5 * frames->duration);
    return f > 0 ? (size_t)f : 0;
}

size_t *gf_aggregate_offsets(const gf_swin *chunks, size_t n_chunks, const gf_swin *frames)
{
    size_t *off = gf_malloc((n_chunks ? n_chunks : 1) * sizeof *off);
    for (size_t c = 0; c < n_chunks; c++)
        off[c] = gf_aggregate_offset(chunks, c, frames);
    return off;
}

void gf_aggregate(const float *scores, size_t n_chunks, size_t n_frames, size_t n_classes,
                  const gf_swin *chunks, const gf_swin *frames, const gf_aggregate_opts *opts,
                  float *out)
{
    size_t total = gf_aggregate_frames(chunks, n_chunks, frames);
    size_t cells = total * n_classes;
    float *sum = gf_calloc(cells, sizeof *sum);
    float *cnt = gf_calloc(cells, sizeof *cnt);
    unsigned char *seen = gf_calloc(cells, 1);
    double *win = gf_malloc(n_frames * sizeof *win);
    for (size_t f = 0; f < n_frames; f++)   /* numpy.hamming */
        win[f] = !opts->hamming ? 1.0
                 : n_frames == 1 ? 1.0
                 : 0.54 - 0.46 * cos(2.0 * M_PI * (double)f / (double)(n_frames - 1));
    for (size_t c = 0; c < n_chunks; c++) {
        size_t off = gf_aggregate_offset(chunks, c, frames);
        for (size_t f = 0; f < n_frames && off + f < total; f++) {
            const float *s = scores + (c * n_frames + f) * n_classes;
            size_t g = (off + f) * n_classes;
            for (size_t k = 0; k < n_classes; k++) {
                if (isnan(s[k]))
                    continue;
                /* float32 accumulators updated from a float64 product, as
                 * numpy's in-place add does */
                sum[g + k] = (float)((double)sum[g + k] + (double)s[k] * win[f]);
                cnt[g + k] = (float)((double)cnt[g + k] + win[f]);
                seen[g + k] = 1;
            }
        }
    }
    for (size_t i = 0; i < cells; i++) {
        if (!seen[i])
            out[i] = opts->missing;
        else if (opts->skip_average)
            out[i] = sum[i];
        else
            out[i] = sum[i] / fmaxf(cnt[i], 1e-12f);
    }
    free(win);
    free(seen);
    free(cnt);
    free(sum);
}

/* Global frames per counting task: tasks write disjoint frames. */
#define COUNT_FRAMES_PER_TASK 4096

typedef struct {
    const float *bin;         /* n_chunks x n_frames x n_speakers */
    size_t n_chunks, n_frames, n_speakers;
    const size_t *off;        /* n_chunks: first global frame of each chunk */
    size_t total;             /* global frames */
    float *sum, *cnt;         /* per worker: COUNT_FRAMES_PER_TASK accumulators each */
    uint8_t *count;           /* total */
} count_job;

/* Frames [t0, t1): gf_aggregate of the per-frame sums (no Hamming, average,
 * missing 0) restricted to these frames, same updates in chunk order. */
static void count_task(void *arg, int worker, int task)
{
    count_job *j = arg;
    size_t F = j->n_frames, S = j->n_speakers;
    size_t t0 = (size_t)task * COUNT_FRAMES_PER_TASK;
    size_t t1 = t0 + COUNT_FRAMES_PER_TASK < j->total ? t0 + COUNT_FRAMES_PER_TASK : j->total;
    float *sum = j->sum + (size_t)worker * COUNT_FRAMES_PER_TASK;
    float *cnt = j->cnt + (size_t)worker * COUNT_FRAMES_PER_TASK;
    memset(sum, 0, (t1 - t0) * sizeof *sum);
    memset(cnt, 0, (t1 - t0) * sizeof *cnt);
    for (size_t c = 0; c < j->n_chunks; c++) {
        size_t off = j->off[c];
        if (off >= t1 || off + F <= t0)
            continue;
        size_t f0 = off < t0 ? t0 - off : 0;
        size_t f1 = off + F < t1 ? F : t1 - off;
        for (size_t f = f0; f < f1; f++) {
            const float *row = j->bin + (c * F + f) * S;
            float v = 0.0f;
            for (size_t k = 0; k < S; k++)
                v += row[k];
            if (isnan(v))
                continue;
            size_t g = off + f - t0;
            sum[g] = (float)((double)sum[g] + (double)v);
            cnt[g] = (float)((double)cnt[g] + 1.0);
        }
    }
    for (size_t t = t0; t < t1; t++) {
        /* a frame some chunk scored has cnt >= 1 */
        float avg = cnt[t - t0] > 0.0f ? sum[t - t0] / fmaxf(cnt[t - t0], 1e-12f) : 0.0f;
        float r = rintf(avg);
        j->count[t] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
    }
}

void gf_speaker_count(const float *binarized, size_t n_chunks, size_t n_frames,
                      size_t n_speakers, const gf_swin *chunks, const gf_swin *frames,
                      gf_par *par, uint8_t *count)
{
    size_t total = gf_aggregate_frames(chunks, n_chunks, frames);
    int workers = gf_par_threads(par);
    size_t *off = gf_aggregate_offsets(chunks, n_chunks, frames);
    count_job j = {
        .bin = binarized, .n_chunks = n_chunks, .n_frames = n_frames, .n_speakers = n_speakers,
        .off = off, .total = total,
        .sum = gf_malloc((size_t)workers * COUNT_FRAMES_PER_TASK * sizeof(float)),
        .cnt = gf_malloc((size_t)workers * COUNT_FRAMES_PER_TASK * sizeof(float)),
        .count = count,
    };
    int ntasks = (int)((total + COUNT_FRAMES_PER_TASK - 1) / COUNT_FRAMES_PER_TASK);
    gf_par_run(par, ntasks, count_task, &j);
    free(j.cnt);
    free(j.sum);
    free(off);
}
