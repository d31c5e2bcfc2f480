/* test_pipeline.c — the pieces of the diarization pipeline that are its own:
 * window count and zero padding of the last window, the overlap-excluded
 * pooling mask, the energy voice activity, the fbank-statistics embeddings,
 * and the weight-free pipeline end to end on a synthetic recording (two
 * harmonic "voices" in turns over low noise), written as a real WAV file,
 * and with speaker constraints (they reach its block clustering);
 * a run stopped at a batch boundary and resumed from the state it stopped
 * in gives the same turns and intermediates, byte for byte, without
 * running the windows before it again. */
#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/io/audio.h"
#include "diar/io/audio_windows.h"
#include "kernels/fbank/fbank_cpu.h"
#include "diar/io/npy.h"
#include "diar/models.h"
#include "diar/pipeline.h"
#include "diar/weightfree.h"
#include "diar/io/rttm.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* uniform in [-1, 1) */
static double urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 52) - 1.0;
}

/* A "voice": harmonics of f0 shaped by two formant bumps, with a slow
 * syllable envelope so that it looks like speech to an energy detector. */
static double voice(double t, double f0, double fa, double fb)
{
    double s = 0.0;
    for (int h = 1; h * f0 < 4000.0; h++) {
        double f = h * f0;
        double g = exp(-pow((f - fa) / 250.0, 2)) + 0.6 * exp(-pow((f - fb) / 350.0, 2)) + 0.02;
        s += g * sin(2 * M_PI * f * t + h);
    }
    double syll = 0.6 + 0.4 * sin(2 * M_PI * 3.0 * t);
    return 0.08 * syll * s;
}

typedef struct {
    double start, end;  /* seconds */
    int who;            /* 0 or 1 */
} turn;

