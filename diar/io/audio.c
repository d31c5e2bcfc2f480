/* audio.c — decoding, downmix and resampling to 16 kHz mono, in blocks.
 *
 * The first stage of the diarization pipeline (see audio.h). libsndfile
 * decodes one block of interleaved frames at a time, the block is averaged
 * to mono, and libsoxr resamples it as a stream; the reader hands out as many
 * 16 kHz samples as the caller asks for. What the header says of the sample
 * width is read beside libsndfile (audio_width.c), and where it is narrower
 * than its container every sample's padding bits are checked here as the
 * block is decoded. A reader can also stand on samples already in memory
 * (gf_audio_reader_new_samples): the same blocks, the same resampler, no
 * decoder. The window iterator on top is audio_windows.c. */
#include "diar/io/audio.h"
#include "diar/io/audio_width.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

/* Frames decoded per libsndfile call: 4096 frames of up to a few channels
 * keeps the decode buffers in the tens of kilobytes. */
#define BLOCK_FRAMES 4096

struct gf_audio_reader {
    char *path;            /* the file, for messages */
    int fd;                /* the file, open once; -1 when not open */
    SNDFILE *sf;           /* libsndfile handle, on fd (which it does not close); NULL
                              for samples in memory */
    const float *mem;      /* the samples in memory (borrowed), or NULL for a file */
    int64_t mem_pos;       /* frames of mem already taken into blocks */
    gf_audio_info info;    /* what the file is */
    soxr_t soxr;           /* resampler; NULL when the file is at 16 kHz */
    float *block;          /* one decoded block, interleaved */
    int32_t *iblock;       /* the block as integers, where padding bits are checked */
    gf_audio_padding pad;  /* the padding bits to check (pad.mask 0: none) */
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

static int decode_block(gf_audio_reader *self);

/* What the stream is (info), its resampler when it is not at 16 kHz, and
 * the block buffers. 0, or GF_EUNSUP (logged) when soxr refuses the rate. */
static int set_rate(gf_audio_reader *self, int rate, int channels, int64_t frames)
{
    self->info.rate = rate;
    self->info.channels = channels;
    self->info.frames = frames;
    self->info.duration = (double)frames / rate;
    /* soxr delivers round(frames * 16000 / rate) samples once drained. */
    self->info.samples = (int64_t)(((__int128)frames * 2 * GF_AUDIO_RATE + rate) /
                                   (2 * (__int128)rate));
    if (rate != GF_AUDIO_RATE) {
        soxr_error_t serr = NULL;
        soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
        soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
        self->soxr = soxr_create(rate, GF_AUDIO_RATE, 1, &serr, &io, &q, NULL);
        if (!self->soxr || serr) {
            GF_ERROR("audio %s %s: cannot resample from %d Hz: %s", self->mem ? "samples" : "file",
                     self->path, rate, serr ? serr : "soxr_create failed");
            return GF_EUNSUP;
        }
    }
    self->block = gf_malloc((size_t)BLOCK_FRAMES * (size_t)channels * sizeof(float));
    self->mono = gf_malloc(BLOCK_FRAMES * sizeof(float));
    return 0;
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

    /* One open for our look at the header, libsndfile's decoding and the
     * checks on its size, so that all three see the same file. */
    /* A regular file only: a FIFO is refused, not waited on (a job blocked
     * in open could not be cancelled), and a device is not read forever. */
    int fd = gf_open_regular(path, 0, &st);
    if (fd < 0) {
        rc = fd == GF_EUNSUP || fd == GF_EPERM ? GF_EIO : fd;
        if (fd == GF_ENOENT)
            GF_ERROR("audio file %s: %s", path, strerror(ENOENT));
        goto fail;
    }
    if (st.st_size == 0) {
        rc = GF_EINVAL;
        GF_ERROR("audio file %s: zero-length file (0 bytes)", path);
        goto fail;
    }

    self = gf_calloc(1, sizeof *self);
    self->path = gf_strdup(path);
    self->fd = fd;
    fd = -1;
    gf_audio_width hdr;
    gf_audio_width_read(self->fd, &hdr);
    SF_INFO si;
    memset(&si, 0, sizeof si);
    self->sf = sf_open_fd(self->fd, SFM_READ, &si, SF_FALSE);
    if (!self->sf) {
        int e = sf_error(NULL);
        char what[96];
        if (e != SF_ERR_SYSTEM && hdr.kind && (hdr.pcm || hdr.fp) && !gf_audio_width_standard(&hdr)) {
            /* A width outside 8/16/24/32 (float: 32/64) that libsndfile does
             * not open: name it. */
            rc = GF_EUNSUP;
            GF_ERROR("audio file %s: cannot decode %s with %s: %s", path,
                     gf_audio_width_describe(&hdr, what, sizeof what), sf_version_string(),
                     sf_strerror(NULL));
        } else if (e == SF_ERR_UNRECOGNISED_FORMAT) {
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

    if ((rc = gf_audio_width_check(path, &hdr, si.format, si.channels, &self->pad)) != 0)
        goto fail;
    if (self->pad.mask)
        self->iblock = gf_malloc((size_t)BLOCK_FRAMES * (size_t)si.channels * sizeof(int32_t));

    self->info.format = si.format;
    if ((rc = set_rate(self, si.samplerate, si.channels, si.frames)) != 0)
        goto fail;
    /* A file whose padding bits are checked is checked on its first block
     * here, so that a right-justified one is refused when it is opened. */
    if (self->pad.mask && (rc = decode_block(self)) != 0)
        goto fail;
    return self;

fail:
    if (fd >= 0)
        close(fd);
    gf_audio_reader_destroy(&self);
    if (err)
        *err = rc;
    return NULL;
}

gf_audio_reader *gf_audio_reader_new_samples(const float *x, size_t n, int rate,
                                             const char *name, int *err)
{
    int rc = GF_EINVAL;
    gf_audio_reader *self = NULL;
    assert(name && (x || n == 0));
    if (rate < GF_AUDIO_MIN_RATE || rate > GF_AUDIO_MAX_RATE) {
        GF_ERROR("audio samples %s: sample rate %d Hz: outside %d..%d Hz", name, rate,
                 GF_AUDIO_MIN_RATE, GF_AUDIO_MAX_RATE);
        goto fail;
    }
    if (n == 0 || n > (size_t)INT64_MAX) {
        GF_ERROR("audio samples %s: %s", name, n ? "too many samples" : "empty (no samples)");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            GF_ERROR("audio samples %s: sample %zu is not a finite number", name, i);
            goto fail;
        }
    }
    self = gf_calloc(1, sizeof *self);
    self->path = gf_strdup(name);
    self->fd = -1;
    self->mem = x;
    if ((rc = set_rate(self, rate, 1, (int64_t)n)) != 0)
        goto fail;
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
    if (self->fd >= 0)
        close(self->fd);
    if (self->soxr)
        soxr_delete(self->soxr);
    free(self->block);
    free(self->iblock);
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

/* Read the next block as integers into self->block as floats, checking that
 * every sample's bits below its valid ones are zero. Returns the frames read
 * or a negative GF_E* (logged). */
static sf_count_t read_checked(gf_audio_reader *self)
{
    sf_count_t got = sf_readf_int(self->sf, self->iblock, BLOCK_FRAMES);
    if (got <= 0)
        return got;
    int ch = self->info.channels;
    size_t n = (size_t)got * (size_t)ch;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)self->iblock[i];
        if (u & self->pad.mask) {
            /* The container as the file holds it (8-bit WAV is unsigned). */
            uint32_t raw = u >> (32 - self->pad.container_bits);
            if ((self->info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_U8)
                raw ^= 0x80;
            GF_ERROR("audio file %s: malformed: the sample at frame %lld (channel %d) has bits "
                     "set below its %d valid bits of %d (0x%0*X): samples must be "
                     "left-justified with zeros below, or their scale is unknown", self->path,
                     (long long)(self->frames_read + (int64_t)(i / (size_t)ch)),
                     (int)(i % (size_t)ch) + 1, self->pad.valid_bits, self->pad.container_bits,
                     self->pad.container_bits / 4, raw);
            return GF_EINVAL;
        }
        /* Exact: at most 24 significant bits are set when the check passes
         * for containers under 32 bits, and libsndfile's own float reading
         * of 32-bit PCM rounds the same way (int to float, then 2^-31). */
        self->block[i] = (float)self->iblock[i] * (1.0f / 2147483648.0f);
    }
    return got;
}

/* Decode the next block into mono; sets eof_in at the end. 0 or GF_E*. */
static int decode_block(gf_audio_reader *self)
{
    sf_count_t got;
    if (self->mem) {   /* the same blocks as a file's */
        got = self->info.frames - self->mem_pos;
        if (got > BLOCK_FRAMES)
            got = BLOCK_FRAMES;
        memcpy(self->block, self->mem + self->mem_pos, (size_t)got * sizeof(float));
        self->mem_pos += got;
    } else {
        got = self->pad.mask ? read_checked(self)
                             : sf_readf_float(self->sf, self->block, BLOCK_FRAMES);
    }
    if (got < 0)
        return (int)got;
    if (self->sf && sf_error(self->sf) != SF_ERR_NO_ERROR) {
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
