/* test_audio.c — decoding every supported format to 16 kHz mono.
 *
 * Each case writes a file with libsndfile itself from a known signal (a chirp
 * on the first channel, sines on the others), at its own rate, channel count
 * and encoding, into a temporary directory, and checks what the reader gives
 * against the signal computed directly at 16 kHz: sample by sample for
 * lossless encodings, by correlation for lossy ones. Sample widths that
 * libsndfile does not write (7, 12, 20 bits, valid bits under the container)
 * are written byte by byte with known samples, decoded bit for bit or
 * refused by name. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/io/audio.h"
#include "diar/io/audio_windows.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <sndfile.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DURATION 1.5 /* seconds of test signal */

static char tmpdir[64];

/* Channel c of the test signal at time t: a 150 -> 3000 Hz linear chirp on
 * channel 0, a sine of 300 + 217 c Hz on the others, all under 3.5 kHz so
 * every rate down to 8 kHz carries them. A short fade at both ends keeps the
 * resampler's edge effects out of the comparison. */
static double signal_at(int c, double t)
{
    double fade = 1.0;
    if (t < 0.02)
        fade = t / 0.02;
    else if (t > DURATION - 0.02)
        fade = (DURATION - t) / 0.02;
    if (fade < 0)
        fade = 0;
    if (c == 0) {
        double f0 = 150, f1 = 3000;
        double ph = 2 * M_PI * (f0 * t + 0.5 * (f1 - f0) / DURATION * t * t);
        return 0.5 * fade * sin(ph);
    }
    return 0.4 * fade * sin(2 * M_PI * (300 + 217 * c) * t + c);
}

static double mono_at(int channels, double t)
{
    double s = 0;
    for (int c = 0; c < channels; c++)
        s += signal_at(c, t);
    return s / channels;
}

/* Write the test signal; returns the file's path (caller frees). */
static char *make_file(const char *name, int format, int rate, int channels)
{
    char *path = gf_strfmt("%s/%s", tmpdir, name);
    SF_INFO si = { .samplerate = rate, .channels = channels, .format = format };
    assert_true(sf_format_check(&si));
    SNDFILE *sf = sf_open(path, SFM_WRITE, &si);
    if (!sf)
        fail_msg("cannot write %s: %s", path, sf_strerror(NULL));
    size_t frames = (size_t)(DURATION * rate);
    double *buf = gf_malloc(frames * (size_t)channels * sizeof(double));
    for (size_t i = 0; i < frames; i++)
        for (int c = 0; c < channels; c++)
            buf[i * (size_t)channels + (size_t)c] = signal_at(c, (double)i / rate);
    assert_int_equal(sf_writef_double(sf, buf, (sf_count_t)frames), (sf_count_t)frames);
    sf_close(sf);
    free(buf);
    return path;
}

/* Largest |decoded - expected| away from the first and last 30 ms. */
static double max_error(const float *x, size_t n, int channels)
{
    size_t skip = GF_AUDIO_RATE * 3 / 100;
    double worst = 0;
    for (size_t i = skip; i + skip < n; i++) {
        double e = fabs(x[i] - mono_at(channels, (double)i / GF_AUDIO_RATE));
        if (e > worst)
            worst = e;
    }
    return worst;
}

/* Best normalised correlation with the expected signal over lags up to
 * +-max_lag samples (lossy codecs may add a delay). */
static double best_correlation(const float *x, size_t n, int channels, int max_lag)
{
    size_t ne = (size_t)(DURATION * GF_AUDIO_RATE);
    double *e = gf_malloc(ne * sizeof(double));
    for (size_t i = 0; i < ne; i++)
        e[i] = mono_at(channels, (double)i / GF_AUDIO_RATE);
    double best = -1;
    for (int lag = -max_lag; lag <= max_lag; lag++) {
        double sxy = 0, sxx = 0, syy = 0;
        for (size_t i = 0; i < ne; i++) {
            long j = (long)i + lag;
            if (j < 0 || (size_t)j >= n)
                continue;
            sxy += e[i] * x[j];
            sxx += e[i] * e[i];
            syy += (double)x[j] * x[j];
        }
        double r = sxy / sqrt(sxx * syy + 1e-30);
        if (r > best)
            best = r;
    }
    free(e);
    return best;
}

typedef struct {
    const char *name;
    int format;
    int rate;
    int channels;
    double tol;       /* largest sample error allowed; 0 = lossy, use correlation */
} format_case;

