/* test_api.c — the public C API (api/gpuflock.h) as a caller uses it, and
 * only it (with libsndfile to make and read audio, and the tests' tmpdir.h):
 * a file and the samples it decodes to give the same result, byte for byte,
 * at 16 kHz and at 44.1 kHz (resampled in memory as a file is); the call
 * options (uri, intermediates, progress, cancel); the JSON; errors with
 * their messages (missing file, bad rate, empty or non-finite samples, NULL
 * arguments, option structs of the wrong size or from a newer header,
 * unusable model files); two handles in two threads keep their own results
 * and messages. Weight-free mode throughout: the unit suite has no network
 * files (the neural and card paths are tests/integration/api_python.sh's). */
#include "api/gpuflock.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAMPLE "../shared/data/audio/sample.wav"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    assert_int_equal(gf_test_mkdtemp(tmpdir, sizeof tmpdir, "gf_api_test"), 0);
    gf_diarize_set_log_level(GF_DIARIZE_LOG_OFF);   /* messages are read from the handles */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return gf_test_rmtree(tmpdir);
}

/* A weight-free pipeline: a models folder without network files. */
static gf_diarize *open_weight_free(void)
{
    char *models = gf_strfmt("%s/no-models", tmpdir);
    gf_diarize_opts o;
    gf_diarize_opts_init(&o, sizeof o);
    o.models = models;
    o.batch_size = 4;
    gf_diarize *h = NULL;
    assert_int_equal(gf_diarize_open(&o, &h), 0);
    assert_string_equal(gf_diarize_errmsg(h), "");
    assert_int_equal(gf_diarize_mode(h), GF_DIARIZE_MODE_WEIGHT_FREE);
    assert_int_equal(gf_diarize_device(h), GF_DIARIZE_CPU);
    free(models);
    return h;
}

/* Every sample of a file at its own rate, mono (libsndfile's floats:
 * integer PCM over 2^(bits-1)). */
static float *read_samples(const char *path, size_t *n, int *rate)
{
    SF_INFO info = { 0 };
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    assert_non_null(f);
    assert_int_equal(info.channels, 1);
    float *x = malloc((size_t)info.frames * sizeof *x);
    assert_int_equal(sf_readf_float(f, x, info.frames), info.frames);
    sf_close(f);
    *n = (size_t)info.frames;
    *rate = info.samplerate;
    return x;
}

/* Two results are the same: turns, speakers, labels, duration, mode, RTTM. */
static void assert_same(const gf_diarize_result *a, const gf_diarize_result *b)
{
    const gf_diarize_turn *ta, *tb;
    size_t na = gf_diarize_result_turns(a, &ta), nb = gf_diarize_result_turns(b, &tb);
    assert_int_equal(na, nb);
    assert_true(na > 0);
    assert_memory_equal(ta, tb, na * sizeof *ta);
    assert_int_equal(gf_diarize_result_speakers(a), gf_diarize_result_speakers(b));
    for (size_t k = 0; k < gf_diarize_result_speakers(a); k++)
        assert_string_equal(gf_diarize_result_label(a, k), gf_diarize_result_label(b, k));
    assert_true(gf_diarize_result_duration(a) == gf_diarize_result_duration(b));
    assert_int_equal(gf_diarize_result_mode(a), gf_diarize_result_mode(b));
    char *ra = gf_diarize_result_rttm(a, "x"), *rb = gf_diarize_result_rttm(b, "x");
    assert_string_equal(ra, rb);
    gf_diarize_free(ra);
    gf_diarize_free(rb);
}

/* sample.wav (16 kHz PCM16) and its samples in memory: the same result;
 * the RTTM's uri is the file's base name, "waveform" for samples, or the
 * call's; turns are sorted, labelled and within the recording */
