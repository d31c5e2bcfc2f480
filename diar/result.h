/* result.h — what diarizing one recording gives (gf_diar_result): the
 * speaker turns as RTTM, the mode that made them and the time each stage
 * took; its JSON form; and the two outputs the run loop (diar/pipeline.c)
 * writes from its per-window results: the turns, and the intermediates
 * (--save-intermediates) as .npy files that `gpuflock cluster` reads. */
#ifndef GF_DIAR_RESULT_H
#define GF_DIAR_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/devstats.h"
#include "diar/cluster/cluster.h"
#include "diar/io/rttm.h"

typedef struct {
    gf_rttm *rttm;           /* speaker turns, uri = the file's base name */
    gf_rttm *exclusive;      /* the exclusive diarization: one speaker at a time
                              * (pyannote's exclusive_speaker_diarization), same names */
    float *centroids;        /* [n_speakers x dim] each speaker's centroid embedding, in
                              * the order of their names (SPEAKER_00 first) */
    size_t dim;              /* their size: 256, or 40 in weight-free mode */
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
    /* the recipe's values this run used (`--json`'s "parameters") */
    gf_cluster_opts used;    /* threshold, vbx.Fa / Fb, min_duration_off, speaker counts */
    bool exclude_overlap;    /* embedding_exclude_overlap */
    const char *vad;         /* weight-free: the voice activity detector that ran
                              * (GF_DIAR_VAD_SILERO or _ENERGY, static); NULL or "-" */
} gf_diar_result;

/* Free the turns and zero *r (safe twice). */
void gf_diar_result_free(gf_diar_result *r);

/* The JSON form of a result (`diarize --json`): the recording that produced
 * it ("input": its absolute path, size in bytes, mtime and SHA-256, read
 * from audio now; null when audio is NULL: samples from memory), turns (each with "overlap": another speaker talks during
 * it), speakers, "exclusive_turns", "speaker_embeddings" (one row per
 * speaker), "parameters", "mode" (neural | weight-free, with a notice
 * naming models_dir), duration, windows, per-stage timings and the devstats
 * table st (may be NULL). The caller frees; ends with a newline. */
char *gf_diar_result_json(const gf_diar_result *r, const char *audio, const char *models_dir,
                          const gf_devstats *st);

/* The turns of a clustering into r->rttm (a new one; the caller frees r
 * with gf_diar_result_free), uri the base name of path without its
 * extension (blanks as '_'), speakers named SPEAKER_NN by their cluster
 * label; r->n_speakers the highest label + 1. */
void gf_diar_result_turns(gf_diar_result *r, const char *path, const gf_cluster_result *cres);

/* NAME.speakers.npy: the centroids, [n_speakers x dim] float32, through
 * gf_npy_save_as (replace as there). Returns 0 or the GF_E* (logged). */
int gf_diar_result_save_speakers(const gf_diar_result *r, const char *path, bool replace);

/* Write the per-window results of n windows into the folder dir (made when
 * missing): segmentation_logits.npy [n x 589 x 7] when logits is not NULL,
 * segmentations.npy [n x 589 x 3], embeddings.npy [n x 3 x dim], float32.
 * A file already there is replaced only when replace is true (else
 * GF_EEXIST, the file kept). Returns 0, or the GF_E* (logged, naming the
 * folder or the file). */
int gf_diar_save_intermediates(const char *dir, const float *logits, const float *seg,
                               const float *emb, size_t n, size_t dim, bool replace);

#endif