static const format_case cases[] = {
    { "u8.wav",      SF_FORMAT_WAV | SF_FORMAT_PCM_U8,  22050, 1, 1.2e-2 },
    { "s16.wav",     SF_FORMAT_WAV | SF_FORMAT_PCM_16,  44100, 2, 1e-4 },
    { "s24.wav",     SF_FORMAT_WAV | SF_FORMAT_PCM_24,  48000, 1, 1e-5 },
    { "s32.wav",     SF_FORMAT_WAV | SF_FORMAT_PCM_32,   8000, 2, 1e-5 },
    { "f32.wav",     SF_FORMAT_WAV | SF_FORMAT_FLOAT,   16000, 1, 1e-6 },
    { "f64.wav",     SF_FORMAT_WAV | SF_FORMAT_DOUBLE,  32000, 2, 1e-5 },
    { "ext6.wav",    SF_FORMAT_WAVEX | SF_FORMAT_PCM_16, 48000, 6, 1e-4 },
    { "ext_f32.wav", SF_FORMAT_WAVEX | SF_FORMAT_FLOAT, 11025, 3, 1e-5 },
    { "s16.flac",    SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2, 1e-4 },
    { "s24.flac",    SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 16000, 1, 1e-5 },
    { "s8.flac",     SF_FORMAT_FLAC | SF_FORMAT_PCM_S8, 24000, 1, 1.2e-2 },
    { "vorbis.ogg",  SF_FORMAT_OGG | SF_FORMAT_VORBIS,  44100, 2, 0 },
    { "vorbis.oga",  SF_FORMAT_OGG | SF_FORMAT_VORBIS,  16000, 1, 0 },
    { "l3.mp3",      SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 44100, 2, 0 },
    { "l3_22k.mp3",  SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 22050, 1, 0 },
};

static void test_formats(void **state)
{
    (void)state;
    for (size_t k = 0; k < GF_ARRAY_LEN(cases); k++) {
        const format_case *fc = &cases[k];
        char *path = make_file(fc->name, fc->format, fc->rate, fc->channels);
        float *x = NULL;
        size_t n = 0;
        int rc = gf_audio_read_all(path, &x, &n);
        if (rc)
            fail_msg("%s: gf_audio_read_all gave %d", fc->name, rc);
        size_t expect = (size_t)(DURATION * GF_AUDIO_RATE);
        if (fc->tol > 0) {
            /* Lossless: the length is the resampled length, +-1 sample. */
            if (n + 1 < expect || n > expect + 1)
                fail_msg("%s: %zu samples, expected %zu", fc->name, n, expect);
            double err = max_error(x, n, fc->channels);
            printf("%-12s %5d Hz x%d: %zu samples, max error %.2e (tol %.1e)\n", fc->name,
                   fc->rate, fc->channels, n, err, fc->tol);
            if (err > fc->tol)
                fail_msg("%s: max error %g > %g", fc->name, err, fc->tol);
        } else {
            /* Lossy: the codec may pad; the signal must still be there. */
            if (n < expect * 9 / 10 || n > expect + GF_AUDIO_RATE / 2)
                fail_msg("%s: %zu samples, expected about %zu", fc->name, n, expect);
            double r = best_correlation(x, n, fc->channels, 1600);
            printf("%-12s %5d Hz x%d: %zu samples, correlation %.4f\n", fc->name, fc->rate,
                   fc->channels, n, r);
            if (r < 0.95)
                fail_msg("%s: correlation %g < 0.95", fc->name, r);
        }
        const gf_audio_info *info;
        gf_audio_reader *rd = gf_audio_reader_new(path, NULL);
        assert_non_null(rd);
        info = gf_audio_reader_info(rd);
        assert_int_equal(info->rate, fc->rate);
        assert_int_equal(info->channels, fc->channels);
        if (fc->tol > 0) /* the announced length is the delivered one */
            assert_int_equal(info->samples, (int64_t)n);
        gf_audio_reader_destroy(&rd);
        gf_audio_reader_destroy(&rd); /* safe twice */
        free(x);
        unlink(path);
        free(path);
    }
}

/* A file from another writer: sox's 24-bit stereo WAV (it writes
 * WAVE_FORMAT_EXTENSIBLE for 24-bit) of two sines, against the sines
 * computed at 16 kHz. Skipped where sox is missing. */
static void test_sox_file(void **state)
{
    (void)state;
    if (system("command -v sox >/dev/null 2>&1") != 0)
        skip();
    char *path = gf_strfmt("%s/sox24.wav", tmpdir);
    char *cmd = gf_strfmt("sox -D -n -r 44100 -c 2 -b 24 -e signed-integer '%s' "
                          "synth 1.5 sine 440 sine 1000 vol 0.5 2>/dev/null", path);
    assert_int_equal(system(cmd), 0);
    float *x = NULL;
    size_t n = 0;
    assert_int_equal(gf_audio_read_all(path, &x, &n), 0);
    assert_int_equal(n, 24000);
    double worst = 0;
    for (size_t i = 480; i + 480 < n; i++) {
        double t = (double)i / GF_AUDIO_RATE;
        double e = 0.25 * sin(2 * M_PI * 440 * t) + 0.25 * sin(2 * M_PI * 1000 * t);
        worst = fmax(worst, fabs(x[i] - e));
    }
    printf("sox 24-bit WAVE_FORMAT_EXTENSIBLE 44100 Hz x2: max error %.2e\n", worst);
    assert_true(worst < 1e-4);
    free(x);
    unlink(path);
    free(path);
    free(cmd);
}

