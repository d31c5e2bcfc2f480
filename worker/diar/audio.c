/* audio.c — decoding, downmix and resampling to 16 kHz mono, in blocks.
 *
 * The first stage of the diarization pipeline (see audio.h). libsndfile
 * decodes one block of interleaved frames at a time, the block is averaged
 * to mono, and libsoxr resamples it as a stream; the reader hands out as many
 * 16 kHz samples as the caller asks for. The window iterator on top keeps a
 * single window and slides it by memmove, so a three-hour file costs the same
 * memory as a ten-second one. */
#include "worker/diar/audio.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Frames decoded per libsndfile call: 4096 frames of up to a few channels
 * keeps the decode buffers in the tens of kilobytes. */
#define BLOCK_FRAMES 4096

struct gf_audio_reader {
    char *path;            /* the file, for messages */
    SNDFILE *sf;           /* libsndfile handle */
    gf_audio_info info;    /* what the file is */
    soxr_t soxr;           /* resampler; NULL when the file is at 16 kHz */
    float *block;          /* one decoded block, interleaved */
    float *mono;           /* the block averaged to mono */
    size_t mono_len;       /* valid samples in mono */
    size_t mono_pos;       /* samples of mono already handed on */
    int64_t frames_read;   /* frames decoded so far */
    int64_t samples_out;   /* 16 kHz samples returned so far */
    bool eof_in;           /* the decoder has no more frames */
    bool done;             /* the resampler is drained too */
    int error;             /* sticky error code, 0 while fine */
};

/* A data chunk longer than the file: libsndfile shortens it silently and
 * notes "data : N (should be M)" in its log; we call that truncation, unless
 * N is one of the "length unknown" placeholders that streaming writers put
 * there (0xFFFFFFFF and the like, from a pipe). */
static bool wav_log_says_truncated(SNDFILE *sf)
{
    char log[8192];
    log[0] = '\0';
    sf_command(sf, SFC_GET_LOG_INFO, log, sizeof log);
    for (char *line = log; line && *line; ) {
        char *nl = strchr(line, '\n');
        unsigned long long declared, actual;
        if (sscanf(line, "data : %llu (should be %llu)", &declared, &actual) == 2 &&
            declared > actual && declared < 0x7FFF0000ull)
            return true;
        line = nl ? nl + 1 : NULL;
    }
    return false;
}

static bool frame_count_exact(int format)
{
    /* MP3 frame counts are estimates; the other containers state them. */
    return (format & SF_FORMAT_TYPEMASK) != SF_FORMAT_MPEG;
}

gf_audio_reader *gf_audio_reader_new(const char *path, int *err)
{
    int rc = GF_EINVAL;
    gf_audio_reader *self = NULL;
    struct stat st;

    if (stat(path, &st) != 0) {
        rc = errno == ENOENT ? GF_ENOENT : GF_EIO;
        GF_ERROR("audio file %s: %s", path, strerror(errno));
        goto fail;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = GF_EIO;
        GF_ERROR("audio file %s: is a directory", path);
        goto fail;
    }
    if (S_ISREG(st.st_mode) && st.st_size == 0) {
        rc = GF_EINVAL;
        GF_ERROR("audio file %s: zero-length file (0 bytes)", path);
        goto fail;
    }

    self = gf_calloc(1, sizeof *self);
    self->path = gf_strdup(path);
    SF_INFO si;
    memset(&si, 0, sizeof si);
    self->sf = sf_open(path, SFM_READ, &si);
    if (!self->sf) {
        int e = sf_error(NULL);
        if (e == SF_ERR_UNRECOGNISED_FORMAT) {
            rc = GF_EUNSUP;
            GF_ERROR("audio file %s: unsupported or unrecognised format (%s)", path,
                     sf_strerror(NULL));
        } else if (e == SF_ERR_SYSTEM) {
            rc = GF_EIO;
            GF_ERROR("audio file %s: cannot read: %s", path, sf_strerror(NULL));
        } else {
            rc = GF_EINVAL;
            GF_ERROR("audio file %s: malformed: %s", path, sf_strerror(NULL));
        }
        goto fail;
    }
    if (si.channels <= 0 || si.samplerate <= 0) {
        rc = GF_EINVAL;
        GF_ERROR("audio file %s: malformed header (%d channels at %d Hz)", path, si.channels,
                 si.samplerate);
        goto fail;
    }
    if (si.frames <= 0) {
        rc = GF_EINVAL;
        GF_ERROR("audio file %s: empty (no audio frames)", path);
        goto fail;
    }
    int major = si.format & SF_FORMAT_TYPEMASK;
    if ((major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX) && wav_log_says_truncated(self->sf)) {
        rc = GF_EINVAL;
        GF_ERROR("audio file %s: truncated (the data chunk runs past the end of the file)",
                 path);
        goto fail;
    }

    self->info.rate = si.samplerate;
    self->info.channels = si.channels;
    self->info.format = si.format;
    self->info.frames = si.frames;
    self->info.duration = (double)si.frames / si.samplerate;
    /* soxr delivers round(frames * 16000 / rate) samples once drained. */
    self->info.samples = (int64_t)(((__int128)si.frames * 2 * GF_AUDIO_RATE + si.samplerate) /
                                   (2 * (__int128)si.samplerate));

    if (si.samplerate != GF_AUDIO_RATE) {
        soxr_error_t serr = NULL;
        soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
        soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
        self->soxr = soxr_create(si.samplerate, GF_AUDIO_RATE, 1, &serr, &io, &q, NULL);
        if (!self->soxr || serr) {
            rc = GF_EUNSUP;
            GF_ERROR("audio file %s: cannot resample from %d Hz: %s", path, si.samplerate,
                     serr ? serr : "soxr_create failed");
            goto fail;
        }
    }
    self->block = gf_malloc((size_t)BLOCK_FRAMES * (size_t)si.channels * sizeof(float));
    self->mono = gf_malloc(BLOCK_FRAMES * sizeof(float));
    return self;

fail:
    gf_audio_reader_destroy(&self);
    if (err)
        *err = rc;
    return NULL;
}

