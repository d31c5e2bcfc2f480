/* workers.c — the worker messages and their liveness (see server_int.h):
 * READY (register, reclaim what it still runs), progress and results of
 * the attempt that is running, heartbeats both ways (Paranoid Pirate: a
 * worker silent for `liveness` intervals is dead, and its jobs go back to
 * the queue), and a worker the broker does not know asked to register.
 * Only root or the broker's own user may act as a worker. */
#include "broker/server_int.h"

#include "common/error.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

wk *gf_workers_by_device(gf_server *self, int device)
{
    for (size_t i = 0; i < self->n_wks; i++)
        if (self->wks[i].device == device)
            return &self->wks[i];
    return NULL;
}

static wk *wk_by_peer(gf_server *self, const gf_peer *p)
{
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        if (w->ready && w->peer.id_len == p->id_len && memcmp(w->peer.id, p->id, p->id_len) == 0)
            return w;
    }
    return NULL;
}

void gf_workers_dead(gf_server *self, wk *w, const char *why, bool kill_it)
{
    if (w->ready)
        GF_WARN("worker of card %d: %s", w->device, why);
    w->ready = false;
    gf_sched_card_online(self->sched, w->device, false);
    size_t pos = 0;
    gf_sched_job *sj;
    char text[128];
    snprintf(text, sizeof(text), "worker of card %d %s", w->device, why);
    while ((sj = gf_sched_iter(self->sched, &pos)))
        if (sj->job.state == GF_STATE_RUNNING && sj->worker_card == w->device)
            gf_jobs_lost(self, sj, text);
    if (kill_it && w->child > 0)
        kill(w->child, SIGKILL);      /* reaped by gf_supervise() */
    else if (kill_it && w->pid > 0)
        kill(w->pid, SIGKILL);        /* an orphan from an earlier broker */
    gf_jobs_notify_waiters(self);
}

/* A fixed-size text field from a worker, escaped in place (common/utf8.h). */
static void escape_field(char *field, size_t size)
{
    size_t n = strnlen(field, size);
    if (gf_utf8_valid(field, n))
        return;
    char *copy = gf_malloc(n + 1);
    memcpy(copy, field, n);
    copy[n] = '\0';
    gf_utf8_escape(field, size, copy, n);
    free(copy);
}

