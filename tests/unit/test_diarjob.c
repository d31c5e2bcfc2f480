/* test_diarjob.c — diarize jobs on worker threads: a weight-free run of a
 * real recording writes its RTTM and JSON and reports windows, mode and
 * statistics; the next job finds the pipeline loaded; a cancelled job
 * writes nothing; a file that is not audio fails with a message naming it.
 * Checkpoints: a job asked to yield stops at its first batch boundary with
 * status 75 and its checkpoint in the spool (0600, the job's user), and its
 * next attempt resumes there and gives the RTTM, JSON turns and
 * intermediates of an uninterrupted run, byte for byte, then removes the
 * file; a changed audio file, a damaged checkpoint and another batch size
 * are named on the job's stderr and the job starts again from its first
 * window; a cancelled or failed job removes its checkpoint. */
#include "common/config.h"
#include "common/error.h"
#include "net/proto.h"
#include "common/util.h"
#include "diar/pipeline.h"
#include "worker/diarjob.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define SAMPLE "../shared/data/audio/sample.wav"

static char tmpdir[] = "/tmp/gf_diarjob_test.XXXXXX";
static char sample[PATH_MAX];
static gf_config *cfg;
static gf_diar_pool *pool;
static gf_route_plan *plan;   /* the CPU card's: every route the library's (not-cuda) */
static int wakefd = -1;

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir) || !realpath(SAMPLE, sample))
        return -1;
    if (gf_config_load(NULL, &cfg) != 0)
        return -1;
    free(cfg->models_dir);
    cfg->models_dir = gf_strfmt("%s/no-models", tmpdir);
    cfg->batch_size = 4;
    cfg->cpu_threads = 1;
    gf_card_identity card;
    memset(&card, 0, sizeof(card));
    card.kind = GF_DEVICE_CPU;
    plan = gf_route_plan_new(&card, gf_evidence_default_dir(), &gf_module_provider_none, false);
    if (!plan)
        return -1;
    pool = gf_diar_pool_new(cfg, plan);
    wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return wakefd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    gf_diar_pool_destroy(&pool);
    gf_diar_pool_destroy(&pool);     /* safe twice */
    gf_route_plan_destroy(&plan);
    gf_config_destroy(&cfg);
    close(wakefd);
    char *cmd = gf_strfmt("rm -rf %s", tmpdir);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

/* A "job" message for audio → rttm, run as this process's user. */
static void make_job(gf_msg *m, uint64_t id, const char *audio, const char *rttm, bool json)
{
    memset(m, 0, sizeof(*m));
    m->op = GF_OP_JOB;
    m->id = id;
    m->attempt = 1;
    gf_job_spec_init(&m->spec);
    m->spec.kind = GF_JOB_DIARIZE;
    m->spec.mode = GF_MODE_SHARED;
    m->spec.diar = gf_calloc(1, sizeof(gf_diar_spec));
    m->spec.diar->audio = gf_strdup(audio);
    m->spec.diar->rttm = gf_strdup(rttm);
    m->spec.diar->json = json;
    m->uid = (uint32_t)getuid();
    m->gid = (uint32_t)getgid();
}