static char *write_wav(const char *name, const float *x, size_t n)
{
    char *path = gf_strfmt("%s/%s", tmpdir, name);
    SF_INFO info = { .samplerate = 16000, .channels = 1,
                     .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16 };
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    assert_non_null(f);
    assert_int_equal(sf_write_float(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
    return path;
}

/* n samples of noise at about -66 dBFS with the turns voiced over it */
static float *make_turns(const turn *turns, int n_turns, size_t n)
{
    float *x = gf_malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) {
        double t = (double)i / 16000.0, s = 0.0005 * urand();
        for (int k = 0; k < n_turns; k++)
            if (t >= turns[k].start && t < turns[k].end)
                s += turns[k].who ? voice(t, 210.0, 800.0, 2300.0) : voice(t, 105.0, 500.0, 1500.0);
        x[i] = (float)s;
    }
    return x;
}

static int setup(void **state)
{
    (void)state;
    assert_int_equal(gf_test_mkdtemp(tmpdir, sizeof tmpdir, "gf_pipeline_test"), 0);
    gf_log_init("test_pipeline", GF_LOG_ERROR);
    /* the energy VAD's figures, whatever set-up fetched (the trained VAD's
     * own cases unset it) */
    setenv("GPUFLOCK_VAD", "energy", 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return gf_test_rmtree(tmpdir);
}

/* 10 s windows every 1 s; the last one starts at the next step and is
 * padded when samples remain after the last whole window */
static void test_window_count(void **state)
{
    (void)state;
    const size_t W = GF_DIAR_WINDOW, S = GF_DIAR_STEP;
    assert_int_equal(gf_audio_windows_count(0, W, S), 0);
    assert_int_equal(gf_audio_windows_count(1, W, S), 1);
    assert_int_equal(gf_audio_windows_count(100000, W, S), 1);
    assert_int_equal(gf_audio_windows_count(160000, W, S), 1);
    assert_int_equal(gf_audio_windows_count(160001, W, S), 2);
    assert_int_equal(gf_audio_windows_count(176000, W, S), 2);
    assert_int_equal(gf_audio_windows_count(200000, W, S), 4);
    assert_int_equal(gf_audio_windows_count(480000, W, S), 21);
}

static void set_run(float *act, int s, int from, int to)
{
    for (int f = from; f < to; f++)
        act[f * GF_DIAR_SPEAKERS + s] = 1.0f;
}

static size_t ones(const float *mask, int from, int to)
{
    size_t n = 0;
    for (int f = from; f < to; f++)
        n += mask[f] == 1.0f;
    return n;
}

/* the overlap-excluded mask when it keeps more than 2 frames, else the full
 * mask; nothing for an inactive speaker */
static void test_pool_mask(void **state)
{
    (void)state;
    float act[GF_DIAR_FRAMES * GF_DIAR_SPEAKERS] = { 0 };
    float mask[GF_DIAR_FRAMES];
    set_run(act, 0, 0, 100);
    set_run(act, 1, 50, 150);
    /* speaker 0: 50 clean frames of 100 */
    assert_int_equal(gf_diar_pool_mask(act, 0, true, mask), 50);
    assert_int_equal(ones(mask, 0, 50), 50);
    assert_int_equal(ones(mask, 50, GF_DIAR_FRAMES), 0);
    /* speaker 1: clean 100..149 */
    assert_int_equal(gf_diar_pool_mask(act, 1, true, mask), 50);
    assert_int_equal(ones(mask, 100, 150), 50);
    /* speaker 2 never speaks */
    assert_int_equal(gf_diar_pool_mask(act, 2, true, mask), 0);
    assert_int_equal(ones(mask, 0, GF_DIAR_FRAMES), 0);

    /* speaker 2 on 300..305, overlapped on 300..303: 2 clean frames -> full */
    set_run(act, 2, 300, 305);
    set_run(act, 0, 300, 303);
    assert_int_equal(gf_diar_pool_mask(act, 2, true, mask), 5);
    assert_int_equal(ones(mask, 300, 305), 5);
    /* 3 clean frames is more than 2: the clean mask */
    set_run(act, 2, 305, 306);
    assert_int_equal(gf_diar_pool_mask(act, 2, true, mask), 3);
    assert_int_equal(ones(mask, 303, 306), 3);
    assert_int_equal(ones(mask, 300, 303), 0);
    /* overlap kept (embedding_exclude_overlap false): every active frame */
    assert_int_equal(gf_diar_pool_mask(act, 2, false, mask), 6);
    assert_int_equal(ones(mask, 300, 306), 6);
    assert_int_equal(gf_diar_pool_mask(act, 0, false, mask), 103);
}

/* frame f of the 589 covers [f*270, f*270+991) samples */
static int frame_at(double sec)
{
    return (int)((sec * 16000.0 - 495.0) / 270.0 + 0.5);
}

static void test_energy_vad(void **state)
{
    (void)state;
    const turn turns[] = { { 2.0, 4.0, 0 }, { 6.0, 7.5, 1 } };
    float *x = make_turns(turns, 2, GF_DIAR_WINDOW);
    float act[GF_DIAR_FRAMES];
    double noise = NAN;
    gf_diar_energy_vad(x, GF_DIAR_WINDOW, &noise, act);
    assert_true(noise < -50.0);
    for (double t = 2.1; t < 3.9; t += 0.05)
        assert_true(act[frame_at(t)] == 1.0f);
    for (double t = 6.1; t < 7.4; t += 0.05)
        assert_true(act[frame_at(t)] == 1.0f);
    for (double t = 0.1; t < 1.8; t += 0.05)
        assert_true(act[frame_at(t)] == 0.0f);
    for (double t = 4.3; t < 5.7; t += 0.05)
        assert_true(act[frame_at(t)] == 0.0f);
    for (double t = 7.8; t < 9.9; t += 0.05)
        assert_true(act[frame_at(t)] == 0.0f);

    /* the same window where only the first 7 s are audio: speech after that
     * is padding and stays inactive */
    noise = NAN;
    gf_diar_energy_vad(x, 7 * 16000, &noise, act);
    assert_true(act[frame_at(6.5)] == 1.0f);
    for (double t = 7.1; t < 10.0; t += 0.05)
        assert_true(act[frame_at(t)] == 0.0f);
    free(x);
}

/* mean and std of the cepstra over the active frames */
static void test_fbank_stats(void **state)
{
    (void)state;
    const turn turns[] = { { 0.0, 10.0, 0 } };
    float *x = make_turns(turns, 1, GF_DIAR_WINDOW);
    gf_fbank *fb = gf_fbank_new();
    size_t nf = 0;
    float *feats = gf_malloc(GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS * sizeof *feats);
    assert_int_equal(gf_fbank_run(fb, x, GF_DIAR_WINDOW, feats, &nf, 0), 0);
    assert_int_equal(nf, GF_DIAR_FBANK_FRAMES);
    float act[GF_DIAR_FRAMES], out[GF_DIAR_WF_DIM];
    for (int f = 0; f < GF_DIAR_FRAMES; f++)
        act[f] = 0.0f;
    assert_int_equal(gf_diar_fbank_stats(feats, nf, act, out), 0);
    for (int k = 0; k < GF_DIAR_WF_DIM; k++)
        assert_true(isnan(out[k]));

    /* frames 100..199 of the 589 active: compute the first cepstrum's mean
     * and std directly over the fbank frames the stats say they used */
    for (int f = 100; f < 200; f++)
        act[f] = 1.0f;
    size_t used = gf_diar_fbank_stats(feats, nf, act, out);
    assert_true(used > 160 && used < 180);   /* ~ 100 * 998 / 589 */
    double sum = 0.0, sq = 0.0;
    size_t n = 0;
    for (size_t k = 0; k < nf; k++) {
        long centre = (long)k * 160 + 200;
        long f = (centre - 495 + 135) / 270;
        if (f < 100 || f >= 200)
            continue;
        double c1 = 0.0;
        for (int m = 0; m < GF_FBANK_BINS; m++)
            c1 += cos(M_PI * (m + 0.5) / GF_FBANK_BINS) * feats[k * GF_FBANK_BINS + (size_t)m];
        sum += c1;
        sq += c1 * c1;
        n++;
    }
    assert_int_equal(n, used);
    double mean = sum / (double)n, sd = sqrt(sq / (double)n - mean * mean);
    assert_true(fabs(out[0] - mean) <= 1e-3 * (1.0 + fabs(mean)));
    assert_true(fabs(out[GF_DIAR_WF_CEPS] - sd) <= 1e-3 * (1.0 + sd));
    assert_true(sd > 0.0);

    /* normalisation: unit rows, NaN rows left alone */
    float rows[3 * GF_DIAR_WF_DIM];
    memcpy(rows, out, sizeof out);
    for (int k = 0; k < GF_DIAR_WF_DIM; k++) {
        rows[GF_DIAR_WF_DIM + k] = NAN;
        rows[2 * GF_DIAR_WF_DIM + k] = out[k] * 0.5f + (float)k;
    }
    gf_diar_wf_normalise(rows, 3, GF_DIAR_WF_DIM);
    for (int r = 0; r < 3; r += 2) {
        double norm = 0.0;
        for (int k = 0; k < GF_DIAR_WF_DIM; k++)
            norm += (double)rows[r * GF_DIAR_WF_DIM + k] * rows[r * GF_DIAR_WF_DIM + k];
        assert_true(fabs(norm - 1.0) < 1e-5);
    }
    assert_true(isnan(rows[GF_DIAR_WF_DIM]));
    free(feats);
    gf_fbank_destroy(&fb);
    free(x);
}

/* the weight-free pipeline on 21.3 s of two voices in turns: one padded
 * last window, intermediates saved with their shapes, padding inactive, two
 * speakers found, each turn's speaker consistent with the voice */
static void test_weight_free_run(void **state)
{
    (void)state;
    const turn turns[] = { { 0.5, 4.5, 0 }, { 5.0, 9.0, 1 }, { 9.5, 13.0, 0 },
                           { 13.5, 17.0, 1 }, { 17.5, 21.0, 0 } };
    size_t n = 340800;  /* 21.3 s */
    float *x = make_turns(turns, 5, n);
    char *path = write_wav("turns.wav", x, n);
    free(x);
    gf_diar *d = gf_diar_new("/nonexistent/models", 4, 1, NULL);
    assert_non_null(d);
    assert_true(gf_diar_weight_free(d));
    gf_diar_run_opts o = gf_diar_run_defaults();
    char *save = gf_strfmt("%s/inter", tmpdir);
    o.save_dir = save;
    gf_devstats *st = gf_devstats_new();
    gf_diar_result res;
    assert_int_equal(gf_diar_run(d, path, &o, st, &res), 0);
    assert_true(res.weight_free);
    assert_int_equal(res.n_windows, gf_audio_windows_count((int64_t)n, GF_DIAR_WINDOW,
                                                           GF_DIAR_STEP));
    assert_int_equal(res.n_windows, 13);
    assert_true(fabs(res.duration - 21.3) < 1e-6);
    assert_int_equal(res.n_speakers, 2);

    /* every reference turn's middle is covered by one hypothesis speaker,
     * and the two voices get different labels */
    const char *who[2] = { NULL, NULL };
    for (int k = 0; k < 5; k++) {
        double mid = 0.5 * (turns[k].start + turns[k].end);
        const char *spk = NULL;
        for (size_t i = 0; i < res.rttm->n; i++) {
            const gf_turn *t = &res.rttm->turns[i];
            if (t->start <= mid && mid < t->start + t->duration)
                spk = t->speaker;
        }
        assert_non_null(spk);
        if (!who[turns[k].who])
            who[turns[k].who] = spk;
        assert_string_equal(who[turns[k].who], spk);
    }
    assert_string_not_equal(who[0], who[1]);

    /* intermediates: no logits in weight-free mode; padding frames of the
     * last window (it starts at 12 s, audio ends at 21.3 s) inactive */
    char *p = gf_strfmt("%s/segmentations.npy", save);
    gf_npy_array *a = NULL;
    assert_int_equal(gf_npy_load(p, &a), 0);
    size_t want[] = { 13, GF_DIAR_FRAMES, GF_DIAR_SPEAKERS };
    assert_int_equal(gf_npy_check_shape(p, a, 3, want), 0);
    const float *seg = a->data;
    for (int f = frame_at(9.5); f < GF_DIAR_FRAMES; f++)
        for (int s = 0; s < GF_DIAR_SPEAKERS; s++)
            assert_true(seg[((size_t)12 * GF_DIAR_FRAMES + (size_t)f) * GF_DIAR_SPEAKERS
                            + (size_t)s] == 0.0f);
    gf_npy_destroy(&a);
    free(p);
    p = gf_strfmt("%s/embeddings.npy", save);
    assert_int_equal(gf_npy_load(p, &a), 0);
    size_t want_e[] = { 13, GF_DIAR_SPEAKERS, GF_DIAR_WF_DIM };
    assert_int_equal(gf_npy_check_shape(p, a, 3, want_e), 0);
    gf_npy_destroy(&a);
    free(p);
    p = gf_strfmt("%s/segmentation_logits.npy", save);
    assert_int_not_equal(access(p, F_OK), 0);
    free(p);

    /* per-stage rows, all "unavailable: cpu card" */
    const gf_devstats_row *rows;
    size_t nr = gf_devstats_rows(st, &rows);
    assert_true(nr >= 4);
    for (size_t i = 0; i < nr; i++) {
        assert_int_equal(rows[i].count, 0);
        assert_true(rows[i].unavailable > 0);
        assert_string_equal(rows[i].reason, "cpu card");
    }
    gf_diar_result_free(&res);
    gf_devstats_destroy(&st);
    free(save);
    free(path);
    gf_diar_destroy(&d);
    gf_diar_destroy(&d);
}

static int stop_after_five(void *user)
{
    int *asked = user;
    return ++*asked > 5;
}

/* a cancel hook stops the run at a window boundary: GF_EINTR, no result */
static void test_cancel(void **state)
{
    (void)state;
    const turn turns[] = { { 0.5, 4.5, 0 }, { 5.0, 9.0, 1 }, { 9.5, 13.0, 0 } };
    size_t n = 240000;  /* 15 s: 6 windows */
    float *x = make_turns(turns, 3, n);
    char *path = write_wav("cancel.wav", x, n);
    free(x);
    gf_diar *d = gf_diar_new_weight_free(2);
    gf_diar_run_opts o = gf_diar_run_defaults();
    int asked = 0;
    o.cancel = stop_after_five;
    o.cancel_user = &asked;
    gf_diar_result res;
    assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), GF_EINTR);
    assert_null(res.rttm);
    assert_int_equal(asked, 6);
    /* the same pipeline runs the next recording to the end */
    o.cancel = NULL;
    assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), 0);
    assert_int_equal(res.n_windows, 6);
    gf_diar_result_free(&res);
    free(path);
    gf_diar_destroy(&d);
}

