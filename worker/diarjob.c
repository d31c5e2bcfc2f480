/* diarjob.c — diarize jobs on worker threads (see diarjob.h).
 *
 * The event loop (worker/agent.c) owns the job through its runner; the
 * thread owns the pipeline while it runs. They share only the progress
 * counters, the cancel flag and the "ended" flag, under one mutex. */
#include "worker/diarjob.h"

#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "worker/boundary.h"
#include "worker/diar_gpu.h"
#include "worker/diar/pipeline.h"
#include "worker/diar/rttm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAKE_EVERY_MS 100   /* at most ten PROGRESS messages a second */
#define EXIT_CANTCREAT 73   /* sysexits.h: an output file cannot be written */

/* ------------------------------------------------------------------ pool */

typedef struct entry {
    char *models;          /* key: models directory */
    int batch;             /* key: windows per network call */
    gf_diar *diar;         /* the loaded pipeline */
    bool busy;             /* a job runs it now */
    struct entry *next;
} entry;

struct gf_diar_pool {
    pthread_mutex_t mu;    /* guards list */
    entry *list;
    char *models_dir;      /* default models directory (config) */
    int batch;             /* worker.batch_size */
    int threads;           /* worker.cpu_threads */
    gf_math math;          /* worker.math: fp32 or tf32 on a CUDA card */
    bool overlap;          /* worker.overlap */
    gf_card_identity card; /* the worker's card: CUDA networks when it is one */
};

gf_diar_pool *gf_diar_pool_new(const gf_config *cfg, const gf_card_identity *card)
{
    gf_diar_pool *self = gf_calloc(1, sizeof(*self));
    pthread_mutex_init(&self->mu, NULL);
    self->models_dir = gf_strdup(cfg->models_dir);
    self->batch = cfg->batch_size > 0 ? cfg->batch_size : 32;
    self->threads = cfg->cpu_threads;
    self->math = cfg->tf32 ? GF_MATH_TF32 : GF_MATH_FP32;
    self->overlap = cfg->overlap;
    self->card = *card;
    return self;
}

void gf_diar_pool_destroy(gf_diar_pool **self_p)
{
    gf_diar_pool *self = *self_p;
    if (!self)
        return;
    while (self->list) {
        entry *e = self->list;
        self->list = e->next;
        gf_diar_destroy(&e->diar);
        free(e->models);
        free(e);
    }
    pthread_mutex_destroy(&self->mu);
    free(self->models_dir);
    free(self);
    *self_p = NULL;
}

/* A pipeline for models (NULL: the configured directory), loaded now or
 * taken from the pool; *cached says which. NULL after logging when the
 * model files are unusable. */
static gf_diar *pool_take(gf_diar_pool *self, const char *models, bool *cached)
{
    if (!models)
        models = self->models_dir;
    pthread_mutex_lock(&self->mu);
    for (entry *e = self->list; e; e = e->next)
        if (!e->busy && e->batch == self->batch && strcmp(e->models, models) == 0) {
            e->busy = true;
            pthread_mutex_unlock(&self->mu);
            *cached = true;
            return e->diar;
        }
    pthread_mutex_unlock(&self->mu);
    *cached = false;
    bool weight_free = false;
    gf_diar *d = gf_diar_new(models, self->batch, self->threads, &weight_free);
    if (!d)
        return NULL;
    if (!weight_free && self->card.kind == GF_DEVICE_CUDA) {
        gf_diar_backend be;
        if (gf_diar_backend_gpu(self->card.index, models, self->batch, self->math, self->overlap,
                                &be) == 0)
            gf_diar_set_backend(d, &be);
        else
            GF_WARN("card %d: networks stay on the CPU (the CUDA backend could not start)",
                    self->card.index);
    }
    entry *e = gf_calloc(1, sizeof(*e));
    e->models = gf_strdup(models);
    e->batch = self->batch;
    e->diar = d;
    e->busy = true;
    pthread_mutex_lock(&self->mu);
    e->next = self->list;
    self->list = e;
    pthread_mutex_unlock(&self->mu);
    return d;
}

static void pool_give(gf_diar_pool *self, gf_diar *d)
{
    pthread_mutex_lock(&self->mu);
    for (entry *e = self->list; e; e = e->next)
        if (e->diar == d)
            e->busy = false;
    pthread_mutex_unlock(&self->mu);
}

/* ------------------------------------------------------------------- job */