static int spool(const char *name)
{
    char *p = gf_strfmt("%s/%s", tmpdir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    free(p);
    assert_true(fd >= 0);
    return fd;
}

static char *slurp(const char *name)
{
    char *p = gf_strfmt("%s/%s", tmpdir, name);
    FILE *f = fopen(p, "r");
    free(p);
    if (!f)
        return NULL;
    char *buf = gf_calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static const gf_stat *stat_of(const gf_msg *r, const char *key)
{
    for (size_t i = 0; i < r->n_stats; i++)
        if (strcmp(r->stats[i].key, key) == 0)
            return &r->stats[i];
    return NULL;
}

/* Run a job to its end as the event loop would: wait on the eventfd, take
 * progress, reap. Returns the final windows done / total in *done, *total. */
enum { NOTHING = 0, CANCEL = 1, YIELD = 2 };   /* what run_job asks of the job at once */

static bool last_yielded;     /* gf_djob_yielded of run_job's last job */

static void run_job_in(gf_diar_pool *in, const gf_msg *job, int ask, gf_msg *result,
                       int64_t *done, int64_t *total)
{
    gf_djob *j = NULL;
    char why[256];
    assert_int_equal(gf_djob_start(job, in, spool("out"), spool("err"), wakefd, &j, why,
                                   sizeof(why)), 0);
    if (ask == CANCEL)
        gf_djob_cancel(j);
    if (ask == YIELD) {
        gf_djob_yield(j);
        gf_djob_yield(j);     /* idempotent */
    }
    *done = *total = 0;
    for (int rounds = 0;; rounds++) {
        assert_true(rounds < 6000);     /* a bound, not a timing: 6000 wake-ups or 10 s polls */
        struct pollfd p = { .fd = wakefd, .events = POLLIN };
        poll(&p, 1, 10000);
        uint64_t c;
        ssize_t got = read(wakefd, &c, sizeof(c));
        (void)got;
        int64_t d, t;
        if (gf_djob_progress(j, &d, &t)) {
            assert_true(d >= *done && d <= t);
            *done = d;
            *total = t;
        }
        if (gf_djob_reap(j, result))
            break;
    }
    int64_t d, t;
    if (gf_djob_progress(j, &d, &t)) {     /* the last count, after the join */
        *done = d;
        *total = t;
    }
    last_yielded = gf_djob_yielded(j);
    gf_djob_destroy(&j);
    gf_djob_destroy(&j);
}

static void run_job(const gf_msg *job, bool cancel_at_once, gf_msg *result, int64_t *done,
                    int64_t *total)
{
    run_job_in(pool, job, cancel_at_once ? CANCEL : NOTHING, result, done, total);
}

static void test_weight_free_job(void **state)
{
    (void)state;
    char *rttm = gf_strfmt("%s/sample.rttm", tmpdir);
    gf_msg job, r;
    make_job(&job, 7, sample, rttm, true);
    int64_t done, total;
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.op, GF_OP_RESULT);
    assert_int_equal(r.id, 7);
    assert_int_equal(r.attempt, 1);
    assert_int_equal(r.exit_status, 0);
    assert_null(r.message);
    assert_int_equal(total, 21);             /* 30 s: windows of 10 s every 1 s */
    assert_int_equal(done, 21);
    assert_int_equal(stat_of(&r, "diarize.weight_free")->i, 1);
    assert_int_equal(stat_of(&r, "diarize.pipeline_reused")->i, 0);
    assert_int_equal(stat_of(&r, "diarize.windows")->i, 21);
    assert_true(stat_of(&r, "diarize.turns")->i > 0);
    assert_true(stat_of(&r, "diarize.duration_s")->f > 29.9);
    assert_non_null(stat_of(&r, "devstats.fbank.cpu.unavailable"));
    char *text = slurp("sample.rttm");
    assert_non_null(text);
    assert_true(strncmp(text, "SPEAKER sample 1 ", 17) == 0);
    free(text);
    text = slurp("sample.json");
    assert_non_null(text);
    assert_non_null(strstr(text, "\"mode\":\"weight-free\""));
    free(text);
    text = slurp("err");
    assert_non_null(strstr(text, "weight-free mode: no model files in"));
    free(text);
    text = slurp("out");
    assert_non_null(strstr(text, "(weight-free mode)"));
    free(text);
    gf_msg_clear(&r);

    /* the same job again: its outputs are there and are not replaced */
    char *before = slurp("sample.rttm");
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, 73);
    assert_non_null(r.message);
    assert_non_null(strstr(r.message, "sample.json exists: not replaced"));
    text = slurp("sample.rttm");
    assert_string_equal(text, before);
    free(text);
    free(before);
    gf_msg_clear(&r);
    /* with overwrite, the same worker's next job: the pipeline is already there */
    job.spec.diar->overwrite = true;
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, 0);
    assert_int_equal(stat_of(&r, "diarize.pipeline_reused")->i, 1);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
    free(rttm);
}

