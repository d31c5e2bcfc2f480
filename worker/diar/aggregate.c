/* aggregate.c — overlap-add of window scores onto one frame grid
 * (aggregate.h). The expressions mirror pyannote.core's SlidingWindow
 * (closest_frame, Segment.middle) term by term so that frame offsets and
 * turn boundaries come out identical in double precision. */
#include "worker/diar/aggregate.h"

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

void gf_speaker_count(const float *binarized, size_t n_chunks, size_t n_frames,
                      size_t n_speakers, const gf_swin *chunks, const gf_swin *frames,
                      uint8_t *count)
{
    float *per = gf_malloc(n_chunks * n_frames * sizeof *per);
    for (size_t i = 0; i < n_chunks * n_frames; i++) {
        float s = 0.0f;
        for (size_t k = 0; k < n_speakers; k++)
            s += binarized[i * n_speakers + k];
        per[i] = s;
    }
    size_t total = gf_aggregate_frames(chunks, n_chunks, frames);
    float *avg = gf_malloc(total * sizeof *avg);
    gf_aggregate_opts o = { .hamming = false, .skip_average = false, .missing = 0.0f };
    gf_aggregate(per, n_chunks, n_frames, 1, chunks, frames, &o, avg);
    for (size_t t = 0; t < total; t++) {
        float r = rintf(avg[t]);
        count[t] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
    }
    free(avg);
    free(per);
}
