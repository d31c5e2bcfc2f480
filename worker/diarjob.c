/* diarjob.c — diarize jobs on worker threads (see diarjob.h).
 *
 * The event loop (worker/agent.c) owns the job through its runner; the
 * thread owns the pipeline while it runs. They share only the progress
 * counters, the cancel and yield flags and the "ended" flag, under one
 * mutex. The job's checkpoints are worker/jobckpt's; this module says what
 * their identity is (which pipeline, models, configuration, route plan and
 * program made the results) and when the file goes. */
#include "worker/diarjob.h"
#include "common/djouts.h"

#include "common/devstats.h"
#include "common/ckdir.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "route/boundary.h"
#include "diar/io/audio.h"
#include "diar/pipeline.h"
#include "diar/io/rttm.h"
#include "diar/jobckpt.h"

#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAKE_EVERY_MS 100   /* at most ten PROGRESS messages a second */
#define EXIT_CANTCREAT 73   /* sysexits.h: an output file cannot be written */

struct gf_djob {
    gf_msg job;              /* the "job" message, a copy (gf_msg_copy) */
    gf_diar_pool *pool;      /* borrowed from the agent */
    int out_fd, err_fd;      /* spool files, owned */
    int wake_fd;             /* the agent's eventfd, -1: none */
    char *ckpt_path;         /* <spool_dir>/<id>.ckpt beside out_path; NULL: no checkpoints */
    gf_jobckpt *ck;          /* the job's checkpoints (the thread's), NULL: none */
    gf_djouts *outs;         /* the outputs its attempts wrote, NULL: no spool */
    pthread_t thread;
    bool joined;             /* thread joined (or never started) */
    pthread_mutex_t mu;      /* guards the fields below */
    int64_t done, total;     /* windows */
    bool changed;            /* progress not yet taken by gf_djob_progress */
    bool cancel;             /* stop at the next window */
    bool yield;              /* checkpoint at the next batch boundary and stop */
    bool yielded;            /* it did (set by the thread) */
    bool ended;              /* the thread is finishing: reap may join */
    uint64_t last_wake;      /* monotonic ms of the last progress wake-up */
    /* written by the thread before `ended`, read after the join */
    gf_msg result;
    size_t yield_at;         /* windows done when it yielded */
    bool yield_saved;        /* its checkpoint reached the disk */
};

static void wake(gf_djob *self)
{
    if (self->wake_fd < 0)
        return;
    uint64_t one = 1;
    ssize_t w = write(self->wake_fd, &one, sizeof(one));
    (void)w;     /* a full counter still wakes the loop */
}

static void on_progress(void *user, size_t done, size_t total)
{
    gf_djob *self = user;
    uint64_t now = gf_now_ms();
    pthread_mutex_lock(&self->mu);
    self->done = (int64_t)done;
    self->total = (int64_t)total;
    self->changed = true;
    bool w = done == total || now - self->last_wake >= WAKE_EVERY_MS;
    if (w)
        self->last_wake = now;
    pthread_mutex_unlock(&self->mu);
    if (w)
        wake(self);
}

static int is_cancelled(void *user)
{
    gf_djob *self = user;
    pthread_mutex_lock(&self->mu);
    bool c = self->cancel;
    pthread_mutex_unlock(&self->mu);
    return c;
}

static void add_int(gf_msg *r, const char *key, int64_t v)
{
    r->stats = gf_realloc(r->stats, (r->n_stats + 1) * sizeof(gf_stat));
    gf_stat *s = &r->stats[r->n_stats++];
    memset(s, 0, sizeof(*s));
    s->key = gf_strdup(key);
    s->i = v;
}

static void add_float(gf_msg *r, const char *key, double v)
{
    add_int(r, key, 0);
    r->stats[r->n_stats - 1].is_float = true;
    r->stats[r->n_stats - 1].f = v;
}

/* The devstats table as statistics: devstats.<stage>.<route>.<counter>,
 * only the counters that are not zero. */
static void add_devstats(gf_msg *r, const gf_devstats *st)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    for (size_t i = 0; i < n && r->n_stats + 8 < GF_PROTO_MAX_STATS; i++) {
        const gf_devstats_row *w = &rows[i];
        const struct { const char *name; uint64_t v; } c[] = {
            { "count", w->count }, { "total_ns", w->total_ns }, { "max_ns", w->max_ns },
            { "not_requested", w->not_requested }, { "unavailable", w->unavailable },
            { "failed", w->failed }, { "bytes", w->bytes }, { "copies", w->copies },
        };
        for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
            if (!c[k].v)
                continue;
            char *key = gf_strfmt("devstats.%s.%s.%s", w->stage, w->route, c[k].name);
            add_int(r, key, c[k].v > INT64_MAX ? INT64_MAX : (int64_t)c[k].v);
            free(key);
        }
    }
}