static void test_cancelled_job(void **state)
{
    (void)state;
    char *rttm = gf_strfmt("%s/cancelled.rttm", tmpdir);
    gf_msg job, r;
    make_job(&job, 8, sample, rttm, false);
    int64_t done, total;
    run_job(&job, true, &r, &done, &total);
    assert_int_equal(r.exit_status, -1);
    assert_non_null(r.message);
    assert_non_null(strstr(r.message, "cancelled after"));
    assert_true(done < 21);
    assert_int_not_equal(access(rttm, F_OK), 0);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
    free(rttm);
}

static void test_bad_file(void **state)
{
    (void)state;
    char *bad = gf_strfmt("%s/notes.wav", tmpdir);
    FILE *f = fopen(bad, "w");
    fputs("these are not samples\n", f);
    fclose(f);
    char *rttm = gf_strfmt("%s/notes.rttm", tmpdir);
    gf_msg job, r;
    make_job(&job, 9, bad, rttm, false);
    int64_t done, total;
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, GF_EXIT_DATAERR);
    assert_non_null(strstr(r.message, "notes.wav"));
    assert_non_null(strstr(r.message, "unrecognised format"));
    assert_int_not_equal(access(rttm, F_OK), 0);
    gf_msg_clear(&r);
    gf_msg_clear(&job);

    /* a missing file: 66 */
    free(bad);
    bad = gf_strfmt("%s/missing.wav", tmpdir);
    make_job(&job, 10, bad, rttm, false);
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, GF_EXIT_NOINPUT);
    assert_non_null(strstr(r.message, "missing.wav"));
    gf_msg_clear(&r);
    gf_msg_clear(&job);
    free(rttm);
    free(bad);
}

/* A job of id whose spool is <tmpdir>/<id>.out: checkpoints at <id>.ckpt. */
static void make_spooled_job(gf_msg *m, uint64_t id, int attempt, const char *audio,
                             const char *rttm, const char *inter)
{
    make_job(m, id, audio, rttm, true);
    m->attempt = attempt;
    m->out_path = gf_strfmt("%s/%llu.out", tmpdir, (unsigned long long)id);
    m->err_path = gf_strfmt("%s/%llu.err", tmpdir, (unsigned long long)id);
    if (inter)
        m->spec.diar->intermediates = gf_strdup(inter);
}

static char *ckpt_of(uint64_t id)
{
    return gf_strfmt("%s/%llu.ckpt", tmpdir, (unsigned long long)id);
}

static char *slurp_path(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = gf_calloc(1, 1 << 21);
    *len = fread(buf, 1, (1 << 21) - 1, f);
    fclose(f);
    return buf;
}

static void same_files(const char *a, const char *b)
{
    size_t la = 0, lb = 0;
    char *x = slurp_path(a, &la), *y = slurp_path(b, &lb);
    assert_non_null(x);
    assert_non_null(y);
    assert_int_equal(la, lb);
    assert_memory_equal(x, y, la);
    free(x);
    free(y);
}

/* The turns of a JSON output: the text before "mode" (the timings after it
 * differ from run to run). */
static char *json_turns(const char *path)
{
    size_t n = 0;
    char *t = slurp_path(path, &n);
    assert_non_null(t);
    char *m = strstr(t, "\"mode\"");
    assert_non_null(m);
    *m = '\0';
    return t;
}

/* A copy of the sample in the test's folder (its mtime is ours to change). */
static char *sample_copy(const char *name)
{
    char *p = gf_strfmt("%s/%s", tmpdir, name);
    char *cmd = gf_strfmt("cp '%s' '%s'", sample, p);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    return p;
}

/* A job of its own, run to its end: the reference of an uninterrupted run. */
static void reference_run(const char *audio, const char *rttm, const char *inter)
{
    gf_msg job, r;
    int64_t done, total;
    make_spooled_job(&job, 99, 1, audio, rttm, inter);
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, 0);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
}

/* Attempt 1 of job id yields at its first boundary: status 75, the
 * checkpoint in the spool. */
