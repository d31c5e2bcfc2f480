/* clients.c — the client requests (see server_int.h): submit, queue, show,
 * wait, cancel, logs, workers, and the operator's hands (hold, release,
 * requeue, drain, resume). The user is the kernel's word on the connection
 * (gf_peer, ipc:// only), never the message's; a change is refused plainly
 * while the store cannot commit (gf_server_refusal). */
#include "broker/server_int.h"

#include "common/error.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_CHUNK (256u << 10)      /* bytes of log per "log" reply */

/* Ended jobs `queue --all` lists (the most recent); `show ID` reaches any. */
#define GF_QUEUE_HISTORY 10000

/* A diarize job runs inside a worker, which has its own working directory:
 * every path must be absolute; the speaker constraints must make sense. */
static int check_diar(const gf_job_spec *sp, char *why, size_t len)
{
    const gf_diar_spec *d = sp->diar;
    if (!d) {
        snprintf(why, len, "a diarize job without its parameters (spec.diar)");
        return GF_EINVAL;
    }
    const char *paths[][2] = { { "audio", d->audio }, { "rttm", d->rttm },
                               { "intermediates", d->intermediates },
                               { "models", d->models } };
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
        if (paths[i][1] && paths[i][1][0] != '/') {
            snprintf(why, len, "diarize: %s path '%.200s' is not absolute", paths[i][0],
                     paths[i][1]);
            return GF_EINVAL;
        }
    if (d->num_speakers < 0 || d->min_speakers < 0 || d->max_speakers < 0 ||
        (d->num_speakers && (d->min_speakers || d->max_speakers)) ||
        (d->min_speakers && d->max_speakers && d->min_speakers > d->max_speakers)) {
        snprintf(why, len, "diarize: speaker constraints num %d, min %d, max %d do not fit",
                 d->num_speakers, d->min_speakers, d->max_speakers);
        return GF_EINVAL;
    }
    /* the recipe's knobs: 0 is its value; the decoder took finite numbers only */
    const struct { const char *name; double v, hi; } knobs[] = {
        { "threshold", d->threshold, 2.0 }, { "fa", d->fa, 1e3 }, { "fb", d->fb, 1e3 },
        { "min_duration_off", d->min_duration_off, 3600.0 },
        { "segmentation_step", d->segmentation_step, 1.0 },
    };
    if (d->segmentation_step > 0 && d->segmentation_step < 0.01) {   /* diar/pipeline.h */
        snprintf(why, len, "diarize: segmentation_step %g is below 0.01 (0.1 s between windows)",
                 d->segmentation_step);
        return GF_EINVAL;
    }
    for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
        if (knobs[i].v < 0 || knobs[i].v > knobs[i].hi) {
            snprintf(why, len, "diarize: %s %g is out of range [0, %g]", knobs[i].name, knobs[i].v,
                     knobs[i].hi);
            return GF_EINVAL;
        }
    if (sp->req == GF_REQ_GPUS && sp->gpus != 1) {
        snprintf(why, len, "diarize: a recording runs on one card, not %d", sp->gpus);
        return GF_EINVAL;
    }
    return 0;
}