static void test_file_and_samples(void **state)
{
    (void)state;
    gf_diarize *h = open_weight_free();
    gf_diarize_result *rf = NULL, *rs = NULL;
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &rf), 0);
    size_t n;
    int rate;
    float *x = read_samples(SAMPLE, &n, &rate);
    assert_int_equal(rate, 16000);
    assert_int_equal(gf_diarize_samples(h, x, n, rate, NULL, &rs), 0);
    assert_same(rf, rs);

    assert_string_equal(gf_diarize_result_uri(rf), "sample");
    assert_string_equal(gf_diarize_result_uri(rs), "waveform");
    assert_true(fabs(gf_diarize_result_duration(rf) - 30.0) < 0.01);
    assert_int_equal(gf_diarize_result_mode(rf), GF_DIARIZE_MODE_WEIGHT_FREE);
    assert_true(gf_diarize_result_elapsed(rf) > 0.0);
    const gf_diarize_turn *t;
    size_t nt = gf_diarize_result_turns(rf, &t);
    size_t ns = gf_diarize_result_speakers(rf);
    assert_true(ns >= 1);
    assert_null(gf_diarize_result_label(rf, ns));
    assert_string_equal(gf_diarize_result_label(rf, 0), "SPEAKER_00");
    for (size_t i = 0; i < nt; i++) {
        assert_true(t[i].start >= 0.0 && t[i].end > t[i].start);
        assert_true(t[i].end <= gf_diarize_result_duration(rf) + 0.1);
        assert_true(t[i].speaker >= 0 && (size_t)t[i].speaker < ns);
        if (i)
            assert_true(t[i].start >= t[i - 1].start);
    }

    /* the RTTM: a line a turn, the label of its speaker, the uri asked for */
    char *text = gf_diarize_result_rttm(rf, NULL);
    char first[160];
    snprintf(first, sizeof first, "SPEAKER sample 1 %.6f %.6f <NA> <NA> %s <NA> <NA>\n",
             t[0].start, t[0].end - t[0].start, gf_diarize_result_label(rf, (size_t)t[0].speaker));
    assert_int_equal(strncmp(text, first, strlen(first)), 0);
    size_t lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, nt);
    gf_diarize_free(text);
    text = gf_diarize_result_rttm(rs, "my meeting");
    assert_int_equal(strncmp(text, "SPEAKER my_meeting 1 ", 21), 0);
    gf_diarize_free(text);
    assert_null(gf_diarize_result_rttm(rs, ""));

    /* the exclusive diarization: one speaker at a time, the same speakers;
     * a centroid embedding per speaker (40 floats in weight-free mode) */
    const gf_diarize_turn *e;
    size_t ne = gf_diarize_result_exclusive(rf, &e);
    assert_true(ne > 0);
    for (size_t i = 0; i < ne; i++) {
        assert_true(e[i].end > e[i].start && e[i].speaker >= 0 && (size_t)e[i].speaker < ns);
        if (i)
            assert_true(e[i].start >= e[i - 1].end - 1e-9);
    }
    text = gf_diarize_result_exclusive_rttm(rs, "sample");
    char *text2 = gf_diarize_result_exclusive_rttm(rf, NULL);
    assert_string_equal(text, text2);
    gf_diarize_free(text);
    gf_diarize_free(text2);
    size_t dim = 0;
    const float *emb = gf_diarize_result_embeddings(rf, &dim);
    assert_non_null(emb);
    assert_int_equal(dim, 40);
    size_t dim_s = 0;
    assert_memory_equal(emb, gf_diarize_result_embeddings(rs, &dim_s), ns * dim * sizeof *emb);
    assert_int_equal(dim_s, dim);
    for (size_t k = 0; k < ns * dim; k++)
        assert_true(isfinite(emb[k]));

    /* the call's uri names the result */
    gf_diarize_call c;
    gf_diarize_call_init(&c, sizeof c);
    c.uri = "sample";
    gf_diarize_result *ru = NULL;
    assert_int_equal(gf_diarize_samples(h, x, n, rate, &c, &ru), 0);
    char *a = gf_diarize_result_rttm(rf, NULL), *b = gf_diarize_result_rttm(ru, NULL);
    assert_string_equal(a, b);
    gf_diarize_free(a);
    gf_diarize_free(b);

    gf_diarize_result_destroy(&rf);
    gf_diarize_result_destroy(&rf);   /* safe twice */
    assert_null(rf);
    gf_diarize_result_destroy(&rs);
    gf_diarize_result_destroy(&ru);
    free(x);
    gf_diarize_close(&h);
    gf_diarize_close(&h);
    assert_null(h);
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static double urand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* 12 s at 44.1 kHz, float WAV: two harmonic voices taking turns over low
 * noise. The file and its 44.1 kHz samples give the same result: both are
 * resampled to 16 kHz by the same resampler in the same blocks. */
