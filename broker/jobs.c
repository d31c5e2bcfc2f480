/* jobs.c — a job's life in the broker (see server_int.h): its start on a
 * worker, its end, a requeue when its worker is lost, the kills, yields and
 * recalls the broker asks for, the jobs' own timers (time limits, kills not
 * answered, jobs not reclaimed after a restart, yields due), and what
 * clients are told about jobs (a job's reply copy with its waiting reason,
 * jobs read back from the store, waiters answered once their jobs ended).
 * The scheduler (sched.c) decides; this carries the decisions out through
 * the turn's transaction and outbox. */
#include "broker/server_int.h"

#include "common/ckdir.h"
#include "common/error.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#define TIMER_GRAIN_MS 50

bool gf_jobs_ended(gf_job_state s)
{
    return s == GF_STATE_DONE || s == GF_STATE_FAILED || s == GF_STATE_CANCELLED;
}

void gf_jobs_set_reason(gf_job *j, const char *fmt, ...)
{
    free(j->reason);
    j->reason = NULL;
    if (!fmt)
        return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    j->reason = gf_utf8_escape_dup(text);
}

static void *remove_checkpoints_thread(void *arg)
{
    char *out_path = arg;
    gf_ckpt_remove_all(out_path);
    free(out_path);
    return NULL;
}

/* What a job's runs kept for the next one, removed once it has ended for
 * good: a diarize job's record of its outputs (common/djouts.h) at once,
 * and its checkpoints. Usually no checkpoint is there (its worker removed
 * them): a look costs two lstat calls. The folder is the job's user's and may hold as many files as
 * the user put there, so it goes on a thread of its own, never on the
 * turn; where no thread can start, here after all. */
static void remove_checkpoints(const char *out_path)
{
    if (!out_path || !out_path[0])
        return;
    /* a diarize job's record of its outputs: one file of root's spool */
    char *outs = gf_outs_path(out_path);
    if (unlink(outs) != 0 && errno != ENOENT)
        GF_WARN("%s: cannot remove: %s", outs, strerror(errno));
    free(outs);
    char *file = gf_ckpt_path(out_path), *dir = gf_ckdir_path(out_path);
    struct stat st;
    bool any = lstat(file, &st) == 0 || lstat(dir, &st) == 0;
    free(file);
    free(dir);
    if (!any)
        return;
    pthread_t t;
    pthread_attr_t attr;
    char *arg = gf_strdup(out_path);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, remove_checkpoints_thread, arg) != 0)
        remove_checkpoints_thread(arg);
    pthread_attr_destroy(&attr);
}

void gf_jobs_finish(gf_server *self, gf_sched_job *sj, gf_job_state state)
{
    sj->job.state = state;
    if (!sj->job.ended_ms)
        sj->job.ended_ms = gf_wall_ms();
    gf_server_persist(self, &sj->job);
    gf_history_job_ended(self, &sj->job);   /* counted; its notify command queued */
    /* a worker that ran it to the end removed these; not one that died, nor
     * a job cancelled while it waited with a checkpoint */
    remove_checkpoints(sj->job.out_path);
    if (self->n_retire == self->cap_retire) {
        self->cap_retire = self->cap_retire ? self->cap_retire * 2 : 64;
        self->retire = gf_realloc(self->retire, self->cap_retire * sizeof(uint64_t));
    }
    self->retire[self->n_retire++] = sj->job.id;
}