static int check_spec(gf_server *self, const gf_job_spec *sp, char *why, size_t len)
{
    if (sp->argc < 1 || !sp->argv[0][0]) {
        snprintf(why, len, "empty command");
        return GF_EINVAL;
    }
    /* A command job runs in spec.cwd. Without one (or with a relative one)
     * it would run wherever its worker happens to be, for a local worker
     * the broker's own folder: never what the submitter meant. A diarize
     * job runs inside the worker, on the absolute paths of spec.diar. */
    if (sp->kind == GF_JOB_COMMAND && !sp->cwd) {
        snprintf(why, len, "key 'spec.cwd': missing: a command job needs the absolute path "
                 "of the directory it runs in");
        return GF_EINVAL;
    }
    if (sp->kind == GF_JOB_COMMAND && sp->cwd[0] != '/') {
        snprintf(why, len, "key 'spec.cwd': '%.200s' is not an absolute path", sp->cwd);
        return GF_EINVAL;
    }
    if (sp->kind == GF_JOB_DIARIZE) {
        int rc = check_diar(sp, why, len);
        if (rc)
            return rc;
    } else if (sp->diar) {
        snprintf(why, len, "a command job with diarize parameters");
        return GF_EINVAL;
    }
    if (sp->req == GF_REQ_GPU && !gf_workers_by_device(self, sp->gpu)) {
        snprintf(why, len, "no card %d is configured", sp->gpu);
        return GF_EINVAL;
    }
    if (sp->req == GF_REQ_GPUS && (sp->gpus < 1 || (size_t)sp->gpus > self->n_wks)) {
        snprintf(why, len, "--gpus %d: %zu cards are configured", sp->gpus, self->n_wks);
        return GF_EINVAL;
    }
    if (sp->time_limit_s < 0) {
        snprintf(why, len, "negative time limit");
        return GF_EINVAL;
    }
    /* --yieldable: a signal the job can catch, a grace of at most a day */
    if (sp->yield_sig < 0 || sp->yield_sig > 64 || sp->yield_sig == SIGKILL ||
        sp->yield_sig == SIGSTOP || (sp->yield_sig && sp->kind == GF_JOB_DIARIZE)) {
        snprintf(why, len, "--yieldable: signal %d is not one a %s job can be asked with",
                 sp->yield_sig, sp->kind == GF_JOB_DIARIZE ? "diarize" : "command");
        return GF_EINVAL;
    }
    if (sp->yield_grace_s < 0 || sp->yield_grace_s > 86400) {
        snprintf(why, len, "--yieldable: a grace of %d s is not within 0..86400",
                 sp->yield_grace_s);
        return GF_EINVAL;
    }
    if (sp->notify && !sp->notify[0]) {
        snprintf(why, len, "--notify: an empty command");
        return GF_EINVAL;
    }
    for (size_t i = 0; i < sp->n_after; i++)
        if (!gf_jobs_known(self, sp->after[i])) {
            snprintf(why, len, "--after: no job %llu", (unsigned long long)sp->after[i]);
            return GF_ENOENT;
        }
    return 0;
}

static void on_submit(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    if (self->stopping) {
        gf_server_post_error(self, self->clients, peer, GF_ESTATE, "gpuflockd is shutting down");
        return;
    }
    if (!peer->has_cred) {
        gf_server_post_error(self, self->clients, peer, GF_EPERM,
                             "submit needs a local ipc:// connection (the user is learnt from it)");
        return;
    }
    if (self->euid != 0 && peer->uid != self->euid) {
        gf_server_post_error(self, self->clients, peer, GF_EPERM,
                             "this gpuflockd runs as uid %u and cannot run jobs as uid %u",
                             (unsigned)self->euid, peer->uid);
        return;
    }
    char why[256];
    int rc = check_spec(self, &req->spec, why, sizeof(why));
    if (rc) {
        gf_server_post_error(self, self->clients, peer, rc, "submit: %s", why);
        return;
    }
    size_t n = req->n_commands ? req->n_commands : req->array ? req->array : 1;
    if (n > GF_PROTO_MAX_BATCH) {
        gf_server_post_error(self, self->clients, peer, GF_ETOOBIG, "submit: %zu jobs in one call",
                             n);
        return;
    }
    if (self->behind || self->turn_failed) {
        char text[768];
        rc = gf_server_refusal(self, "submit", text, sizeof(text));
        gf_server_post_error(self, self->clients, peer, rc, "%s", text);
        return;
    }
    char *user = gf_users_name(self->users, peer->uid, peer->gid);
    self->need_sync = true;
    gf_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.op = GF_OP_IDS;
    rep.ids = gf_calloc(n, sizeof(uint64_t));
    gf_server_tx(self);
    int64_t now = gf_wall_ms();
    for (size_t i = 0; i < n && self->in_tx && !self->turn_failed; i++) {
        gf_job j;
        gf_job_init(&j);
        gf_job_spec_copy(&j.spec, &req->spec);
        if (req->n_commands) {
            for (size_t a = 0; a < j.spec.argc; a++)
                free(j.spec.argv[a]);
            free(j.spec.argv);
            j.spec.argv = gf_calloc(4, sizeof(char *));
            j.spec.argv[0] = gf_strdup("/bin/sh");
            j.spec.argv[1] = gf_strdup("-c");
            j.spec.argv[2] = gf_strdup(req->commands[i]);
            j.spec.argc = 3;
        }
        if (req->n_commands || req->array)
            j.spec.array_index = (int64_t)i;
        j.state = GF_STATE_PENDING;
        j.uid = peer->uid;
        j.gid = peer->gid;
        j.user = gf_strdup(user);
        j.submitted_ms = now;
        if (j.spec.hold) {
            j.held = true;
            j.held_by = peer->uid;
            j.spec.hold = false;
        }
        if ((rc = gf_store_insert(self->store, &j)) != 0) {
            gf_server_write_failed(self, rc);   /* the turn fails: this reply becomes an error */
            gf_job_clear(&j);
            break;
        }
        rep.ids[rep.n_ids++] = j.id;
        /* the environment stays in the store (one row for all jobs that
         * share it) until the job goes to its worker */
        bool had_env = j.spec.n_env > 0;
        gf_job_spec_drop_env(&j.spec);
        gf_sched_job *sj = gf_sched_add(self->sched, &j);
        sj->env_stored = had_env;
        gf_server_push_id(&self->fresh, &self->n_fresh, &self->cap_fresh, sj->job.id);
    }
    free(user);
    gf_server_post(self, self->clients, peer, &rep);
}

