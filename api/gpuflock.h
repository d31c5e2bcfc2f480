/* gpuflock.h — who spoke when: gpuflock's speaker diarization as a library.
 *
 * The pyannote community-1 recipe (segmentation network, embedding network,
 * PLDA and VBx clustering) on one recording at a time, on the CPU or on a
 * CUDA card, from an audio file or from samples already in memory. This is
 * the installed, public header of libgpuflock.so.0 (`pkg-config gpuflock`):
 * it includes nothing of the project's own and compiles as C11 and as C++.
 *
 *     gf_diarize_opts o;
 *     gf_diarize_opts_init(&o, sizeof o);
 *     o.models = "/srv/models/community-1";
 *     gf_diarize *h;
 *     if (gf_diarize_open(&o, &h) != 0)            // h holds the message
 *         die(gf_diarize_errmsg(h));
 *     gf_diarize_result *r;
 *     if (gf_diarize_file(h, "meeting.wav", NULL, &r) == 0) {
 *         const gf_diarize_turn *t;
 *         size_t n = gf_diarize_result_turns(r, &t);
 *         for (size_t i = 0; i < n; i++)
 *             printf("%.3f %.3f %s\n", t[i].start, t[i].end,
 *                    gf_diarize_result_label(r, (size_t)t[i].speaker));
 *         gf_diarize_result_destroy(&r);
 *     }
 *     gf_diarize_close(&h);
 *
 * Errors. Every function returning int returns 0 or a negative
 * GF_DIARIZE_E* code; the handle then holds a message naming what was wrong
 * (the file, the sample rate, the model file), read with
 * gf_diarize_errmsg. Messages also go to stderr as log lines unless
 * gf_diarize_set_log_level says otherwise.
 *
 * Ownership. Whoever creates frees: a handle with gf_diarize_close, a
 * result with gf_diarize_result_destroy, a returned char * with
 * gf_diarize_free. Returned const pointers are borrowed from their object
 * and live as long as it does (errmsg: until the next call on the handle).
 * Destructors take the address of the pointer, accept NULL and set it to
 * NULL. Inputs (paths, samples, option strings) are borrowed for the call.
 *
 * Threads. One handle is used by one thread at a time. Handles are
 * independent: several threads may each run their own at once (each holds
 * its own networks and buffers). A result does not depend on its handle:
 * it may outlive it and be read from any thread.
 *
 * Stability. The functions, types and constants here are ABI 0 (soname
 * libgpuflock.so.0) and keep their meaning. Option structs carry their
 * size, set by their _init function, and only grow at their end: a program
 * built against an older header passes a smaller size and gets the
 * defaults for the fields it does not know; fields added later have 0 as
 * their default, so a library older than the header accepts a larger size
 * as long as the bytes it does not know are zero, and refuses it
 * (GF_DIARIZE_EUNSUP) otherwise. gf_diarize_turn is frozen as it is.
 * Nothing else of the library is exported. */
#ifndef GPUFLOCK_H
#define GPUFLOCK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GF_DIARIZE_ABI 0           /* the soname's number: libgpuflock.so.0 */

/* Return codes: 0, or one of these (the values of gpuflock's own codes). */
enum {
    GF_DIARIZE_OK = 0,
    GF_DIARIZE_EINVAL = -1,    /* bad argument, malformed or empty audio */
    GF_DIARIZE_EIO = -2,       /* a read or write failed; anything else unexpected */
    GF_DIARIZE_ENOENT = -3,    /* the audio file is missing */
    GF_DIARIZE_ECONFIG = -6,   /* the model files are there but unusable */
    GF_DIARIZE_ETOOBIG = -8,   /* too large for the clustering (memory) */
    GF_DIARIZE_EUNSUP = -10,   /* an audio format, rate or option this library does not take */
    GF_DIARIZE_EDEVICE = -11,  /* the CUDA card asked for cannot be used */
    GF_DIARIZE_EINTR = -12,    /* cancelled (gf_diarize_call.cancel) */
    GF_DIARIZE_ESTATE = -13,   /* the handle did not open */
    GF_DIARIZE_ENOSPC = -14,   /* no space left for the intermediates */
    GF_DIARIZE_EEXIST = -15,   /* an intermediate file is there and was not replaced */
};

/* What made a result. */
enum {
    GF_DIARIZE_MODE_NEURAL = 0,       /* the two networks and the PLDA of the models folder */
    GF_DIARIZE_MODE_WEIGHT_FREE = 1,  /* no network files: energy voice activity and
                                         filterbank statistics (a much higher DER) */
};