/* A deep copy of a boundary's state, as a checkpoint would keep it. */
typedef struct {
    gf_diar_state st;
    size_t stop_at;       /* the boundary hook stops the run at this many windows */
    bool seen_last;       /* the hook saw the last batch */
} kept;

static float *copy_floats(const float *p, size_t n)
{
    if (!p)
        return NULL;
    float *q = gf_malloc((n ? n : 1) * sizeof *q);
    memcpy(q, p, n * sizeof *q);
    return q;
}

static int keep_and_stop(void *user, const gf_diar_state *st)
{
    kept *k = user;
    k->seen_last = st->last;
    if (st->n_windows < k->stop_at)
        return 0;
    size_t n = st->n_windows;
    k->st = *st;
    k->st.seg = copy_floats(st->seg, n * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS);
    k->st.emb = copy_floats(st->emb, n * GF_DIAR_SPEAKERS * st->dim);
    k->st.logits = copy_floats(st->logits, n * GF_DIAR_FRAMES * GF_DIAR_CLASSES);
    k->st.blocks = copy_floats(st->blocks, st->n_blocks * GF_DIAR_WF_DIM);
    k->st.vad_flags = copy_floats(st->vad_flags, st->vad_chunks);
    return 1;
}

static void free_kept(kept *k)
{
    free((float *)k->st.seg);
    free((float *)k->st.emb);
    free((float *)k->st.logits);
    free((float *)k->st.blocks);
    free((float *)k->st.vad_flags);
}

