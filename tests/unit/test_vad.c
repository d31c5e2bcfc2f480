/* test_vad.c — the Silero VAD network (diar/vad.h): what a load refuses (a
 * missing file, a wrong digest, a truncated file), and, on the converted file
 * of tools/fetch-vad (cases skip where it is absent), that streaming is plain
 * data: N chunks at once equal N runs of one with the state carried, bit for
 * bit; a state saved as bytes and restored goes on identically; reset starts
 * over; probabilities lie in [0, 1] and follow speech in a real recording.
 * Parity with the PyTorch reference is tests/integration/vad_parity.sh's. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/io/audio.h"
#include "diar/vad.h"
#include "tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SAMPLE_WAV "../shared/data/audio/sample.wav"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    gf_log_init("test_vad", GF_LOG_OFF);   /* the refusals are expected: keep the log quiet */
    return gf_test_mkdtemp(dir, sizeof dir, "gf-vad");
}

static int teardown(void **state)
{
    (void)state;
    return gf_test_rmtree(dir);
}

/* The converted network, or NULL (the case then skips). */
static gf_vad *load_real(void)
{
    gf_vad *v = NULL;
    struct stat sb;
    if (stat(gf_vad_default_path(), &sb) != 0)
        return NULL;
    assert_int_equal(gf_vad_load(gf_vad_default_path(), &v), 0);
    assert_non_null(v);
    return v;
}

/* Speech-like test audio: a voiced sound whose pitch and loudness move, in
 * bursts with pauses, over a little noise (a fixed LCG: the same every run). */
static void make_audio(float *x, size_t n)
{
    uint32_t r = 12345u;
    double phase = 0.0;
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / GF_VAD_RATE;
        double f0 = 120.0 + 40.0 * sin(2 * M_PI * 0.7 * t);
        phase += 2 * M_PI * f0 / GF_VAD_RATE;
        double env = fmod(t, 1.5) < 0.9 ? 0.5 + 0.5 * sin(2 * M_PI * 3.0 * t) : 0.0;
        double v = 0.0;
        for (int k = 1; k <= 12; k++)
            v += sin(k * phase) / k;
        r = r * 1664525u + 1013904223u;
        double noise = ((double)(r >> 8) / (double)(1u << 24) - 0.5) * 0.01;
        x[i] = (float)(0.2 * env * v + noise);
    }
}

static void test_missing_file(void **state)
{
    (void)state;
    char *p = gf_strfmt("%s/none.safetensors", dir);
    gf_vad *v = (gf_vad *)&v;   /* must be cleared */
    assert_int_equal(gf_vad_load(p, &v), GF_ENOENT);
    assert_null(v);
    free(p);
}

/* A well-formed safetensors file that is not the pinned one. */
static void test_wrong_digest(void **state)
{
    (void)state;
    char *p = gf_strfmt("%s/other.safetensors", dir);
    const char *hdr = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    size_t h = strlen(hdr), padded = (h + 7) / 8 * 8;
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    uint64_t len = padded;
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(len >> (8 * i));
    fwrite(le, 1, 8, f);
    fwrite(hdr, 1, h, f);
    for (size_t i = h; i < padded; i++)
        fputc(' ', f);
    float d[2] = { 0.5f, -0.5f };
    fwrite(d, sizeof d, 1, f);
    fclose(f);
    gf_vad *v = NULL;
    assert_int_equal(gf_vad_load(p, &v), GF_EINVAL);
    assert_null(v);
    assert_non_null(strstr(gf_log_last_error(), p));   /* the message names the file */
    free(p);
}

