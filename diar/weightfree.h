/* weightfree.h — the pipeline's weight-free mode: diarization without model
 * files, for a machine that has none.
 *
 * In place of the segmentation network, voice activity: one local speaker
 * per window, active where the trained VAD (diar/wf_vad.h: Silero VAD v4,
 * run once over the recording) says speech, or, without its file, where the
 * frame energy stands far enough above a running noise floor (the energy
 * detector, gf_diar_energy_vad). In place of the embedding network, statistics
 * of the fbank: the mean and standard deviation of cepstra of the log-mel
 * frames under speech, gathered per block of GF_DIAR_WF_BLOCK seconds on a
 * global grid while the windows stream. After the stream the blocks are
 * clustered, in segments of GF_DIAR_WF_SEG_BLOCKS, by spectral clustering
 * that estimates the speaker count (diar/cluster/spectral.h; PLDA and VBx
 * are trained for the neural embeddings and do not apply), and each
 * window gets up to three local speakers from the block clusters in it, so
 * that gf_cluster_run then runs as it does on the networks' results.
 *
 * The run loop (diar/pipeline.c) calls gf_diar_wf_batch for each batch and
 * gf_diar_wf_local_speakers once at the end; the other functions are the
 * pieces, exposed for tests. */
#ifndef GF_DIAR_WEIGHTFREE_H
#define GF_DIAR_WEIGHTFREE_H

#include <stddef.h>

#include "common/devstats.h"
#include "diar/cluster/spectral.h"
#include "diar/pipeline.h"
#include "diar/wf_vad.h"
#include "kernels/fbank/fbank_cpu.h"

/* The block statistics of one run, gathered while the windows stream.
 * Blocks are GF_DIAR_WF_BLOCK seconds on a global grid; each is computed
 * from the first window that holds it. */
typedef struct {
    double noise_db;   /* running noise floor of the energy VAD (NaN: none yet) */
    float *vec;        /* [n x GF_DIAR_WF_DIM] block statistics (NaN: too little speech) */
    size_t n;          /* blocks filled */
    size_t cap;        /* allocated */
    gf_diar_vad_stream vad;   /* the trained VAD's stream (vad.vad NULL: the energy VAD) */
    size_t step;       /* samples between windows (segmentation_step; 0: GF_DIAR_STEP) */
} gf_diar_wf_blocks;

/* Weight-free blocks filled after n windows, at most, whatever their step
 * (a bound for readers of saved states). */
size_t gf_diar_max_blocks(size_t n_windows);

/* Energy VAD, fbank and block statistics of the nb windows in wave
 * ([nb x GF_DIAR_WINDOW], valid[b] samples of window b being audio), which
 * are windows w0.. of the recording: activity into column 0 of seg ([nb x
 * 589 x 3], the other columns 0), new blocks into wb. fbank: a plain (not
 * mean-normalised) fbank context; feats: room for one window's fbank. The
 * stages' wall times are added to res, their devstats rows to stats (may be
 * NULL). Returns 0 or the fbank's GF_E*. */
int gf_diar_wf_batch(const gf_fbank *fbank, float *feats, const float *wave, const size_t *valid,
                     int nb, size_t w0, float *seg, gf_diar_wf_blocks *wb, gf_devstats *stats,
                     gf_diar_result *res);

/* After the stream: cluster the blocks (segments of GF_DIAR_WF_SEG_BLOCKS,
 * spectrally, within so's speaker bounds; a speaker counted needs
 * GF_DIAR_WF_SPEAKER_SEGS segments, whatever so->min_rows says), give
 * each of the n_windows windows up to three local speakers (the block
 * clusters present in it, most active first), activity from the VAD in
 * column 0 of seg, and an embedding each into emb ([n x 3 x GF_DIAR_WF_DIM]:
 * its cluster's unit centroid; NaN for absent speakers). Normalises wb's
 * vectors in place. Returns 0 or a GF_E* (GF_EINVAL: contradictory bounds,
 * logged). */
int gf_diar_wf_local_speakers(gf_diar_wf_blocks *wb, float *seg, float *emb, size_t n_windows,
                              const gf_spectral_opts *so);

/* Pieces, exposed for tests and benchmarks. */

/* The block statistics of window w (feats: its fbank, nf frames; act: its
 * 589-frame activity; valid: its samples of audio) for the blocks no earlier
 * window held, appended to wb (what gf_diar_wf_batch does after the VAD;
 * bench/diarize/oracle_speech.c feeds it the reference's speech instead). */
void gf_diar_wf_add_blocks(const float *feats, size_t nf, const float *act, size_t w,
                           size_t valid, gf_diar_wf_blocks *wb);

/* Energy voice activity on one window (GF_DIAR_WINDOW samples of which the
 * first `valid` are audio): act [589] 0/1. *noise_db is a running noise
 * floor carried from window to window (start it at NAN). */
void gf_diar_energy_vad(const float *win, size_t valid, double *noise_db, float *act);

/* Weight-free embedding: mean and std of the cepstra 1..GF_DIAR_WF_CEPS
 * (DCT-II of each log-mel row; c0, the loudness, left out) of the fbank
 * ([n_fbank x 80], not mean-normalised) over the fbank frames under the
 * 589-frame activity act; out [GF_DIAR_WF_DIM], unnormalised. Returns frames
 * used (0: out NaN). */
size_t gf_diar_fbank_stats(const float *fbank, size_t n_fbank, const float *act, float *out);

/* Centre the non-NaN rows of emb (n x dim) on their mean and divide by each
 * dimension's std, then L2-normalise each row (the weight-free embeddings). */
void gf_diar_wf_normalise(float *emb, size_t n, size_t dim);

#endif