static int by_job_id(const void *a, const void *b)
{
    uint64_t x = ((const gf_job *)a)->id, y = ((const gf_job *)b)->id;
    return x < y ? -1 : x > y;
}

/* The live jobs from memory; with --all also the GF_QUEUE_HISTORY most
 * recent ended ones, from the store. In id order. A selection (filter)
 * narrows both: the live jobs are asked one by one, the store answers its
 * part with a query (a user's 100,000 ended jobs cost the 10,000 it sends,
 * read through an index). Every user sees every job, as before: `queue`
 * is open to all (docs/operations.md, "Users and permissions"). */
static void on_queue(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_jobfilter f;
    char why[256];
    if (gf_jobfilter_init(&f, req->filter, why, sizeof why) != 0) {
        gf_server_post_error(self, self->clients, peer, GF_EINVAL, "queue: %s", why);
        return;
    }
    gf_job *old = NULL;
    size_t n_old = 0;
    if (req->all && gf_store_find_ended(self->store, &f, GF_QUEUE_HISTORY, &old, &n_old) != 0) {
        gf_server_post_error(self, self->clients, peer, GF_EIO,
                             "queue --all: the job store failed");
        return;
    }
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    size_t pos = 0, cap = 64;
    m.jobs = gf_calloc(cap, sizeof(gf_job));
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos))) {
        if (!req->all && gf_jobs_ended(sj->job.state))   /* ended this turn, not yet retired */
            continue;
        if (!gf_jobfilter_match(&f, &sj->job))
            continue;
        if (m.n_jobs == cap) {
            cap *= 2;
            m.jobs = gf_realloc(m.jobs, cap * sizeof(gf_job));
        }
        gf_jobs_for_reply(self, sj, &m.jobs[m.n_jobs++], false);
    }
    for (size_t i = 0; i < n_old; i++) {
        if (gf_sched_get(self->sched, old[i].id)) {   /* live: memory has it, newer */
            gf_job_clear(&old[i]);
            continue;
        }
        if (m.n_jobs == cap) {
            cap *= 2;
            m.jobs = gf_realloc(m.jobs, cap * sizeof(gf_job));
        }
        gf_jobs_stored_reason(&old[i]);
        m.jobs[m.n_jobs++] = old[i];
    }
    free(old);
    qsort(m.jobs, m.n_jobs, sizeof(gf_job), by_job_id);
    while (m.n_jobs > GF_PROTO_MAX_JOBS)
        gf_job_clear(&m.jobs[--m.n_jobs]);
    gf_server_post_free(self, self->clients, peer, &m);
}

static void on_show(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = gf_calloc(1, sizeof(gf_job));
    if (gf_jobs_lookup(self, req->id, &m.jobs[0], true) != 0) {
        free(m.jobs);
        gf_server_post_error(self, self->clients, peer, GF_ENOENT, "no job %llu",
                             (unsigned long long)req->id);
        return;
    }
    m.n_jobs = 1;
    /* the environment only to its owner (and root) */
    if (!peer->has_cred || (peer->uid != 0 && peer->uid != m.jobs[0].uid))
        gf_job_spec_drop_env(&m.jobs[0].spec);
    gf_server_post_free(self, self->clients, peer, &m);
}