void gf_jobs_lost(gf_server *self, gf_sched_job *sj, const char *why)
{
    gf_job *j = &sj->job;
    bool cancel = sj->cancel_asked, timed_out = sj->timed_out;
    int card = sj->worker_card;
    gf_sched_release(self->sched, j->id, false);
    if (cancel) {
        gf_jobs_set_reason(j, "cancelled (%s)", why);
        gf_jobs_finish(self, sj, GF_STATE_CANCELLED);
    } else if (timed_out) {
        gf_jobs_set_reason(j, "time limit of %lld s reached (%s)", (long long)j->spec.time_limit_s,
                           why);
        gf_jobs_finish(self, sj, GF_STATE_FAILED);
    } else if (j->spec.no_requeue || j->attempts - j->yields >= self->cfg->max_attempts) {
        gf_jobs_set_reason(j, "%s (attempt %d of %d%s)", why, j->attempts - j->yields,
                           self->cfg->max_attempts, j->spec.no_requeue ? ", --no-requeue" : "");
        gf_jobs_finish(self, sj, GF_STATE_FAILED);
    } else {
        gf_jobs_set_reason(j, "requeued: %s (attempt %d of %d)", why, j->attempts - j->yields,
                           self->cfg->max_attempts);
        j->state = GF_STATE_PENDING;
        j->progress_done = j->progress_total = 0;
        gf_sched_unqueue(self->sched, j->id);
        gf_sched_release(self->sched, j->id, true);
        gf_server_persist(self, j);
        gf_metrics_requeued(self->metrics, card);
        GF_INFO("job %llu requeued: %s (card %d)", (unsigned long long)j->id, why, card);
        return;
    }
    GF_INFO("job %llu %s: %s (card %d)", (unsigned long long)j->id, gf_job_state_name(j->state),
            j->reason, card);
}

void gf_jobs_kill_mode(gf_server *self, gf_sched_job *sj, gf_kill_mode mode, const char *why)
{
    wk *w = gf_workers_by_device(self, sj->worker_card);
    if (!w || !w->ready)
        return;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_KILL;
    m.id = sj->job.id;
    m.attempt = sj->job.attempts;
    m.grace_s = mode == GF_KILL_STOP ? self->cfg->kill_grace_s
                                     : sj->job.spec.yield_grace_s > 0 ? sj->job.spec.yield_grace_s
                                                                      : self->cfg->kill_grace_s;
    m.kill_mode = mode;
    m.message = gf_strdup(why);
    /* a kill needs no record (a time limit must hold while the disk is
     * full), unless the job's assignment itself still waits for one */
    bool held = false;
    for (size_t i = 0; i < self->n_later && !held; i++)
        held = self->later[i].sock && self->later[i].msg.op == GF_OP_JOB &&
               self->later[i].msg.id == m.id;
    /* a yield may take a batch of the networks, then the checkpoint's write */
    uint64_t grace = (uint64_t)m.grace_s * 1000 + (mode == GF_KILL_STOP ? 0 : 60000);
    gf_server_post_as(self, self->workers, &w->peer, &m, held);   /* m is the outbox's now */
    if (mode == GF_KILL_RECALL)
        return;                       /* it has not started: nothing to wait for */
    if (!sj->kill_at_ms)
        sj->kill_at_ms = gf_now_ms() + grace +
                         (uint64_t)self->cfg->heartbeat_interval_ms *
                             (uint64_t)self->cfg->heartbeat_liveness;
}

void gf_jobs_kill(gf_server *self, gf_sched_job *sj, const char *why)
{
    gf_jobs_kill_mode(self, sj, GF_KILL_STOP, why);
}

void gf_jobs_ask_yield(gf_server *self, gf_sched_job *sj, bool requeue, const char *why)
{
    if (sj->yield_asked)
        return;
    sj->yield_asked = true;          /* asked once, whatever comes of it */
    if (sj->cancel_asked)
        return;                      /* it is being stopped anyway */
    sj->requeue_asked = requeue;
    snprintf(sj->yield_why, sizeof sj->yield_why, "%s", why);
    gf_jobs_kill_mode(self, sj, requeue ? GF_KILL_REQUEUE : GF_KILL_YIELD, why);
    GF_INFO("job %llu asked to %s: %s (card %d)", (unsigned long long)sj->job.id,
            requeue ? "requeue" : "yield", why, sj->worker_card);
}

void gf_jobs_back_to_queue(gf_server *self, gf_sched_job *sj, const char *why)
{
    gf_job *j = &sj->job;
    int card = sj->worker_card;
    j->yields++;
    j->state = GF_STATE_PENDING;
    j->progress_done = j->progress_total = 0;
    gf_jobs_set_reason(j, "%s", why);
    gf_sched_unqueue(self->sched, j->id);
    gf_sched_release(self->sched, j->id, true);
    gf_server_persist(self, j);
    gf_metrics_yielded(self->metrics, card);
    GF_INFO("job %llu back in the queue: %s (card %d)", (unsigned long long)j->id, why, card);
}