struct gf_djob {
    gf_msg job;              /* id, attempt, spec (with diar), uid, gid, groups */
    gf_diar_pool *pool;      /* borrowed from the agent */
    int out_fd, err_fd;      /* spool files, owned */
    int wake_fd;             /* the agent's eventfd, -1: none */
    pthread_t thread;
    bool joined;             /* thread joined (or never started) */
    pthread_mutex_t mu;      /* guards the fields below */
    int64_t done, total;     /* windows */
    bool changed;            /* progress not yet taken by gf_djob_progress */
    bool cancel;             /* stop at the next window */
    bool ended;              /* the thread is finishing: reap may join */
    uint64_t last_wake;      /* monotonic ms of the last progress wake-up */
    /* written by the thread before `ended`, read after the join */
    gf_msg result;
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

/* NAME.json beside NAME.rttm. */
static char *json_path(const char *rttm)
{
    size_t n = strlen(rttm);
    if (n > 5 && strcmp(rttm + n - 5, ".rttm") == 0)
        return gf_strfmt("%.*s.json", (int)(n - 5), rttm);
    return gf_strfmt("%s.json", rttm);
}

static int64_t tv_ms(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
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
    gf_diar *d = NULL;
    gf_devstats *st = gf_devstats_new();
    gf_diar_result res;
    memset(&res, 0, sizeof(res));
    bool cached = false;
    const char *models = ds->models ? ds->models : self->pool->models_dir;
    gf_log_clear_last_error();
    dprintf(self->err_fd, "gpuflock: diarize %s -> %s\n", ds->audio, ds->rttm);
    int rc = become_submitter(&self->job, why, sizeof(why));
    if (rc)
        goto out;
    d = pool_take(self->pool, ds->models, &cached);
    if (!d) {
        snprintf(why, sizeof(why), "model files in %s unusable: %s", models,
                 gf_log_last_error()[0] ? gf_log_last_error() : "see the worker's log");
        r->exit_status = GF_EXIT_CONFIG;
        goto out;
    }
    bool wf = gf_diar_weight_free(d);
    if (wf) {
        dprintf(self->err_fd, "gpuflock: weight-free mode: no model files in %s (energy voice "
                              "activity and filterbank statistics; expect a much higher DER)\n",
                models);
        GF_INFO("job %llu: weight-free mode (no model files in %s)",
                (unsigned long long)self->job.id, models);
    }
    gf_diar_run_opts o = gf_diar_run_defaults();
    o.cluster.num_speakers = ds->num_speakers;
    o.cluster.min_speakers = ds->min_speakers;
    o.cluster.max_speakers = ds->max_speakers;
    o.save_dir = ds->intermediates;
    o.progress = on_progress;
    o.progress_user = self;
    o.cancel = is_cancelled;
    o.cancel_user = self;
    rc = gf_diar_run(d, ds->audio, &o, st, &res);
    if (rc == GF_EINTR && is_cancelled(self)) {
        pthread_mutex_lock(&self->mu);
        snprintf(why, sizeof(why), "cancelled after %lld of %lld windows",
                 (long long)self->done, (long long)self->total);
        pthread_mutex_unlock(&self->mu);
        goto out;
    }
    if (rc) {
        snprintf(why, sizeof(why), "%s", gf_log_last_error()[0] ? gf_log_last_error()
                                                                 : gf_strerror(rc));
        r->exit_status = rc == GF_ENOENT ? GF_EXIT_NOINPUT : GF_EXIT_DATAERR;
        goto out;
    }
    char *text = gf_rttm_format(res.rttm);
    rc = gf_rttm_write_text(ds->rttm, text);
    free(text);
    if (!rc && ds->json) {
        char *jp = json_path(ds->rttm);
        char *js = gf_diar_result_json(&res, models, st);
        rc = gf_rttm_write_text(jp, js);
        free(js);
        free(jp);
    }
    if (rc) {
        snprintf(why, sizeof(why), "%s", gf_log_last_error()[0] ? gf_log_last_error()
                                                                 : "cannot write the RTTM");
        r->exit_status = EXIT_CANTCREAT;
        goto out;
    }
    dprintf(self->out_fd, "%s: %zu turns, %zu speakers, %.1f s of audio in %.1f s -> %s%s\n",
            ds->audio, res.rttm->n, res.n_speakers, res.duration, res.t_total, ds->rttm,
            res.weight_free ? " (weight-free mode)" : "");
    r->exit_status = 0;
out:
    if (why[0]) {
        dprintf(self->err_fd, "gpuflock: %s\n", why);
        /* the pipeline's own messages already name the file */
        r->message = strstr(why, ds->audio) ? gf_strdup(why) : gf_strfmt("%s: %s", ds->audio, why);
        if (strlen(r->message) > GF_PROTO_MAX_TEXT)
            r->message[GF_PROTO_MAX_TEXT] = 0;
    }
    r->ended_ms = gf_wall_ms();
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        r->cpu_user_ms = tv_ms(ru.ru_utime);
        r->cpu_sys_ms = tv_ms(ru.ru_stime);
    }
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        r->maxrss_kb = ru.ru_maxrss;       /* the worker's peak: the pipeline lives there */
    add_int(r, "wall_ms", r->ended_ms - r->started_ms);
    if (d) {
        add_int(r, "diarize.weight_free", gf_diar_weight_free(d));
        add_int(r, "diarize.pipeline_reused", cached);
    }
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
    }
    add_devstats(r, st);
    gf_diar_result_free(&res);
    gf_devstats_destroy(&st);
    if (d)
        pool_give(self->pool, d);
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
    self->job.op = job->op;
    self->job.id = job->id;
    self->job.attempt = job->attempt;
    gf_job_spec_copy(&self->job.spec, &job->spec);
    self->job.uid = job->uid;
    self->job.gid = job->gid;
    self->job.groups = gf_calloc(job->n_groups ? job->n_groups : 1, sizeof(uint32_t));
    if (job->n_groups)
        memcpy(self->job.groups, job->groups, job->n_groups * sizeof(uint32_t));
    self->job.n_groups = job->n_groups;
    self->pool = pool;
    self->out_fd = out_fd;
    self->err_fd = err_fd;
    self->wake_fd = wake_fd;
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
    pthread_mutex_destroy(&self->mu);
    free(self);
    *self_p = NULL;
}
