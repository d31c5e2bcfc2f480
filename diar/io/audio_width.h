/* audio_width.h — the header's own word on sample width, for the audio
 * reader (diar/io/audio.h).
 *
 * libsndfile (1.2.0) reads a WAV or AIFF sample of any width from 1 to 32
 * bits as its whole-byte container (a 12-bit sample as 16 bits, a 7-bit WAV
 * sample as 8-bit unsigned) and scales by the container: right for the
 * left-justified samples both formats prescribe (the sample in the high bits,
 * zeros below), since x / 2^(container - 1) is then sample / 2^(bits - 1).
 * It does not check those low bits, nor WAVE_FORMAT_EXTENSIBLE's valid bits
 * against the container, nor the block align (it reads packed containers
 * whatever the header says), and it reports only the container width. So we
 * read the width from the header ourselves: WAV (RIFF, RIFX, RF64) 'fmt ',
 * AIFF/AIFC 'COMM' and FLAC STREAMINFO. Where libsndfile refuses a width, the
 * message names it; where it reads one narrower than the container, every
 * sample's padding bits must be zero (a right-justified writer's file would
 * otherwise decode at the wrong scale); an inconsistent header is refused.
 * docs/audio.md has the table of cases. */
#ifndef GF_DIAR_AUDIO_WIDTH_H
#define GF_DIAR_AUDIO_WIDTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a file's header says of its samples. */
typedef struct {
    const char *kind;   /* "WAV", "AIFF", "FLAC"; NULL: none of these, or not found */
    bool pcm;           /* integer PCM */
    bool fp;            /* IEEE float */
    int channels;       /* as the header says */
    int bits;           /* bits per sample (WAV: the container field) */
    int valid_bits;     /* significant bits: WAVE_FORMAT_EXTENSIBLE's
                           wValidBitsPerSample where nonzero, else bits */
    int block_align;    /* WAV: bytes per frame the header declares; else 0 */
} gf_audio_width;

/* The padding bits the reader checks while it decodes. */
typedef struct {
    uint32_t mask;        /* bits below the valid ones, as sf_readf_int scales them
                             (left-justified in 32); 0: nothing to check */
    int valid_bits;       /* the samples' significant bits, for messages */
    int container_bits;   /* bits each sample occupies in the file */
} gf_audio_padding;

/* The header's sample format, where fd is a WAV, AIFF or FLAC file and its
 * format chunk can be found; h->kind stays NULL otherwise. Reads with
 * pread, so a pipe (which cannot be) is left for libsndfile as it is. */
void gf_audio_width_read(int fd, gf_audio_width *h);

/* "12-bit integer PCM (WAV)" for messages, into buf; returns buf. */
const char *gf_audio_width_describe(const gf_audio_width *h, char *buf, size_t cap);

/* Whether h is a width every decoder reads as it is (8/16/24/32 bits;
 * float 32/64). */
bool gf_audio_width_standard(const gf_audio_width *h);

/* After libsndfile opened path as format (SF_FORMAT_*) with channels: the
 * header h against what libsndfile reads, and *pad set up (mask 0: nothing
 * to check). Returns 0, or GF_EINVAL after logging how the header
 * contradicts itself or libsndfile. */
int gf_audio_width_check(const char *path, const gf_audio_width *h, int format, int channels,
                         gf_audio_padding *pad);

#endif