/* The real file cut short (or, without it, a header that is all there is). */
static void test_truncated(void **state)
{
    (void)state;
    char *p = gf_strfmt("%s/cut.safetensors", dir);
    FILE *out = fopen(p, "wb");
    assert_non_null(out);
    FILE *in = fopen(gf_vad_default_path(), "rb");
    if (in) {
        char buf[4096];
        size_t n, total = 0;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0 && total < 300000) {
            fwrite(buf, 1, n, out);
            total += n;
        }
        fclose(in);
    } else {
        fwrite("\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":", 1, 13, out);
    }
    fclose(out);
    gf_vad *v = NULL;
    assert_int_equal(gf_vad_load(p, &v), GF_EINVAL);
    assert_null(v);
    /* And a file of nothing at all. */
    out = fopen(p, "wb");
    assert_non_null(out);
    fclose(out);
    assert_int_equal(gf_vad_load(p, &v), GF_EINVAL);
    assert_null(v);
    free(p);
}

static void test_default_path(void **state)
{
    (void)state;
    const char *p = gf_vad_default_path();
    size_t n = strlen(p), m = strlen(GF_VAD_FILE_NAME);
    assert_true(n > m && p[n - m - 1] == '/');
    assert_string_equal(p + n - m, GF_VAD_FILE_NAME);
    assert_ptr_equal(gf_vad_default_path(), p);   /* found once */
}

static void test_load_and_identity(void **state)
{
    (void)state;
    gf_vad *v = load_real();
    if (!v)
        skip();
    assert_string_equal(gf_vad_path(v), gf_vad_default_path());
    assert_string_equal(gf_vad_sha256(v), GF_VAD_SHA256);
    gf_vad_destroy(&v);
    assert_null(v);
    gf_vad_destroy(&v);   /* safe twice */
}

#define N 120   /* chunks: 3.84 s */

/* N chunks at once equal N runs of one chunk with the state carried, and a
 * state restored from its bytes goes on identically. */
static void test_streaming_bit_identical(void **state)
{
    (void)state;
    gf_vad *v = load_real();
    if (!v)
        skip();
    float *x = gf_malloc(N * GF_VAD_CHUNK * sizeof(float));
    make_audio(x, N * GF_VAD_CHUNK);
    float all[N], one[N];
    gf_vad_state s_all, s_one;
    gf_vad_reset(&s_all);
    gf_vad_reset(&s_one);
    gf_vad_run(v, &s_all, x, N, all);
    unsigned char saved[sizeof(gf_vad_state)];
    for (int i = 0; i < N; i++) {
        gf_vad_run(v, &s_one, x + (size_t)i * GF_VAD_CHUNK, 1, &one[i]);
        if (i == N / 2 - 1)
            memcpy(saved, &s_one, sizeof saved);   /* as a checkpoint would */
    }
    assert_memory_equal(all, one, sizeof all);
    assert_memory_equal(&s_all, &s_one, sizeof s_all);
    /* Resume from the bytes: the second half again. */
    gf_vad_state resumed;
    memcpy(&resumed, saved, sizeof resumed);
    float rest[N / 2];
    gf_vad_run(v, &resumed, x + (size_t)(N / 2) * GF_VAD_CHUNK, N / 2, rest);
    assert_memory_equal(rest, all + N / 2, sizeof rest);
    assert_memory_equal(&resumed, &s_all, sizeof resumed);
    /* Uneven pieces: 7, 1, 50, then the rest. */
    gf_vad_state s_p;
    gf_vad_reset(&s_p);
    float pieces[N];
    size_t at = 0, sizes[] = { 7, 1, 50, N - 58 };
    for (size_t k = 0; k < 4; k++) {
        gf_vad_run(v, &s_p, x + at * GF_VAD_CHUNK, sizes[k], pieces + at);
        at += sizes[k];
    }
    assert_memory_equal(pieces, all, sizeof all);
    /* Zero chunks: nothing changes. */
    gf_vad_state before = s_p;
    gf_vad_run(v, &s_p, x, 0, pieces);
    assert_memory_equal(&before, &s_p, sizeof before);
    free(x);
    gf_vad_destroy(&v);
}

/* Reset starts over: the same results as a fresh state; a carried state
 * changes them (the LSTM remembers). A second load computes the same bits. */