/* gf_diarize_opts.device */
enum {
    GF_DIARIZE_CPU = -1,       /* the CPU networks (default) */
    GF_DIARIZE_ANY_CARD = -2,  /* CUDA card 0 when it can be used, else the CPU */
};

/* gf_diarize_opts.math: how the networks compute on a card. */
enum {
    GF_DIARIZE_MATH_FP32 = 0,  /* IEEE fp32 throughout (default) */
    GF_DIARIZE_MATH_TF32 = 1,  /* tensor-core tf32 inputs, fp32 sums: faster */
};

/* gf_diarize_set_log_level */
enum {
    GF_DIARIZE_LOG_DEBUG = 0,
    GF_DIARIZE_LOG_INFO = 1,   /* the default */
    GF_DIARIZE_LOG_WARN = 2,
    GF_DIARIZE_LOG_ERROR = 3,
    GF_DIARIZE_LOG_OFF = 4,
};

/* The sample rates gf_diarize_samples takes, Hz; the pipeline runs at
 * 16 kHz and resamples any other rate as it does a file's. */
#define GF_DIARIZE_MIN_RATE 1000
#define GF_DIARIZE_MAX_RATE 768000

/* How a pipeline is made (gf_diarize_open). */
typedef struct {
    size_t size;        /* sizeof the caller's struct; set by gf_diarize_opts_init */
    const char *models; /* the models folder: segmentation.safetensors,
                           embedding.safetensors and plda/. NULL, "", or a folder
                           without the two network files: weight-free mode */
    int num_speakers;   /* exactly this many speakers; 0: not forced */
    int min_speakers;   /* at least this many; 0: no bound (excludes num_speakers) */
    int max_speakers;   /* at most this many; 0: no bound (excludes num_speakers) */
    int batch_size;     /* windows (10 s, every 1 s) per network call; 0: 32 */
    int threads;        /* CPU threads for the networks and the clustering; 0: one per
                           core. Also OpenBLAS's thread count, which is one for the
                           whole process: the last open sets it */
    int device;         /* GF_DIARIZE_CPU, a CUDA card's index (the open fails with
                           GF_DIARIZE_EDEVICE when it cannot be used), or
                           GF_DIARIZE_ANY_CARD. Weight-free mode runs on the CPU */
    int math;           /* on a card: GF_DIARIZE_MATH_FP32 or GF_DIARIZE_MATH_TF32 */
    int two_streams;    /* on a card: 1 (default) runs a batch's embedding trunk beside
                           its segmentation on a second stream; 0 one after the other */
    /* The community-1 recipe's knobs, under pyannote's names; 0: the recipe's value. */
    double clustering_threshold;    /* the AHC cut, (0, 2]; 0: 0.6 (weight-free mode
                                       keeps its own) */
    double fa;                      /* VBx's Fa, (0, 1000]; 0: 0.07 */
    double fb;                      /* VBx's Fb, (0, 1000]; 0: 0.8 */
    double min_duration_off;        /* seconds, [0, 3600]: one speaker's turns closer than
                                       this are merged; 0: none are */
    int embedding_include_overlap;  /* 1: embeddings pooled over all of a speaker's active
                                       frames (embedding_exclude_overlap false); 0: over
                                       those where it speaks alone, when it has some
                                       (community-1's) */
    double segmentation_step;       /* windows this fraction of their 10 s apart, [0.01, 1] in
                                       whole 10 ms (0.001); 0: 0.1 (1 s) */
    /* Fields are added here, at the end, with 0 as their default. */
} gf_diarize_opts;

/* Windows done of total (total may grow by one: a header may undercount).
 * Called in the thread that made the call. */
typedef void (*gf_diarize_progress_fn)(void *user, size_t done, size_t total);

/* Asked before each window is read, also from the thread that decodes the
 * next batch while one runs: non-zero stops the call (GF_DIARIZE_EINTR). */
typedef int (*gf_diarize_cancel_fn)(void *user);