static void yield_first(uint64_t id, const char *audio, const char *rttm, const char *inter)
{
    gf_msg job, r;
    int64_t done, total;
    unlink(rttm);
    make_spooled_job(&job, id, 1, audio, rttm, inter);
    run_job_in(pool, &job, YIELD, &r, &done, &total);
    if (r.exit_status != GF_EXIT_TEMPFAIL)
        fprintf(stderr, "yield: status %d, %s\n", r.exit_status, r.message ? r.message : "");
    assert_int_equal(r.exit_status, GF_EXIT_TEMPFAIL);
    assert_true(last_yielded);
    assert_non_null(strstr(r.message, "yielded after 4 of 21 windows (checkpoint kept for the "
                                      "next attempt)"));
    assert_non_null(strstr(r.message, audio));
    assert_int_equal(stat_of(&r, "diarize.yielded")->i, 1);
    assert_int_equal(stat_of(&r, "checkpoint.written")->i, 1);
    assert_int_equal(stat_of(&r, "checkpoint.failed")->i, 0);
    assert_true(stat_of(&r, "checkpoint.bytes")->i > 4 * GF_DIAR_FRAMES * 3 * 4);
    assert_true(stat_of(&r, "checkpoint.audio_digest_s")->f > 0.0);
    assert_int_equal(stat_of(&r, "devstats.checkpoint.capture.cpu.unavailable")->i, 1);
    assert_true(stat_of(&r, "devstats.checkpoint.capture.cpu.bytes")->i > 0);
    /* seg, blocks, and the trained VAD's state where set-up fetched it */
    assert_int_equal(stat_of(&r, "devstats.checkpoint.capture.cpu.copies")->i,
                     2 + (access(gf_vad_default_path(), R_OK) == 0));
    assert_null(stat_of(&r, "devstats.checkpoint.capture.cpu.count"));   /* no device time */
    assert_int_not_equal(access(rttm, F_OK), 0);
    char *ck = ckpt_of(id);
    struct stat sb;
    assert_int_equal(lstat(ck, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 07777, 0600);
    assert_int_equal(sb.st_uid, getuid());
    free(ck);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
}

static void test_yield_and_resume(void **state)
{
    (void)state;
    char *audio = sample_copy("yield.wav");
    char *ref = gf_strfmt("%s/ref.rttm", tmpdir), *ref_inter = gf_strfmt("%s/ref-inter", tmpdir);
    char *ref_json = gf_strfmt("%s/ref.json", tmpdir);
    reference_run(audio, ref, ref_inter);

    char *rttm = gf_strfmt("%s/yield.rttm", tmpdir), *inter = gf_strfmt("%s/yield-inter", tmpdir);
    char *json = gf_strfmt("%s/yield.json", tmpdir);
    yield_first(20, audio, rttm, inter);

    gf_msg job, r;
    int64_t done, total;
    make_spooled_job(&job, 20, 2, audio, rttm, inter);
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, 0);
    assert_false(last_yielded);
    assert_int_equal(done, 21);
    assert_int_equal(stat_of(&r, "checkpoint.resumed_at")->i, 4);
    assert_int_equal(stat_of(&r, "checkpoint.refused")->i, 0);
    assert_int_equal(stat_of(&r, "devstats.checkpoint.restore.cpu.unavailable")->i, 1);
    assert_true(stat_of(&r, "devstats.checkpoint.restore.cpu.bytes")->i > 0);
    assert_int_equal(stat_of(&r, access(gf_vad_default_path(), R_OK) == 0
                                     ? "devstats.vad.silero.cpu.unavailable"
                                     : "devstats.vad.energy.cpu.unavailable")->i, 21 - 4);
    char *err = slurp("err");
    assert_non_null(strstr(err, "resumed from the checkpoint of an earlier attempt at window 4 "
                                "of 21"));
    free(err);
    same_files(ref, rttm);
    char *ta = json_turns(ref_json), *tb = json_turns(json);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    const char *arrays[] = { "segmentations.npy", "embeddings.npy" };
    for (size_t i = 0; i < 2; i++) {
        char *a = gf_strfmt("%s/%s", ref_inter, arrays[i]), *b = gf_strfmt("%s/%s", inter, arrays[i]);
        same_files(a, b);
        free(a);
        free(b);
    }
    size_t n = 0;
    char *js = slurp_path(json, &n);
    assert_non_null(strstr(js, "\"checkpoint\":{"));
    assert_non_null(strstr(js, "\"resumed_at\":4"));
    free(js);
    char *ck = ckpt_of(20);
    assert_int_not_equal(access(ck, F_OK), 0);     /* done: removed */
    free(ck);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
    free(json);
    free(inter);
    free(rttm);
    free(ref_json);
    free(ref_inter);
    free(ref);
    free(audio);
}