static void test_other_rate(void **state)
{
    (void)state;
    const int rate = 44100;
    size_t n = (size_t)rate * 12;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / rate, s = 0.0005 * urand();
        int slot = (int)(t / 1.5);
        double f0 = slot % 2 ? 210.0 : 110.0;
        if (fmod(t, 1.5) < 1.2)
            for (int k = 1; k < 12; k++)
                s += 0.05 / k * sin(2 * M_PI * f0 * k * t + k) * (0.6 + 0.4 * sin(2 * M_PI * 3 * t));
        x[i] = (float)s;
    }
    char *path = gf_strfmt("%s/voices44k.wav", tmpdir);
    SF_INFO info = { .samplerate = rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT };
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    assert_non_null(f);
    assert_int_equal(sf_writef_float(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
    free(x);

    gf_diarize *h = open_weight_free();
    size_t m;
    int r;
    x = read_samples(path, &m, &r);
    assert_int_equal(r, rate);
    gf_diarize_result *rf = NULL, *rs = NULL;
    assert_int_equal(gf_diarize_file(h, path, NULL, &rf), 0);
    assert_int_equal(gf_diarize_samples(h, x, m, r, NULL, &rs), 0);
    assert_same(rf, rs);
    assert_true(fabs(gf_diarize_result_duration(rs) - 12.0) < 0.01);
    gf_diarize_result_destroy(&rf);
    gf_diarize_result_destroy(&rs);
    gf_diarize_close(&h);
    free(x);
    free(path);
}

typedef struct {
    size_t calls, last_done, last_total;
    size_t cancel_after;   /* cancel from this many asks on (0: never) */
    size_t asks;
} watch;

static void on_progress(void *user, size_t done, size_t total)
{
    watch *w = user;
    w->calls++;
    w->last_done = done;
    w->last_total = total;
}

static int on_cancel(void *user)
{
    watch *w = user;
    return w->cancel_after && ++w->asks >= w->cancel_after;
}

static bool exists(const char *dir, const char *name)
{
    char *p = gf_strfmt("%s/%s", dir, name);
    struct stat st;
    bool ok = stat(p, &st) == 0 && st.st_size > 0;
    free(p);
    return ok;
}

/* progress after each batch up to every window; intermediates written,
 * and kept (GF_DIARIZE_EEXIST) unless overwrite; a cancel stops the call */
static void test_call_options(void **state)
{
    (void)state;
    gf_diarize *h = open_weight_free();
    watch w = { 0 };
    gf_diarize_call c;
    gf_diarize_call_init(&c, sizeof c);
    c.progress = on_progress;
    c.progress_user = &w;
    char *dir = gf_strfmt("%s/inter", tmpdir);
    c.intermediates = dir;
    gf_diarize_result *r = NULL;
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), 0);
    assert_int_equal(w.last_done, 21);   /* 30 s: 21 windows, in batches of 4 */
    assert_int_equal(w.last_total, 21);
    assert_int_equal(w.calls, 6);
    assert_true(exists(dir, "segmentations.npy") && exists(dir, "embeddings.npy"));
    assert_false(exists(dir, "segmentation_logits.npy"));   /* neural mode only */
    gf_diarize_result_destroy(&r);

    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), GF_DIARIZE_EEXIST);
    assert_null(r);
    assert_non_null(strstr(gf_diarize_errmsg(h), "segmentations.npy"));
    c.overwrite = 1;
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), 0);
    assert_string_equal(gf_diarize_errmsg(h), "");   /* cleared by a success */
    gf_diarize_result_destroy(&r);

    gf_diarize_call_init(&c, sizeof c);
    w = (watch){ .cancel_after = 6 };
    c.cancel = on_cancel;
    c.cancel_user = &w;
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), GF_DIARIZE_EINTR);
    assert_null(r);
    assert_int_equal(w.asks, 6);
    free(dir);
    gf_diarize_close(&h);
}

