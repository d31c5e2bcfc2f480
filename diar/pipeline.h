/* pipeline.h — one recording in, speaker turns out: the community-1 recipe.
 *
 * Windows of 10 s every 1 s stream from the audio file (the last one
 * zero-padded to full length; the whole waveform is never held). Batches of
 * windows go through the segmentation network, hard powerset decoding gives
 * binary activity [589, 3] per window; the Kaldi fbank of each window feeds
 * the embedding network, whose trunk runs once per window and is pooled once
 * per active local speaker, with the overlap-excluded mask when it keeps
 * more than 2 frames, else the speaker's full mask (embedding_exclude_overlap);
 * inactive speakers get NaN. Then gf_cluster_run (the same clustering as
 * `gpuflock cluster`) turns the per-window results into RTTM turns. Memory
 * beyond those per-window results is flat in the file's length.
 *
 * The two network calls go through a backend table (gf_diar_backend,
 * diar/backend.h): the CPU networks (diar/backend_cpu.h) are the default; a
 * GPU backend (diar/backend_gpu.h) plugs in the same way.
 *
 * Without model files the pipeline runs in weight-free mode
 * (diar/weightfree.h): voice activity from the trained VAD (diar/wf_vad.h)
 * or, without its file, from the frame energy (one local speaker per
 * window, active where there is speech), filterbank-statistics embeddings
 * (mean and standard deviation of cepstra of the log-mel fbank over the
 * active frames), spectral clustering of 1 s segments that estimates the
 * speaker count (PLDA and VBx are trained for the neural embeddings and do
 * not apply). The result
 * (diar/result.h) says so. */
#ifndef GF_DIAR_PIPELINE_H
#define GF_DIAR_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/devstats.h"
#include "diar/backend.h"
#include "diar/cluster/cluster.h"
#include "diar/io/rttm.h"
#include "diar/result.h"
#include "diar/vad.h"

#define GF_DIAR_WINDOW 160000     /* samples per window (10 s at 16 kHz) */
#define GF_DIAR_STEP 16000        /* samples between windows by default (1 s) */
#define GF_DIAR_STEP_DEFAULT 0.1  /* ... as a fraction of the window (segmentation_step) */
#define GF_DIAR_STEP_QUANTUM 160  /* a step is a whole number of 10 ms */
#define GF_DIAR_STEP_MIN 0.01     /* the smallest step (0.1 s): ten times the default's
                                     windows, results and work; below it one recording
                                     would cost up to a hundred times that */
#define GF_DIAR_FRAMES 589        /* segmentation frames per window */
#define GF_DIAR_SPEAKERS 3        /* local speakers per window */
#define GF_DIAR_CLASSES 7         /* powerset classes */
#define GF_DIAR_FBANK_FRAMES 998  /* fbank frames per window */
#define GF_DIAR_FRAME_STEP 270    /* samples between segmentation frames */
#define GF_DIAR_FRAME_LEN 991     /* samples a segmentation frame spans */
#define GF_DIAR_EMB_DIM 256       /* neural embedding size */
#define GF_DIAR_WF_CEPS 20        /* weight-free: cepstra per fbank frame */
#define GF_DIAR_WF_DIM (2 * GF_DIAR_WF_CEPS) /* weight-free embedding: means + stds */
#define GF_DIAR_MIN_CLEAN 2       /* overlap-excluded mask used when it keeps more frames */
#define GF_DIAR_WF_SAME 1e-4      /* weight-free: gf_cluster_run's AHC cut on the local
                                     speakers' embeddings, which are the block clusters'
                                     unit centroids: only equal ones merge */
#define GF_DIAR_WF_BLOCK 0.5      /* weight-free: seconds per statistics block */
#define GF_DIAR_WF_MIN_FRAMES 10  /* weight-free: speech fbank frames for a block vector */
#define GF_DIAR_WF_SEG_BLOCKS 2   /* weight-free: blocks per clustered segment (1 s; 0.5 s
                                     and 1.5 s lost on ami-debug, docs/diarization.md) */
#define GF_DIAR_WF_SPEAKER_SEGS 8 /* weight-free: segments of speech a speaker counted needs */

/* Windows done / total of a recording (total may grow by one if the
 * header undercounts). */
typedef void (*gf_diar_progress_fn)(void *user, size_t done, size_t total);