void gf_audio_reader_destroy(gf_audio_reader **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_audio_reader *self = *self_p;
    if (self->sf)
        sf_close(self->sf);
    if (self->soxr)
        soxr_delete(self->soxr);
    free(self->block);
    free(self->mono);
    free(self->path);
    free(self);
    *self_p = NULL;
}

const gf_audio_info *gf_audio_reader_info(const gf_audio_reader *self)
{
    assert(self);
    return &self->info;
}

int64_t gf_audio_reader_tell(const gf_audio_reader *self)
{
    return self->samples_out;
}

/* Decode the next block into mono; sets eof_in at the end. 0 or GF_E*. */
static int decode_block(gf_audio_reader *self)
{
    sf_count_t got = sf_readf_float(self->sf, self->block, BLOCK_FRAMES);
    if (sf_error(self->sf) != SF_ERR_NO_ERROR) {
        GF_ERROR("audio file %s: decoding failed after %lld frames: %s", self->path,
                 (long long)(self->frames_read + (got > 0 ? got : 0)), sf_strerror(self->sf));
        return GF_EIO;
    }
    if (got <= 0) {
        self->eof_in = true;
        if (frame_count_exact(self->info.format) && self->frames_read < self->info.frames) {
            GF_ERROR("audio file %s: truncated: %lld of %lld frames present", self->path,
                     (long long)self->frames_read, (long long)self->info.frames);
            return GF_EINVAL;
        }
        return 0;
    }
    int ch = self->info.channels;
    if (ch == 1) {
        memcpy(self->mono, self->block, (size_t)got * sizeof(float));
    } else {
        float inv = 1.0f / (float)ch;
        for (sf_count_t i = 0; i < got; i++) {
            const float *f = self->block + i * ch;
            float s = 0.0f;
            for (int c = 0; c < ch; c++)
                s += f[c];
            self->mono[i] = s * inv;
        }
    }
    self->mono_len = (size_t)got;
    self->mono_pos = 0;
    self->frames_read += got;
    return 0;
}

ssize_t gf_audio_reader_read(gf_audio_reader *self, float *out, size_t n)
{
    assert(self && (out || n == 0));
    if (self->error)
        return self->error;
    size_t produced = 0;
    while (produced < n && !self->done) {
        if (self->mono_pos == self->mono_len && !self->eof_in) {
            int rc = decode_block(self);
            if (rc) {
                self->error = rc;
                return rc;
            }
            continue;
        }
        if (!self->soxr) {
            size_t take = self->mono_len - self->mono_pos;
            if (take == 0) { /* eof_in */
                self->done = true;
                break;
            }
            if (take > n - produced)
                take = n - produced;
            memcpy(out + produced, self->mono + self->mono_pos, take * sizeof(float));
            self->mono_pos += take;
            produced += take;
            continue;
        }
        size_t pending = self->mono_len - self->mono_pos;
        size_t idone = 0, odone = 0;
        /* NULL input tells soxr the stream ended: it drains its filter. */
        soxr_error_t serr = soxr_process(self->soxr,
                                         pending ? self->mono + self->mono_pos : NULL, pending,
                                         &idone, out + produced, n - produced, &odone);
        if (serr) {
            GF_ERROR("audio file %s: resampling failed: %s", self->path, serr);
            self->error = GF_EIO;
            return GF_EIO;
        }
        self->mono_pos += idone;
        produced += odone;
        if (pending == 0 && self->eof_in && odone == 0)
            self->done = true;
    }
    self->samples_out += (int64_t)produced;
    return (ssize_t)produced;
}

