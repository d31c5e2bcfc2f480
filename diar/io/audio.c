/* audio.c — decoding, downmix and resampling to 16 kHz mono, in blocks.
 *
 * The first stage of the diarization pipeline (see audio.h). libsndfile
 * decodes one block of interleaved frames at a time, the block is averaged
 * to mono, and libsoxr resamples it as a stream; the reader hands out as many
 * 16 kHz samples as the caller asks for. The window iterator on top keeps a
 * single window and slides it by memmove, so a three-hour file costs the same
 * memory as a ten-second one. */
#include "diar/io/audio.h"

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
#include <fcntl.h>
#include <unistd.h>

/* Frames decoded per libsndfile call: 4096 frames of up to a few channels
 * keeps the decode buffers in the tens of kilobytes. */
#define BLOCK_FRAMES 4096

struct gf_audio_reader {
    char *path;            /* the file, for messages */
    int fd;                /* the file, open once; -1 when not open */
    SNDFILE *sf;           /* libsndfile handle, on fd (which it does not close) */
    gf_audio_info info;    /* what the file is */
    soxr_t soxr;           /* resampler; NULL when the file is at 16 kHz */
    float *block;          /* one decoded block, interleaved */
    int32_t *iblock;       /* the block as integers, where padding bits are checked */
    uint32_t pad_mask;     /* bits below the valid ones, as sf_readf_int scales them
                              (left-justified in 32); 0: nothing to check */
    int valid_bits;        /* the samples' significant bits, for messages */
    int container_bits;    /* bits each sample occupies in the file */
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

/* ---- the header's own word on sample width ----
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

typedef struct {
    const char *kind;   /* "WAV", "AIFF", "FLAC"; NULL: none of these, or not found */
    bool pcm;           /* integer PCM */
    bool fp;            /* IEEE float */
    int channels;       /* as the header says */
    int bits;           /* bits per sample (WAV: the container field) */
    int valid_bits;     /* significant bits: WAVE_FORMAT_EXTENSIBLE's
                           wValidBitsPerSample where nonzero, else bits */
    int block_align;    /* WAV: bytes per frame the header declares; else 0 */
} sample_header;

/* Chunks walked before giving up on finding the format chunk. */
#define MAX_CHUNKS 4096