/* Where a run stands at a batch boundary: the per-window results of
 * windows 0..n_windows-1 and everything that crosses into the next batch.
 * It is all a checkpoint holds (diar/ckpt.h) and all a resumed run
 * needs. The arrays are borrowed views. */
typedef struct {
    size_t n_windows;       /* windows done, a batch boundary */
    size_t dim;             /* embedding size: GF_DIAR_EMB_DIM, or GF_DIAR_WF_DIM */
    bool weight_free;       /* the mode that made them */
    const float *seg;       /* [n x 589 x 3] activity (weight-free: the VAD in column 0) */
    const float *emb;       /* [n x 3 x dim] embeddings; NULL in weight-free mode, whose
                               embeddings are made after the stream */
    const float *logits;    /* [n x 589 x 7] log-probabilities when they are kept
                               (save_dir, neural mode); else NULL */
    double noise_db;        /* weight-free: the energy VAD's running noise floor (NaN: none
                               yet), carried from window to window */
    size_t n_blocks;        /* weight-free: statistics blocks filled so far (at most
                               gf_diar_max_blocks(n_windows), diar/weightfree.h) */
    const float *blocks;    /* [n_blocks x GF_DIAR_WF_DIM] their vectors (NaN rows: too
                               little speech); NULL when n_blocks is 0 */
    bool trained_vad;       /* weight-free: the trained VAD (diar/wf_vad.h) made the
                               activity, not the energy detector */
    gf_vad_state vad_state; /* trained_vad: its LSTM state after vad_chunks chunks */
    size_t vad_chunks;      /* trained_vad: chunks run so far (at most
                               gf_diar_max_vad_chunks(n_windows)) */
    const float *vad_flags; /* [vad_chunks] their speech flags (0/1); NULL when 0 */
    bool last;              /* (boundary hook) the audio has no more windows */
} gf_diar_state;

typedef struct {
    gf_cluster_opts cluster;       /* constraints and recipe parameters */
    const char *save_dir;          /* write the intermediates here, or NULL */
    double segmentation_step;      /* windows this fraction of the window apart (pyannote's
                                    * segmentation_step, [0.01, 1], a whole number of 10 ms;
                                    * 0: GF_DIAR_STEP_DEFAULT, 1 s) */
    bool exclude_overlap;          /* embeddings from the frames where a speaker alone is
                                    * active (pyannote's embedding_exclude_overlap; true
                                    * in gf_diar_run_defaults, community-1's) */
    bool overwrite;                /* replace intermediates already in save_dir
                                    * (false: such a file fails the run, kept) */
    gf_diar_progress_fn progress;  /* may be NULL */
    void *progress_user;           /* passed to progress */
    /* Asked before each window is read: non-zero stops the run there with
     * GF_EINTR (a cancelled job). May be NULL. */
    int (*cancel)(void *user);
    void *cancel_user;             /* passed to cancel */
    /* Resume: called once the audio is open, with its window count (it
     * may still grow by one): the state to go on from, or NULL to start at
     * the first window. Windows before state->n_windows are then decoded
     * (so the decoder and resampler reach the later windows as in an
     * uninterrupted run) but not run through the networks again, and the
     * batches after them are those of an uninterrupted run. The state must
     * outlive gf_diar_run and fit this pipeline: its mode and embedding
     * size, logits when save_dir is set, and n_windows a multiple of the
     * batch size or the whole recording; one that does not is logged and
     * not used. May be NULL. */
    const gf_diar_state *(*resume)(void *user, size_t total_windows);
    void *resume_user;             /* passed to resume */
    /* Called after each batch the run computed (not after those a resume
     * supplied), with the state so far, borrowed for the call. Non-zero
     * stops the run there with GF_EINTR, as a cancel does (a job that
     * yields its card after its checkpoint). May be NULL. */
    int (*boundary)(void *user, const gf_diar_state *st);
    void *boundary_user;           /* passed to boundary */
} gf_diar_run_opts;

/* segmentation_step fraction (0: the default) as samples between windows:
 * 0 and *samples, or GF_EINVAL when it is not in [GF_DIAR_STEP_MIN, 1] or
 * not a whole number of GF_DIAR_STEP_QUANTUM samples. */
int gf_diar_step_samples(double fraction, size_t *samples);

/* Defaults: gf_cluster_defaults(), nothing saved, no progress. */
gf_diar_run_opts gf_diar_run_defaults(void);