/* What one call may add (gf_diarize_file, gf_diarize_samples); NULL: nothing. */
typedef struct {
    size_t size;                      /* sizeof the caller's struct; set by gf_diarize_call_init */
    const char *uri;                  /* the recording's name in the RTTM (blanks become '_');
                                         NULL: a file's base name without its extension,
                                         "waveform" for samples */
    gf_diarize_progress_fn progress;  /* called after each batch of windows; may be NULL */
    void *progress_user;              /* passed to progress */
    gf_diarize_cancel_fn cancel;      /* may be NULL */
    void *cancel_user;                /* passed to cancel */
    const char *intermediates;        /* a folder (made when missing) for segmentations.npy,
                                         embeddings.npy and, in neural mode,
                                         segmentation_logits.npy (what `gpuflock cluster`
                                         reads); NULL: none */
    int overwrite;                    /* replace intermediate files already there; 0: such a
                                         file fails the call (GF_DIARIZE_EEXIST), kept */
    int num_speakers;                 /* this call's speaker constraints, as in
                                         gf_diarize_opts; all three 0: the handle's */
    int min_speakers;                 /* (set any, and the three replace the handle's) */
    int max_speakers;                 /* (the bounds as in gf_diarize_opts) */
    const char *checkpoint;           /* a file (files only, not samples): every
                                         checkpoint_s seconds the call's progress is saved
                                         there (written whole: a temporary file, fsync,
                                         rename), and a call that finds one made by the same
                                         program, pipeline, settings and audio goes on from
                                         it; removed when the call succeeds, kept when it
                                         fails or is cancelled; NULL: none */
    int checkpoint_s;                 /* seconds between checkpoints, 1..86400; 0: 30 */
    /* Fields are added here, at the end, with 0 as their default. */
} gf_diarize_call;

/* One speaker turn. Frozen: new facts about turns come as new functions. */
typedef struct {
    double start;   /* seconds from the start of the recording */
    double end;     /* seconds, > start */
    int speaker;    /* 0 .. gf_diarize_result_speakers() - 1 */
} gf_diarize_turn;

typedef struct gf_diarize gf_diarize;                /* a pipeline: models, buffers, card */
typedef struct gf_diarize_result gf_diarize_result;  /* what one recording gave */

/* ---- the pipeline ----------------------------------------------------- */

/* Fill *opts (size bytes: pass sizeof *opts) with the defaults and set
 * opts->size. */
void gf_diarize_opts_init(gf_diarize_opts *opts, size_t size);

/* Make a pipeline from opts (NULL: the defaults, weight-free mode). Always
 * sets *out to a new handle unless out is NULL: on failure the handle only
 * gives its message (gf_diarize_errmsg) and is closed like any other.
 * Returns 0; GF_DIARIZE_EINVAL (bad options), GF_DIARIZE_ECONFIG (model
 * files unusable), GF_DIARIZE_EDEVICE (the card asked for), GF_DIARIZE_EUNSUP
 * (options of a newer header set). */
int gf_diarize_open(const gf_diarize_opts *opts, gf_diarize **out);

/* Free the pipeline (and let go of its card); accepts NULL, sets *h to NULL. */
void gf_diarize_close(gf_diarize **h);

/* The handle's last error message ("" after a call that succeeded), never
 * NULL. Borrowed until the next call on h. */
const char *gf_diarize_errmsg(const gf_diarize *h);

/* GF_DIARIZE_MODE_NEURAL or GF_DIARIZE_MODE_WEIGHT_FREE; GF_DIARIZE_ESTATE for a
 * handle that did not open. */
int gf_diarize_mode(const gf_diarize *h);

/* The CUDA card the networks run on, or GF_DIARIZE_CPU. */
int gf_diarize_device(const gf_diarize *h);

/* The weight-free mode's voice activity detector: "silero-vad-v4" (the
 * trained one, fetched at set-up), "energy" (no such file: the energy
 * detector), or "-" with the networks; "" for a handle that did not open.
 * Static. */
const char *gf_diarize_vad(const gf_diarize *h);

/* Fill *call (size bytes: pass sizeof *call) with the defaults (all
 * unset) and set call->size. */
void gf_diarize_call_init(gf_diarize_call *call, size_t size);

/* Diarize the audio file at path (WAV, FLAC, Ogg, MP3, ...: what
 * libsndfile reads; channels averaged, resampled to 16 kHz). call may be
 * NULL. Returns 0 and a new result in *out, or a code (*out NULL):
 * GF_DIARIZE_ENOENT missing file, GF_DIARIZE_EINVAL empty or malformed
 * audio, GF_DIARIZE_EUNSUP a format not read, GF_DIARIZE_EINTR cancelled,
 * GF_DIARIZE_EEXIST an intermediate file there, ... */
int gf_diarize_file(gf_diarize *h, const char *path, const gf_diarize_call *call,
                    gf_diarize_result **out);