static const gf_diar_state *resume_from(void *user, size_t total)
{
    kept *k = user;
    assert_int_equal(total, 13);
    return &k->st;
}

static char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = gf_malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = slurp_file(a, &la), *y = slurp_file(b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(x, y, la);
    free(x);
    free(y);
}

static uint64_t unavailable(const gf_devstats *st, const char *stage)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].stage, stage) == 0)
            return rows[i].unavailable;
    return 0;
}

/* One run into save dir `save`: its turns as RTTM text. */
static char *run_to(gf_diar *d, const char *path, const char *save, gf_diar_run_opts *o,
                    gf_devstats *st, size_t *resumed)
{
    char *dirp = gf_strfmt("%s/%s", tmpdir, save);
    o->save_dir = dirp;
    gf_diar_result res;
    assert_int_equal(gf_diar_run(d, path, o, st, &res), 0);
    char *text = gf_rttm_format(res.rttm);
    *resumed = res.n_resumed;
    gf_diar_result_free(&res);
    free(dirp);
    return text;
}

/* the speaker constraints reach the weight-free block clustering: a forced
 * count and a lower bound give that many speakers, contradictory bounds
 * fail the run */
static void test_weight_free_constraints(void **state)
{
    (void)state;
    const turn turns[] = { { 0.5, 4.5, 0 }, { 5.0, 9.0, 1 }, { 9.5, 13.0, 0 },
                           { 13.5, 17.0, 1 }, { 17.5, 21.0, 0 } };
    size_t n = 340800;
    float *x = make_turns(turns, 5, n);
    char *path = write_wav("constraints.wav", x, n);
    free(x);
    gf_diar *d = gf_diar_new_weight_free(4);
    gf_diar_run_opts o = gf_diar_run_defaults();
    gf_diar_result res;
    o.cluster.num_speakers = 1;
    assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), 0);
    assert_int_equal(res.n_speakers, 1);
    gf_diar_result_free(&res);
    o.cluster.num_speakers = 0;
    o.cluster.min_speakers = 3;
    assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), 0);
    assert_int_equal(res.n_speakers, 3);
    gf_diar_result_free(&res);
    o.cluster.max_speakers = 2;
    assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), GF_EINVAL);
    gf_diar_destroy(&d);
    free(path);
}