static void on_wait(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    for (size_t i = 0; i < req->n_ids; i++)
        if (!gf_jobs_known(self, req->ids[i])) {
            gf_server_post_error(self, self->clients, peer, GF_ENOENT, "no job %llu",
                                 (unsigned long long)req->ids[i]);
            return;
        }
    waiter *w = gf_calloc(1, sizeof(*w));
    w->peer = *peer;
    w->ids = req->ids;
    w->n = req->n_ids;
    if (gf_jobs_all_ended(self, w)) {
        gf_jobs_reply(self, peer, req->ids, req->n_ids, false);
        free(w);
        return;
    }
    req->ids = NULL;
    req->n_ids = 0;
    w->deadline = req->timeout_ms > 0 ? gf_now_ms() + (uint64_t)req->timeout_ms : 0;
    w->next = self->waiters;
    self->waiters = w;
}

/* A live job the peer may act on (its owner, or root), or NULL with *code:
 * GF_ENOENT (no such job), GF_EPERM (not theirs), GF_ESTATE (ended and
 * retired: already over). */
static gf_sched_job *owned_job(gf_server *self, const gf_peer *peer, uint64_t id, int32_t *code)
{
    gf_sched_job *sj = gf_sched_get(self->sched, id);
    if (!sj) {
        gf_job j;
        if (gf_jobs_lookup(self, id, &j, false) != 0) {
            *code = GF_ENOENT;
            return NULL;
        }
        bool theirs = peer->has_cred && (peer->uid == 0 || peer->uid == j.uid);
        *code = theirs ? GF_ESTATE : GF_EPERM;
        gf_job_clear(&j);
        return NULL;
    }
    if (!peer->has_cred || (peer->uid != 0 && peer->uid != sj->job.uid)) {
        *code = GF_EPERM;
        return NULL;
    }
    *code = 0;
    return sj;
}

static bool refused(gf_server *self, const gf_peer *peer, const char *op);

/* Cancel one live job the peer may act on (who: their name): 0, or
 * GF_ESTATE when it is not pending or running. */
static int32_t cancel_one(gf_server *self, const gf_peer *peer, gf_sched_job *sj, bool checkpoint,
                          const char *who)
{
    gf_job *j = &sj->job;
    if (j->state == GF_STATE_PENDING) {
        gf_sched_unqueue(self->sched, j->id);
        gf_jobs_set_reason(j, "cancelled by %s", who);
        gf_jobs_finish(self, sj, GF_STATE_CANCELLED);
    } else if (j->state == GF_STATE_RUNNING && checkpoint && gf_sched_yieldable(sj) &&
               sj->started && !sj->cancel_asked) {
        /* stop now, keep the progress: it checkpoints and waits, held */
        char why[96];
        snprintf(why, sizeof why, "held by %s (cancel --checkpoint)", who);
        sj->hold_after = true;
        sj->hold_by = peer->uid;
        gf_jobs_ask_yield(self, sj, false, why);
    } else if (j->state == GF_STATE_RUNNING) {
        if (!sj->cancel_asked) {
            sj->cancel_asked = true;
            gf_jobs_set_reason(j, "cancelled by %s", who);
            gf_jobs_kill(self, sj, "cancelled");
            if (sj->worker_card < 0 || !gf_workers_by_device(self, sj->worker_card)->ready)
                gf_jobs_lost(self, sj, "cancelled while its worker was away");
        }
    } else {
        return GF_ESTATE;
    }
    return 0;
}