/* Diarize n mono float32 samples (nominally in [-1, 1]) at sample_rate Hz,
 * GF_DIARIZE_MIN_RATE .. GF_DIARIZE_MAX_RATE, resampled to 16 kHz exactly as
 * a file at that rate is: the samples a file decodes to give that file's
 * result. Returns as gf_diarize_file; GF_DIARIZE_EINVAL for no samples, a
 * rate outside the bounds or a sample that is not a finite number. */
int gf_diarize_samples(gf_diarize *h, const float *samples, size_t n, int sample_rate,
                       const gf_diarize_call *call, gf_diarize_result **out);

/* ---- results ---------------------------------------------------------- */

/* The turns, sorted by start (then end, then speaker): returns their
 * number and points *turns (may be NULL) at them, borrowed. */
size_t gf_diarize_result_turns(const gf_diarize_result *r, const gf_diarize_turn **turns);

/* The number of speakers; each speaks in at least one turn. */
size_t gf_diarize_result_speakers(const gf_diarize_result *r);

/* Speaker k's label, "SPEAKER_00", "SPEAKER_01", ... (the RTTM's); NULL when
 * k is not a speaker. Borrowed. */
const char *gf_diarize_result_label(const gf_diarize_result *r, size_t k);

/* Seconds of audio. */
double gf_diarize_result_duration(const gf_diarize_result *r);

/* The mode that made the result (GF_DIARIZE_MODE_*). */
int gf_diarize_result_mode(const gf_diarize_result *r);

/* The voice activity detector that made it, as gf_diarize_vad says. */
const char *gf_diarize_result_vad(const gf_diarize_result *r);

/* Windows taken from the call's checkpoint (gf_diarize_call.checkpoint)
 * instead of computed; 0: it started at the first. */
size_t gf_diarize_result_resumed(const gf_diarize_result *r);

/* Wall seconds the call took. */
double gf_diarize_result_elapsed(const gf_diarize_result *r);

/* The exclusive diarization (pyannote's exclusive_speaker_diarization): at
 * most one speaker at a time, the most active one, with the same speakers
 * as the turns (min_duration_off merges a speaker's turns here too, so with
 * it they may overlap). Returns the number of its turns, *turns (may be
 * NULL) as gf_diarize_result_turns. */
size_t gf_diarize_result_exclusive(const gf_diarize_result *r, const gf_diarize_turn **turns);

/* Each speaker's centroid embedding (pyannote's speaker_embeddings): rows
 * of *dim floats (256; 40 in weight-free mode), speaker 0 first, one per
 * speaker; zeros for a speaker the forced count named beyond the clusters
 * found. Borrowed; NULL when there is no speaker (*dim is set still). */
const float *gf_diarize_result_embeddings(const gf_diarize_result *r, size_t *dim);

/* The recording's name in the RTTM (gf_diarize_call.uri). Borrowed. */
const char *gf_diarize_result_uri(const gf_diarize_result *r);

/* The turns as RTTM text, one SPEAKER line a turn (times with 6
 * decimals), under uri (NULL: the result's; blanks become '_'): what
 * `gpuflock diarize` writes. "" when there is no turn, NULL for an empty
 * uri. Free with gf_diarize_free. */
char *gf_diarize_result_rttm(const gf_diarize_result *r, const char *uri);

/* The exclusive diarization's RTTM, as gf_diarize_result_rttm. */
char *gf_diarize_result_exclusive_rttm(const gf_diarize_result *r, const char *uri);

/* The result as `gpuflock diarize --json` writes it (turns with an overlap
 * flag, exclusive turns, speakers and their embeddings, parameters, mode,
 * duration, windows, timings per stage, device timings; "input" names a
 * file's path, size, mtime and SHA-256, read now, and is null for samples).
 * One line and a newline. Free with gf_diarize_free. */
char *gf_diarize_result_json(const gf_diarize_result *r);

/* Free a result; accepts NULL, sets *r to NULL. */
void gf_diarize_result_destroy(gf_diarize_result **r);

/* ---- the rest --------------------------------------------------------- */

/* Free a string this library returned; accepts NULL. */
void gf_diarize_free(void *p);

/* A short name for a code ("invalid input", ...); never NULL. */
const char *gf_diarize_strerror(int code);

/* The library's release, "0.1.0". */
const char *gf_diarize_version(void);

/* The lowest level of the log lines written to stderr
 * (GF_DIARIZE_LOG_*; GF_DIARIZE_LOG_OFF: none). One setting for the whole
 * process: set it before opening handles. Messages reach gf_diarize_errmsg
 * whatever the level. */
void gf_diarize_set_log_level(int level);

#ifdef __cplusplus
}
#endif

#endif