static void on_ready(gf_server *self, const gf_peer *peer, gf_msg *m)
{
    wk *w = gf_workers_by_device(self, m->device);
    if (!w) {
        gf_server_post_error(self, self->workers, peer, GF_EINVAL, "no card %d is configured",
                             m->device);
        return;
    }
    wk *old = wk_by_peer(self, peer);
    if (old && old != w)
        gf_workers_dead(self, old, "re-registered for another card", false);
    if (w->ready) {
        /* The card's worker registers again (it reconnected with a new
         * socket, or it is a newer process): jobs it no longer reports are
         * lost; the ones it reports are reclaimed below. The pid file of
         * each worker keeps two worker processes off one card. */
        size_t pos = 0;
        gf_sched_job *sj;
        while ((sj = gf_sched_iter(self->sched, &pos))) {
            if (sj->job.state != GF_STATE_RUNNING || sj->worker_card != w->device)
                continue;
            bool reported = false;
            for (size_t i = 0; i < m->n_running; i++)
                reported |= m->running[i].id == sj->job.id;
            if (!reported)
                gf_jobs_lost(self, sj, "its worker re-registered without it");
        }
        w->ready = false;
    } else {
        /* first registration with this broker: jobs the store says run
         * here and that this worker does not report are not running */
        size_t pos = 0;
        gf_sched_job *sj;
        while ((sj = gf_sched_iter(self->sched, &pos))) {
            if (!sj->unclaimed || sj->worker_card != w->device)
                continue;
            bool reported = false;
            for (size_t i = 0; i < m->n_running; i++)
                reported |= m->running[i].id == sj->job.id;
            if (!reported)
                gf_jobs_lost(self, sj, "its worker came back without it after a broker restart");
        }
    }
    w->ready = true;
    w->peer = *peer;
    w->card = m->card;
    w->have_card = true;
    /* shown to clients (`gpuflock workers`): valid UTF-8 only */
    escape_field(w->card.name, sizeof(w->card.name));
    escape_field(w->card.uuid, sizeof(w->card.uuid));
    free(w->plan);
    w->plan = m->plan;
    m->plan = NULL;
    free(w->supervision);
    w->supervision = m->supervision;
    m->supervision = NULL;
    if (w->plan && !gf_utf8_valid(w->plan, strlen(w->plan))) {
        GF_WARN("worker of card %d: its route plan is not UTF-8 text: not kept", w->device);
        free(w->plan);
        w->plan = NULL;
    }
    if (w->supervision && !gf_utf8_valid(w->supervision, strlen(w->supervision))) {
        char *text = gf_utf8_escape_dup(w->supervision);
        free(w->supervision);
        w->supervision = text;
    }
    w->pid = m->pid;
    w->last_seen = gf_now_ms();
    w->backoff_ms = 0;
    gf_sched_card_online(self->sched, w->device, true);
    char desc[256];
    gf_card_describe(&w->card, desc, sizeof(desc));
    GF_INFO("worker of card %d ready (pid %d, %s, %zu running)", w->device, m->pid, desc,
            m->n_running);
    /* Jobs it still runs from before (a broker restart or a reconnect). */
    for (size_t i = 0; i < m->n_running; i++) {
        gf_running *r = &m->running[i];
        gf_sched_job *sj = gf_sched_get(self->sched, r->id);
        bool mine = sj && sj->job.attempts == r->attempt &&
                    (sj->job.state == GF_STATE_RUNNING || sj->job.state == GF_STATE_PENDING) &&
                    sj->job.n_cards > 0 && sj->job.cards[0] == w->device;
        if (mine && sj->job.state == GF_STATE_RUNNING && sj->worker_card == w->device) {
            sj->started = true;      /* already held and unclaimed: reclaim */
            sj->unclaimed = false;
        } else if (mine && sj->job.state == GF_STATE_PENDING &&
                   gf_sched_hold(self->sched, r->id, sj->job.cards, sj->job.n_cards) == 0) {
            sj->job.state = GF_STATE_RUNNING;
            gf_jobs_set_reason(&sj->job, NULL);
            gf_server_persist(self, &sj->job);
            sj->started = true;
        } else {
            mine = false;
        }
        if (mine) {
            GF_INFO("job %llu reclaimed by the worker of card %d (pid %d)",
                    (unsigned long long)r->id, w->device, r->pid);
            if (sj->job.spec.time_limit_s > 0 && r->started_ms > 0) {
                int64_t left = r->started_ms + sj->job.spec.time_limit_s * 1000 - gf_wall_ms();
                sj->deadline_ms = gf_now_ms() + (uint64_t)(left > 0 ? left : 0);
            }
            if (sj->cancel_asked)
                gf_jobs_kill(self, sj, "cancelled");
        } else if (r->done) {   /* it ended there; its result follows (and is ignored) */
            GF_DEBUG("worker of card %d still holds the result of job %llu attempt %d, "
                     "no longer its own", w->device, (unsigned long long)r->id, r->attempt);
        } else {
            GF_WARN("worker of card %d runs job %llu attempt %d that is not its own: killing it",
                    w->device, (unsigned long long)r->id, r->attempt);
            gf_msg k;
            memset(&k, 0, sizeof(k));
            k.op = GF_OP_KILL;
            k.id = r->id;
            k.attempt = r->attempt;
            k.grace_s = 0;
            k.message = gf_strdup("not assigned to this worker");
            gf_server_post_free(self, self->workers, peer, &k);
        }
    }
}

static gf_sched_job *job_of(gf_server *self, wk *w, uint64_t id, int32_t attempt)
{
    gf_sched_job *sj = gf_sched_get(self->sched, id);
    if (!sj || sj->job.state != GF_STATE_RUNNING || sj->job.attempts != attempt ||
        sj->worker_card != w->device)
        return NULL;
    return sj;
}

static void on_progress(gf_server *self, wk *w, gf_msg *m)
{
    gf_sched_job *sj = job_of(self, w, m->id, m->attempt);
    if (!sj)
        return;
    if (m->pid > 0 && !sj->started) {
        sj->started = true;
        if (sj->recall_to >= 0)        /* a recall lost the race: it runs where it was */
            gf_sched_recalled(self->sched, sj->job.id, false);
        sj->job.started_ms = m->started_ms ? m->started_ms : gf_wall_ms();
        gf_jobs_set_reason(&sj->job, NULL);
        if (sj->job.spec.time_limit_s > 0)
            sj->deadline_ms = gf_now_ms() + (uint64_t)sj->job.spec.time_limit_s * 1000;
        gf_server_persist(self, &sj->job);
        GF_INFO("job %llu started on card %d (attempt %d, %zu card%s, pid %d)",
                (unsigned long long)sj->job.id, w->device, sj->job.attempts, sj->job.n_cards,
                sj->job.n_cards == 1 ? "" : "s", (int)m->pid);
    } else if (m->message && !sj->started) {
        /* e.g. "waiting for card 0: held outside gpuflock by pid 4242 (flock ...)" */
        gf_jobs_set_reason(&sj->job, "%s", m->message);
        gf_metrics_lock_wait(self->metrics, w->device, m->message);
    }
    /* diarize: windows done of total, kept in memory (the record reaches
     * the store with the job's next change, at the latest when it ends) */
    if (m->total > 0 && m->done >= 0 && m->done <= m->total) {
        sj->job.progress_done = m->done;
        sj->job.progress_total = m->total;
    }
}