/* Attempt 2 of job id: runs to its end from the first window, saying why
 * the checkpoint was not reused; its RTTM is the reference's. */
static void refused_then_whole(gf_diar_pool *in, uint64_t id, const char *audio, const char *rttm,
                               const char *ref, const char *words)
{
    gf_msg job, r;
    int64_t done, total;
    make_spooled_job(&job, id, 2, audio, rttm, NULL);
    job.spec.diar->overwrite = true;   /* each case's job writes the same outputs */
    run_job_in(in, &job, NOTHING, &r, &done, &total);
    assert_int_equal(r.exit_status, 0);
    assert_int_equal(stat_of(&r, "checkpoint.resumed_at")->i, 0);
    assert_int_equal(stat_of(&r, "checkpoint.refused")->i, 1);
    assert_null(stat_of(&r, "devstats.checkpoint.restore.cpu.unavailable"));
    char *err = slurp("err");
    if (!strstr(err, words))
        fprintf(stderr, "wanted '%s' in:\n%s", words, err);
    assert_non_null(strstr(err, words));
    assert_non_null(strstr(err, "starting at the first window"));
    free(err);
    same_files(ref, rttm);
    char *ck = ckpt_of(id);
    assert_int_not_equal(access(ck, F_OK), 0);
    free(ck);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
}