/* Reading in odd-sized blocks gives exactly what reading all at once gives. */
static void test_blocks_match_whole(void **state)
{
    (void)state;
    char *path = make_file("blocks.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2);
    float *all = NULL;
    size_t n = 0;
    assert_int_equal(gf_audio_read_all(path, &all, &n), 0);
    gf_audio_reader *r = gf_audio_reader_new(path, NULL);
    assert_non_null(r);
    float *x = gf_malloc((n + 100) * sizeof(float));
    size_t len = 0;
    size_t sizes[] = { 1, 777, 5000, 3, 16000 };
    for (size_t k = 0;; k++) {
        ssize_t got = gf_audio_reader_read(r, x + len, sizes[k % 5]);
        assert_true(got >= 0);
        if (got == 0)
            break;
        len += (size_t)got;
        assert_true(len <= n);
        assert_int_equal(gf_audio_reader_tell(r), (int64_t)len);
    }
    assert_int_equal(len, n);
    assert_memory_equal(x, all, n * sizeof(float));
    assert_int_equal(gf_audio_reader_read(r, x, 10), 0); /* stays at the end */
    gf_audio_reader_destroy(&r);
    free(x);
    free(all);
    unlink(path);
    free(path);
}

/* The shared sample: 30 s at 16 kHz is 480000 samples, passed through. */
static void test_sample_wav(void **state)
{
    (void)state;
    const char *path = "../shared/data/audio/sample.wav";
    if (access(path, R_OK) != 0)
        skip();
    float *x = NULL;
    size_t n = 0;
    assert_int_equal(gf_audio_read_all(path, &x, &n), 0);
    assert_int_equal(n, 480000);
    double energy = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(x[i] >= -1.0f && x[i] <= 1.0f);
        energy += (double)x[i] * x[i];
    }
    assert_true(energy > 1.0); /* real speech, not silence */
    /* PCM16 passed through: every sample is a multiple of 2^-15. */
    for (size_t i = 0; i < n; i += 997)
        assert_true(x[i] * 32768.0f == floorf(x[i] * 32768.0f));
    free(x);
}

/* Windows: as pyannote chunks, each equal to the matching slice of the whole
 * signal, the last zero-padded; checked on several lengths around the
 * boundaries with small windows so the edge cases are cheap. */