static bool is_checkpoint_stat(const char *key)
{
    return strncmp(key, "checkpoint.", 11) == 0 || strncmp(key, "devstats.checkpoint.", 20) == 0;
}

/* Fold one checkpoint counter into a statistics array (*a, *n): added
 * (saturating), or the larger kept for a maximum; a position (resumed_at)
 * is not folded: no sum of positions means much. */
static void fold_checkpoint_stat(gf_stat **a, size_t *n, const gf_stat *st)
{
    if (!is_checkpoint_stat(st->key) || strstr(st->key, "resumed_at"))
        return;
    bool max = strstr(st->key, "max_ns") != NULL;
    gf_stat *sum = NULL;
    for (size_t k = 0; k < *n && !sum; k++)
        if (!strcmp((*a)[k].key, st->key))
            sum = &(*a)[k];
    if (!sum) {
        if (*n >= GF_PROTO_MAX_STATS)
            return;
        *a = gf_realloc(*a, (*n + 1) * sizeof **a);
        sum = &(*a)[(*n)++];
        memset(sum, 0, sizeof *sum);
        sum->key = gf_strdup(st->key);
        sum->is_float = st->is_float;
    }
    double f = st->is_float ? st->f : (double)st->i;
    if (sum->is_float)
        sum->f = max ? (f > sum->f ? f : sum->f) : sum->f + f;
    else if (max)
        sum->i = st->i > sum->i ? st->i : sum->i;
    else
        sum->i = st->i > 0 && sum->i > INT64_MAX - st->i ? INT64_MAX : sum->i + st->i;
}

/* A result's statistics become the job's; the checkpoint counters of the
 * attempts before it (a yielded run's capture, say) are added in, so that
 * the job's own show tells its whole checkpoint history. */
static void take_stats(gf_job *j, gf_msg *m)
{
    for (size_t i = 0; i < j->n_stats; i++)
        fold_checkpoint_stat(&m->stats, &m->n_stats, &j->stats[i]);
    for (size_t i = 0; i < j->n_stats; i++)
        free(j->stats[i].key);
    free(j->stats);
    j->stats = m->stats;
    j->n_stats = m->n_stats;
    m->stats = NULL;
    m->n_stats = 0;
}

static void on_result(gf_server *self, wk *w, gf_msg *m)
{
    gf_sched_job *sj = job_of(self, w, m->id, m->attempt);
    if (!sj) {
        GF_DEBUG("result for job %llu attempt %d that is not running there: ignored",
                 (unsigned long long)m->id, m->attempt);
        return;
    }
    gf_job *j = &sj->job;
    bool cancelled = sj->cancel_asked, timed_out = sj->timed_out;
    for (size_t i = 0; i < m->n_stats; i++)   /* the card's sums */
        fold_checkpoint_stat(&w->ckpt, &w->n_ckpt, &m->stats[i]);
    gf_metrics_result(self->metrics, w->device, m);
    if (m->outcome == GF_OUTCOME_RECALLED && !cancelled) {
        if (sj->recall_to < 0) {      /* asked to yield before it had started */
            gf_jobs_back_to_queue(self, sj,
                                  sj->yield_why[0] ? sj->yield_why : "handed back unstarted");
            gf_jobs_notify_waiters(self);
            return;
        }
        int to = sj->recall_to;
        j->yields++;
        gf_sched_recalled(self->sched, j->id, true);
        gf_jobs_set_reason(j, "moved to card %d (free before card %d)", to, w->device);
        gf_server_persist(self, j);
        return;
    }
    bool stopped = m->term_signal != 0 || m->exit_status != 0;
    bool again = !cancelled && !timed_out &&
                 (m->outcome == GF_OUTCOME_YIELDED || (sj->requeue_asked && stopped));
    if (!again)
        gf_sched_release(self->sched, j->id, false);
    j->exit_status = m->exit_status;
    j->term_signal = m->term_signal;
    if (m->started_ms)
        j->started_ms = m->started_ms;
    j->cpu_user_ms = m->cpu_user_ms;
    j->cpu_sys_ms = m->cpu_sys_ms;
    j->maxrss_kb = m->maxrss_kb;
    take_stats(j, m);
    if (again) {
        /* it saved its state (or, requeued, cannot): it runs again, resuming */
        char why[160];
        snprintf(why, sizeof why, "%s%s",
                 sj->yield_why[0] ? sj->yield_why : "yielded: its worker stopped",
                 m->outcome == GF_OUTCOME_YIELDED ? "" : " (stopped: it cannot checkpoint)");
        gf_jobs_back_to_queue(self, sj, why);
        gf_jobs_notify_waiters(self);
        return;
    }
    gf_job_state st;
    if (cancelled) {
        st = GF_STATE_CANCELLED;
    } else if (timed_out) {
        st = GF_STATE_FAILED;
        gf_jobs_set_reason(j, "time limit of %lld s reached", (long long)j->spec.time_limit_s);
    } else if (m->term_signal == 0 && m->exit_status == 0) {
        st = GF_STATE_DONE;
        gf_jobs_set_reason(j, NULL);
    } else {
        st = GF_STATE_FAILED;
        if (m->message)
            gf_jobs_set_reason(j, "%s", m->message);
        else if (m->term_signal)
            gf_jobs_set_reason(j, "killed by signal %d (%s)", m->term_signal,
                               strsignal(m->term_signal));
        else
            gf_jobs_set_reason(j, "exit status %d", m->exit_status);
    }
    j->ended_ms = m->ended_ms;
    gf_jobs_finish(self, sj, st);
    char how[48];
    if (j->term_signal)
        snprintf(how, sizeof how, "killed by signal %d", j->term_signal);
    else
        snprintf(how, sizeof how, "exit status %d", j->exit_status);
    GF_INFO("job %llu %s on card %d after %.3f s: %s", (unsigned long long)j->id,
            gf_job_state_name(st), w->device,
            j->started_ms && j->ended_ms > j->started_ms ? (j->ended_ms - j->started_ms) / 1e3 : 0.0,
            j->reason ? j->reason : how);
    gf_jobs_notify_waiters(self);
}