/* the JSON of `gpuflock diarize --json`: a file named, samples not */
static void test_json(void **state)
{
    (void)state;
    gf_diarize *h = open_weight_free();
    gf_diarize_result *r = NULL;
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r), 0);
    char *js = gf_diarize_result_json(r);
    assert_non_null(strstr(js, "\"input\":{\"path\":\""));
    assert_non_null(strstr(js, "sample.wav\""));
    assert_non_null(strstr(js, "\"sha256\":\""));
    assert_non_null(strstr(js, "\"mode\":\"weight-free\""));
    assert_non_null(strstr(js, "\"notice\":\"weight-free mode: no model files in "));
    assert_non_null(strstr(js, "\"speakers\":[\"SPEAKER_00\""));
    assert_int_equal(js[strlen(js) - 1], '\n');
    gf_diarize_free(js);
    gf_diarize_result_destroy(&r);

    float x[32000];
    for (size_t i = 0; i < 32000; i++)
        x[i] = (float)(0.1 * sin(0.05 * (double)i));
    assert_int_equal(gf_diarize_samples(h, x, 32000, 16000, NULL, &r), 0);
    js = gf_diarize_result_json(r);
    assert_non_null(strstr(js, "\"input\":null"));
    assert_non_null(strstr(js, "\"duration\":2"));
    gf_diarize_free(js);
    gf_diarize_result_destroy(&r);
    gf_diarize_close(&h);
}

/* what is wrong with the audio, in the code and the handle's message */
static void test_bad_audio(void **state)
{
    (void)state;
    gf_diarize *h = open_weight_free();
    gf_diarize_result *r = (gf_diarize_result *)&r;   /* set to NULL on failure */
    char *missing = gf_strfmt("%s/missing.wav", tmpdir);
    assert_int_equal(gf_diarize_file(h, missing, NULL, &r), GF_DIARIZE_ENOENT);
    assert_null(r);
    assert_non_null(strstr(gf_diarize_errmsg(h), missing));
    free(missing);

    char *notes = gf_strfmt("%s/notes.wav", tmpdir);
    FILE *f = fopen(notes, "w");
    fputs("these are not samples\n", f);
    fclose(f);
    assert_true(gf_diarize_file(h, notes, NULL, &r) < 0);
    assert_non_null(strstr(gf_diarize_errmsg(h), "notes.wav"));
    free(notes);

    float x[16000];
    for (size_t i = 0; i < 16000; i++)
        x[i] = (float)(0.1 * sin(0.01 * (double)i));
    assert_int_equal(gf_diarize_samples(h, x, 16000, 999, NULL, &r), GF_DIARIZE_EINVAL);
    assert_non_null(strstr(gf_diarize_errmsg(h), "sample rate 999 Hz"));
    assert_int_equal(gf_diarize_samples(h, x, 16000, GF_DIARIZE_MAX_RATE + 1, NULL, &r),
                     GF_DIARIZE_EINVAL);
    assert_int_equal(gf_diarize_samples(h, x, 16000, 0, NULL, &r), GF_DIARIZE_EINVAL);
    assert_int_equal(gf_diarize_samples(h, x, 16000, -16000, NULL, &r), GF_DIARIZE_EINVAL);
    assert_int_equal(gf_diarize_samples(h, x, 0, 16000, NULL, &r), GF_DIARIZE_EINVAL);
    assert_non_null(strstr(gf_diarize_errmsg(h), "no samples"));
    x[123] = NAN;
    assert_int_equal(gf_diarize_samples(h, x, 16000, 16000, NULL, &r), GF_DIARIZE_EINVAL);
    assert_non_null(strstr(gf_diarize_errmsg(h), "sample 123 is not a finite number"));
    x[123] = INFINITY;
    assert_int_equal(gf_diarize_samples(h, x, 16000, 16000, NULL, &r), GF_DIARIZE_EINVAL);
    x[123] = 0.0f;
    /* the lowest and the highest rate taken */
    assert_int_equal(gf_diarize_samples(h, x, 16000, GF_DIARIZE_MIN_RATE, NULL, &r), 0);
    assert_true(fabs(gf_diarize_result_duration(r) - 16.0) < 0.01);
    gf_diarize_result_destroy(&r);
    assert_int_equal(gf_diarize_samples(h, x, 16000, GF_DIARIZE_MAX_RATE, NULL, &r), 0);
    gf_diarize_result_destroy(&r);
    assert_string_equal(gf_diarize_strerror(GF_DIARIZE_ENOENT), "not found");
    gf_diarize_close(&h);
}

