/* wf_vad.h — the weight-free mode's trained voice activity: the Silero VAD
 * (diar/vad.h) run once over a recording as its windows stream.
 *
 * The windows (10 s every 1 s) overlap; the VAD runs on a global grid of
 * GF_VAD_CHUNK-sample chunks instead, each chunk once, in order, with the
 * LSTM state carried: a window runs the chunks it completes (the last one
 * of the recording zero-padded), and its 589 frames take the speech flag of
 * the chunk under each frame's centre, padded: speech when that chunk or
 * one of the GF_DIAR_VAD_PAD chunks on either side of it (of those run so
 * far) is (a frame past the last chunk run so far, at most the one chunk
 * that straddles the window's end, takes the last chunk's place; past the
 * audio's end, silence). A chunk's flag is its probability with
 * hysteresis: speech from GF_DIAR_VAD_ON up, silence below GF_DIAR_VAD_OFF,
 * the previous chunk's flag between (Silero's own thresholds). So every
 * window sees one timeline, and all that crosses a batch boundary is the
 * LSTM state, the chunk count and the flags (gf_diar_state's vad_*), which a
 * checkpoint keeps and a resumed run goes on from bit for bit. */
#ifndef GF_DIAR_WF_VAD_H
#define GF_DIAR_WF_VAD_H

#include <stdbool.h>
#include <stddef.h>

#include "diar/vad.h"

#define GF_DIAR_VAD_ON 0.5f    /* a chunk at or above this probability is speech ... */
#define GF_DIAR_VAD_OFF 0.35f  /* ... below this, silence; between, as the chunk before */
#define GF_DIAR_VAD_PAD 3      /* chunks of padding on each side of speech (0.096 s) */

typedef struct {
    const gf_vad *vad;    /* the network (borrowed); NULL: the energy detector runs */
    gf_vad_state st;      /* after the n chunks run */
    size_t n;             /* chunks run */
    float *flag;          /* [n] each chunk's speech flag, 0 or 1 (owned) */
    size_t cap;           /* allocated */
} gf_diar_vad_stream;

/* The trained VAD's file the weight-free mode takes: $GPUFLOCK_VAD when it
 * is set ("energy": none, NULL returned), else models_dir's
 * GF_VAD_FILE_NAME when it has one (models_dir may be NULL), else
 * gf_vad_default_path(). *named: whether the user named it ($GPUFLOCK_VAD),
 * so that a file missing there is an error, not a fallback. The caller
 * frees. */
char *gf_diar_vad_file(const char *models_dir, bool *named);

/* Chunks a recording of n_windows windows can have, whatever their step (a
 * bound for readers of saved states). */
size_t gf_diar_max_vad_chunks(size_t n_windows);

/* The window that starts at sample `start` of the recording (GF_DIAR_WINDOW
 * samples at win, of which the first `valid` are audio; fewer than a
 * window: the audio ends in it): run the chunks it completes, then its
 * activity into act [589] (0 or 1). */
void gf_diar_vad_window(gf_diar_vad_stream *s, const float *win, size_t valid, size_t start,
                        float *act);

/* Take over a saved stream: st, n chunks and their flags (copied). */
void gf_diar_vad_restore(gf_diar_vad_stream *s, const gf_vad_state *st, size_t n,
                         const float *flag);

/* Free the flags; the stream is empty after. */
void gf_diar_vad_stream_free(gf_diar_vad_stream *s);

#endif