static void test_windows(void **state)
{
    (void)state;
    /* Short windows: size 1600 (0.1 s), step 400, at 16 kHz (pass-through). */
    const size_t size = 1600, step = 400;
    size_t lengths[] = { 1, 1599, 1600, 1601, 2000, 2001, 2399, 24000 };
    for (size_t k = 0; k < GF_ARRAY_LEN(lengths); k++) {
        size_t len = lengths[k];
        char *path = gf_strfmt("%s/win%zu.wav", tmpdir, len);
        SF_INFO si = { .samplerate = 16000, .channels = 1,
                       .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT };
        SNDFILE *sf = sf_open(path, SFM_WRITE, &si);
        assert_non_null(sf);
        float *sig = gf_malloc(len * sizeof(float));
        for (size_t i = 0; i < len; i++)
            sig[i] = (float)(0.5 * sin(0.01 * (double)i) + 1e-4 * (double)(i % 7) + 0.001);
        assert_int_equal(sf_writef_float(sf, sig, (sf_count_t)len), (sf_count_t)len);
        sf_close(sf);

        gf_audio_windows *w = gf_audio_windows_new(path, size, step, NULL);
        assert_non_null(w);
        size_t count = 0;
        const float *win;
        int64_t start;
        size_t valid;
        int rc;
        while ((rc = gf_audio_windows_next(w, &win, &start, &valid)) == 1) {
            assert_int_equal(start, (int64_t)(count * step));
            size_t expect_valid = len - (size_t)start < size ? len - (size_t)start : size;
            assert_int_equal(valid, expect_valid);
            assert_memory_equal(win, sig + start, valid * sizeof(float));
            for (size_t i = valid; i < size; i++)
                assert_true(win[i] == 0.0f);
            count++;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(gf_audio_windows_next(w, &win, &start, &valid), 0);
        assert_int_equal(count, gf_audio_windows_count((int64_t)len, size, step));
        gf_audio_windows_destroy(&w);
        free(sig);
        unlink(path);
        free(path);
    }
    /* pyannote: 30 s gives 21 windows of 10 s every 1 s; 30.5 s gives 22. */
    assert_int_equal(gf_audio_windows_count(480000, 160000, 16000), 21);
    assert_int_equal(gf_audio_windows_count(488000, 160000, 16000), 22);
    assert_int_equal(gf_audio_windows_count(16000, 160000, 16000), 1);
    assert_int_equal(gf_audio_windows_count(0, 160000, 16000), 0);
}

/* The pipeline's windows over a resampled file agree with read_all. */
static void test_windows_resampled(void **state)
{
    (void)state;
    char *path = make_file("winrs.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2);
    float *all = NULL;
    size_t n = 0;
    assert_int_equal(gf_audio_read_all(path, &all, &n), 0);
    gf_audio_windows *w = gf_audio_windows_new(path, 8000, 3000, NULL);
    assert_non_null(w);
    assert_int_equal(gf_audio_windows_info(w)->rate, 44100);
    const float *win;
    int64_t start;
    size_t valid, count = 0;
    while (gf_audio_windows_next(w, &win, &start, &valid) == 1) {
        assert_memory_equal(win, all + start, valid * sizeof(float));
        count++;
    }
    assert_int_equal(count, gf_audio_windows_count((int64_t)n, 8000, 3000));
    gf_audio_windows_destroy(&w);
    free(all);
    unlink(path);
    free(path);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Copy the first `keep` bytes of src to dst. */
static void truncate_copy(const char *src, const char *dst, long keep)
{
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    char *buf = gf_malloc((size_t)keep);
    assert_int_equal(fread(buf, 1, (size_t)keep, f), (size_t)keep);
    fclose(f);
    write_bytes(dst, buf, (size_t)keep);
    free(buf);
}

static void test_errors(void **state)
{
    (void)state;
    float *x = (float *)1;
    size_t n = 99;
    int err = 0;

    char *missing = gf_strfmt("%s/missing.wav", tmpdir);
    assert_int_equal(gf_audio_read_all(missing, &x, &n), GF_ENOENT);
    assert_null(x);
    assert_int_equal(n, 0);
    assert_null(gf_audio_reader_new(missing, &err));
    assert_int_equal(err, GF_ENOENT);

    assert_int_equal(gf_audio_read_all(tmpdir, &x, &n), GF_EIO); /* a directory */

    char *zero = gf_strfmt("%s/zero.wav", tmpdir);
    write_bytes(zero, "", 0);
    assert_int_equal(gf_audio_read_all(zero, &x, &n), GF_EINVAL);

    char *text = gf_strfmt("%s/notes.wav", tmpdir);
    const char *words = "These are not the samples you are looking for.\n"
                        "Just text, long enough to look like a header and more.\n";
    write_bytes(text, words, strlen(words));
    assert_int_equal(gf_audio_read_all(text, &x, &n), GF_EUNSUP);

    /* A valid WAV header with no frames. */
    char *empty = gf_strfmt("%s/empty.wav", tmpdir);
    SF_INFO si = { .samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16 };
    SNDFILE *sf = sf_open(empty, SFM_WRITE, &si);
    assert_non_null(sf);
    sf_close(sf);
    assert_int_equal(gf_audio_read_all(empty, &x, &n), GF_EINVAL);

    /* Truncated WAV: the data chunk claims more than the file holds. */
    char *wav = make_file("whole.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2);
    char *cut = gf_strfmt("%s/cut.wav", tmpdir);
    truncate_copy(wav, cut, 20000);
    assert_int_equal(gf_audio_read_all(cut, &x, &n), GF_EINVAL);
    /* A streamed WAV (data size 0xFFFFFFFF, "length unknown") is not
     * truncated: it decodes to its end. */
    char *streamed = gf_strfmt("%s/streamed.wav", tmpdir);
    {
        FILE *f = fopen(wav, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        unsigned char *b = gf_malloc((size_t)len);
        assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
        fclose(f);
        unsigned char *d = memmem(b, (size_t)len, "data", 4);
        assert_non_null(d);
        memset(d + 4, 0xFF, 4);
        memset(b + 4, 0xFF, 4);
        write_bytes(streamed, b, (size_t)len);
        free(b);
    }
    float *whole = NULL, *str = NULL;
    size_t n_whole = 0, n_str = 0;
    assert_int_equal(gf_audio_read_all(wav, &whole, &n_whole), 0);
    assert_int_equal(gf_audio_read_all(streamed, &str, &n_str), 0);
    assert_int_equal(n_str, n_whole);
    assert_memory_equal(str, whole, n_whole * sizeof(float));
    free(whole);
    free(str);
    /* Cut inside the header. */
    truncate_copy(wav, cut, 30);
    assert_true(gf_audio_read_all(cut, &x, &n) < 0);

    /* Truncated FLAC: the stream info says more frames than decode. */
    char *flac = make_file("whole.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 44100, 2);
    char *cutf = gf_strfmt("%s/cut.flac", tmpdir);
    truncate_copy(flac, cutf, 30000);
    gf_audio_reader *r = gf_audio_reader_new(cutf, &err);
    assert_non_null(r);
    float buf[4096];
    ssize_t got;
    while ((got = gf_audio_reader_read(r, buf, 4096)) > 0)
        ;
    assert_true(got == GF_EINVAL || got == GF_EIO);
    assert_int_equal(gf_audio_reader_read(r, buf, 4096), got); /* sticky */
    gf_audio_reader_destroy(&r);
    assert_true(gf_audio_read_all(cutf, &x, &n) < 0);
    assert_null(x);

    char *files[] = { zero, text, empty, wav, cut, flac, cutf, streamed };
    for (size_t i = 0; i < GF_ARRAY_LEN(files); i++) {
        unlink(files[i]);
        free(files[i]);
    }
    free(missing);
}

/* ---- hand-written headers: sample widths ----
 *
 * Files built byte by byte, so that the header says exactly what a case
 * needs (libsndfile writes none of these widths), with samples of known
 * values: the decoded float must be the sample / 2^(valid bits - 1) exactly,
 * or the file must be refused with a message naming the width. */

typedef struct {
    unsigned char *b;  /* the bytes */
    size_t n;          /* how many */
    bool be;           /* big-endian numbers (RIFX, AIFF) */
} bytes;

static void put(bytes *o, const void *p, size_t n)
{
    o->b = gf_realloc(o->b, o->n + n + 1);
    memcpy(o->b + o->n, p, n);
    o->n += n;
}

static void put_uint(bytes *o, uint64_t v, size_t width)
{
    unsigned char t[8];
    for (size_t i = 0; i < width; i++)
        t[o->be ? width - 1 - i : i] = (unsigned char)(v >> (8 * i));
    put(o, t, width);
}

/* Write a chunk's size at offset at (4 bytes). */
static void patch32(bytes *o, size_t at, uint32_t v)
{
    for (size_t i = 0; i < 4; i++)
        o->b[at + (o->be ? 3 - i : i)] = (unsigned char)(v >> (8 * i));
}

typedef struct {
    const char *name;   /* file name */
    const char *riff;   /* "RIFF", "RIFX", "RF64" or "AIFF" */
    unsigned tag;       /* WAV format tag: 1 PCM, 3 float, 0xFFFE extensible */
    unsigned sub;       /* extensible: the subformat's tag */
    int channels;       /* channels */
    int bits;           /* bits per sample (WAV: wBitsPerSample; AIFF: sampleSize) */
    int valid;          /* extensible: wValidBitsPerSample */
    int block_align;    /* 0: channels * container bytes */
} width_case;

/* n frames of s (interleaved) written left-justified, as the formats say. */
static char *write_width_file(const width_case *c, const int32_t *s, size_t n)
{
    bool aiff = strcmp(c->riff, "AIFF") == 0;
    bytes o = { NULL, 0, aiff || strcmp(c->riff, "RIFX") == 0 };
    int sig = c->tag == 0xFFFE && c->valid ? c->valid : c->bits;
    size_t bw = ((size_t)c->bits + 7) / 8;
    bytes d = { NULL, 0, o.be };
    for (size_t i = 0; i < n * (size_t)c->channels; i++) {
        uint32_t v = bw * 8 > (size_t)sig ? (uint32_t)s[i] << (bw * 8 - (size_t)sig)
                                          : (uint32_t)s[i];
        if (bw == 1 && !aiff)
            v += 128; /* 8-bit WAV is unsigned */
        put_uint(&d, v, bw);
    }
    if (aiff) {
        put(&o, "FORM", 4);
        put_uint(&o, 0, 4);            /* the FORM size: patched below, once known */
        put(&o, "AIFFCOMM", 8);
        put_uint(&o, 18, 4);
        put_uint(&o, (uint64_t)c->channels, 2);
        put_uint(&o, n, 4);
        put_uint(&o, (uint64_t)c->bits, 2);
        put(&o, "\x40\x0c\xfa\x00\x00\x00\x00\x00\x00\x00", 10); /* 16000 (80-bit) */
        put(&o, "SSND", 4);
        put_uint(&o, 8 + d.n, 4);
        put_uint(&o, 0, 8);
    } else {
        bool rf64 = strcmp(c->riff, "RF64") == 0;
        put(&o, c->riff, 4);
        put_uint(&o, 0, 4);            /* the RIFF size: patched below */
        put(&o, "WAVE", 4);
        if (rf64) { /* ds64: RIFF size, data size, frames, table length */
            put(&o, "ds64", 4);
            put_uint(&o, 28, 4);
            put_uint(&o, 0, 8);
            put_uint(&o, d.n, 8);
            put_uint(&o, n, 8);
            put_uint(&o, 0, 4);
        }
        int align = c->block_align ? c->block_align : c->channels * (int)bw;
        put(&o, "fmt ", 4);
        put_uint(&o, c->tag == 0xFFFE ? 40 : 16, 4);
        put_uint(&o, c->tag, 2);
        put_uint(&o, (uint64_t)c->channels, 2);
        put_uint(&o, 16000, 4);
        put_uint(&o, 16000 * (uint64_t)align, 4);
        put_uint(&o, (uint64_t)align, 2);
        put_uint(&o, (uint64_t)c->bits, 2);
        if (c->tag == 0xFFFE) {
            put_uint(&o, 22, 2);
            put_uint(&o, (uint64_t)c->valid, 2);
            put_uint(&o, c->channels == 1 ? 4 : 3, 4);
            put_uint(&o, c->sub, 4); /* GUID: {tag}-0000-0010-8000-00AA00389B71 */
            put_uint(&o, 0, 2);
            put_uint(&o, 0x10, 2);
            put(&o, "\x80\x00\x00\xaa\x00\x38\x9b\x71", 8);
        }
        put(&o, "data", 4);
        put_uint(&o, rf64 ? 0xFFFFFFFFu : d.n, 4);
    }
    put(&o, d.b, d.n);
    if (d.n & 1)
        put(&o, "", 1);
    if (strcmp(c->riff, "RF64") == 0) {
        patch32(&o, 4, 0xFFFFFFFFu);
        for (size_t i = 0; i < 8; i++) /* ds64's RIFF size */
            o.b[20 + i] = (unsigned char)((uint64_t)(o.n - 8) >> (8 * i));
    } else {
        patch32(&o, 4, (uint32_t)(o.n - 8));
    }
    char *path = gf_strfmt("%s/%s", tmpdir, c->name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(o.b, 1, o.n, f), o.n);
    fclose(f);
    free(o.b);
    free(d.b);
    return path;
}

/* n signed samples of `bits` bits: both extremes, then spread over the range
 * (none zero but by chance). */
static int32_t *known_samples(int bits, size_t n, uint64_t seed)
{
    int32_t *s = gf_malloc(n * sizeof *s);
    int64_t lo = -((int64_t)1 << (bits - 1)), span = (int64_t)1 << bits;
    for (size_t i = 0; i < n; i++)
        s[i] = (int32_t)(lo + (int64_t)(gf_splitmix64(&seed) % (uint64_t)span));
    s[0] = (int32_t)lo;
    s[n > 1] = (int32_t)(lo + span - 1);
    return s;
}

/* Widths libsndfile reads as whole-byte containers: every sample decodes to
 * sample / 2^(bits - 1), bit for bit, across more than one decode block. */
static void test_widths_decoded(void **state)
{
    (void)state;
    static const width_case wcases[] = {
        { "w1.wav",      "RIFF", 1, 0, 1, 1, 0, 0 },
        { "w4.wav",      "RIFF", 1, 0, 1, 4, 0, 0 },
        { "w7.wav",      "RIFF", 1, 0, 1, 7, 0, 0 },
        { "w8.wav",      "RIFF", 1, 0, 1, 8, 0, 0 },
        { "w12.wav",     "RIFF", 1, 0, 1, 12, 0, 0 },
        { "w15.wav",     "RIFF", 1, 0, 1, 15, 0, 0 },
        { "w16.wav",     "RIFF", 1, 0, 1, 16, 0, 0 },
        { "w20.wav",     "RIFF", 1, 0, 1, 20, 0, 0 },
        { "w23.wav",     "RIFF", 1, 0, 1, 23, 0, 0 },
        { "w24.wav",     "RIFF", 1, 0, 1, 24, 0, 0 },
        { "w28.wav",     "RIFF", 1, 0, 1, 28, 0, 0 },
        { "w31.wav",     "RIFF", 1, 0, 1, 31, 0, 0 },
        { "w32.wav",     "RIFF", 1, 0, 1, 32, 0, 0 },
        { "x12in16.wav", "RIFF", 0xFFFE, 1, 1, 16, 12, 0 },
        { "x20in24.wav", "RIFF", 0xFFFE, 1, 1, 24, 20, 0 },
        { "x24in32.wav", "RIFF", 0xFFFE, 1, 1, 32, 24, 0 },
        { "x20in32.wav", "RIFF", 0xFFFE, 1, 1, 32, 20, 0 },
        { "x7in8.wav",   "RIFF", 0xFFFE, 1, 1, 8, 7, 0 },
        { "x0in24.wav",  "RIFF", 0xFFFE, 1, 1, 24, 0, 0 }, /* 0: as the container */
        { "rifx12.wav",  "RIFX", 1, 0, 1, 12, 0, 0 },
        { "rf64_20.wav", "RF64", 1, 0, 1, 20, 0, 0 },
        { "a8.aiff",     "AIFF", 0, 0, 1, 8, 0, 0 },
        { "a12.aiff",    "AIFF", 0, 0, 1, 12, 0, 0 },
        { "a20.aiff",    "AIFF", 0, 0, 1, 20, 0, 0 },
        { "a24.aiff",    "AIFF", 0, 0, 1, 24, 0, 0 },
    };
    const size_t n = 5000; /* more than one 4096-frame block */
    for (size_t k = 0; k < GF_ARRAY_LEN(wcases); k++) {
        const width_case *c = &wcases[k];
        int sig = c->tag == 0xFFFE && c->valid ? c->valid : c->bits;
        int32_t *smp = known_samples(sig, n, 1000 + k);
        char *path = write_width_file(c, smp, n);
        float *x = NULL;
        size_t got = 0;
        int rc = gf_audio_read_all(path, &x, &got);
        if (rc)
            fail_msg("%s: gf_audio_read_all gave %d: %s", c->name, rc, gf_log_last_error());
        assert_int_equal(got, n);
        for (size_t i = 0; i < n; i++) {
            float want = (float)ldexp((double)smp[i], 1 - sig);
            if (x[i] != want)
                fail_msg("%s: sample %zu (%d of %d bits) decoded %.9g, expected %.9g", c->name,
                         i, (int)smp[i], sig, (double)x[i], (double)want);
        }
        printf("%-12s %2d of %2d bits: %zu samples exact\n", c->name, sig,
               (c->bits + 7) / 8 * 8, n);
        free(x);
        free(smp);
        unlink(path);
        free(path);
    }

    /* Stereo 12-bit: the channels are averaged. */
    const width_case st = { "st12.wav", "RIFF", 1, 0, 2, 12, 0, 0 };
    int32_t *smp = known_samples(12, 2 * n, 7);
    char *path = write_width_file(&st, smp, n);
    float *x = NULL;
    size_t got = 0;
    assert_int_equal(gf_audio_read_all(path, &x, &got), 0);
    assert_int_equal(got, n);
    for (size_t i = 0; i < n; i++)
        assert_true(x[i] == (float)((smp[2 * i] + smp[2 * i + 1]) / 4096.0));
    free(x);
    free(smp);
    unlink(path);
    free(path);
}

/* Open (or read to the end) a file expected to be refused with rc and a
 * message containing want. */
static void expect_refused(const width_case *c, const int32_t *s, size_t n, int rc,
                           const char *want)
{
    char *path = write_width_file(c, s, n);
    float *x = (float *)1;
    size_t got = 99;
    gf_log_clear_last_error();
    int r = gf_audio_read_all(path, &x, &got);
    if (r != rc || !strstr(gf_log_last_error(), want) || !strstr(gf_log_last_error(), path))
        fail_msg("%s: rc %d (expected %d), message '%s' (expected '%s')", c->name, r, rc,
                 gf_log_last_error(), want);
    assert_null(x);
    printf("%-12s refused: %s\n", c->name, gf_log_last_error());
    unlink(path);
    free(path);
}

/* Samples whose padding bits are set (a right-justified writer, or noise)
 * and headers that contradict themselves are refused, naming the width. */
static void test_widths_refused(void **state)
{
    (void)state;
    const size_t n = 5000;
    int32_t *smp = known_samples(7, n, 3);

    /* 7-bit samples right-justified in bytes: 0..127, centred on 64. */
    const width_case w7 = { "right7.wav", "RIFF", 1, 0, 1, 7, 0, 0 };
    {
        char *path = write_width_file(&w7, smp, n);
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        fseek(f, 44 + 1, SEEK_SET);
        fputc(0x41, f); /* frame 1: odd, its padding bit set */
        fclose(f);
        int err = 0;
        gf_log_clear_last_error();
        assert_null(gf_audio_reader_new(path, &err)); /* refused at open */
        assert_int_equal(err, GF_EINVAL);
        assert_non_null(strstr(gf_log_last_error(), "the sample at frame 1 (channel 1) has bits "
                                                    "set below its 7 valid bits of 8 (0x41)"));
        unlink(path);
        free(path);
    }
    /* A padding bit set past the first block: found when it is read. */
    const width_case x20 = { "late.wav", "RIFF", 0xFFFE, 1, 1, 24, 20, 0 };
    {
        int32_t *s20 = known_samples(20, n, 4);
        char *path = write_width_file(&x20, s20, n);
        FILE *f = fopen(path, "r+b");
        assert_non_null(f);
        fseek(f, 68 + 3 * 4500, SEEK_SET); /* after the 68-byte header */
        fputc(0x01, f);
        fclose(f);
        gf_audio_reader *r = gf_audio_reader_new(path, NULL);
        assert_non_null(r);
        float buf[4096];
        ssize_t got;
        while ((got = gf_audio_reader_read(r, buf, 1000)) > 0)
            ;
        assert_int_equal(got, GF_EINVAL);
        assert_int_equal(gf_audio_reader_read(r, buf, 10), GF_EINVAL); /* sticky */
        assert_non_null(strstr(gf_log_last_error(), "frame 4500 (channel 1) has bits set below "
                                                    "its 20 valid bits of 24 (0x"));
        gf_audio_reader_destroy(&r);
        unlink(path);
        free(path);
        free(s20);
    }

    /* Headers that contradict themselves. */
    static const width_case bad[] = {
        { "x24in16.wav", "RIFF", 0xFFFE, 1, 1, 16, 24, 0 },
        { "x17in16.wav", "RIFF", 0xFFFE, 1, 1, 16, 17, 0 },
        { "pack12.wav",  "RIFF", 1, 0, 2, 12, 0, 3 },  /* packed 12-bit stereo */
        { "pad16.wav",   "RIFF", 1, 0, 1, 16, 0, 4 },  /* 16 bits in 4-byte frames */
        { "f32b8.wav",   "RIFF", 3, 0, 1, 32, 0, 8 },
    };
    const char *why[] = {
        "malformed: 24 valid bits in 16-bit samples",
        "malformed: 17 valid bits in 16-bit samples",
        "malformed: block align 3 for 2 channels of 12-bit integer PCM (WAV), which take 4 bytes",
        "malformed: block align 4 for 1 channel of 16-bit integer PCM (WAV), which take 2 bytes",
        "malformed: block align 8 for 1 channel of 32-bit IEEE float (WAV)",
    };
    for (size_t k = 0; k < GF_ARRAY_LEN(bad); k++)
        expect_refused(&bad[k], smp, n / 2, GF_EINVAL, why[k]);

    /* Widths libsndfile does not open: refused by name. */
    static const width_case unsup[] = {
        { "w0.wav",   "RIFF", 1, 0, 1, 0, 0, 1 },
        { "w33.wav",  "RIFF", 1, 0, 1, 33, 0, 0 },
        { "w40.wav",  "RIFF", 1, 0, 1, 40, 0, 0 },
        { "w64.wav",  "RIFF", 1, 0, 1, 64, 0, 0 },
        { "f16.wav",  "RIFF", 3, 0, 1, 16, 0, 0 },
        { "f24.wav",  "RIFF", 3, 0, 1, 24, 0, 0 },
        { "f48.wav",  "RIFF", 3, 0, 1, 48, 0, 0 },
        { "xf24.wav", "RIFF", 0xFFFE, 3, 1, 24, 24, 0 },
        { "a7.aiff",  "AIFF", 0, 0, 1, 7, 0, 0 },
        { "a40.aiff", "AIFF", 0, 0, 1, 40, 0, 0 },
    };
    const char *named[] = {
        "0-bit integer PCM (WAV)", "33-bit integer PCM (WAV)", "40-bit integer PCM (WAV)",
        "64-bit integer PCM (WAV)", "16-bit IEEE float (WAV)", "24-bit IEEE float (WAV)",
        "48-bit IEEE float (WAV)", "24-bit IEEE float (WAV)", "7-bit integer PCM (AIFF)",
        "40-bit integer PCM (AIFF)",
    };
    int32_t zeros[64] = { 0 };
    for (size_t k = 0; k < GF_ARRAY_LEN(unsup); k++) {
        char *want = gf_strfmt("cannot decode %s with libsndfile", named[k]);
        /* The data's content does not matter here; 7-bit samples fit any width. */
        expect_refused(&unsup[k], unsup[k].bits >= 8 ? smp : zeros,
                       unsup[k].bits >= 8 ? 64 : 8, GF_EUNSUP, want);
        free(want);
    }

    /* FLAC at 12 and 20 bits: a STREAMINFO block says so (libsndfile 1.2
     * decodes 8, 16 and 24-bit FLAC). */
    for (int bits = 12; bits <= 20; bits += 8) {
        unsigned char fl[42] = "fLaC\x80\x00\x00\x22\x10\x00\x10\x00";
        uint64_t v = (uint64_t)16000 << 44 | (uint64_t)(bits - 1) << 36 | 100;
        for (int i = 0; i < 8; i++)
            fl[18 + i] = (unsigned char)(v >> (56 - 8 * i));
        char *path = gf_strfmt("%s/f%d.flac", tmpdir, bits);
        write_bytes(path, fl, sizeof fl);
        int err = 0;
        gf_log_clear_last_error();
        assert_null(gf_audio_reader_new(path, &err));
        assert_int_equal(err, GF_EUNSUP);
        char *want = gf_strfmt("cannot decode %d-bit integer PCM (FLAC)", bits);
        if (!strstr(gf_log_last_error(), want))
            fail_msg("f%d.flac: '%s'", bits, gf_log_last_error());
        free(want);
        unlink(path);
        free(path);
    }
    free(smp);
}

static int setup(void **state)
{
    (void)state;
    gf_log_init("test_audio", GF_LOG_OFF);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/gf_audio_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_sox_file),
        cmocka_unit_test(test_blocks_match_whole),
        cmocka_unit_test(test_sample_wav),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_windows_resampled),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_widths_decoded),
        cmocka_unit_test(test_widths_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