static int by_id_value(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* cancel by a selection (scancel's --user, --name, --state): the live jobs
 * it takes that are the peer's (root: anyone's). The reply names them
 * (ids) beside their codes. Only root may name other users. */
static void cancel_selected(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_jobfilter f;
    char why[256];
    if (req->n_ids) {
        gf_server_post_error(self, self->clients, peer, GF_EINVAL,
                             "cancel: job ids or a selection, not both");
        return;
    }
    if (gf_jobfilter_init(&f, req->filter, why, sizeof why) != 0) {
        gf_server_post_error(self, self->clients, peer, GF_EINVAL, "cancel: %s", why);
        return;
    }
    bool root = peer->has_cred && peer->uid == 0;
    for (size_t i = 0; i < req->filter->n_users && !root; i++)
        if (!peer->has_cred || req->filter->users[i] != peer->uid) {
            gf_server_post_error(self, self->clients, peer, GF_EPERM,
                                 "cancel: only root may cancel another user's jobs");
            return;
        }
    if (!peer->has_cred) {
        gf_server_post_error(self, self->clients, peer, GF_EPERM,
                             "cancel needs a local ipc:// connection (the user is learnt from it)");
        return;
    }
    if (refused(self, peer, "cancel"))
        return;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_CODES;
    size_t pos = 0, cap = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        if (!gf_jobs_ended(sj->job.state) && (root || sj->job.uid == peer->uid) &&
            gf_jobfilter_match(&f, &sj->job))
            gf_server_push_id(&m.ids, &m.n_ids, &cap, sj->job.id);
    if (m.n_ids)
        qsort(m.ids, m.n_ids, sizeof(uint64_t), by_id_value);
    m.codes = gf_calloc(m.n_ids ? m.n_ids : 1, sizeof(int32_t));
    m.n_codes = m.n_ids;
    self->need_sync = true;
    char *who = gf_users_name(self->users, peer->uid, peer->gid);
    for (size_t i = 0; i < m.n_ids; i++)
        m.codes[i] = cancel_one(self, peer, gf_sched_get(self->sched, m.ids[i]), req->checkpoint,
                                who);
    free(who);
    gf_server_post(self, self->clients, peer, &m);
    gf_jobs_notify_waiters(self);
}

static void on_cancel(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    if (req->filter) {
        cancel_selected(self, peer, req);
        return;
    }
    if (refused(self, peer, "cancel"))
        return;   /* a cancel is acknowledged once recorded, and cannot be now; the
                   * job's owner can still signal its processes */
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_CODES;
    m.codes = gf_calloc(req->n_ids ? req->n_ids : 1, sizeof(int32_t));
    m.n_codes = req->n_ids;
    self->need_sync = true;
    char *who = peer->has_cred ? gf_users_name(self->users, peer->uid, peer->gid) : NULL;
    for (size_t i = 0; i < req->n_ids; i++) {
        gf_sched_job *sj = owned_job(self, peer, req->ids[i], &m.codes[i]);
        if (sj)
            m.codes[i] = cancel_one(self, peer, sj, req->checkpoint, who);
    }
    free(who);
    gf_server_post(self, self->clients, peer, &m);
    gf_jobs_notify_waiters(self);
}

/* A change to some jobs or cards cannot be recorded now: refused. */
static bool refused(gf_server *self, const gf_peer *peer, const char *op)
{
    if (!self->behind && !self->turn_failed)
        return false;
    char text[768];
    int rc = gf_server_refusal(self, op, text, sizeof(text));
    gf_server_post_error(self, self->clients, peer, rc, "%s", text);
    return true;
}

/* hold, release, requeue: one code per id, as cancel. Only a job's owner
 * or root. */
static void on_job_verb(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    const char *op = gf_proto_op_name(req->op);
    if (refused(self, peer, op))
        return;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_CODES;
    m.codes = gf_calloc(req->n_ids ? req->n_ids : 1, sizeof(int32_t));
    m.n_codes = req->n_ids;
    self->need_sync = true;
    char *who = peer->has_cred ? gf_users_name(self->users, peer->uid, peer->gid) : NULL;
    for (size_t i = 0; i < req->n_ids; i++) {
        gf_sched_job *sj = owned_job(self, peer, req->ids[i], &m.codes[i]);
        if (!sj)
            continue;
        gf_job *j = &sj->job;
        int rc = 0;
        if (req->op == GF_OP_HOLD && j->state == GF_STATE_RUNNING && !sj->started &&
            !sj->cancel_asked && !j->held) {
            /* waiting ahead on a busy card's worker: taken back, then held */
            j->held = true;
            j->held_by = peer->uid;
            snprintf(sj->yield_why, sizeof sj->yield_why, "held by %s", who);
            gf_jobs_kill_mode(self, sj, GF_KILL_RECALL, "held");
            gf_server_persist(self, j);
        } else if (req->op == GF_OP_HOLD || req->op == GF_OP_RELEASE) {
            rc = gf_sched_set_held(self->sched, j->id, req->op == GF_OP_HOLD, peer->uid);
            if (!rc) {
                gf_jobs_set_reason(j, req->op == GF_OP_HOLD ? "held by %s" : "released by %s", who);
                gf_server_persist(self, j);
            }
        } else if (j->state != GF_STATE_RUNNING || sj->cancel_asked) {
            rc = GF_ESTATE;
        } else if (!sj->yield_asked) {
            char why[96];
            snprintf(why, sizeof why, "requeued by %s", who);
            gf_jobs_ask_yield(self, sj, true, why);
        }
        m.codes[i] = rc;
    }
    free(who);
    gf_server_post(self, self->clients, peer, &m);
}

/* A drained card's running yieldable jobs yield; the others finish. */
static size_t drain_running(gf_server *self, wk *w)
{
    size_t pos = 0, n = 0;
    gf_sched_job *sj;
    char why[160];
    snprintf(why, sizeof why, "card %d drained%s%.100s", w->device,
             w->drain_reason && *w->drain_reason ? ": " : "",
             w->drain_reason ? w->drain_reason : "");
    while ((sj = gf_sched_iter(self->sched, &pos))) {
        bool here = false;
        for (size_t c = 0; c < sj->job.n_cards; c++)
            here |= sj->job.cards[c] == w->device;
        if (sj->job.state != GF_STATE_RUNNING || !here)
            continue;
        n++;
        if (gf_sched_yieldable(sj) && sj->started)
            gf_jobs_ask_yield(self, sj, false, why);
    }
    return n;
}

/* drain CARD [reason] / resume CARD: root only; kept in the store. */
static void on_card_verb(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    const char *op = gf_proto_op_name(req->op);
    if (!peer->has_cred || peer->uid != 0) {
        gf_server_post_error(self, self->clients, peer, GF_EPERM, "%s: only root may %s a card", op,
                             op);
        return;
    }
    wk *w = gf_workers_by_device(self, req->device);
    if (!w) {
        gf_server_post_error(self, self->clients, peer, GF_ENOENT, "%s: no card %d is configured",
                             op, req->device);
        return;
    }
    if (req->message && strlen(req->message) > GF_PROTO_MAX_NAME) {
        gf_server_post_error(self, self->clients, peer, GF_EINVAL,
                             "%s: the reason is longer than %u bytes", op, GF_PROTO_MAX_NAME);
        return;
    }
    if (refused(self, peer, op))
        return;
    self->need_sync = true;
    bool drain = req->op == GF_OP_DRAIN;
    free(w->drain_reason);
    w->drain_reason = drain ? gf_utf8_escape_dup(req->message ? req->message : "") : NULL;
    gf_sched_card_drain(self->sched, w->device, drain);
    gf_server_persist_drains(self);
    size_t running = drain ? drain_running(self, w) : 0;
    GF_INFO("card %d %s%s%s", w->device, drain ? "drained" : "back in service",
            drain && *w->drain_reason ? ": " : "", drain ? w->drain_reason : "");
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_CODES;
    m.codes = gf_calloc(1, sizeof(int32_t));
    m.n_codes = 1;
    if (!drain)
        m.message = gf_strfmt("card %d: in service", w->device);
    else if (running)
        m.message = gf_strfmt("card %d: draining (%zu job%s running: yieldable ones yield, the "
                              "others finish)", w->device, running, running == 1 ? "" : "s");
    else
        m.message = gf_strfmt("card %d: drained", w->device);
    gf_server_post(self, self->clients, peer, &m);
}

static void on_logs(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_job j;
    if (gf_jobs_lookup(self, req->id, &j, false) != 0) {
        gf_server_post_error(self, self->clients, peer, GF_ENOENT, "no job %llu",
                             (unsigned long long)req->id);
        return;
    }
    if (!peer->has_cred || (peer->uid != 0 && peer->uid != j.uid)) {
        gf_server_post_error(self, self->clients, peer, GF_EPERM, "job %llu is not yours",
                             (unsigned long long)req->id);
        gf_job_clear(&j);
        return;
    }
    bool over = gf_jobs_ended(j.state);
    const char *path = req->stream == GF_STREAM_ERR ? j.err_path : j.out_path;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_LOG;
    m.offset = req->offset;
    m.data = gf_malloc(LOG_CHUNK);
    /* eof: the job has ended and this reply reaches the end of its file as
     * it is now, so a reader of an ended job stops after the reply that
     * brought the last bytes, not one empty read later. No file: nothing
     * to read. */
    bool at_end = true;
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        ssize_t got = pread(fd, m.data, LOG_CHUNK, (off_t)req->offset);
        if (got > 0) {
            m.data_len = (size_t)got;
            m.offset += (uint64_t)got;
        }
        struct stat st;
        at_end = got <= 0 || (fstat(fd, &st) == 0 && (uint64_t)st.st_size <= m.offset);
        close(fd);
    }
    m.eof = over && at_end;
    gf_server_post_free(self, self->clients, peer, &m);
    gf_job_clear(&j);
}