static void test_reset(void **state)
{
    (void)state;
    gf_vad *v = load_real();
    if (!v)
        skip();
    float *x = gf_malloc(N * GF_VAD_CHUNK * sizeof(float));
    make_audio(x, N * GF_VAD_CHUNK);
    float a[N], b[N], c[N];
    gf_vad_state s;
    gf_vad_reset(&s);
    gf_vad_run(v, &s, x, N, a);
    gf_vad_run(v, &s, x, N, c);   /* carried: not a fresh start */
    assert_true(memcmp(a, c, sizeof a) != 0);
    gf_vad_reset(&s);
    static const gf_vad_state zero;
    assert_memory_equal(&s, &zero, sizeof s);
    gf_vad_run(v, &s, x, N, b);
    assert_memory_equal(a, b, sizeof a);
    gf_vad *w = load_real();
    gf_vad_reset(&s);
    gf_vad_run(w, &s, x, N, c);
    assert_memory_equal(a, c, sizeof a);
    gf_vad_destroy(&w);
    free(x);
    gf_vad_destroy(&v);
}

/* Probabilities are in [0, 1] on silence, full-scale noise, a clipped square
 * wave and the test audio; a real recording's speech scores above its
 * silence. Prints the time a chunk takes (a figure, not an assertion). */
static void test_probabilities(void **state)
{
    (void)state;
    gf_vad *v = load_real();
    if (!v)
        skip();
    float *x = gf_malloc(N * GF_VAD_CHUNK * sizeof(float));
    float p[N];
    gf_vad_state s;
    for (int kind = 0; kind < 4; kind++) {
        uint32_t r = 99u;
        for (size_t i = 0; i < N * GF_VAD_CHUNK; i++) {
            r = r * 1664525u + 1013904223u;
            float u = (float)(r >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
            x[i] = kind == 0 ? 0.0f : kind == 1 ? u : kind == 2 ? (i / 40 % 2 ? 1.0f : -1.0f) : 0.0f;
        }
        if (kind == 3)
            make_audio(x, N * GF_VAD_CHUNK);
        gf_vad_reset(&s);
        gf_vad_run(v, &s, x, N, p);
        for (int i = 0; i < N; i++) {
            assert_true(isfinite(p[i]));
            assert_true(p[i] >= 0.0f && p[i] <= 1.0f);
        }
        if (kind == 0)
            assert_true(p[N - 1] < 0.5f);   /* silence is not speech */
    }
    float *wav = NULL;
    size_t n = 0;
    if (gf_audio_read_all(SAMPLE_WAV, &wav, &n) == 0) {
        /* sample.wav: no speech before 6.69 s (sample.rttm); speech after. */
        size_t chunks = n / GF_VAD_CHUNK;
        float *q = gf_malloc(chunks * sizeof(float));
        gf_vad_reset(&s);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        gf_vad_run(v, &s, wav, chunks, q);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        double before = 0, after = 0;
        size_t nb = 0, na = 0;
        for (size_t i = 0; i < chunks; i++) {
            double t = (double)i * GF_VAD_CHUNK / GF_VAD_RATE;
            if (t + 0.032 < 6.5) {
                before += q[i];
                nb++;
            } else if (t > 7.0) {
                after += q[i];
                na++;
            }
        }
        before /= (double)nb;
        after /= (double)na;
        printf("sample.wav: mean speech probability %.3f before 6.5 s, %.3f after 7 s; "
               "%zu chunks in %.3f s (%.0fx real time, one thread)\n", before, after, chunks,
               secs, (double)chunks * GF_VAD_CHUNK / GF_VAD_RATE / secs);
        assert_true(after > before + 0.3);
        free(q);
        free(wav);
    }
    free(x);
    gf_vad_destroy(&v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_wrong_digest),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_default_path),
        cmocka_unit_test(test_load_and_identity),
        cmocka_unit_test(test_streaming_bit_identical),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_probabilities),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
