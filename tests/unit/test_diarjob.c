/* test_diarjob.c — diarize jobs on worker threads: a weight-free run of a
 * real recording writes its RTTM and JSON and reports windows, mode and
 * statistics; the next job finds the pipeline loaded; a cancelled job
 * writes nothing; a file that is not audio fails with a message naming it. */
#include "common/config.h"
#include "common/error.h"
#include "common/proto.h"
#include "common/util.h"
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
#include <unistd.h>

#define SAMPLE "../shared/data/audio/sample.wav"

static char tmpdir[] = "/tmp/gf_diarjob_test.XXXXXX";
static char sample[PATH_MAX];
static gf_config *cfg;
static gf_diar_pool *pool;
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
    pool = gf_diar_pool_new(cfg, &card);
    wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    return wakefd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    gf_diar_pool_destroy(&pool);
    gf_diar_pool_destroy(&pool);     /* safe twice */
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
static void run_job(const gf_msg *job, bool cancel_at_once, gf_msg *result, int64_t *done,
                    int64_t *total)
{
    gf_djob *j = NULL;
    char why[256];
    assert_int_equal(gf_djob_start(job, pool, spool("out"), spool("err"), wakefd, &j, why,
                                   sizeof(why)), 0);
    if (cancel_at_once)
        gf_djob_cancel(j);
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
    gf_djob_destroy(&j);
    gf_djob_destroy(&j);
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

    /* the same worker's next job: the pipeline is already there */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weight_free_job),
        cmocka_unit_test(test_cancelled_job),
        cmocka_unit_test(test_bad_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