/* NULL where something is needed: GF_DIARIZE_EINVAL, nothing crashes */
static void test_null_args(void **state)
{
    (void)state;
    assert_int_equal(gf_diarize_open(NULL, NULL), GF_DIARIZE_EINVAL);
    assert_non_null(gf_diarize_errmsg(NULL));
    gf_diarize *h = NULL;
    assert_int_equal(gf_diarize_open(NULL, &h), 0);   /* the defaults: weight-free */
    assert_int_equal(gf_diarize_mode(h), GF_DIARIZE_MODE_WEIGHT_FREE);
    gf_diarize_result *r = NULL;
    float x[4] = { 0 };
    assert_int_equal(gf_diarize_file(NULL, SAMPLE, NULL, &r), GF_DIARIZE_EINVAL);
    assert_int_equal(gf_diarize_samples(NULL, x, 4, 16000, NULL, &r), GF_DIARIZE_EINVAL);
    assert_int_equal(gf_diarize_file(h, NULL, NULL, &r), GF_DIARIZE_EINVAL);
    assert_string_equal(gf_diarize_errmsg(h), "no path (NULL)");
    assert_int_equal(gf_diarize_samples(h, NULL, 4, 16000, NULL, &r), GF_DIARIZE_EINVAL);
    assert_string_equal(gf_diarize_errmsg(h), "no samples (NULL)");
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, NULL), GF_DIARIZE_EINVAL);
    assert_int_equal(gf_diarize_samples(h, x, 4, 16000, NULL, NULL), GF_DIARIZE_EINVAL);
    gf_diarize_call c;
    gf_diarize_call_init(&c, sizeof c);
    c.uri = "";
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), GF_DIARIZE_EINVAL);
    assert_null(r);
    /* a NULL result reads as empty */
    const gf_diarize_turn *t = (const gf_diarize_turn *)x;
    assert_int_equal(gf_diarize_result_turns(NULL, &t), 0);
    assert_null(t);
    assert_int_equal(gf_diarize_result_speakers(NULL), 0);
    assert_null(gf_diarize_result_label(NULL, 0));
    assert_null(gf_diarize_result_rttm(NULL, NULL));
    assert_null(gf_diarize_result_exclusive_rttm(NULL, NULL));
    t = (const gf_diarize_turn *)x;
    assert_int_equal(gf_diarize_result_exclusive(NULL, &t), 0);
    assert_null(t);
    size_t dim = 7;
    assert_null(gf_diarize_result_embeddings(NULL, &dim));
    assert_int_equal(dim, 0);
    assert_null(gf_diarize_result_json(NULL));
    assert_null(gf_diarize_result_uri(NULL));
    gf_diarize_result_destroy(NULL);
    gf_diarize_close(NULL);
    gf_diarize_free(NULL);
    gf_diarize_close(&h);
}

/* an open that fails gives a handle that holds why, refuses work and
 * closes like any other */