/* This thread reads and writes files as the submitter. The filesystem ids
 * and the groups are per thread in the kernel; glibc's setgroups would
 * change every thread of the worker, so the system call is made directly. */
static int become_submitter(const gf_msg *job, char *why, size_t len)
{
    if (geteuid() != 0 || job->uid == 0)
        return 0;
    gid_t groups[GF_PROTO_MAX_GROUPS];
    size_t ng = job->n_groups < GF_PROTO_MAX_GROUPS ? job->n_groups : GF_PROTO_MAX_GROUPS;
    for (size_t i = 0; i < ng; i++)
        groups[i] = job->groups[i];
    if (syscall(SYS_setgroups, ng, groups) != 0) {
        snprintf(why, len, "setgroups: %s", strerror(errno));
        return GF_EPERM;
    }
    syscall(SYS_setfsgid, job->gid);
    syscall(SYS_setfsuid, job->uid);
    if ((uid_t)syscall(SYS_setfsuid, -1) != job->uid) {
        snprintf(why, len, "cannot take uid %u for file access", (unsigned)job->uid);
        return GF_EPERM;
    }
    return 0;
}

static int64_t tv_ms(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static bool flag(gf_djob *self, const bool *f)
{
    pthread_mutex_lock(&self->mu);
    bool v = *f;
    pthread_mutex_unlock(&self->mu);
    return v;
}

static const gf_diar_state *resume_hook(void *user, size_t total)
{
    gf_djob *self = user;
    return gf_jobckpt_resume(self->ck, total);
}

/* After each batch: a cancel stops the run here; a yield checkpoints,
 * then stops it; else a periodic checkpoint when one is due. */
static int boundary_hook(void *user, const gf_diar_state *st)
{
    gf_djob *self = user;
    if (flag(self, &self->cancel))
        return 1;
    bool y = flag(self, &self->yield);
    bool saved = self->ck && gf_jobckpt_boundary(self->ck, st, y);
    if (!y)
        return 0;
    pthread_mutex_lock(&self->mu);
    self->yielded = true;
    pthread_mutex_unlock(&self->mu);
    self->yield_at = st->n_windows;
    self->yield_saved = saved;
    return 1;
}

/* What the results of this job's windows depend on (ckpt.h): the checkpoint
 * identity of this attempt, but for the audio's fields. The CPU networks'
 * results do not depend on the thread count (tests/unit/test_segmentation.c),
 * and the PLDA only enters the clustering, which a resumed run does again. */
static void job_identity(const gf_djob *self, const gf_diar_pipe *e, const gf_diar_run_opts *o,
                         gf_ckpt_id *id)
{
    const gf_diar_pool_conf *pool = gf_diar_pool_settings(self->pool);
    char job[32];
    snprintf(job, sizeof job, "%llu", (unsigned long long)self->job.id);
    gf_jobckpt_identity(id, e->diar, o, job, e->on_card ? gf_math_name(pool->math) : "fp32",
                        e->on_card ? (pool->overlap ? "on" : "off") : "-", e->seg_sha,
                        e->emb_sha);
}

/* The checkpoint counters as statistics (docs/diarization.md, Checkpoints). */
static void add_checkpoint_stats(gf_msg *r, const gf_jobckpt_stats *n)
{
    add_int(r, "checkpoint.written", (int64_t)n->written);
    add_int(r, "checkpoint.failed", (int64_t)n->failed);
    add_int(r, "checkpoint.skipped", (int64_t)n->skipped);
    add_int(r, "checkpoint.bytes", n->bytes > INT64_MAX ? INT64_MAX : (int64_t)n->bytes);
    add_int(r, "checkpoint.resumed_at", (int64_t)n->resumed_at);
    add_int(r, "checkpoint.refused", n->refused);
    add_float(r, "checkpoint.capture_s", (double)n->capture_ns * 1e-9);
    add_float(r, "checkpoint.write_s", (double)n->write_ns * 1e-9);
    add_float(r, "checkpoint.fsync_s", (double)n->fsync_ns * 1e-9);
    add_float(r, "checkpoint.restore_s", (double)n->restore_ns * 1e-9);
    add_float(r, "checkpoint.audio_digest_s", (double)n->digest_ns * 1e-9);
}

/* The job's JSON output with a "checkpoint" object of the same counters. */
static char *json_with_checkpoint(char *js, const gf_jobckpt_stats *n)
{
    json_object *o = json_tokener_parse(js);
    if (!o)
        return js;
    json_object *c = json_object_new_object();
    json_object_object_add(c, "written", json_object_new_int64((int64_t)n->written));
    json_object_object_add(c, "failed", json_object_new_int64((int64_t)n->failed));
    json_object_object_add(c, "skipped", json_object_new_int64((int64_t)n->skipped));
    json_object_object_add(c, "bytes", json_object_new_int64(n->bytes > INT64_MAX ? INT64_MAX
                                                                                  : (int64_t)n->bytes));
    json_object_object_add(c, "resumed_at", json_object_new_int64((int64_t)n->resumed_at));
    json_object_object_add(c, "refused", json_object_new_boolean(n->refused));
    json_object_object_add(c, "capture_s", json_object_new_double((double)n->capture_ns * 1e-9));
    json_object_object_add(c, "write_s", json_object_new_double((double)n->write_ns * 1e-9));
    json_object_object_add(c, "fsync_s", json_object_new_double((double)n->fsync_ns * 1e-9));
    json_object_object_add(c, "restore_s", json_object_new_double((double)n->restore_ns * 1e-9));
    json_object_object_add(c, "audio_digest_s",
                           json_object_new_double((double)n->digest_ns * 1e-9));
    json_object_object_add(o, "checkpoint", c);
    char *out = gf_strfmt("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    free(js);
    return out;
}

/* The intermediates a run writes into dir. */
static const char *const inter_names[] = { "segmentation_logits.npy", "segmentations.npy",
                                           "embeddings.npy" };

/* Whether the intermediates already in dir may be replaced: --overwrite, or
 * every one there was written by an earlier attempt of this job. */
static bool inter_replace(const gf_djob *self, const char *dir)
{
    if (self->job.spec.diar->overwrite)
        return true;
    bool any = false;
    for (size_t i = 0; i < 3; i++) {
        char *p = gf_strfmt("%s/%s", dir, inter_names[i]);
        struct stat st;
        bool there = lstat(p, &st) == 0, ours = there && gf_djouts_ours(self->outs, p);
        free(p);
        if (there && !ours)
            return false;
        any |= ours;
    }
    return any;
}

static void inter_record(gf_djob *self, const char *dir)
{
    for (size_t i = 0; i < 3; i++) {
        char *p = gf_strfmt("%s/%s", dir, inter_names[i]);
        struct stat st;
        if (lstat(p, &st) == 0)
            gf_djouts_add(self->outs, p);
        free(p);
    }
}

/* One output file: replaced only with --overwrite or when an earlier
 * attempt of this job wrote it; recorded once written. */
static int write_output(gf_djob *self, const char *path, const char *text)
{
    bool replace = self->job.spec.diar->overwrite || gf_djouts_ours(self->outs, path);
    int rc = gf_rttm_write_text(path, text, replace);
    if (rc == 0)
        gf_djouts_add(self->outs, path);
    return rc;
}

static void *job_main(void *arg)
{
    gf_djob *self = arg;
    const gf_diar_spec *ds = self->job.spec.diar;
    gf_msg *r = &self->result;
    r->op = GF_OP_RESULT;
    r->id = self->job.id;
    r->attempt = self->job.attempt;
    r->started_ms = gf_wall_ms();
    r->exit_status = -1;
    char why[1024] = "";
    gf_diar_pipe *e = NULL;
    gf_devstats *st = gf_devstats_new();
    gf_diar_result res;
    memset(&res, 0, sizeof(res));
    bool cached = false, yielded = false;
    const gf_diar_pool_conf *pc = gf_diar_pool_settings(self->pool);
    const char *models = ds->models ? ds->models : pc->models_dir;
    gf_log_clear_last_error();
    dprintf(self->err_fd, "gpuflock: diarize %s -> %s\n", ds->audio, ds->rttm);
    /* before the thread takes the submitter's identity: the writer thread
     * keeps the worker's, which the spool folder needs */
    if (self->ckpt_path) {
        gf_jobckpt_conf cc = {
            .path = self->ckpt_path, .job = self->job.id, .uid = self->job.uid,
            .gid = self->job.gid, .every_s = pc->checkpoint_s, .err_fd = self->err_fd,
            .stats = st,
        };
        self->ck = gf_jobckpt_new(&cc);
    }
    int rc = become_submitter(&self->job, why, sizeof(why));
    if (rc)
        goto out_result;
    e = gf_diar_pool_take(self->pool, ds->models, &cached);
    if (!e) {
        snprintf(why, sizeof(why), "model files in %s unusable: %s", models,
                 gf_log_last_error()[0] ? gf_log_last_error() : "see the worker's log");
        r->exit_status = GF_EXIT_CONFIG;
        goto out_result;
    }
    gf_diar *d = e->diar;
    bool wf = gf_diar_weight_free(d);
    if (wf) {
        dprintf(self->err_fd, "gpuflock: weight-free mode: no model files in %s (%s voice "
                              "activity and filterbank statistics; expect a much higher DER)\n",
                models, strcmp(gf_diar_vad(d), GF_DIAR_VAD_ENERGY) ? "trained" : "energy");
        GF_INFO("job %llu: weight-free mode (no model files in %s)",
                (unsigned long long)self->job.id, models);
    }
    gf_diar_run_opts o = gf_diar_run_defaults();
    o.cluster.num_speakers = ds->num_speakers;
    o.cluster.min_speakers = ds->min_speakers;
    o.cluster.max_speakers = ds->max_speakers;
    /* the knobs: 0 is the recipe's value */
    if (ds->threshold > 0)
        o.cluster.threshold = ds->threshold;
    if (ds->fa > 0)
        o.cluster.vbx.Fa = ds->fa;
    if (ds->fb > 0)
        o.cluster.vbx.Fb = ds->fb;
    o.cluster.min_duration_off = ds->min_duration_off;
    o.segmentation_step = ds->segmentation_step;
    o.exclude_overlap = !ds->keep_overlap;
    o.save_dir = ds->intermediates;
    o.overwrite = ds->intermediates && inter_replace(self, ds->intermediates);
    o.progress = on_progress;
    o.progress_user = self;
    o.cancel = is_cancelled;
    o.cancel_user = self;
    o.boundary = boundary_hook;
    o.boundary_user = self;
    if (self->ck) {
        gf_ckpt_id id;
        job_identity(self, e, &o, &id);
        bool host = e->on_card;
        gf_jobckpt_begin(self->ck, &id, ds->audio, gf_diar_batch(d), host ? "host" : "cpu",
                         host ? "results on the host: no card copy"
                              : pc->card.kind == GF_DEVICE_CUDA ? "networks on the cpu"
                                                                : "cpu card");
        o.resume = resume_hook;
        o.resume_user = self;
    }
    rc = gf_diar_run(d, ds->audio, &o, st, &res);
    if (self->ck)
        gf_jobckpt_settle(self->ck);   /* the counts are final; a write not begun is dropped */
    if (rc == GF_EINTR && is_cancelled(self)) {
        pthread_mutex_lock(&self->mu);
        snprintf(why, sizeof(why), "cancelled after %lld of %lld windows",
                 (long long)self->done, (long long)self->total);
        pthread_mutex_unlock(&self->mu);
        goto out_result;
    }
    if (rc == GF_EINTR && flag(self, &self->yielded)) {
        yielded = true;
        pthread_mutex_lock(&self->mu);
        long long total = (long long)self->total;
        pthread_mutex_unlock(&self->mu);
        snprintf(why, sizeof(why), "yielded after %zu of %lld windows (%s)", self->yield_at, total,
                 self->yield_saved ? "checkpoint kept for the next attempt"
                                   : "no checkpoint could be written: the next attempt starts "
                                     "from the last one on disk, if any");
        r->exit_status = GF_EXIT_TEMPFAIL;
        goto out_result;
    }
    if (rc) {
        snprintf(why, sizeof(why), "%s", gf_log_last_error()[0] ? gf_log_last_error()
                                                                 : gf_strerror(rc));
        r->exit_status = rc == GF_ENOENT   ? GF_EXIT_NOINPUT
                         : rc == GF_EEXIST ? EXIT_CANTCREAT
                                           : GF_EXIT_DATAERR;
        goto out_result;
    }
    if (ds->intermediates)
        inter_record(self, ds->intermediates);
    /* the other outputs first, the RTTM last: an RTTM there marks a
     * finished recording (`diarize --skip-existing`), and nothing is left
     * without its RTTM */
    char *jp = ds->json ? gf_rttm_beside(ds->rttm, ".json") : NULL;
    char *xp = ds->exclusive ? gf_rttm_beside(ds->rttm, ".exclusive.rttm") : NULL;
    char *sp = ds->speakers ? gf_rttm_beside(ds->rttm, ".speakers.npy") : NULL;
    if (jp) {
        char *js = gf_diar_result_json(&res, ds->audio, models, st);
        if (self->ck) {
            gf_jobckpt_stats n;
            gf_jobckpt_counts(self->ck, &n);
            js = json_with_checkpoint(js, &n);
        }
        rc = write_output(self, jp, js);
        free(js);
    }
    if (!rc && xp) {
        char *text = gf_rttm_format(res.exclusive);
        rc = write_output(self, xp, text);
        free(text);
    }
    if (!rc && sp) {
        bool replace = ds->overwrite || gf_djouts_ours(self->outs, sp);
        rc = gf_diar_result_save_speakers(&res, sp, replace);
        if (rc == 0)
            gf_djouts_add(self->outs, sp);
    }
    if (!rc) {
        char *text = gf_rttm_format(res.rttm);
        rc = write_output(self, ds->rttm, text);
        free(text);
    }
    if (rc) {
        const char *made[] = { jp, xp, sp };
        for (size_t i = 0; i < 3; i++)
            if (made[i] && gf_djouts_ours(self->outs, made[i]))
                unlink(made[i]);
    }
    free(jp);
    free(xp);
    free(sp);
    if (rc) {
        snprintf(why, sizeof(why), "%s%s", gf_log_last_error()[0] ? gf_log_last_error()
                                                                   : "cannot write the RTTM",
                 rc == GF_EEXIST ? " (it appeared after the submit; --overwrite replaces it)"
                                 : "");
        r->exit_status = EXIT_CANTCREAT;
        goto out_result;
    }
    dprintf(self->out_fd, "%s: %zu turns, %zu speakers, %.1f s of audio in %.1f s -> %s%s\n",
            ds->audio, res.rttm->n, res.n_speakers, res.duration, res.t_total, ds->rttm,
            res.weight_free ? " (weight-free mode)" : "");
    r->exit_status = 0;
    /* every end: the result filled in, the checkpoint ended, the pipeline given back */
out_result:
    if (why[0]) {
        dprintf(self->err_fd, "gpuflock: %s\n", why);
        /* the pipeline's own messages already name the file */
        r->message = strstr(why, ds->audio) ? gf_strdup(why) : gf_strfmt("%s: %s", ds->audio, why);
        if (strlen(r->message) > GF_PROTO_MAX_TEXT)
            r->message[GF_PROTO_MAX_TEXT] = 0;
    }
    /* done, failed or cancelled: the checkpoint goes; yielded: it stays
     * for the next attempt (and a dead worker never gets here) */
    if (self->ck)
        gf_jobckpt_end(self->ck, yielded);
    r->ended_ms = gf_wall_ms();
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        r->cpu_user_ms = tv_ms(ru.ru_utime);
        r->cpu_sys_ms = tv_ms(ru.ru_stime);
    }
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        r->maxrss_kb = ru.ru_maxrss;       /* the worker's peak: the pipeline lives there */
    add_int(r, "wall_ms", r->ended_ms - r->started_ms);
    if (e) {
        add_int(r, "diarize.weight_free", gf_diar_weight_free(e->diar));
        if (gf_diar_weight_free(e->diar))
            add_int(r, "diarize.trained_vad",
                    strcmp(gf_diar_vad(e->diar), GF_DIAR_VAD_SILERO) == 0);
        add_int(r, "diarize.pipeline_reused", cached);
    }
    if (yielded)
        add_int(r, "diarize.yielded", 1);
    if (res.rttm) {
        add_int(r, "diarize.windows", (int64_t)res.n_windows);
        add_int(r, "diarize.speakers", (int64_t)res.n_speakers);
        add_int(r, "diarize.turns", (int64_t)res.rttm->n);
        add_float(r, "diarize.duration_s", res.duration);
        add_float(r, "diarize.decode_s", res.t_decode);
        add_float(r, "diarize.segmentation_s", res.t_segmentation);
        add_float(r, "diarize.fbank_s", res.t_fbank);
        add_float(r, "diarize.embedding_s", res.t_embedding);
        add_float(r, "diarize.clustering_s", res.t_clustering);
        add_float(r, "diarize.total_s", res.t_total);
        /* the recipe's values this run used */
        add_float(r, "diarize.clustering.threshold", res.used.threshold);
        if (!res.weight_free) {
            add_float(r, "diarize.clustering.Fa", res.used.vbx.Fa);
            add_float(r, "diarize.clustering.Fb", res.used.vbx.Fb);
            add_int(r, "diarize.embedding_exclude_overlap", res.exclude_overlap);
        }
        add_float(r, "diarize.segmentation.min_duration_off", res.used.min_duration_off);
        add_float(r, "diarize.segmentation_step", res.used.chunks.step / res.used.chunks.duration);
    }
    if (self->ck) {
        gf_jobckpt_stats n;
        gf_jobckpt_counts(self->ck, &n);
        add_checkpoint_stats(r, &n);
        gf_jobckpt_destroy(&self->ck);   /* the pipeline is done with the state it resumed from */
    }
    add_devstats(r, st);
    gf_diar_result_free(&res);
    gf_devstats_destroy(&st);
    if (e)
        gf_diar_pool_give(self->pool, &e);
    pthread_mutex_lock(&self->mu);
    self->ended = true;
    pthread_mutex_unlock(&self->mu);
    wake(self);
    return NULL;
}

int gf_djob_start(const gf_msg *job, gf_diar_pool *pool, int out_fd, int err_fd, int wake_fd,
                  gf_djob **out, char *why, size_t len)
{
    gf_djob *self = gf_calloc(1, sizeof(*self));
    assert(job->op == GF_OP_JOB);
    gf_msg_copy(&self->job, job);
    self->pool = pool;
    self->out_fd = out_fd;
    self->err_fd = err_fd;
    self->wake_fd = wake_fd;
    self->ckpt_path = gf_ckpt_path(job->out_path);
    self->outs = gf_djouts_open(job->out_path);   /* as the worker: the spool is root's */
    self->joined = true;
    pthread_mutex_init(&self->mu, NULL);
    /* the pipeline's frames are on the heap; the default stack is plenty */
    int rc = pthread_create(&self->thread, NULL, job_main, self);
    if (rc != 0) {
        snprintf(why, len, "cannot start the diarize thread: %s", strerror(rc));
        gf_djob_destroy(&self);
        return GF_EIO;
    }
    self->joined = false;
    *out = self;
    return 0;
}

bool gf_djob_progress(gf_djob *self, int64_t *done, int64_t *total)
{
    pthread_mutex_lock(&self->mu);
    bool c = self->changed;
    *done = self->done;
    *total = self->total;
    self->changed = false;
    pthread_mutex_unlock(&self->mu);
    return c;
}

void gf_djob_cancel(gf_djob *self)
{
    pthread_mutex_lock(&self->mu);
    self->cancel = true;
    pthread_mutex_unlock(&self->mu);
}

void gf_djob_yield(gf_djob *self)
{
    pthread_mutex_lock(&self->mu);
    self->yield = true;
    pthread_mutex_unlock(&self->mu);
}

bool gf_djob_yielded(gf_djob *self)
{
    return flag(self, &self->yielded);
}

bool gf_djob_reap(gf_djob *self, gf_msg *result)
{
    if (self->joined)
        return false;
    pthread_mutex_lock(&self->mu);
    bool ended = self->ended;
    pthread_mutex_unlock(&self->mu);
    if (!ended)
        return false;
    pthread_join(self->thread, NULL);
    self->joined = true;
    close(self->out_fd);
    close(self->err_fd);
    self->out_fd = self->err_fd = -1;
    *result = self->result;
    memset(&self->result, 0, sizeof(self->result));
    return true;
}

void gf_djob_destroy(gf_djob **self_p)
{
    gf_djob *self = *self_p;
    if (!self)
        return;
    if (!self->joined) {
        gf_djob_cancel(self);
        pthread_join(self->thread, NULL);
    }
    gf_msg_clear(&self->result);
    gf_msg_clear(&self->job);
    if (self->out_fd >= 0)
        close(self->out_fd);
    if (self->err_fd >= 0)
        close(self->err_fd);
    free(self->ckpt_path);
    gf_djouts_close(&self->outs, false);   /* the broker removes it when the job has ended */
    pthread_mutex_destroy(&self->mu);
    free(self);
    *self_p = NULL;
}
