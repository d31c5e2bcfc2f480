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
 * The two network calls go through a backend table (gf_diar_backend): the CPU
 * networks are built in; a GPU backend plugs in the same way.
 *
 * Without model files the pipeline runs in weight-free mode: energy-based
 * voice activity (one local speaker per window, active where there is
 * speech), filterbank-statistics embeddings (mean and standard deviation of
 * the log-mel fbank over the active frames), cosine AHC with its own
 * threshold (PLDA and VBx are trained for the neural embeddings and do not
 * apply). The result says so. */
#ifndef GF_DIAR_PIPELINE_H
#define GF_DIAR_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/devstats.h"
#include "diar/cluster/cluster.h"
#include "diar/io/rttm.h"

#define GF_DIAR_WINDOW 160000     /* samples per window (10 s at 16 kHz) */
#define GF_DIAR_STEP 16000        /* samples between windows (1 s) */
#define GF_DIAR_FRAMES 589        /* segmentation frames per window */
#define GF_DIAR_SPEAKERS 3        /* local speakers per window */
#define GF_DIAR_CLASSES 7         /* powerset classes */
#define GF_DIAR_FBANK_FRAMES 998  /* fbank frames per window */
#define GF_DIAR_EMB_DIM 256       /* neural embedding size */
#define GF_DIAR_WF_CEPS 20        /* weight-free: cepstra per fbank frame */
#define GF_DIAR_WF_DIM (2 * GF_DIAR_WF_CEPS) /* weight-free embedding: means + stds */
#define GF_DIAR_MIN_CLEAN 2       /* overlap-excluded mask used when it keeps more frames */
#define GF_DIAR_WF_THRESHOLD 1.0  /* weight-free AHC cut (Euclidean on unit vectors: cos 0.5) */
#define GF_DIAR_WF_BLOCK 0.5      /* weight-free: seconds per statistics block */
#define GF_DIAR_WF_MIN_FRAMES 10  /* weight-free: speech fbank frames for a block vector */

/* The two network calls, so that another device can replace them. */
typedef struct {
    const char *name;   /* "cpu", "cuda" */
    const char *route;  /* devstats route name of its launches */
    /* wave [B, 160000] → logp [B, 589, 7]. Returns 0 or a negative GF_E*. */
    int (*segment)(void *ctx, const float *wave, int B, float *logp, gf_devstats *stats);
    /* fbank [B, 998, 80]; job j pools window job_window[j] with
     * masks[j * 589 ..] into emb[j * 256 ..]. fbank NULL: the features
     * the backend's fbank kept on its device. A backend with an fbank hook
     * is called for every batch, with n_jobs 0 when no window has speech,
     * so that it can finish what it started ahead (diar_gpu.c starts the
     * trunk during segment_span). Returns 0 or a GF_E*. */
    int (*embed)(void *ctx, const float *fbank, int B, const int *job_window,
                 const float *masks, int n_jobs, float *emb, gf_devstats *stats);
    /* wave [B, 160000] → mean-normalised fbank [B, 998, 80]; NULL: the
     * pipeline computes the fbank on the CPU (kernels/fbank/fbank_cpu.c). wave
     * NULL: the windows segment_span has just taken. feats NULL: the
     * features stay on the device for the embed call that follows. */
    int (*fbank)(void *ctx, const float *wave, int B, float *feats, gf_devstats *stats);
    /* Optional: segment from the batch as one span of audio, window b being
     * span[b * 16000 .. b * 16000 + 160000) ((B - 1) * 16000 + 160000
     * samples: consecutive windows overlap by 9 s, so a device backend moves
     * a tenth of the bytes). The pipeline then calls fbank with wave NULL for
     * the same windows. */
    int (*segment_span)(void *ctx, const float *span, int B, float *logp, gf_devstats *stats);
    /* Optional: page-lock the pipeline's batch buffer (host, bytes) for
     * faster copies, and undo it before the buffer is freed. */
    int (*pin)(void *ctx, void *host, size_t bytes);
    void (*unpin)(void *ctx, void *host);
    void (*destroy)(void *ctx);  /* frees ctx */
    void *ctx;                   /* owned by the table */
    /* What the backend's numbers depend on besides the weights and the
     * batch, for a checkpoint's identity: "cpu", or on a card its route
     * plan's digest (diar/backend_gpu.c). Borrowed from ctx; NULL: "cpu". */
    const char *identity;
    /* The clustering's AHC linkage on the backend's device, with ahc_ctx;
     * NULL: on the CPU (diar/cluster/ahc.c). */
    gf_ahc_link_fn ahc_link;
    void *ahc_ctx;
} gf_diar_backend;