/* Weight-free, batches of 2 over 13 windows: stopped after 2, 6, 12 and
 * all 13 windows, then resumed from the state each stop left: the same
 * RTTM and intermediates as the run that was never stopped, and the
 * resumed run's VAD runs only on the windows after the state. A state that
 * does not end at a batch boundary is not used. With the energy VAD (vad
 * "energy") or the trained one (NULL: its default file). */
static void resume_weight_free(const char *vad)
{
    const char *stage = vad ? "vad.energy" : "vad.silero";
    const char *tag = vad ? "energy" : "trained";   /* the save folders' prefix */
    if (vad)
        setenv("GPUFLOCK_VAD", vad, 1);
    else
        unsetenv("GPUFLOCK_VAD");
    const turn turns[] = { { 0.5, 4.5, 0 }, { 5.0, 9.0, 1 }, { 9.5, 13.0, 0 },
                           { 13.5, 17.0, 1 }, { 17.5, 21.0, 0 } };
    size_t n = 340800;  /* 21.3 s: 13 windows, the last one padded */
    float *x = make_turns(turns, 5, n);
    char *path = write_wav("resume.wav", x, n);
    free(x);
    gf_diar *d = gf_diar_new_weight_free(2);
    assert_non_null(d);
    assert_string_equal(gf_diar_vad(d), vad ? GF_DIAR_VAD_ENERGY : GF_DIAR_VAD_SILERO);
    gf_diar_run_opts o = gf_diar_run_defaults();
    gf_devstats *st = gf_devstats_new();
    size_t resumed;
    char *whole = gf_strfmt("%s-whole", tag);
    char *want = run_to(d, path, whole, &o, st, &resumed);
    assert_int_equal(resumed, 0);
    assert_int_equal(unavailable(st, stage), 13);
    gf_devstats_destroy(&st);

    const size_t stops[] = { 2, 6, 12, 13 };
    for (size_t i = 0; i < GF_ARRAY_LEN(stops); i++) {
        kept k = { .stop_at = stops[i] };
        gf_diar_run_opts so = gf_diar_run_defaults();
        so.boundary = keep_and_stop;
        so.boundary_user = &k;
        gf_diar_result res;
        assert_int_equal(gf_diar_run(d, path, &so, NULL, &res), GF_EINTR);
        assert_null(res.rttm);
        assert_int_equal(k.st.n_windows, stops[i]);
        assert_true(k.st.weight_free && k.st.emb == NULL && (!vad || k.st.n_blocks > 0));
        assert_int_equal(k.st.trained_vad, !vad);
        if (!vad)   /* every chunk the windows so far completed, once */
            assert_int_equal(k.st.vad_chunks,
                             stops[i] == 13 ? (n + GF_VAD_CHUNK - 1) / GF_VAD_CHUNK
                                            : ((stops[i] - 1) * GF_DIAR_STEP + GF_DIAR_WINDOW)
                                                  / GF_VAD_CHUNK);
        assert_int_equal(k.seen_last, stops[i] == 13);

        gf_diar_run_opts ro = gf_diar_run_defaults();
        ro.resume = resume_from;
        ro.resume_user = &k;
        st = gf_devstats_new();
        char *save = gf_strfmt("%s-resumed%zu", tag, stops[i]);
        char *got = run_to(d, path, save, &ro, st, &resumed);
        assert_string_equal(got, want);
        assert_int_equal(resumed, stops[i]);
        assert_int_equal(unavailable(st, stage), 13 - stops[i]);
        const char *arrays[] = { "segmentations.npy", "embeddings.npy" };
        for (size_t a = 0; a < 2; a++) {
            char *pa = gf_strfmt("%s/%s/%s", tmpdir, whole, arrays[a]);
            char *pb = gf_strfmt("%s/%s/%s", tmpdir, save, arrays[a]);
            same_file(pa, pb);
            free(pa);
            free(pb);
        }
        free(save);
        free(got);
        gf_devstats_destroy(&st);
        free_kept(&k);
    }

    /* a state of 3 windows (not a boundary of batches of 2): not used */
    kept k = { .stop_at = 4 };
    gf_diar_run_opts so = gf_diar_run_defaults();
    so.boundary = keep_and_stop;
    so.boundary_user = &k;
    gf_diar_result res;
    assert_int_equal(gf_diar_run(d, path, &so, NULL, &res), GF_EINTR);
    k.st.n_windows = 3;
    gf_diar_run_opts ro = gf_diar_run_defaults();
    ro.resume = resume_from;
    ro.resume_user = &k;
    char *got = run_to(d, path, vad ? "energy-odd" : "trained-odd", &ro, NULL, &resumed);
    assert_int_equal(resumed, 0);
    assert_string_equal(got, want);
    free(got);
    free_kept(&k);
    free(want);
    free(whole);
    free(path);
    gf_diar_destroy(&d);
    setenv("GPUFLOCK_VAD", "energy", 1);
}