static uint32_t get_u32(const unsigned char *b, bool be)
{
    return be ? (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]
              : (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

static unsigned get_u16(const unsigned char *b, bool be)
{
    return be ? (unsigned)b[0] << 8 | b[1] : (unsigned)b[1] << 8 | b[0];
}

/* n bytes at off of fd into buf; false when fewer are there. */
static bool read_at(int fd, off_t off, void *buf, size_t n)
{
    return off >= 0 && pread(fd, buf, n, off) == (ssize_t)n;
}

/* Walk the chunks from off (after a 12-byte RIFF or FORM header) to the one
 * named id; read up to cap bytes of it into buf. Returns its length, or -1:
 * not found before a WAV 'data' chunk (libsndfile wants the format first),
 * the end or MAX_CHUNKS. */
static long find_chunk(int fd, off_t off, bool be, const char *id, unsigned char *buf,
                       size_t cap)
{
    unsigned char h[8];
    for (int i = 0; i < MAX_CHUNKS && read_at(fd, off, h, 8); i++) {
        uint32_t len = get_u32(h + 4, be);
        off += 8;
        if (memcmp(h, id, 4) == 0) {
            size_t want = len < cap ? len : cap;
            return read_at(fd, off, buf, want) ? (long)want : -1;
        }
        if (memcmp(h, "data", 4) == 0)
            return -1;
        off += (off_t)len + (len & 1);
    }
    return -1;
}

/* The header's sample format, where fd is a file of one of the kinds above
 * and its format chunk can be found; h->kind stays NULL otherwise. Reads
 * with pread, so a pipe (which cannot be) is left for libsndfile as it is. */
static void read_sample_header(int fd, sample_header *h)
{
    memset(h, 0, sizeof *h);
    unsigned char b[40];
    if (!read_at(fd, 0, b, 12))
        return;
    bool riff = memcmp(b, "RIFF", 4) == 0 || memcmp(b, "RF64", 4) == 0;
    bool rifx = memcmp(b, "RIFX", 4) == 0;
    if ((riff || rifx) && memcmp(b + 8, "WAVE", 4) == 0) {
        long n = find_chunk(fd, 12, rifx, "fmt ", b, sizeof b);
        if (n < 16)
            return;
        unsigned tag = get_u16(b, rifx);
        h->channels = (int)get_u16(b + 2, rifx);
        h->block_align = (int)get_u16(b + 12, rifx);
        h->bits = h->valid_bits = (int)get_u16(b + 14, rifx);
        if (tag == 0xFFFE && n >= 40) {
            /* WAVE_FORMAT_EXTENSIBLE: valid bits, channel mask, and the
             * subformat GUID, whose first field holds the format tag. */
            unsigned valid = get_u16(b + 18, rifx);
            if (valid)
                h->valid_bits = (int)valid;
            tag = rifx ? get_u16(b + 26, true) : get_u16(b + 24, false);
        }
        h->pcm = tag == 1;
        h->fp = tag == 3;
        h->kind = "WAV";
    } else if (memcmp(b, "FORM", 4) == 0 &&
               (memcmp(b + 8, "AIFF", 4) == 0 || memcmp(b + 8, "AIFC", 4) == 0)) {
        bool aifc = b[11] == 'C';
        long n = find_chunk(fd, 12, true, "COMM", b, sizeof b);
        if (n < 18)
            return;
        h->channels = (int)get_u16(b, true);
        h->bits = h->valid_bits = (int)get_u16(b + 6, true);
        /* AIFC names its encoding; these are integer PCM. */
        h->pcm = !aifc || (n >= 22 && (memcmp(b + 18, "NONE", 4) == 0 ||
                                       memcmp(b + 18, "twos", 4) == 0 ||
                                       memcmp(b + 18, "sowt", 4) == 0));
        h->kind = "AIFF";
    } else if (memcmp(b, "fLaC", 4) == 0) {
        /* The first metadata block is STREAMINFO: after 10 bytes of block
         * and frame sizes, 20 bits of rate, 3 of channels - 1, 5 of bits - 1. */
        unsigned char si[14];
        if ((b[4] & 0x7F) != 0 || !read_at(fd, 8, si, sizeof si))
            return;
        h->channels = ((si[12] >> 1) & 7) + 1;
        h->bits = h->valid_bits = (((si[12] & 1) << 4) | (si[13] >> 4)) + 1;
        h->pcm = true;
        h->kind = "FLAC";
    }
}

/* "12-bit integer PCM (WAV)" for messages. */
static const char *describe(const sample_header *h, char *buf, size_t cap)
{
    if (h->valid_bits != h->bits)
        snprintf(buf, cap, "%d-bit %s in %d-bit containers (%s)", h->valid_bits,
                 h->fp ? "IEEE float" : "integer PCM", h->bits, h->kind);
    else
        snprintf(buf, cap, "%d-bit %s (%s)", h->bits, h->fp ? "IEEE float" : "integer PCM",
                 h->kind);
    return buf;
}

/* Whether h is a width every decoder reads as it is. */
static bool standard_width(const sample_header *h)
{
    if (h->fp)
        return h->bits == 32 || h->bits == 64;
    return h->bits == 8 || h->bits == 16 || h->bits == 24 || h->bits == 32;
}

/* Bytes per sample of libsndfile's integer PCM subtypes; 0 for the others. */
static int pcm_bytes(int format)
{
    switch (format & SF_FORMAT_SUBMASK) {
    case SF_FORMAT_PCM_S8:
    case SF_FORMAT_PCM_U8:
        return 1;
    case SF_FORMAT_PCM_16:
        return 2;
    case SF_FORMAT_PCM_24:
        return 3;
    case SF_FORMAT_PCM_32:
        return 4;
    default:
        return 0;
    }
}

/* After libsndfile opened the file: the header against what libsndfile
 * reads, and the padding check set up. 0 or GF_EINVAL (logged). */
static int check_sample_header(gf_audio_reader *self, const sample_header *h, const SF_INFO *si)
{
    char what[96];
    int bytes = pcm_bytes(si->format);
    if (!h->kind || (!h->pcm && !h->fp) || (h->pcm && !bytes))
        return 0; /* not a header we read, or not a format we judge */
    int container = (h->bits + 7) / 8;
    if (h->channels != si->channels || (h->pcm && container != bytes)) {
        GF_ERROR("audio file %s: malformed: its header reads two ways (%d channels of %d-bit "
                 "samples by its format chunk, %d channels by libsndfile)", self->path,
                 h->channels, h->bits, si->channels);
        return GF_EINVAL;
    }
    if (h->valid_bits > h->bits) {
        GF_ERROR("audio file %s: malformed: %d valid bits in %d-bit samples", self->path,
                 h->valid_bits, h->bits);
        return GF_EINVAL;
    }
    if (h->block_align && h->block_align != h->channels * container) {
        GF_ERROR("audio file %s: malformed: block align %d for %d channel%s of %s, which take "
                 "%d bytes a frame (libsndfile would ignore it and read them packed)", self->path,
                 h->block_align, h->channels, h->channels == 1 ? "" : "s",
                 describe(h, what, sizeof what), h->channels * container);
        return GF_EINVAL;
    }
    if (h->pcm && h->valid_bits < 8 * bytes) {
        /* sf_readf_int puts the container's top bit at bit 31. */
        self->valid_bits = h->valid_bits;
        self->container_bits = 8 * bytes;
        self->pad_mask = (uint32_t)(((uint64_t)1 << (32 - h->valid_bits)) - 1);
        self->iblock = gf_malloc((size_t)BLOCK_FRAMES * (size_t)si->channels * sizeof(int32_t));
    }
    return 0;
}

static int decode_block(gf_audio_reader *self);

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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        rc = e == ENOENT ? GF_ENOENT : GF_EIO;
        GF_ERROR("audio file %s: %s", path, strerror(e));
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
    self->fd = fd;
    fd = -1;
    sample_header hdr;
    read_sample_header(self->fd, &hdr);
    SF_INFO si;
    memset(&si, 0, sizeof si);
    self->sf = sf_open_fd(self->fd, SFM_READ, &si, SF_FALSE);
    if (!self->sf) {
        int e = sf_error(NULL);
        char what[96];
        if (e != SF_ERR_SYSTEM && hdr.kind && (hdr.pcm || hdr.fp) && !standard_width(&hdr)) {
            /* A width outside 8/16/24/32 (float: 32/64) that libsndfile does
             * not open: name it. */
            rc = GF_EUNSUP;
            GF_ERROR("audio file %s: cannot decode %s with %s: %s", path,
                     describe(&hdr, what, sizeof what), sf_version_string(), sf_strerror(NULL));
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

    if ((rc = check_sample_header(self, &hdr, &si)) != 0)
        goto fail;

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
    /* A file whose padding bits are checked is checked on its first block
     * here, so that a right-justified one is refused when it is opened. */
    if (self->pad_mask && (rc = decode_block(self)) != 0)
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

/* Decode the next block into mono; sets eof_in at the end. 0 or GF_E*. */
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
        if (u & self->pad_mask) {
            /* The container as the file holds it (8-bit WAV is unsigned). */
            uint32_t raw = u >> (32 - self->container_bits);
            if ((self->info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_U8)
                raw ^= 0x80;
            GF_ERROR("audio file %s: malformed: the sample at frame %lld (channel %d) has bits "
                     "set below its %d valid bits of %d (0x%0*X): samples must be "
                     "left-justified with zeros below, or their scale is unknown", self->path,
                     (long long)(self->frames_read + (int64_t)(i / (size_t)ch)),
                     (int)(i % (size_t)ch) + 1, self->valid_bits, self->container_bits,
                     self->container_bits / 4, raw);
            return GF_EINVAL;
        }
        /* Exact: at most 24 significant bits are set when the check passes
         * for containers under 32 bits, and libsndfile's own float reading
         * of 32-bit PCM rounds the same way (int to float, then 2^-31). */
        self->block[i] = (float)self->iblock[i] * (1.0f / 2147483648.0f);
    }
    return got;
}

static int decode_block(gf_audio_reader *self)
{
    sf_count_t got = self->pad_mask ? read_checked(self)
                                    : sf_readf_float(self->sf, self->block, BLOCK_FRAMES);
    if (got < 0)
        return (int)got;
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
