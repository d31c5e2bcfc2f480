/* audio_windows.h — sliding windows over an audio file, in order, as the
 * diarization pipeline consumes them, on top of the 16 kHz reader
 * (diar/io/audio.h): windows of `size` samples every `step` samples
 * starting at 0; whole windows while they fit, then, if samples remain
 * after the last whole window's step (or the file is shorter than one
 * window), one last window starting at the next step, zero-padded to full
 * length (pyannote's chunking). Holds one window of samples whatever the
 * file's length, and slides it by memmove. */
#ifndef GF_DIAR_AUDIO_WINDOWS_H
#define GF_DIAR_AUDIO_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include "diar/io/audio.h"

typedef struct gf_audio_windows gf_audio_windows;

/* Open path for windows of size samples every step (0 < step <= size). NULL
 * on failure as gf_audio_reader_new, with *err set when err is not NULL. */
gf_audio_windows *gf_audio_windows_new(const char *path, size_t size, size_t step, int *err);

/* The same windows over n mono samples in memory at `rate` Hz (borrowed:
 * they must outlive the windows; resampled as gf_audio_reader_new_samples
 * says), name standing for them in messages. NULL on failure as
 * gf_audio_reader_new_samples, with *err set when err is not NULL. */
gf_audio_windows *gf_audio_windows_new_samples(const float *x, size_t n, int rate,
                                               const char *name, size_t size, size_t step,
                                               int *err);

/* Close the file and free the windows; accepts NULL, sets *self_p to NULL. */
void gf_audio_windows_destroy(gf_audio_windows **self_p);

/* The next window: 1 with *win pointing to size samples (borrowed, valid
 * until the next call) and *start its first sample's index; 0 when no window
 * is left; a negative GF_E* on a decode error. *valid (optional) is how many
 * samples of the window came from the file (the rest are zero padding). */
int gf_audio_windows_next(gf_audio_windows *self, const float **win, int64_t *start,
                          size_t *valid);

/* The file (or samples) behind the windows. Borrowed, valid until destroy. */
const gf_audio_info *gf_audio_windows_info(const gf_audio_windows *self);

/* Number of windows a file of n 16 kHz samples gives (0 for n = 0). */
size_t gf_audio_windows_count(int64_t n, size_t size, size_t step);

#endif