static void test_resume_weight_free(void **state)
{
    (void)state;
    resume_weight_free("energy");
}

/* the same with the trained VAD, where set-up fetched it */
static void test_resume_trained_vad(void **state)
{
    (void)state;
    if (access(gf_vad_default_path(), R_OK) != 0) {
        fprintf(stderr, "skip: no trained VAD at %s (tools/fetch-vad)\n", gf_vad_default_path());
        skip();
    }
    resume_weight_free(NULL);
}

static const gf_diar_state *resume_any(void *user, size_t total)
{
    (void)total;
    kept *k = user;
    return &k->st;
}

/* segmentation_step 0.05 (windows 0.5 s apart): 24 windows for 21.3 s, the
 * energy VAD and the trained one (where set-up fetched it) each stopped
 * after 10 and resumed: the uninterrupted run's turns and activity */
static void test_weight_free_step(void **state)
{
    (void)state;
    const turn turns[] = { { 0.5, 4.5, 0 }, { 5.0, 9.0, 1 }, { 9.5, 13.0, 0 },
                           { 13.5, 17.0, 1 }, { 17.5, 21.0, 0 } };
    size_t n = 340800;
    float *x = make_turns(turns, 5, n);
    char *path = write_wav("step.wav", x, n);
    free(x);
    const char *vads[] = { "energy", NULL };
    for (int v = 0; v < 2; v++) {
        if (!vads[v] && access(gf_vad_default_path(), R_OK) != 0)
            continue;
        if (vads[v])
            setenv("GPUFLOCK_VAD", vads[v], 1);
        else
            unsetenv("GPUFLOCK_VAD");
        gf_diar *d = gf_diar_new_weight_free(2);
        assert_non_null(d);
        gf_diar_run_opts o = gf_diar_run_defaults();
        o.segmentation_step = 0.05;
        gf_diar_result res;
        assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), 0);
        assert_int_equal(res.n_windows, 24);
        assert_true(res.used.chunks.step == 0.5);
        assert_true(res.n_speakers >= 1);
        char *want = gf_rttm_format(res.rttm);
        gf_diar_result_free(&res);

        kept k = { .stop_at = 10 };
        gf_diar_run_opts so = o;
        so.boundary = keep_and_stop;
        so.boundary_user = &k;
        assert_int_equal(gf_diar_run(d, path, &so, NULL, &res), GF_EINTR);
        assert_int_equal(k.st.n_windows, 10);
        gf_diar_run_opts ro = o;
        ro.resume = resume_any;
        ro.resume_user = &k;
        assert_int_equal(gf_diar_run(d, path, &ro, NULL, &res), 0);
        assert_int_equal(res.n_resumed, 10);
        char *got = gf_rttm_format(res.rttm);
        assert_string_equal(got, want);
        gf_diar_result_free(&res);
        free(got);
        free(want);
        free_kept(&k);
        /* a step that is not a whole number of 10 ms: refused, named */
        o.segmentation_step = 0.1234;
        gf_log_clear_last_error();
        assert_int_equal(gf_diar_run(d, path, &o, NULL, &res), GF_EINVAL);
        assert_non_null(strstr(gf_log_last_error(), "segmentation_step"));
        gf_diar_destroy(&d);
    }
    setenv("GPUFLOCK_VAD", "energy", 1);
    free(path);
}