/* Returns false when the job failed instead (its environment is gone). */
static bool start_job(gf_server *self, const gf_sched_decision *d)
{
    gf_sched_job *sj = gf_sched_get(self->sched, d->id);
    gf_job *j = &sj->job;
    wk *w = gf_workers_by_device(self, d->cards[0]);
    gf_msg m;
    memset(&m, 0, sizeof(m));
    gf_job_spec_copy(&m.spec, &j->spec);
    if (sj->env_stored && gf_store_job_env(self->store, j->id, &m.spec) != 0) {
        /* logged by the store: a job cannot run without its environment */
        gf_msg_clear(&m);
        gf_sched_release(self->sched, j->id, false);
        gf_jobs_set_reason(j, "its environment could not be read back from the job store (%s)",
                           gf_store_error(self->store));
        gf_jobs_finish(self, sj, GF_STATE_FAILED);
        GF_WARN("job %llu failed: %s", (unsigned long long)j->id, j->reason);
        return false;
    }
    j->attempts++;
    j->started_ms = 0;
    j->ended_ms = 0;
    j->exit_status = -1;
    j->term_signal = 0;
    j->progress_done = j->progress_total = 0;
    gf_jobs_set_reason(j, NULL);
    free(j->out_path);
    free(j->err_path);
    j->out_path = gf_strfmt("%s/%llu.out", self->spool, (unsigned long long)j->id);
    j->err_path = gf_strfmt("%s/%llu.err", self->spool, (unsigned long long)j->id);
    gf_server_persist(self, j);

    m.op = GF_OP_JOB;
    m.id = j->id;
    m.attempt = j->attempts;
    m.uid = j->uid;
    m.gid = j->gid;
    gf_users_groups(self->users, j->uid, j->gid, &m.groups, &m.n_groups);
    m.out_path = gf_strdup(j->out_path);
    m.err_path = gf_strdup(j->err_path);
    m.locks = gf_calloc(d->n_cards + 1, sizeof(char *));
    m.cards = gf_calloc(d->n_cards, sizeof(int32_t));
    char visible[1024] = "";
    size_t vl = 0;
    for (size_t i = 0; i < d->n_cards; i++) {
        wk *cw = gf_workers_by_device(self, d->cards[i]);
        m.locks[i] = gf_strdup(cw->conf->lock);
        m.cards[i] = d->cards[i];
        if (cw->have_card && cw->card.kind == GF_DEVICE_CUDA)
            vl += (size_t)snprintf(visible + vl, sizeof(visible) - vl, "%s%s", i ? "," : "",
                                   cw->card.uuid);
        else
            vl += (size_t)snprintf(visible + vl, sizeof(visible) - vl, "%s%d", i ? "," : "",
                                   d->cards[i]);
        if (vl >= sizeof(visible))
            vl = sizeof(visible) - 1;
    }
    m.n_locks = d->n_cards;
    m.n_cards = d->n_cards;
    m.visible = gf_strdup(visible);
    gf_server_post(self, self->workers, &w->peer, &m);
    GF_DEBUG("job %llu attempt %d → card %d", (unsigned long long)j->id, j->attempts,
             d->cards[0]);
    return true;
}

void gf_jobs_schedule(gf_server *self)
{
    if (self->stopping || self->behind || self->turn_failed)
        return;
    gf_sched_decision d;
    bool changed = false;
    gf_sched_set_now(self->sched, gf_now_ms());
    while (gf_sched_next(self->sched, &d)) {
        gf_sched_job *sj = gf_sched_get(self->sched, d.id);
        if (d.action == GF_SCHED_START) {
            changed |= !start_job(self, &d);
        } else if (d.action == GF_SCHED_RECALL) {
            char why[96];
            snprintf(why, sizeof why, "card %d is free: handed back from card %d", d.cards[0],
                     d.from);
            gf_jobs_kill_mode(self, sj, GF_KILL_RECALL, why);
            gf_jobs_set_reason(&sj->job, "moving to card %d, free before card %d", d.cards[0],
                               d.from);
            GF_DEBUG("job %llu recalled from card %d for card %d", (unsigned long long)d.id,
                     d.from, d.cards[0]);
        } else {
            gf_jobs_set_reason(&sj->job, "%s", d.reason);
            gf_jobs_finish(self, sj, GF_STATE_FAILED);
            GF_INFO("job %llu failed: %s", (unsigned long long)d.id, d.reason);
            changed = true;
        }
    }
    /* then one exclusive job per busy card straight to its worker, to start
     * there the moment the card's holder ends */
    while (gf_sched_next_ahead(self->sched, &d)) {
        if (!start_job(self, &d)) {
            changed = true;
            continue;
        }
        gf_sched_job *sj = gf_sched_get(self->sched, d.id);
        gf_jobs_set_reason(&sj->job, "next on card %d, after job %llu", d.cards[0],
                           (unsigned long long)d.after);
    }
    if (changed)
        gf_jobs_notify_waiters(self);
}