static void test_checkpoint_not_reused(void **state)
{
    (void)state;
    char *audio = sample_copy("changed.wav");
    char *ref = gf_strfmt("%s/ref2.rttm", tmpdir), *rttm = gf_strfmt("%s/changed.rttm", tmpdir);
    reference_run(audio, ref, NULL);

    /* the audio's mtime moved (its content did not): not reused */
    yield_first(30, audio, rttm, NULL);
    struct timeval tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    assert_int_equal(utimes(audio, tv), 0);
    refused_then_whole(pool, 30, audio, rttm, ref,
                       "checkpoint not reused: audio file changed (mtime ");

    /* one byte of the checkpoint changed */
    yield_first(31, audio, rttm, NULL);
    char *ck = ckpt_of(31);
    FILE *f = fopen(ck, "r+b");
    assert_non_null(f);
    fseek(f, 20000, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 20000, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    refused_then_whole(pool, 31, audio, rttm, ref,
                       "checkpoint not reused: damaged (its SHA-256 does not match its contents)");

    /* cut short */
    yield_first(32, audio, rttm, NULL);
    free(ck);
    ck = ckpt_of(32);
    assert_int_equal(truncate(ck, 1000), 0);
    refused_then_whole(pool, 32, audio, rttm, ref, "checkpoint not reused: truncated (1000 of ");

    /* a symlink in its place */
    yield_first(33, audio, rttm, NULL);
    free(ck);
    ck = ckpt_of(33);
    char *moved = gf_strfmt("%s.moved", ck);
    assert_int_equal(rename(ck, moved), 0);
    assert_int_equal(symlink(moved, ck), 0);
    refused_then_whole(pool, 33, audio, rttm, ref,
                       "checkpoint not reused: a symbolic link (not followed)");
    free(moved);

    /* the worker's batch size changed */
    yield_first(34, audio, rttm, NULL);
    cfg->batch_size = 2;
    gf_diar_pool *other = gf_diar_pool_new(cfg, plan);
    cfg->batch_size = 4;
    refused_then_whole(other, 34, audio, rttm, ref,
                       "checkpoint not reused: configuration changed (batch size 4 -> 2)");
    gf_diar_pool_destroy(&other);
    free(ck);
    free(rttm);
    free(ref);
    free(audio);
}

/* A job that runs again after its outputs were written (its worker died
 * before the result was recorded) replaces what it wrote itself, recorded
 * in <id>.outs, and nothing else: a file put in the RTTM's place by anyone
 * else is kept and the attempt fails (73). */
static void test_retry_replaces_own_outputs(void **state)
{
    (void)state;
    char *audio = sample_copy("again.wav");
    char *rttm = gf_strfmt("%s/again.rttm", tmpdir), *inter = gf_strfmt("%s/again-inter", tmpdir);
    gf_msg job, r;
    int64_t done, total;
    for (int attempt = 1; attempt <= 2; attempt++) {
        make_spooled_job(&job, 60, attempt, audio, rttm, inter);
        run_job(&job, false, &r, &done, &total);
        assert_int_equal(r.exit_status, 0);
        gf_msg_clear(&r);
        gf_msg_clear(&job);
    }
    char *outs = gf_strfmt("%s/60.outs", tmpdir);
    size_t n = 0;
    char *rec = slurp_path(outs, &n);
    assert_non_null(rec);
    assert_non_null(strstr(rec, "again.rttm\n"));
    assert_non_null(strstr(rec, "again.json\n"));
    assert_non_null(strstr(rec, "again-inter/embeddings.npy\n"));
    free(rec);
    /* someone else's file in the RTTM's place: a new inode */
    char *theirs = gf_strfmt("%s.theirs", rttm);
    FILE *f = fopen(theirs, "w");
    assert_non_null(f);
    fputs("theirs\n", f);
    fclose(f);
    assert_int_equal(rename(theirs, rttm), 0);
    make_spooled_job(&job, 60, 3, audio, rttm, inter);
    run_job(&job, false, &r, &done, &total);
    assert_int_equal(r.exit_status, 73);
    assert_non_null(strstr(r.message, "again.rttm exists: not replaced"));
    char *text = slurp_path(rttm, &n);
    assert_string_equal(text, "theirs\n");
    free(text);
    /* and a JSON is never left without its RTTM */
    char *json = gf_strfmt("%s/again.json", tmpdir);
    assert_int_not_equal(access(json, F_OK), 0);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
    free(json);
    free(theirs);
    free(outs);
    free(inter);
    free(rttm);
    free(audio);
}

/* A job that ends cancelled or failed takes its checkpoint with it. */
static void test_checkpoint_removed(void **state)
{
    (void)state;
    char *audio = sample_copy("gone.wav");
    char *rttm = gf_strfmt("%s/gone.rttm", tmpdir);
    char *ck = ckpt_of(40);
    yield_first(40, audio, rttm, NULL);
    gf_msg job, r;
    int64_t done, total;
    make_spooled_job(&job, 40, 2, audio, rttm, NULL);
    run_job_in(pool, &job, CANCEL, &r, &done, &total);
    assert_int_equal(r.exit_status, -1);
    assert_non_null(strstr(r.message, "cancelled after"));
    assert_int_not_equal(access(ck, F_OK), 0);
    gf_msg_clear(&r);
    gf_msg_clear(&job);

    yield_first(40, audio, rttm, NULL);
    char *away = gf_strfmt("%s.away", audio);
    assert_int_equal(rename(audio, away), 0);
    make_spooled_job(&job, 40, 2, audio, rttm, NULL);
    run_job_in(pool, &job, NOTHING, &r, &done, &total);
    assert_int_equal(r.exit_status, GF_EXIT_NOINPUT);
    assert_int_not_equal(access(ck, F_OK), 0);
    gf_msg_clear(&r);
    gf_msg_clear(&job);
    free(away);
    free(ck);
    free(rttm);
    free(audio);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_free_job),
        cmocka_unit_test(test_cancelled_job),
        cmocka_unit_test(test_bad_file),
        cmocka_unit_test(test_yield_and_resume),
        cmocka_unit_test(test_checkpoint_not_reused),
        cmocka_unit_test(test_retry_replaces_own_outputs),
        cmocka_unit_test(test_checkpoint_removed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