/* a trained VAD that is named and not there, or not the file: no pipeline */
static void test_vad_named_and_unusable(void **state)
{
    (void)state;
    char *missing = gf_strfmt("%s/no-such-vad.safetensors", tmpdir);
    setenv("GPUFLOCK_VAD", missing, 1);
    gf_diar *d = gf_diar_new_weight_free(2);
    assert_null(d);
    char *junk = write_wav("junk.safetensors", (float[]){ 0.0f, 1.0f }, 2);
    setenv("GPUFLOCK_VAD", junk, 1);
    d = gf_diar_new_weight_free(2);
    assert_null(d);
    /* a models folder's own file is the one taken (here a damaged one) */
    unsetenv("GPUFLOCK_VAD");
    char *mdir = gf_strfmt("%s/models-vad", tmpdir);
    assert_int_equal(mkdir(mdir, 0700), 0);
    char *mfile = gf_strfmt("%s/%s", mdir, GF_VAD_FILE_NAME);
    FILE *mf = fopen(mfile, "w");
    fputs("not weights\n", mf);
    fclose(mf);
    bool wf = false;
    assert_null(gf_diar_new(mdir, 2, 1, &wf));
    unlink(mfile);
    d = gf_diar_new(mdir, 2, 1, &wf);   /* gone: the default file, or the energy VAD */
    assert_non_null(d);
    assert_true(wf);
    gf_diar_destroy(&d);
    rmdir(mdir);
    free(mfile);
    free(mdir);
    char *fifo = gf_strfmt("%s/vad.fifo", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);   /* refused, not waited on */
    setenv("GPUFLOCK_VAD", fifo, 1);
    assert_null(gf_diar_new_weight_free(2));
    unlink(fifo);
    free(fifo);
    setenv("GPUFLOCK_VAD", "energy", 1);
    d = gf_diar_new_weight_free(2);
    assert_non_null(d);
    assert_string_equal(gf_diar_vad(d), GF_DIAR_VAD_ENERGY);
    gf_diar_destroy(&d);
    free(junk);
    free(missing);
}