void gf_workers_on_message(gf_server *self)
{
    for (int k = 0; k < DRAIN_MAX; k++) {
        gf_peer peer;
        gf_msg m;
        char err[256];
        int rc = gf_router_recv(self->workers, &peer, &m, err, sizeof(err));
        if (rc == GF_ETIMEDOUT || rc == GF_EINTR || rc == GF_EIO)
            return;
        if (rc) {
            GF_WARN("worker message refused: %s", err);
            if (peer.id_len)
                gf_server_post_error(self, self->workers, &peer, rc, "%s", err);
            continue;
        }
        /* Only root or the broker's own user may act as a worker: a worker
         * gets other users' commands and environments. On ipc:// the kernel
         * names the peer; one it could not name is refused too (on tcp://
         * the CURVE key is what admits a worker). */
        bool allowed = peer.has_cred ? peer.uid == 0 || peer.uid == self->euid
                                     : !gf_config_ipc_path(self->cfg->worker_endpoint);
        if (!allowed) {
            gf_server_post_error(self, self->workers, &peer, GF_EPERM,
                                 "uid %u may not act as a worker", peer.uid);
            gf_msg_clear(&m);
            continue;
        }
        wk *w = wk_by_peer(self, &peer);
        if (m.op == GF_OP_READY) {
            on_ready(self, &peer, &m);
        } else if (!w) {
            if (m.op != GF_OP_DISCONNECT) {
                /* unknown to this broker (it restarted): ask it to register */
                gf_msg d;
                memset(&d, 0, sizeof(d));
                d.op = GF_OP_DISCONNECT;
                d.message = gf_strdup("not registered: send ready");
                gf_server_post_free(self, self->workers, &peer, &d);
            }
        } else {
            w->last_seen = gf_now_ms();
            switch (m.op) {
            case GF_OP_HEARTBEAT: break;
            case GF_OP_PROGRESS: on_progress(self, w, &m); break;
            case GF_OP_RESULT: on_result(self, w, &m); break;
            case GF_OP_DISCONNECT: gf_workers_dead(self, w, "disconnected", false); break;
            default:
                gf_server_post_error(self, self->workers, &peer, GF_EPROTO,
                                     "operation '%s' is not a worker message",
                                     gf_proto_op_name(m.op));
            }
        }
        gf_msg_clear(&m);
    }
}

void gf_workers_beat(gf_server *self, uint64_t now)
{
    uint64_t dead_after = (uint64_t)self->cfg->heartbeat_interval_ms *
                          (uint64_t)self->cfg->heartbeat_liveness;
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        if (!w->ready)
            continue;
        if (now - w->last_seen > dead_after) {
            gf_workers_dead(self, w, "silent (missed heartbeats)", true);
            continue;
        }
        gf_msg m;
        memset(&m, 0, sizeof(m));
        m.op = GF_OP_HEARTBEAT;
        gf_server_post_free(self, self->workers, &w->peer, &m);
    }
}