int gf_audio_read_all(const char *path, float **out, size_t *n)
{
    assert(path && out && n);
    *out = NULL;
    *n = 0;
    int err = 0;
    gf_audio_reader *r = gf_audio_reader_new(path, &err);
    if (!r)
        return err;
    /* The expected length plus the resampler's slack; grow if it was short. */
    size_t cap = (size_t)r->info.samples + 1024, len = 0;
    float *buf = gf_malloc(cap * sizeof(float));
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = gf_realloc(buf, cap * sizeof(float));
        }
        ssize_t got = gf_audio_reader_read(r, buf + len, cap - len);
        if (got < 0) {
            free(buf);
            gf_audio_reader_destroy(&r);
            return (int)got;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    gf_audio_reader_destroy(&r);
    if (len == 0) {
        free(buf);
        GF_ERROR("audio file %s: empty (no samples decoded)", path);
        return GF_EINVAL;
    }
    *out = buf;
    *n = len;
    return 0;
}

/* ---- sliding windows ---- */

struct gf_audio_windows {
    gf_audio_reader *reader;  /* the stream behind the windows */
    size_t size;              /* window length, samples */
    size_t step;              /* hop between windows, samples */
    float *buf;               /* the current window */
    size_t filled;            /* samples of buf that came from the file */
    int64_t start;            /* first sample of the current window */
    bool started;             /* the first window was produced */
    bool finished;            /* no window left */
};

gf_audio_windows *gf_audio_windows_new(const char *path, size_t size, size_t step, int *err)
{
    assert(size > 0 && step > 0 && step <= size);
    gf_audio_reader *r = gf_audio_reader_new(path, err);
    if (!r)
        return NULL;
    gf_audio_windows *self = gf_calloc(1, sizeof *self);
    self->reader = r;
    self->size = size;
    self->step = step;
    self->buf = gf_calloc(size, sizeof(float));
    return self;
}

void gf_audio_windows_destroy(gf_audio_windows **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_audio_windows *self = *self_p;
    gf_audio_reader_destroy(&self->reader);
    free(self->buf);
    free(self);
    *self_p = NULL;
}

const gf_audio_info *gf_audio_windows_info(const gf_audio_windows *self)
{
    return gf_audio_reader_info(self->reader);
}

size_t gf_audio_windows_count(int64_t n, size_t size, size_t step)
{
    if (n <= 0)
        return 0;
    if ((uint64_t)n < size)
        return 1;
    size_t rest = (size_t)n - size;
    return rest / step + 1 + (rest % step ? 1 : 0);
}

/* Read until buf[from..size) is full or the file ends; 0 or GF_E*. */
static int fill(gf_audio_windows *self, size_t from)
{
    size_t pos = from;
    while (pos < self->size) {
        ssize_t got = gf_audio_reader_read(self->reader, self->buf + pos, self->size - pos);
        if (got < 0)
            return (int)got;
        if (got == 0)
            break;
        pos += (size_t)got;
    }
    self->filled = pos;
    if (pos < self->size)
        memset(self->buf + pos, 0, (self->size - pos) * sizeof(float));
    return 0;
}

int gf_audio_windows_next(gf_audio_windows *self, const float **win, int64_t *start,
                          size_t *valid)
{
    assert(self && win && start);
    if (self->finished)
        return 0;
    int rc;
    if (!self->started) {
        self->started = true;
        if ((rc = fill(self, 0)) != 0)
            return rc;
        if (self->filled == 0) {
            self->finished = true;
            GF_ERROR("audio file %s: empty (no samples decoded)", self->reader->path);
            return GF_EINVAL;
        }
    } else {
        /* The previous window was the last one when the file ended inside
         * it at or before the next step's start plus a whole window. */
        if (self->filled < self->size) {
            self->finished = true;
            return 0;
        }
        size_t keep = self->size - self->step;
        memmove(self->buf, self->buf + self->step, keep * sizeof(float));
        if ((rc = fill(self, keep)) != 0)
            return rc;
        if (self->filled == keep) {
            /* Nothing beyond the previous window: it was the last. */
            self->finished = true;
            return 0;
        }
        self->start += (int64_t)self->step;
    }
    *win = self->buf;
    *start = self->start;
    if (valid)
        *valid = self->filled;
    return 1;
}