/* bad files: an error naming the problem, nothing else */
static void test_bad_inputs(void **state)
{
    (void)state;
    gf_diar *d = gf_diar_new_weight_free(2);
    gf_diar_run_opts o = gf_diar_run_defaults();
    gf_diar_result res;
    char *missing = gf_strfmt("%s/missing.wav", tmpdir);
    assert_int_equal(gf_diar_run(d, missing, &o, NULL, &res), GF_ENOENT);
    assert_null(res.rttm);
    char *text = gf_strfmt("%s/notes.wav", tmpdir);
    FILE *f = fopen(text, "w");
    fputs("these are not samples\n", f);
    fclose(f);
    gf_log_clear_last_error();
    assert_true(gf_diar_run(d, text, &o, NULL, &res) < 0);
    /* the message a worker puts in the job's result names the file */
    assert_non_null(strstr(gf_log_last_error(), "notes.wav"));
    assert_null(res.rttm);
    /* a FIFO with no writer, and a device: refused at once, not waited on
     * nor read forever (a worker's job thread blocked in open could not be
     * cancelled) */
    char *fifo = gf_strfmt("%s/live.wav", tmpdir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    gf_log_clear_last_error();
    assert_int_equal(gf_diar_run(d, fifo, &o, NULL, &res), GF_EIO);
    assert_non_null(strstr(gf_log_last_error(), "not a regular file"));
    assert_int_equal(gf_diar_run(d, "/dev/zero", &o, NULL, &res), GF_EIO);
    /* the same for the model files of a folder */
    char *mdir = gf_strfmt("%s/fifo-models", tmpdir);
    assert_int_equal(mkdir(mdir, 0700), 0);
    char *seg = gf_strfmt("%s/%s", mdir, GF_MODELS_SEGMENTATION);
    char *emb = gf_strfmt("%s/%s", mdir, GF_MODELS_EMBEDDING);
    assert_int_equal(mkfifo(seg, 0600), 0);
    assert_int_equal(symlink("/dev/zero", emb), 0);
    bool wf = true;
    gf_log_clear_last_error();
    assert_null(gf_diar_new(mdir, 2, 1, &wf));
    assert_non_null(strstr(gf_log_last_error(), "not a regular file"));
    unlink(seg);
    unlink(emb);
    rmdir(mdir);
    unlink(fifo);
    free(seg);
    free(emb);
    free(mdir);
    free(fifo);
    free(missing);
    free(text);
    gf_diar_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window_count),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_pool_mask),
        cmocka_unit_test(test_energy_vad),
        cmocka_unit_test(test_fbank_stats),
        cmocka_unit_test(test_weight_free_run),
        cmocka_unit_test(test_weight_free_constraints),
        cmocka_unit_test(test_resume_weight_free),
        cmocka_unit_test(test_resume_trained_vad),
        cmocka_unit_test(test_vad_named_and_unusable),
        cmocka_unit_test(test_weight_free_step),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
