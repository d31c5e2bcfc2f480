/* ckpt_id.h — the identity of a diarize job's checkpoint: everything its
 * results depend on besides the audio's windows themselves (the job, the
 * program and libraries, the route plan, the configuration, the models'
 * and the audio file's digests), one text field each, and how a change of
 * each is said. A checkpoint (diar/ckpt.h) stores it as "key=value" lines
 * in gf_ckpt_field order; a resumed run compares it with its own, and any
 * field that differs means the saved results may not be reused. */
#ifndef GF_DIAR_CKPT_ID_H
#define GF_DIAR_CKPT_ID_H

#include <stddef.h>

#define GF_CKPT_VALUE_MAX 160       /* identity values, NUL included */

/* The identity of a checkpoint: what its results depend on. Every field is
 * compared; one that differs means the results may not be reused. */
typedef enum {
    GF_CKPT_JOB = 0,         /* job id */
    GF_CKPT_PROGRAM,         /* "gpuflock 0.1.0 build <build id>" */
    GF_CKPT_LIBRARIES,       /* decoder, resampler, BLAS versions */
    GF_CKPT_ROUTE,           /* "cpu", or the card's route plan digest */
    GF_CKPT_MODE,            /* "neural" | "weight-free" */
    GF_CKPT_MATH,            /* math mode of the networks: fp32 | tf32 */
    GF_CKPT_OVERLAP,         /* stages overlapped on the card: on | off | - */
    GF_CKPT_BATCH,           /* windows per network call */
    GF_CKPT_LOGITS,          /* kept | not kept (--save-intermediates) */
    GF_CKPT_THRESHOLD,       /* the clustering's AHC cut */
    GF_CKPT_EXCLUDE_OVERLAP,
    GF_CKPT_STEP,            /* segmentation_step: seconds between windows */ /* embedding_exclude_overlap: on | off (the embeddings change) */
    GF_CKPT_NUM_SPEAKERS,    /* speaker constraints */
    GF_CKPT_MIN_SPEAKERS,
    GF_CKPT_MAX_SPEAKERS,
    GF_CKPT_SEG_MODEL,       /* SHA-256 of segmentation.safetensors, "-" weight-free */
    GF_CKPT_EMB_MODEL,       /* SHA-256 of embedding.safetensors, "-" weight-free */
    GF_CKPT_VAD_MODEL,       /* weight-free: SHA-256 of the trained VAD's file, or "energy";
                                "-" with the networks */
    GF_CKPT_AUDIO_SIZE,      /* bytes of the audio file */
    GF_CKPT_AUDIO_MTIME,     /* its modification time, ns since the epoch */
    GF_CKPT_AUDIO_SHA256,    /* SHA-256 of the whole audio file */
    GF_CKPT_N_FIELDS
} gf_ckpt_field;

typedef struct {
    char v[GF_CKPT_N_FIELDS][GF_CKPT_VALUE_MAX];   /* each field's value, as text */
} gf_ckpt_id;

/* Set field f (printf format); a newline or other control byte becomes '?'
 * and what does not fit is cut. */
void gf_ckpt_id_set(gf_ckpt_id *id, gf_ckpt_field f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The key of field f in the file ("audio.sha256"). */
const char *gf_ckpt_field_key(gf_ckpt_field f);

/* Why results saved under `saved` may not be reused under `now`: every
 * field that differs in words, joined by "; " ("audio file changed (size
 * 10 -> 12 bytes); configuration changed (batch size 32 -> 16)") into
 * why[len] ("" when none). Returns the number of fields that differ. */
int gf_ckpt_id_diff(const gf_ckpt_id *saved, const gf_ckpt_id *now, char *why, size_t len);

#endif
