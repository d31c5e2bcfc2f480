/* wf_vad.c — the trained VAD over a recording's window stream (wf_vad.h). */
#include "diar/wf_vad.h"
#include "diar/pipeline.h"

#include "common/util.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

char *gf_diar_vad_file(const char *models_dir, bool *named)
{
    const char *env = getenv("GPUFLOCK_VAD");
    *named = env && env[0];
    if (*named)
        return strcmp(env, GF_DIAR_VAD_ENERGY) == 0 ? NULL : gf_strdup(env);
    if (models_dir && models_dir[0]) {
        char *in_dir = gf_strfmt("%s/%s", models_dir, GF_VAD_FILE_NAME);
        struct stat sb;
        if (stat(in_dir, &sb) == 0)
            return in_dir;
        free(in_dir);
    }
    return gf_strdup(gf_vad_default_path());
}

/* Chunks that hold samples [0, end): the last one may be partial. */
static size_t chunks_for(size_t end)
{
    return (end + GF_VAD_CHUNK - 1) / GF_VAD_CHUNK;
}

size_t gf_diar_max_vad_chunks(size_t n_windows)
{
    if (n_windows == 0)
        return 0;
    return chunks_for(n_windows * (size_t)GF_DIAR_WINDOW);
}

static void grow(gf_diar_vad_stream *s, size_t want)
{
    if (want <= s->cap)
        return;
    s->cap = want > 2 * s->cap ? want : 2 * s->cap;
    s->flag = gf_realloc(s->flag, s->cap * sizeof *s->flag);
}

/* A chunk's probability p into its flag, with the hysteresis of wf_vad.h. */
static void set_flag(gf_diar_vad_stream *s, float p)
{
    float prev = s->n ? s->flag[s->n - 1] : 0.0f;
    s->flag[s->n++] = p >= GF_DIAR_VAD_ON ? 1.0f : p < GF_DIAR_VAD_OFF ? 0.0f : prev;
}

void gf_diar_vad_window(gf_diar_vad_stream *s, const float *win, size_t valid, size_t start,
                        float *act)
{
    size_t end = start + valid;
    /* whole chunks inside the audio so far; where the audio ends in this
     * window, the partial last one too */
    size_t upto = valid < GF_DIAR_WINDOW ? chunks_for(end) : end / GF_VAD_CHUNK;
    grow(s, upto);
    /* consecutive whole chunks go through the network together, 64 at a time */
    while (s->n < upto) {
        size_t off = s->n * GF_VAD_CHUNK - start;   /* earlier windows ran the chunks before */
        size_t have = end - s->n * GF_VAD_CHUNK;
        size_t k = have / GF_VAD_CHUNK;
        float p[64], pad[GF_VAD_CHUNK];
        if (k > upto - s->n)
            k = upto - s->n;
        if (k > 64)
            k = 64;
        if (k) {
            gf_vad_run(s->vad, &s->st, win + off, k, p);
        } else {   /* the recording's last, partial chunk */
            memcpy(pad, win + off, have * sizeof *pad);
            memset(pad + have, 0, (GF_VAD_CHUNK - have) * sizeof *pad);
            gf_vad_run(s->vad, &s->st, pad, 1, p);
            k = 1;
        }
        for (size_t i = 0; i < k; i++)
            set_flag(s, p[i]);
    }
    for (int f = 0; f < GF_DIAR_FRAMES; f++) {
        size_t centre = (size_t)f * GF_DIAR_FRAME_STEP + GF_DIAR_FRAME_LEN / 2;
        if (centre >= valid || s->n == 0) {
            act[f] = 0.0f;
            continue;
        }
        size_t j = (start + centre) / GF_VAD_CHUNK;
        if (j >= s->n)
            j = s->n - 1;
        size_t lo = j >= GF_DIAR_VAD_PAD ? j - GF_DIAR_VAD_PAD : 0, hi = j + GF_DIAR_VAD_PAD;
        if (hi >= s->n)
            hi = s->n - 1;
        float a = 0.0f;
        for (size_t i = lo; i <= hi; i++)
            a = s->flag[i] > a ? s->flag[i] : a;
        act[f] = a;
    }
}

void gf_diar_vad_restore(gf_diar_vad_stream *s, const gf_vad_state *st, size_t n,
                         const float *flag)
{
    s->st = *st;
    grow(s, n);
    if (n)
        memcpy(s->flag, flag, n * sizeof *s->flag);
    s->n = n;
}

void gf_diar_vad_stream_free(gf_diar_vad_stream *s)
{
    free(s->flag);
    s->flag = NULL;
    s->n = s->cap = 0;
}