/* The CPU networks from models_dir, for batches of up to max_batch windows,
 * on `threads` threads (<= 0: one per online core). Returns 0 and fills *out; GF_ENOENT when a model file is missing (nothing
 * logged: the caller falls back to weight-free mode); GF_EINVAL after
 * logging the file and tensor at fault. */
int gf_diar_backend_cpu(const char *models_dir, int max_batch, int threads, gf_diar_backend *out);

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
    size_t n_blocks;        /* weight-free: statistics blocks filled so far */
    const float *blocks;    /* [n_blocks x GF_DIAR_WF_DIM] their vectors (NaN rows: too
                               little speech); NULL when n_blocks is 0 */
    bool last;              /* (boundary hook) the audio has no more windows */
} gf_diar_state;

/* Weight-free blocks filled after n windows, at most (a bound for readers
 * of saved states). */
size_t gf_diar_max_blocks(size_t n_windows);

typedef struct {
    gf_cluster_opts cluster;       /* constraints and recipe parameters */
    const char *save_dir;          /* write the intermediates here, or NULL */
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

/* Defaults: gf_cluster_defaults(), nothing saved, no progress. */
gf_diar_run_opts gf_diar_run_defaults(void);

typedef struct {
    gf_rttm *rttm;           /* speaker turns, uri = the file's base name */
    bool weight_free;        /* true: produced in weight-free mode */
    size_t n_windows;        /* windows processed */
    size_t n_resumed;        /* of which taken from a resume state, not computed */
    size_t n_speakers;       /* distinct speakers in the turns */
    double duration;         /* seconds of audio */
    double t_decode;         /* wall seconds: decoding and resampling */
    double t_segmentation;   /* wall seconds: segmentation (or energy VAD) */
    double t_fbank;          /* wall seconds: fbank */
    double t_embedding;      /* wall seconds: embeddings */
    double t_clustering;     /* wall seconds: clustering and turns */
    double t_total;          /* wall seconds, all of it */
} gf_diar_result;

void gf_diar_result_free(gf_diar_result *r);

/* The JSON form of a result (`diarize --json`): turns, speakers, "mode"
 * (neural | weight-free, with a notice naming models_dir), duration,
 * windows, per-stage timings and the devstats table st (may be NULL). The
 * caller frees; ends with a newline. */
char *gf_diar_result_json(const gf_diar_result *r, const char *models_dir, const gf_devstats *st);

typedef struct gf_diar gf_diar;

/* A pipeline with models from models_dir (batch_size windows per network
 * call, <= 0: 32; threads for the CPU networks and the clustering's host
 * stages, <= 0: one per core, for the clustering at most 16, unless
 * gf_diar_run_opts.cluster.threads says otherwise). When the two network files are missing it is built in
 * weight-free mode and logs so once; *weight_free (optional) tells which.
 * Returns NULL after logging when a model file or the PLDA is unusable. */
gf_diar *gf_diar_new(const char *models_dir, int batch_size, int threads, bool *weight_free);

/* Weight-free pipeline regardless of the models directory. */
gf_diar *gf_diar_new_weight_free(int batch_size);

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

/* Diarize one recording. Returns 0 and fills *res (free with
 * gf_diar_result_free), or a negative GF_E* after logging a message naming
 * the file (missing, empty, not audio, unreadable) or the stage. Timings
 * per stage go into stats (may be NULL) as "unavailable: cpu card" rows. */
int gf_diar_run(gf_diar *self, const char *path, const gf_diar_run_opts *opts,
                gf_devstats *stats, gf_diar_result *res);

/* Pieces, exposed for tests. */

/* Activity of local speaker s over the 589 frames of one window (act
 * [589 x 3]) for pooling: the frames where s alone is active when there are
 * more than GF_DIAR_MIN_CLEAN of them, else all frames where s is active.
 * Returns the number of nonzero frames of mask (0: inactive speaker). */
size_t gf_diar_pool_mask(const float *act, int s, float *mask);

/* Energy voice activity on one window (GF_DIAR_WINDOW samples of which the
 * first `valid` are audio): act [589] 0/1. *noise_db is a running noise
 * floor carried from window to window (start it at NAN). */
void gf_diar_energy_vad(const float *win, size_t valid, double *noise_db, float *act);

/* Weight-free embedding: mean and std of each fbank bin ([n_fbank x 80],
 * not mean-normalised) over the fbank frames under the 589-frame activity
 * act; out [GF_DIAR_WF_DIM], unnormalised. Returns frames used (0: out NaN). */
size_t gf_diar_fbank_stats(const float *fbank, size_t n_fbank, const float *act, float *out);

/* Centre the non-NaN rows of emb (n x dim) on their mean and divide by each
 * dimension's std, then L2-normalise each row (the weight-free embeddings). */
void gf_diar_wf_normalise(float *emb, size_t n, size_t dim);

#endif