void gf_jobs_for_reply(gf_server *self, const gf_sched_job *sj, gf_job *out, bool with_env)
{
    gf_job_copy(out, &sj->job);
    if (!with_env)
        gf_job_spec_drop_env(&out->spec);
    else if (sj->env_stored && gf_store_job_env(self->store, sj->job.id, &out->spec) != 0)
        GF_WARN("job %llu: its environment could not be read back from the store",
                (unsigned long long)sj->job.id);
    if (sj->job.state == GF_STATE_PENDING) {
        char why[160];
        gf_sched_reason(sj, why, sizeof(why));
        if (sj->job.held) {
            char *who = gf_users_name(self->users, sj->job.held_by, 0);
            snprintf(why, sizeof why, "held by %s", who);
            free(who);
        } else if (sj->wait == GF_WAIT_DRAINED) {
            wk *w = gf_workers_by_device(self, (int)sj->wait_arg);
            if (w && w->drain_reason && *w->drain_reason)
                snprintf(why, sizeof why, "card %lld drained: %.100s", (long long)sj->wait_arg,
                         w->drain_reason);
        }
        if (sj->job.reason && (strncmp(sj->job.reason, "requeued", 8) == 0 ||
                               strncmp(sj->job.reason, "yielded", 7) == 0 ||
                               strncmp(sj->job.reason, "moved", 5) == 0)) {
            char *r = gf_strfmt("%s; %s", why, sj->job.reason);
            free(out->reason);
            out->reason = r;
        } else {
            free(out->reason);
            out->reason = gf_strdup(why);
        }
    } else if (sj->job.state == GF_STATE_RUNNING && !sj->started && !out->reason) {
        out->reason = gf_strfmt("starting on card %d", sj->worker_card);
    }
}

void gf_jobs_stored_reason(gf_job *j)
{
    if (j->reason && !gf_utf8_valid(j->reason, strlen(j->reason))) {
        char *r = gf_utf8_escape_dup(j->reason);
        free(j->reason);
        j->reason = r;
    }
}

int gf_jobs_lookup(gf_server *self, uint64_t id, gf_job *out, bool with_env)
{
    gf_sched_job *sj = gf_sched_get(self->sched, id);
    if (sj) {
        gf_jobs_for_reply(self, sj, out, with_env);
        return 0;
    }
    gf_job_init(out);
    if (id == 0 || gf_store_get(self->store, id, out) != 0) {
        gf_job_clear(out);
        return GF_ENOENT;
    }
    gf_jobs_stored_reason(out);
    if (!with_env)
        gf_job_spec_drop_env(&out->spec);
    return 0;
}

bool gf_jobs_known(gf_server *self, uint64_t id)
{
    gf_job_state st;
    if (gf_sched_get(self->sched, id) || gf_sched_final(self->sched, id, &st))
        return true;
    gf_job j;
    if (gf_jobs_lookup(self, id, &j, false) != 0)
        return false;
    if (gf_jobs_ended(j.state))
        gf_sched_note_final(self->sched, id, j.state);
    gf_job_clear(&j);
    return true;
}

void gf_jobs_reply(gf_server *self, const gf_peer *peer, uint64_t *ids, size_t n, bool with_env)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = gf_calloc(n ? n : 1, sizeof(gf_job));
    bool held = false;   /* an end the store does not have yet is not told before it has it */
    for (size_t i = 0; i < n; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, ids[i]);
        held |= sj && sj->dirty;
        if (gf_jobs_lookup(self, ids[i], &m.jobs[m.n_jobs], with_env) == 0)
            m.n_jobs++;
    }
    gf_server_post_as(self, self->clients, peer, &m, held);
}

