/* audio.h — any common audio file in, 16 kHz mono float out, in blocks.
 *
 * Decoding goes through libsndfile (WAV PCM 8/16/24/32-bit, float 32/64,
 * WAVE_FORMAT_EXTENSIBLE, FLAC, Ogg/Vorbis, MP3 and whatever else it reads;
 * WAV and AIFF PCM of other widths up to 32 bits when left-justified in whole
 * bytes, as those formats store them: padding bits set, a width libsndfile
 * cannot decode or a header that contradicts itself is refused, naming the
 * width; docs/audio.md),
 * channels are averaged to mono, and libsoxr (high quality) resamples to
 * 16 kHz; a file already at 16 kHz is passed through untouched. Samples are
 * floats in [-1, 1] (integer PCM divided by 2^(bits-1), as torchaudio does).
 *
 * Memory does not grow with the file's length: the reader holds one decode
 * block and the resampler's state (tens of kilobytes); the window iterator
 * on top of it (diar/io/audio_windows.h) one window. Errors from outside
 * (missing, unreadable, empty, truncated or unrecognised files) are logged
 * once, naming the file, and returned as negative GF_E* codes. */
#ifndef GF_DIAR_AUDIO_H
#define GF_DIAR_AUDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GF_AUDIO_RATE 16000 /* the pipeline's sample rate */
#define GF_AUDIO_MIN_RATE 1000   /* samples in memory: the lowest rate taken, Hz */
#define GF_AUDIO_MAX_RATE 768000 /* and the highest */

typedef struct {
    int rate;            /* the file's sample rate, Hz */
    int channels;        /* the file's channel count */
    int format;          /* libsndfile SF_FORMAT_* (major | subtype) */
    int64_t frames;      /* frames in the file as its header declares them */
    int64_t samples;     /* 16 kHz samples the reader will deliver: round(frames *
                            16000 / rate), exact where the header's frame count is
                            (not MP3, whose count is an estimate) */
    double duration;     /* seconds, frames / rate */
} gf_audio_info;

typedef struct gf_audio_reader gf_audio_reader;

/* Open an audio file for streaming at 16 kHz mono. Returns NULL on failure,
 * after logging why, with the GF_E* code in *err when err is not NULL
 * (GF_ENOENT missing, GF_EIO unreadable, GF_EINVAL empty, zero-length or
 * malformed, GF_EUNSUP format not recognised or sample width not decodable). */
gf_audio_reader *gf_audio_reader_new(const char *path, int *err);

/* A reader over n mono samples already in memory at `rate` Hz (borrowed:
 * they must outlive the reader), resampled to 16 kHz as a file at that
 * rate is, in the same blocks, so the same samples give the same output;
 * name stands for them in messages. Returns NULL after logging, with
 * GF_EINVAL in *err (when err is not NULL) for a rate outside
 * GF_AUDIO_MIN_RATE..GF_AUDIO_MAX_RATE, no samples or a sample that is not
 * finite, GF_EUNSUP when the resampler refuses the rate. */
gf_audio_reader *gf_audio_reader_new_samples(const float *x, size_t n, int rate,
                                             const char *name, int *err);

/* Close the file and free the reader; accepts NULL, sets *self_p to NULL. */
void gf_audio_reader_destroy(gf_audio_reader **self_p);

/* What the file is. Borrowed, valid until destroy. */
const gf_audio_info *gf_audio_reader_info(const gf_audio_reader *self);

/* Read up to n 16 kHz mono samples into out. Returns the number written
 * (fewer than n only at the end of the file, 0 after it), or a negative GF_E*
 * (GF_EIO decode error, GF_EINVAL truncated file or a sample's padding bits
 * set) after logging it. */
ssize_t gf_audio_reader_read(gf_audio_reader *self, float *out, size_t n);

/* Samples returned so far. */
int64_t gf_audio_reader_tell(const gf_audio_reader *self);

/* Decode a whole file (for short files and tests). On success *out is a new
 * array the caller frees and *n its length; on failure returns a GF_E* and
 * leaves *out NULL. */
int gf_audio_read_all(const char *path, float **out, size_t *n);

#endif