typedef struct gf_diar gf_diar;

/* A pipeline with models from models_dir (batch_size windows per network
 * call, <= 0: 32; threads for the CPU networks and the clustering's host
 * stages, <= 0: one per core, for the clustering at most 16, unless
 * gf_diar_run_opts.cluster.threads says otherwise). When the two network
 * files are missing it is built in weight-free mode: *weight_free (optional)
 * tells the caller, who says so; without weight_free it is logged as a
 * warning here.
 * Returns NULL after logging when a model file or the PLDA is unusable. */
gf_diar *gf_diar_new(const char *models_dir, int batch_size, int threads, bool *weight_free);

/* Weight-free pipeline regardless of the models directory. Its voice
 * activity: the trained VAD (diar/vad.h) from the file gf_diar_vad_file
 * names ($GPUFLOCK_VAD, the models directory's own for gf_diar_new, else
 * gf_vad_default_path()), and the energy detector, with a warning, when no
 * file is there that the user did not name. NULL after logging when the
 * file is unusable. */
gf_diar *gf_diar_new_weight_free(int batch_size);

/* A pipeline whose networks are *backend (taken; *backend is zeroed), e.g.
 * a batcher's client (diar/batcher.h), with the PLDA of models_dir: the
 * network files are not loaded here. NULL after logging when the PLDA is
 * unusable (then *backend is still the caller's). */
gf_diar *gf_diar_new_with(const char *models_dir, int batch_size, int threads,
                          gf_diar_backend *backend);

/* Take over a backend (e.g. a GPU one); the pipeline destroys it. Not in
 * weight-free mode. */
void gf_diar_set_backend(gf_diar *self, gf_diar_backend *backend);

void gf_diar_destroy(gf_diar **self_p);

bool gf_diar_weight_free(const gf_diar *self);

/* Windows per network call. */
int gf_diar_batch(const gf_diar *self);

/* What the numbers depend on besides the weights and the batch size: "cpu"
 * (CPU networks, or weight-free mode), or the backend's identity (on a
 * card, its route plan's digest). Borrowed. */
const char *gf_diar_identity(const gf_diar *self);

/* Which voice activity detector the weight-free mode runs: GF_DIAR_VAD_SILERO
 * (the trained one, diar/vad.h), GF_DIAR_VAD_ENERGY, or "-" with the
 * networks; and, for a checkpoint's identity, the trained one's file digest
 * (else the same name). Static or borrowed strings. */
#define GF_DIAR_VAD_SILERO "silero-vad-v4"
#define GF_DIAR_VAD_ENERGY "energy"
const char *gf_diar_vad(const gf_diar *self);
const char *gf_diar_vad_sha256(const gf_diar *self);

/* Diarize one recording. Returns 0 and fills *res (free with
 * gf_diar_result_free), or a negative GF_E* after logging a message naming
 * the file (missing, empty, not audio, unreadable) or the stage. Timings
 * per stage go into stats (may be NULL) as "unavailable: cpu card" rows. */
int gf_diar_run(gf_diar *self, const char *path, const gf_diar_run_opts *opts,
                gf_devstats *stats, gf_diar_result *res);

/* The same for n mono samples in memory at `rate` Hz (GF_AUDIO_MIN_RATE ..
 * GF_AUDIO_MAX_RATE, diar/io/audio.h; resampled to 16 kHz as a file at that
 * rate is, so the samples a file decodes to give its result exactly), name
 * standing for them in messages and the turns' uri (as a file's path
 * would). Borrowed for the call. GF_EINVAL for no samples, a rate outside
 * those bounds or a sample that is not finite (logged). */
int gf_diar_run_samples(gf_diar *self, const float *x, size_t n, int rate, const char *name,
                        const gf_diar_run_opts *opts, gf_devstats *stats, gf_diar_result *res);

/* A piece, exposed for tests. */

/* Activity of local speaker s over the 589 frames of one window (act
 * [589 x 3]) for pooling: with exclude_overlap (pyannote's
 * embedding_exclude_overlap, community-1's choice) the frames where s alone
 * is active when there are more than GF_DIAR_MIN_CLEAN of them, else (and
 * without exclude_overlap) all frames where s is active. Returns the number
 * of nonzero frames of mask (0: inactive speaker). */
size_t gf_diar_pool_mask(const float *act, int s, bool exclude_overlap, float *mask);

#endif