static void assert_open_fails(const gf_diarize_opts *o, int code, const char *msg)
{
    gf_diarize *h = NULL;
    assert_int_equal(gf_diarize_open(o, &h), code);
    assert_non_null(h);
    if (!strstr(gf_diarize_errmsg(h), msg))
        fail_msg("message \"%s\" does not say \"%s\"", gf_diarize_errmsg(h), msg);
    assert_int_equal(gf_diarize_mode(h), GF_DIARIZE_ESTATE);
    gf_diarize_result *r = NULL;
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r), GF_DIARIZE_ESTATE);
    assert_null(r);
    assert_non_null(strstr(gf_diarize_errmsg(h), msg));   /* still the open's */
    gf_diarize_close(&h);
    assert_null(h);
}

/* the options' sizes (older and newer headers) and bounds */
static void test_options(void **state)
{
    (void)state;
    gf_diarize_opts o;
    gf_diarize_opts_init(&o, sizeof o);
    assert_int_equal(o.size, sizeof o);
    assert_null(o.models);
    assert_int_equal(o.device, GF_DIARIZE_CPU);
    assert_int_equal(o.two_streams, 1);
    assert_true(o.clustering_threshold == 0.0 && o.fa == 0.0 && o.fb == 0.0);
    assert_true(o.min_duration_off == 0.0 && o.embedding_include_overlap == 0);
    assert_int_equal(o.math, GF_DIARIZE_MATH_FP32);

    gf_diarize_opts bad = o;
    bad.size = 0;   /* not initialised */
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "gf_diarize_opts: size 0");
    bad = o;
    bad.num_speakers = 2;
    bad.max_speakers = 3;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "num_speakers excludes");
    bad = o;
    bad.min_speakers = 4;
    bad.max_speakers = 3;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "min_speakers 4 is above max_speakers 3");
    bad = o;
    bad.batch_size = -1;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "batch_size -1");
    bad = o;
    bad.threads = -2;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "threads -2");
    bad = o;
    bad.device = -3;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "device -3");
    bad = o;
    bad.math = 7;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "math 7");
    bad = o;
    bad.clustering_threshold = 2.5;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "clustering_threshold 2.5: outside 0..2");
    bad = o;
    bad.fa = -0.1;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "fa -0.1");
    bad = o;
    bad.fb = NAN;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "fb nan");
    bad = o;
    bad.min_duration_off = 3601;
    assert_open_fails(&bad, GF_DIARIZE_EINVAL, "min_duration_off 3601");

    /* a newer header's struct: more bytes, taken while they are zero */
    struct {
        gf_diarize_opts o;
        double later;
    } newer;
    gf_diarize_opts_init(&newer.o, sizeof newer);
    assert_true(newer.later == 0.0);
    gf_diarize *h = NULL;
    assert_int_equal(gf_diarize_open(&newer.o, &h), 0);
    gf_diarize_close(&h);
    newer.later = 0.5;
    assert_open_fails(&newer.o, GF_DIARIZE_EUNSUP, "options of a newer gpuflock.h are set");

    /* weight-free mode runs on the CPU, whatever card was asked for */
    gf_diarize_opts_init(&o, sizeof o);
    o.device = 0;
    assert_int_equal(gf_diarize_open(&o, &h), 0);
    assert_int_equal(gf_diarize_device(h), GF_DIARIZE_CPU);
    gf_diarize_close(&h);

    /* min_duration_off merges one speaker's turns across shorter gaps */
    gf_diarize_result *r0 = NULL, *r2 = NULL;
    gf_diarize_opts_init(&o, sizeof o);
    assert_int_equal(gf_diarize_open(&o, &h), 0);
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r0), 0);
    gf_diarize_close(&h);
    o.min_duration_off = 2.0;
    assert_int_equal(gf_diarize_open(&o, &h), 0);
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r2), 0);
    gf_diarize_close(&h);
    assert_true(gf_diarize_result_turns(r2, NULL) < gf_diarize_result_turns(r0, NULL));
    gf_diarize_result_destroy(&r0);
    gf_diarize_result_destroy(&r2);

    /* a forced speaker count */
    gf_diarize_opts_init(&o, sizeof o);
    o.num_speakers = 3;
    assert_int_equal(gf_diarize_open(&o, &h), 0);
    gf_diarize_result *r = NULL;
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r), 0);
    assert_int_equal(gf_diarize_result_speakers(r), 3);
    gf_diarize_result_destroy(&r);
    /* a call's constraints replace the handle's, for that call */
    gf_diarize_call c;
    gf_diarize_call_init(&c, sizeof c);
    c.num_speakers = 2;
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), 0);
    assert_int_equal(gf_diarize_result_speakers(r), 2);
    gf_diarize_result_destroy(&r);
    c.num_speakers = 0;
    c.min_speakers = 3;
    c.max_speakers = 2;
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), GF_DIARIZE_EINVAL);
    assert_non_null(strstr(gf_diarize_errmsg(h), "min_speakers 3 is above max_speakers 2"));
    /* a call struct from before any field: refused */
    c.size = sizeof c.size;
    assert_int_equal(gf_diarize_file(h, SAMPLE, &c, &r), GF_DIARIZE_EINVAL);
    assert_non_null(strstr(gf_diarize_errmsg(h), "gf_diarize_call: size "));
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r), 0);
    assert_int_equal(gf_diarize_result_speakers(r), 3);
    gf_diarize_result_destroy(&r);
    gf_diarize_close(&h);
}