static void on_workers(gf_server *self, const gf_peer *peer)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_WORKERS_LIST;
    m.workers = gf_calloc(self->n_wks ? self->n_wks : 1, sizeof(gf_worker_info));
    m.n_workers = self->n_wks;
    int64_t wall = gf_wall_ms();
    uint64_t now = gf_now_ms();
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        gf_worker_info *wi = &m.workers[i];
        wi->device = w->device;
        if (w->have_card) {
            wi->card = w->card;
        } else {
            wi->card.index = w->device;
            wi->card.kind = w->conf->kind;
            snprintf(wi->card.name, sizeof(wi->card.name), "unknown");
            snprintf(wi->card.uuid, sizeof(wi->card.uuid), "unknown");
        }
        int ex, sh;
        gf_sched_card_load(self->sched, w->device, &ex, &sh);
        wi->state = gf_strdup(!w->ready ? (w->child > 0 ? "starting" : "offline")
                                        : ex ? "busy (exclusive)" : sh ? "busy (shared)" : "idle");
        wi->pid = w->ready ? w->pid : (int32_t)w->child;
        wi->plan = gf_strdup(w->plan);
        wi->supervision = gf_strdup(w->supervision);
        if (w->drain_reason) {
            wi->drain = gf_strdup(ex || sh ? "draining" : "drained");
            wi->drain_reason = gf_strdup(w->drain_reason);
        }
        if (w->n_ckpt) {
            wi->stats = gf_calloc(w->n_ckpt, sizeof *wi->stats);
            for (size_t k = 0; k < w->n_ckpt; k++) {
                wi->stats[k] = w->ckpt[k];
                wi->stats[k].key = gf_strdup(w->ckpt[k].key);
            }
            wi->n_stats = w->n_ckpt;
        }
        wi->last_seen_ms = w->last_seen ? wall - (int64_t)(now - w->last_seen) : 0;
        size_t pos = 0, cap = 0;
        gf_sched_job *sj;
        while ((sj = gf_sched_iter(self->sched, &pos))) {
            if (sj->job.state != GF_STATE_RUNNING)
                continue;
            bool here = false;
            for (size_t c = 0; c < sj->job.n_cards; c++)
                here |= sj->job.cards[c] == w->device;
            if (!here || sj->worker_card < 0)
                continue;
            if (wi->n_jobs == cap) {
                cap = cap ? cap * 2 : 8;
                wi->jobs = gf_realloc(wi->jobs, cap * sizeof(uint64_t));
            }
            wi->jobs[wi->n_jobs++] = sj->job.id;
        }
    }
    gf_server_post_free(self, self->clients, peer, &m);
}