bool gf_jobs_all_ended(gf_server *self, waiter *w)
{
    for (; w->ended < w->n; w->ended++) {
        gf_sched_job *sj = gf_sched_get(self->sched, w->ids[w->ended]);
        if (sj && !gf_jobs_ended(sj->job.state))
            return false;
    }
    return true;
}

void gf_jobs_notify_waiters(gf_server *self)
{
    uint64_t now = gf_now_ms();
    waiter **pp = &self->waiters;
    while (*pp) {
        waiter *w = *pp;
        bool done = gf_jobs_all_ended(self, w);
        if (done || (w->deadline && now >= w->deadline)) {
            gf_jobs_reply(self, &w->peer, w->ids, w->n, false);
            *pp = w->next;
            free(w->ids);
            free(w);
        } else {
            pp = &w->next;
        }
    }
}

/* Exclusive jobs that have waited sched.yield_after_s for a card held by
 * yieldable jobs: those are asked to yield (docs/operations.md). */
static void yields_due(gf_server *self, uint64_t now)
{
    if (self->cfg->yield_after_s <= 0 || self->behind || self->stopping)
        return;
    uint64_t ids[GF_PROTO_MAX_CARDS * 16], w = 0;
    size_t n;
    while ((n = gf_sched_yield_due(self->sched, now, (uint64_t)self->cfg->yield_after_s * 1000,
                                   &w, ids, GF_ARRAY_LEN(ids))) > 0) {
        char why[96];
        snprintf(why, sizeof why, "yielded to job %llu", (unsigned long long)w);
        for (size_t i = 0; i < n; i++)
            gf_jobs_ask_yield(self, gf_sched_get(self->sched, ids[i]), false, why);
    }
}

void gf_jobs_timers(gf_server *self, uint64_t now)
{
    size_t pos = 0;
    gf_sched_job *sj;
    bool reclaim_over = self->reclaim_until && now >= self->reclaim_until;
    bool scan = now >= self->next_scan || reclaim_over;
    if (scan)
        self->next_scan = now + TIMER_GRAIN_MS;
    while (scan && (sj = gf_sched_iter(self->sched, &pos))) {
        if (sj->job.state != GF_STATE_RUNNING)
            continue;
        /* a yieldable job saves its state before its time limit, and runs
         * again (the Slurm way: --signal before the limit, then requeue) */
        uint64_t ahead_ms = (uint64_t)(sj->job.spec.yield_grace_s > 0
                                           ? sj->job.spec.yield_grace_s : 0) * 1000;
        if (sj->deadline_ms && !sj->timed_out && !sj->yield_asked && sj->started &&
            gf_sched_yieldable(sj) && now + ahead_ms >= sj->deadline_ms) {
            char why[96];
            snprintf(why, sizeof why, "time limit of %lld s: checkpointed, runs again",
                     (long long)sj->job.spec.time_limit_s);
            gf_jobs_ask_yield(self, sj, false, why);
        }
        if (sj->deadline_ms && now >= sj->deadline_ms && !sj->timed_out && !sj->yield_asked) {
            sj->timed_out = true;
            GF_INFO("job %llu: time limit of %lld s reached", (unsigned long long)sj->job.id,
                    (long long)sj->job.spec.time_limit_s);
            gf_jobs_kill(self, sj, "time limit reached");
        }
        if (sj->kill_at_ms && now >= sj->kill_at_ms) {
            /* its worker did not report the job's end after a kill: the
             * worker is broken; killing it kills the job (PDEATHSIG)
             * before the job can be requeued */
            wk *w = gf_workers_by_device(self, sj->worker_card);
            if (w && w->ready)
                gf_workers_dead(self, w, "did not stop a job after a kill", true);
            else
                gf_jobs_lost(self, sj, "did not stop after a kill");
        }
        else if (reclaim_over && sj->unclaimed)
            gf_jobs_lost(self, sj, "not reclaimed after a broker restart");
    }
    if (reclaim_over)
        self->reclaim_until = 0;
    if (scan)
        yields_due(self, now);
}