/* network files that are there but unusable: GF_DIARIZE_ECONFIG */
static void test_models_unusable(void **state)
{
    (void)state;
    char *dir = gf_strfmt("%s/bad-models", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    const char *names[] = { "segmentation.safetensors", "embedding.safetensors" };
    for (int i = 0; i < 2; i++) {
        char *p = gf_strfmt("%s/%s", dir, names[i]);
        FILE *f = fopen(p, "w");
        fputs("not a safetensors file", f);
        fclose(f);
        free(p);
    }
    gf_diarize_opts o;
    gf_diarize_opts_init(&o, sizeof o);
    o.models = dir;
    assert_open_fails(&o, GF_DIARIZE_ECONFIG, "safetensors");
    free(dir);
}

typedef struct {
    const char *path;
    char *rttm;        /* the result's RTTM, or NULL */
    int rc;
    char msg[512];
} job;

static void *diarize_thread(void *arg)
{
    job *j = arg;
    gf_diarize *h = NULL;
    gf_diarize_opts o;
    gf_diarize_opts_init(&o, sizeof o);
    o.batch_size = 3;
    if (gf_diarize_open(&o, &h) == 0) {
        gf_diarize_result *r = NULL;
        for (int i = 0; i < 3; i++) {
            gf_diarize_result_destroy(&r);
            j->rc = gf_diarize_file(h, j->path, NULL, &r);
        }
        snprintf(j->msg, sizeof j->msg, "%s", gf_diarize_errmsg(h));
        j->rttm = r ? gf_diarize_result_rttm(r, NULL) : NULL;
        gf_diarize_result_destroy(&r);
    }
    gf_diarize_close(&h);
    return NULL;
}

/* one handle per thread: each keeps its own result and message */
static void test_threads(void **state)
{
    (void)state;
    char *missing = gf_strfmt("%s/absent.wav", tmpdir);
    job jobs[3] = { { .path = SAMPLE }, { .path = missing }, { .path = SAMPLE } };
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, diarize_thread, &jobs[i]), 0);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    gf_diarize *h = open_weight_free();
    gf_diarize_result *r = NULL;
    assert_int_equal(gf_diarize_file(h, SAMPLE, NULL, &r), 0);
    char *want = gf_diarize_result_rttm(r, NULL);
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(jobs[i].rc, 0);
        assert_string_equal(jobs[i].msg, "");
        assert_string_equal(jobs[i].rttm, want);
        gf_diarize_free(jobs[i].rttm);
    }
    assert_int_equal(jobs[1].rc, GF_DIARIZE_ENOENT);
    assert_null(jobs[1].rttm);
    assert_non_null(strstr(jobs[1].msg, "absent.wav"));
    gf_diarize_free(want);
    gf_diarize_result_destroy(&r);
    gf_diarize_close(&h);
    free(missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_and_samples),
        cmocka_unit_test(test_other_rate),
        cmocka_unit_test(test_call_options),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_bad_audio),
        cmocka_unit_test(test_null_args),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_models_unusable),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