void gf_clients_on_message(gf_server *self)
{
    for (int k = 0; k < DRAIN_MAX; k++) {
        gf_peer peer;
        gf_msg m;
        char err[256];
        int rc = gf_router_recv(self->clients, &peer, &m, err, sizeof(err));
        if (rc == GF_ETIMEDOUT || rc == GF_EINTR || rc == GF_EIO)
            return;
        if (rc) {
            GF_DEBUG("client message refused: %s", err);
            if (peer.id_len)
                gf_server_post_error(self, self->clients, &peer, rc, "%s", err);
            continue;
        }
        switch (m.op) {
        case GF_OP_SUBMIT: on_submit(self, &peer, &m); break;
        case GF_OP_QUEUE: on_queue(self, &peer, &m); break;
        case GF_OP_SHOW: on_show(self, &peer, &m); break;
        case GF_OP_WAIT: on_wait(self, &peer, &m); break;
        case GF_OP_CANCEL: on_cancel(self, &peer, &m); break;
        case GF_OP_LOGS: on_logs(self, &peer, &m); break;
        case GF_OP_WORKERS: on_workers(self, &peer); break;
        case GF_OP_HOLD: case GF_OP_RELEASE: case GF_OP_REQUEUE:
            on_job_verb(self, &peer, &m);
            break;
        case GF_OP_DRAIN: case GF_OP_RESUME: on_card_verb(self, &peer, &m); break;
        case GF_OP_PURGE: gf_history_on_purge(self, &peer, &m); break;
        default:
            gf_server_post_error(self, self->clients, &peer, GF_EPROTO,
                                 "operation '%s' is not a client request", gf_proto_op_name(m.op));
        }
        gf_msg_clear(&m);
    }
}
