/* aggregate.h — sliding windows and overlap-add of per-window frame scores.
 *
 * The segmentation runs on windows (chunks) of 10 s every 1 s; each window
 * yields scores on its own frames. Aggregation places every window's frames
 * on one global frame grid and adds them up, as pyannote's
 * Inference.aggregate does: window c starts at global frame
 * closest_frame(chunk_start(c) + duration/2), and the grid has
 * closest_frame(end of last window + duration/2) + 1 frames. NaN scores count
 * as missing (they add nothing and are not counted). Arithmetic follows the
 * reference: float32 accumulators, float32 division, round half to even. */
#ifndef GF_AGGREGATE_H
#define GF_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/par.h"

/* A sliding window, pyannote.core's SlidingWindow: position i covers
 * [start + i*step, start + i*step + duration]. */
typedef struct {
    double start;     /* seconds */
    double duration;  /* seconds */
    double step;      /* seconds */
} gf_swin;

/* Start time of position i. */
double gf_swin_start(const gf_swin *w, size_t i);
/* Middle of position i: 0.5 * (start_i + (start_i + duration)). */
double gf_swin_middle(const gf_swin *w, size_t i);
/* Index of the position whose middle is closest to t (round half to even). */
long gf_swin_closest(const gf_swin *w, double t);

/* Number of global frames covering n_chunks chunks. */
size_t gf_aggregate_frames(const gf_swin *chunks, size_t n_chunks, const gf_swin *frames);
/* Global frame index where chunk c starts. */
size_t gf_aggregate_offset(const gf_swin *chunks, size_t c, const gf_swin *frames);
/* The same for every chunk: n_chunks offsets (at least one element),
 * allocated; the caller frees. */
size_t *gf_aggregate_offsets(const gf_swin *chunks, size_t n_chunks, const gf_swin *frames);

typedef struct {
    bool hamming;        /* weight frames of each chunk by a Hamming window */
    bool skip_average;   /* keep the sum instead of dividing by the count */
    float missing;       /* value where no chunk had a score */
} gf_aggregate_opts;

/* scores: n_chunks x n_frames x n_classes (C order, NaN = missing); out:
 * gf_aggregate_frames(...) x n_classes, allocated by the caller. */
void gf_aggregate(const float *scores, size_t n_chunks, size_t n_frames, size_t n_classes,
                  const gf_swin *chunks, const gf_swin *frames, const gf_aggregate_opts *opts,
                  float *out);

/* Per-frame speaker count: the sum of active local speakers per chunk
 * frame, averaged over overlapping chunks and rounded half to even.
 * binarized: n_chunks x n_frames x n_speakers of 0/1; count: one byte per
 * global frame (gf_aggregate_frames(...) entries). par: threads to split
 * the frames across (NULL: this one); the result does not depend on it. */
void gf_speaker_count(const float *binarized, size_t n_chunks, size_t n_frames,
                      size_t n_speakers, const gf_swin *chunks, const gf_swin *frames,
                      gf_par *par, uint8_t *count);

#endif
