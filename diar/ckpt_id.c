/* ckpt_id.c — a checkpoint's identity (ckpt_id.h).
 *
 * One table names the identity's fields, their keys in the file and how a
 * change of each is said, so that the writer, the reader (diar/ckpt.c,
 * through gf_ckpt_field_key) and the comparison cannot disagree. */
#include "diar/ckpt_id.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define CONFIG "configuration changed"
static const struct {
    const char *key;      /* in the file */
    const char *change;   /* a change in words ... */
    const char *what;     /* ... (what saved -> now unit) */
    const char *unit;
} fields[GF_CKPT_N_FIELDS] = {
    [GF_CKPT_JOB] = { "job", "another job's checkpoint", "job", "" },
    [GF_CKPT_PROGRAM] = { "program", "program changed", "", "" },
    [GF_CKPT_LIBRARIES] = { "libraries", "libraries changed", "", "" },
    [GF_CKPT_ROUTE] = { "route", "route plan changed", "", "" },
    [GF_CKPT_MODE] = { "mode", CONFIG, "mode", "" },
    [GF_CKPT_MATH] = { "math", CONFIG, "math mode", "" },
    [GF_CKPT_OVERLAP] = { "overlap", CONFIG, "overlap", "" },
    [GF_CKPT_BATCH] = { "batch_size", CONFIG, "batch size", "" },
    [GF_CKPT_LOGITS] = { "logits", CONFIG, "logits", "" },
    [GF_CKPT_THRESHOLD] = { "threshold", CONFIG, "clustering threshold", "" },
    [GF_CKPT_EXCLUDE_OVERLAP] = { "embedding_exclude_overlap", CONFIG,
                                  "embedding_exclude_overlap", "" },
    [GF_CKPT_STEP] = { "segmentation_step", CONFIG, "segmentation_step", " s" },
    [GF_CKPT_NUM_SPEAKERS] = { "num_speakers", CONFIG, "num_speakers", "" },
    [GF_CKPT_MIN_SPEAKERS] = { "min_speakers", CONFIG, "min_speakers", "" },
    [GF_CKPT_MAX_SPEAKERS] = { "max_speakers", CONFIG, "max_speakers", "" },
    [GF_CKPT_SEG_MODEL] = { "models.segmentation", "model file changed",
                            "segmentation.safetensors", "" },
    [GF_CKPT_EMB_MODEL] = { "models.embedding", "model file changed",
                            "embedding.safetensors", "" },
    [GF_CKPT_VAD_MODEL] = { "models.vad", "model file changed", "silero_vad.safetensors",
                            "" },
    [GF_CKPT_AUDIO_SIZE] = { "audio.size", "audio file changed", "size", " bytes" },
    [GF_CKPT_AUDIO_MTIME] = { "audio.mtime_ns", "audio file changed", "mtime", " ns" },
    [GF_CKPT_AUDIO_SHA256] = { "audio.sha256", "audio file changed", "SHA-256", "" },
};

void gf_ckpt_id_set(gf_ckpt_id *id, gf_ckpt_field f, const char *fmt, ...)
{
    assert((unsigned)f < GF_CKPT_N_FIELDS);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(id->v[f], GF_CKPT_VALUE_MAX, fmt, ap);
    va_end(ap);
    for (char *p = id->v[f]; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

const char *gf_ckpt_field_key(gf_ckpt_field f)
{
    return (unsigned)f < GF_CKPT_N_FIELDS ? fields[f].key : "?";
}

/* A digest shown in a message: its first 12 hex digits. */
static const char *shown(const char *v, char *buf, size_t len)
{
    size_t n = strlen(v);
    if (n != 64 || strspn(v, "0123456789abcdef") != 64)
        return v;
    snprintf(buf, len, "%.12s...", v);
    return buf;
}

int gf_ckpt_id_diff(const gf_ckpt_id *saved, const gf_ckpt_id *now, char *why, size_t len)
{
    int n = 0;
    size_t used = 0;
    if (len)
        why[0] = '\0';
    for (int f = 0; f < GF_CKPT_N_FIELDS; f++) {
        if (strcmp(saved->v[f], now->v[f]) == 0)
            continue;
        char a[24], b[24], one[2 * GF_CKPT_VALUE_MAX + 128];
        snprintf(one, sizeof one, "%s (%s%s%s -> %s%s)", fields[f].change, fields[f].what,
                 fields[f].what[0] ? " " : "", shown(saved->v[f], a, sizeof a),
                 shown(now->v[f], b, sizeof b), fields[f].unit);
        if (used < len) {
            int w = snprintf(why + used, len - used, "%s%s", n ? "; " : "", one);
            used += w > 0 ? (size_t)w : 0;
        }
        n++;
    }
    return n;
}
