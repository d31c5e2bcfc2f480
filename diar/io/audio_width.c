/* audio_width.c — the sample width a WAV, AIFF or FLAC header declares,
 * read by hand beside libsndfile, and its checks (see audio_width.h). */
#include "diar/io/audio_width.h"

#include "common/error.h"
#include "common/log.h"

#include <sndfile.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

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

void gf_audio_width_read(int fd, gf_audio_width *h)
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

const char *gf_audio_width_describe(const gf_audio_width *h, char *buf, size_t cap)
{
    if (h->valid_bits != h->bits)
        snprintf(buf, cap, "%d-bit %s in %d-bit containers (%s)", h->valid_bits,
                 h->fp ? "IEEE float" : "integer PCM", h->bits, h->kind);
    else
        snprintf(buf, cap, "%d-bit %s (%s)", h->bits, h->fp ? "IEEE float" : "integer PCM",
                 h->kind);
    return buf;
}

bool gf_audio_width_standard(const gf_audio_width *h)
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

int gf_audio_width_check(const char *path, const gf_audio_width *h, int format, int channels,
                         gf_audio_padding *pad)
{
    memset(pad, 0, sizeof *pad);
    char what[96];
    int bytes = pcm_bytes(format);
    if (!h->kind || (!h->pcm && !h->fp) || (h->pcm && !bytes))
        return 0; /* not a header we read, or not a format we judge */
    int container = (h->bits + 7) / 8;
    if (h->channels != channels || (h->pcm && container != bytes)) {
        GF_ERROR("audio file %s: malformed: its header reads two ways (%d channels of %d-bit "
                 "samples by its format chunk, %d channels by libsndfile)", path,
                 h->channels, h->bits, channels);
        return GF_EINVAL;
    }
    if (h->valid_bits > h->bits) {
        GF_ERROR("audio file %s: malformed: %d valid bits in %d-bit samples", path,
                 h->valid_bits, h->bits);
        return GF_EINVAL;
    }
    if (h->block_align && h->block_align != h->channels * container) {
        GF_ERROR("audio file %s: malformed: block align %d for %d channel%s of %s, which take "
                 "%d bytes a frame (libsndfile would ignore it and read them packed)", path,
                 h->block_align, h->channels, h->channels == 1 ? "" : "s",
                 gf_audio_width_describe(h, what, sizeof what), h->channels * container);
        return GF_EINVAL;
    }
    if (h->pcm && h->valid_bits < 8 * bytes) {
        /* sf_readf_int puts the container's top bit at bit 31. */
        pad->valid_bits = h->valid_bits;
        pad->container_bits = 8 * bytes;
        pad->mask = (uint32_t)(((uint64_t)1 << (32 - h->valid_bits)) - 1);
    }
    return 0;
}
