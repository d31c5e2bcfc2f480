/* server.c — gpuflockd's event loop (see server.h).
 *
 * Ownership of a job's life: the scheduler (sched.c) decides, the store
 * (store.c) remembers, this file carries messages between clients, workers
 * and those two. Everything a turn of the loop sends that follows from its
 * changes waits in the outbox until the turn's transaction has committed,
 * so no client ever hears of a job the store could lose, and no worker
 * runs a job the store does not know is running. When the commit fails (a
 * full disk), those messages wait on, with the changes kept in memory,
 * until a later commit records them; heartbeats, errors and answers to
 * reads go out meanwhile, and submits and cancels are refused.
 *
 * Worker liveness follows the Paranoid Pirate pattern: both sides send a
 * heartbeat every interval; a worker silent for `liveness` intervals is
 * dead, its jobs go back to the queue (attempts permitting) and a local
 * worker process is killed and restarted with backoff. After a broker
 * restart, jobs the store says are running keep their cards for a grace
 * period in which their workers reconnect and reclaim them; what is not
 * reclaimed by then is requeued.
 *
 * This file is the loop and what a turn shares: the outbox, the turn's
 * transaction (and the store falling behind and catching up), the timers'
 * order, setup and the run. The messages themselves are handled in the
 * rooms around it (server_int.h). */
#include "broker/server_int.h"

#include "common/error.h"
#include "common/fsmode.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

/* How long a user's name and groups are believed (broker/users.h). */
#define USERS_TTL_MS 10000

/* While the store cannot commit, how often the broker tries again. */
#define STORE_RETRY_MS 1000

/* The worker socket: a worker receives every user's commands and
 * environments, so only the broker's user (and root) may connect. */
#define WORKER_SOCKET_MODE 0600

void gf_server_push_id(uint64_t **v, size_t *n, size_t *cap, uint64_t id)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = gf_realloc(*v, *cap * sizeof(uint64_t));
    }
    (*v)[(*n)++] = id;
}

static void push_out(outmsg **v, size_t *n, size_t *cap, const outmsg *o)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *v = gf_realloc(*v, *cap * sizeof(outmsg));
    }
    (*v)[(*n)++] = *o;
}

void gf_server_post_as(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m, bool held)
{
    outmsg o = { .sock = sock, .peer = *peer, .msg = *m, .held = held };
    push_out(&self->out, &self->n_out, &self->cap_out, &o);
    memset(m, 0, sizeof(*m));
}

void gf_server_post(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m)
{
    gf_server_post_as(self, sock, peer, m, true);
}

void gf_server_post_free(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m)
{
    gf_server_post_as(self, sock, peer, m, false);
}

static void make_error(gf_msg *m, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void make_error(gf_msg *m, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gf_msg_errorv(m, code, fmt, ap);
    va_end(ap);
}

void gf_server_post_error(gf_server *self, gf_router *sock, const gf_peer *peer, int code,
                          const char *fmt, ...)
{
    gf_msg m;
    va_list ap;
    va_start(ap, fmt);
    gf_msg_errorv(&m, code, fmt, ap);
    va_end(ap);
    gf_server_post_free(self, sock, peer, &m);
}

void gf_server_write_failed(gf_server *self, int rc)
{
    if (!self->turn_failed)
        self->turn_rc = rc == GF_ENOSPC ? GF_ENOSPC : GF_EIO;
    self->turn_failed = true;
}

void gf_server_tx(gf_server *self)
{
    if (self->in_tx || self->turn_failed || self->behind)
        return;
    int rc = gf_store_begin(self->store);
    if (rc) {
        gf_server_write_failed(self, rc);
        return;
    }
    self->in_tx = true;
}

/* The row of a job as memory has it now. A row that is not there cannot
 * be written by trying again: that is logged, not a failed turn (the store
 * would never catch up). */
static int write_job(gf_server *self, const gf_sched_job *sj)
{
    int rc = sj->env_stored ? gf_store_update_record(self->store, &sj->job)
                            : gf_store_update(self->store, &sj->job);
    if (rc == GF_ENOENT) {
        GF_ERROR("job %llu: no row in the job store to record its change in",
                 (unsigned long long)sj->job.id);
        return 0;
    }
    return rc;
}

void gf_server_persist(gf_server *self, const gf_job *job)
{
    gf_sched_job *sj = gf_sched_get(self->sched, job->id);
    assert(sj && &sj->job == job);
    if (!sj->dirty) {
        sj->dirty = true;
        gf_server_push_id(&self->dirty, &self->n_dirty, &self->cap_dirty, job->id);
    }
    gf_server_tx(self);
    if (self->in_tx && !self->turn_failed) {
        int rc = write_job(self, sj);
        if (rc)
            gf_server_write_failed(self, rc);
    }
}

/* Every card's drain as memory has it: what the store must hold. */
static int write_drains(gf_server *self)
{
    int rc = 0;
    for (size_t i = 0; i < self->n_wks && !rc; i++) {
        const wk *w = &self->wks[i];
        rc = gf_store_set_drain(self->store, w->device, w->drain_reason);
    }
    return rc;
}

void gf_server_persist_drains(gf_server *self)
{
    self->drains_dirty = true;
    gf_server_tx(self);
    if (self->in_tx && !self->turn_failed) {
        int rc = write_drains(self);
        if (rc)
            gf_server_write_failed(self, rc);
    }
}

int gf_server_refusal(gf_server *self, const char *op, char *why, size_t len)
{
    int rc = self->behind ? self->behind_rc : self->turn_rc;
    const char *err = self->behind && self->behind_why ? self->behind_why
                                                       : gf_store_error(self->store);
    if (rc == GF_ENOSPC)
        snprintf(why, len,
                 "%s: gpuflockd cannot record it now: the disk holding its job store "
                 "(state_dir %s) is full (%s); running jobs go on, and it takes %ss again by "
                 "itself once there is space there",
                 op, self->cfg->state_dir, err, op);
    else
        snprintf(why, len,
                 "%s: gpuflockd cannot record it now: its job store in %s cannot be written "
                 "(%s); running jobs go on, and it takes %ss again by itself once it can",
                 op, self->cfg->state_dir, err, op);
    return rc;
}

/* The store took every change: the dirty jobs are clean again. */
static void caught_up(gf_server *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->n_dirty; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, self->dirty[i]);
        if (sj && sj->dirty) {
            sj->dirty = false;
            n++;
        }
    }
    self->n_dirty = 0;
    self->drains_dirty = false;
    if (!self->behind)
        return;
    self->behind = false;
    free(self->behind_why);
    self->behind_why = NULL;
    GF_INFO("job store %s/jobs.db commits again: %zu job changes kept in memory are recorded; "
            "submits and cancels are taken again", self->cfg->state_dir, n);
}

/* The turn's commit failed and was rolled back. The jobs it inserted never
 * were (their ids come again): they leave memory, and their submitters
 * hear why instead of ids. Every other change stays in memory, dirty, and
 * its messages wait in `later`; the store is tried again every
 * STORE_RETRY_MS. The broker keeps serving. */
static void fell_behind(gf_server *self)
{
    for (size_t i = 0; i < self->n_fresh; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, self->fresh[i]);
        if (sj)
            gf_sched_forget(self->sched, self->fresh[i]);
    }
    bool was = self->behind;
    self->behind_rc = self->turn_rc ? self->turn_rc : GF_EIO;
    free(self->behind_why);
    self->behind_why = gf_strdup(gf_store_error(self->store)[0] ? gf_store_error(self->store)
                                                                 : "the commit failed");
    self->behind = true;
    char why[768];
    for (size_t i = 0; i < self->n_out; i++) {
        outmsg *o = &self->out[i];
        if (!o->sock || o->msg.op != GF_OP_IDS)
            continue;
        gf_msg_clear(&o->msg);
        int rc = gf_server_refusal(self, "submit", why, sizeof(why));
        make_error(&o->msg, rc, "%s", why);
        o->held = false;
    }
    if (!was)
        GF_WARN("job store %s/jobs.db cannot commit (%s): gpuflockd serves on: running jobs go "
                "on and their ends wait in memory, reads are answered, submits and cancels are "
                "refused; trying again every %d ms", self->cfg->state_dir, self->behind_why,
                STORE_RETRY_MS);
    gf_store_checkpoint(self->store);   /* the WAL's space back, for the next try */
    self->next_retry = gf_now_ms() + STORE_RETRY_MS;
}

/* While behind, at most every STORE_RETRY_MS: a transaction with every
 * job the store lacks, as it is now. */
static void try_catch_up(gf_server *self)
{
    if (!self->behind || self->in_tx || gf_now_ms() < self->next_retry)
        return;
    self->next_retry = gf_now_ms() + STORE_RETRY_MS;
    int rc = gf_store_begin(self->store);
    if (rc) {
        gf_server_write_failed(self, rc);
        return;
    }
    self->in_tx = true;
    for (size_t i = 0; i < self->n_dirty && !self->turn_failed; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, self->dirty[i]);
        if (sj && sj->dirty && (rc = write_job(self, sj)) != 0)
            gf_server_write_failed(self, rc);
    }
    if (self->drains_dirty && !self->turn_failed && (rc = write_drains(self)) != 0)
        gf_server_write_failed(self, rc);
}

/* A held job assignment from a turn whose commit failed still stands:
 * the job runs there in memory, in that attempt (its worker may have
 * died, or the job been requeued, since). */
static bool still_due(gf_server *self, const outmsg *o)
{
    if (o->msg.op != GF_OP_JOB)
        return true;
    gf_sched_job *sj = gf_sched_get(self->sched, o->msg.id);
    return sj && sj->job.state == GF_STATE_RUNNING && sj->job.attempts == o->msg.attempt;
}

static void send_one(outmsg *o)
{
    int rc = gf_router_send(o->sock, &o->peer, &o->msg);
    if (rc == GF_ENOENT)
        GF_DEBUG("peer gone before its '%s' message", gf_proto_op_name(o->msg.op));
    else if (rc)
        GF_WARN("sending '%s': %s", gf_proto_op_name(o->msg.op), gf_strerror(rc));
}

/* Send what waits for the socket `only`: the held messages of earlier
 * turns first (once the store caught up), then the turn's own. While the
 * store is behind, the turn's held messages join `later` instead. A failed
 * sync sends nothing more. */
static void flush_outbox(gf_server *self, gf_router *only)
{
    for (size_t i = 0; i < self->n_later && !self->behind; i++) {
        outmsg *o = &self->later[i];
        if (!o->sock || o->sock != only)
            continue;
        if (!self->sync_failed && still_due(self, o))
            send_one(o);
        gf_msg_clear(&o->msg);
        o->sock = NULL;
    }
    for (size_t i = 0; i < self->n_out; i++) {
        outmsg *o = &self->out[i];
        if (!o->sock || o->sock != only)
            continue;
        if (self->behind && o->held) {
            push_out(&self->later, &self->n_later, &self->cap_later, o);
            memset(&o->msg, 0, sizeof(o->msg));   /* moved */
        } else {
            if (!self->sync_failed)
                send_one(o);
            gf_msg_clear(&o->msg);
        }
        o->sock = NULL;
    }
}

/* fdatasync the job store's WAL, if anything was committed since the last. */
static void sync_store(gf_server *self)
{
    if (self->unsynced && !self->sync_failed) {
        uint64_t t0 = gf_now_ns();
        if (gf_store_sync(self->store) != 0)
            self->sync_failed = true;
        gf_metrics_sync(self->metrics, gf_now_ns() - t0);
    }
    self->unsynced = false;
}

/* The time since *t into the turn's phase ph, where the trace is on. */
static void phase(gf_server *self, int ph, uint64_t *t)
{
    if (!self->trace)
        return;
    uint64_t now = gf_now_ns();
    self->phase_ns[ph] = now - *t;
    *t = now;
}

void gf_server_end_turn(gf_server *self)
{
    uint64_t t = self->trace ? gf_now_ns() : 0;
    try_catch_up(self);
    bool failed = self->turn_failed, committed = false;
    if (self->in_tx) {
        self->in_tx = false;
        uint64_t t0 = gf_now_ns();
        int rc = failed ? self->turn_rc : gf_store_commit(self->store);
        gf_metrics_commit(self->metrics, gf_now_ns() - t0, rc == 0);
        if (rc) {
            gf_store_rollback(self->store);
            gf_server_write_failed(self, rc);
            failed = true;
        } else {
            committed = true;
            self->unsynced = true;
            for (size_t i = 0; i < self->n_fresh; i++) {   /* submits now in the store */
                gf_sched_job *sj = gf_sched_get(self->sched, self->fresh[i]);
                if (sj)
                    gf_metrics_submitted(self->metrics, sj->job.spec.kind);
            }
        }
    }
    if (failed)
        fell_behind(self);
    else if (committed || !self->behind)
        caught_up(self);
    self->turn_failed = false;
    self->turn_rc = 0;
    self->n_fresh = 0;
    phase(self, PH_COMMIT, &t);
    flush_outbox(self, self->workers);
    phase(self, PH_TO_WORKERS, &t);
    /* acknowledgements held while the store was behind go with this sync */
    for (size_t i = 0; i < self->n_later && !self->behind && !self->need_sync; i++)
        self->need_sync = self->later[i].sock == self->clients;
    self->traced_sync = self->need_sync;
    if (self->need_sync && self->cfg->sync_acks)
        sync_store(self);
    self->need_sync = false;
    phase(self, PH_SYNC, &t);
    flush_outbox(self, self->clients);
    phase(self, PH_TO_CLIENTS, &t);
    for (size_t i = 0; i < self->n_out; i++)
        gf_msg_clear(&self->out[i].msg);
    self->n_out = 0;
    if (self->behind)
        return;    /* ended jobs stay in memory, and `later` keeps what waits */
    self->n_later = 0;
    /* Ended jobs leave memory once their end is committed; the store keeps
     * them for show, wait, logs, queue --all and --after. */
    for (size_t i = 0; i < self->n_retire; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, self->retire[i]);
        if (sj && gf_jobs_ended(sj->job.state)) {
            gf_metrics_ended(self->metrics, &sj->job);   /* its end is in the store */
            gf_sched_retire(self->sched, self->retire[i]);
        }
    }
    self->n_retire = 0;
}

/* At log level debug, one line per turn that acknowledged a client's change
 * (a submit, a cancel): where its time went, in microseconds. */
static void turn_trace(gf_server *self)
{
    if (!self->trace || !self->traced_sync)
        return;
    const uint64_t *p = self->phase_ns;
    GF_DEBUG("turn us: messages %llu, schedule %llu, commit %llu, to workers %llu, sync %llu, "
             "to clients %llu",
             (unsigned long long)(p[PH_MESSAGES] / 1000), (unsigned long long)(p[PH_SCHEDULE] / 1000),
             (unsigned long long)(p[PH_COMMIT] / 1000), (unsigned long long)(p[PH_TO_WORKERS] / 1000),
             (unsigned long long)(p[PH_SYNC] / 1000), (unsigned long long)(p[PH_TO_CLIENTS] / 1000));
}

/* The turn's timers: heartbeats (and, with broker.sync_acks false, the
 * WAL's sync: power loss costs at most this interval), the jobs' timers,
 * the local workers' processes, waits that timed out. */
static void timers(gf_server *self, uint64_t now)
{
    if (now >= self->next_beat) {
        self->next_beat = now + (uint64_t)self->cfg->heartbeat_interval_ms;
        sync_store(self);
        gf_workers_beat(self, now);
        gf_log_check_file();   /* a rotation nobody signalled; a log file a full disk kept off */
    }
    gf_jobs_timers(self, now);
    gf_supervise(self, now);
    gf_history_timers(self, now);
    gf_jobs_notify_waiters(self);
    gf_metrics_refresh(self->metrics, self, now);
}

/* Give an ipc socket file its mode and, for the client socket, the
 * configured owner and group: 0, or GF_ECONFIG after logging. */
static int socket_access(gf_server *self, const char *path, mode_t mode, bool client)
{
    /* run_dir is ours and 0711 (nobody else can put a link in its place);
     * still, only the socket libzmq just made is changed, never what a
     * name might point at */
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
        GF_ERROR("%s: not the socket this broker just made", path);
        return GF_ECONFIG;
    }
    if (chmod(path, mode) != 0) {
        GF_ERROR("%s: chmod %04o: %s", path, (unsigned)mode, strerror(errno));
        return GF_ECONFIG;
    }
    if (!client)
        return 0;
    uid_t uid = (uid_t)-1;
    gid_t gid = (gid_t)-1;
    if (self->cfg->socket_owner) {
        struct passwd *pw = getpwnam(self->cfg->socket_owner);
        if (!pw) {
            GF_ERROR("broker.socket_owner: no user '%s'", self->cfg->socket_owner);
            return GF_ECONFIG;
        }
        uid = pw->pw_uid;
    }
    if (self->cfg->socket_group) {
        struct group *gr = getgrnam(self->cfg->socket_group);
        if (!gr) {
            GF_ERROR("broker.socket_group: no group '%s'", self->cfg->socket_group);
            return GF_ECONFIG;
        }
        gid = gr->gr_gid;
    }
    if ((uid != (uid_t)-1 || gid != (gid_t)-1) && lchown(path, uid, gid) != 0) {
        GF_ERROR("%s: chown: %s", path, strerror(errno));
        return GF_ECONFIG;
    }
    return 0;
}

/* A ROUTER on ep (net/router.h). The client socket file gets
 * broker.socket_mode, owner and group; the worker socket 0600, the
 * broker's user's own: only root and that user may act as workers
 * (on_worker), so nobody else needs to connect there. Either file is born
 * with its mode (the umask during the bind, which libzmq makes in this
 * thread), so nobody connects in between. */
static gf_router *bind_router(gf_server *self, const char *ep, bool client)
{
    const char *path = gf_config_ipc_path(ep);
    mode_t mode = client ? self->cfg->socket_mode : WORKER_SOCKET_MODE, old = 0;
    if (path) {
        unlink(path);     /* a stale socket of a dead broker (the pid file is ours) */
        old = umask(~mode & 0777);
    }
    char err[512];
    gf_router *r = gf_router_bind(self->ctx, ep, self->cfg, err, sizeof(err));
    if (path)
        umask(old);
    if (!r)
        GF_ERROR("%s", err);
    else if (path && socket_access(self, path, mode, client) != 0)
        gf_router_destroy(&r);
    return r;
}

static char *default_worker_program(void)
{
    char *path = gf_beside_self("gpuflock-worker");
    return path ? path : gf_strdup("gpuflock-worker");
}

/* Cards the operator drained before a restart stay drained. */
static int load_drains(gf_server *self)
{
    int *cards = NULL;
    char **reasons = NULL;
    size_t n = 0;
    int rc = gf_store_drains(self->store, &cards, &reasons, &n);
    for (size_t i = 0; i < n; i++) {
        wk *w = gf_workers_by_device(self, cards[i]);
        if (w) {
            w->drain_reason = reasons[i];
            reasons[i] = NULL;
            gf_sched_card_drain(self->sched, w->device, true);
            GF_INFO("card %d stays drained%s%s", w->device, *w->drain_reason ? ": " : "",
                    w->drain_reason);
        }
        free(reasons[i]);
    }
    free(cards);
    free(reasons);
    return rc;
}

gf_server *gf_server_new(const gf_config *cfg)
{
    gf_server *self = gf_calloc(1, sizeof(*self));
    self->cfg = cfg;
    self->euid = geteuid();
    self->trace = gf_log_get_level() == GF_LOG_DEBUG;
    self->users = gf_users_new(USERS_TTL_MS);
    self->metrics = gf_metrics_new(cfg);
    /* 0711: users pass through to their own spool files and to the models
     * by path, and list nothing; the store in it is 0600 (store.c). Before
     * any worker starts, everything must be there and writable: a broker
     * that cannot record jobs says so now and runs nothing. */
    if (gf_fsmode_dir(cfg->state_dir, 0711, "state_dir") != 0 ||
        gf_fsmode_dir(cfg->spool_dir, 0711, "spool_dir") != 0)
        goto fail;
    self->spool = gf_strdup(cfg->spool_dir);
    self->worker_program = cfg->worker_program ? gf_strdup(cfg->worker_program)
                                               : default_worker_program();
    char *db = gf_strfmt("%s/jobs.db", cfg->state_dir);
    self->store = gf_store_open(db);
    free(db);
    if (!self->store)
        goto fail;
    self->sched = gf_sched_new(cfg);
    gf_sched_set_now(self->sched, gf_now_ms());   /* the jobs read back queue from now */
    self->n_wks = cfg->n_devices;
    self->wks = gf_calloc(cfg->n_devices ? cfg->n_devices : 1, sizeof(wk));
    for (size_t i = 0; i < cfg->n_devices; i++) {
        self->wks[i].device = cfg->devices[i].index;
        self->wks[i].conf = &cfg->devices[i];
    }
    /* The jobs of earlier runs. Running ones keep their cards until their
     * workers reclaim them or the grace runs out. */
    gf_job *jobs;
    size_t n;
    if (load_drains(self) != 0)
        goto fail;
    if (gf_store_load(self->store, true, &jobs, &n) != 0)   /* the live ones */
        goto fail;
    size_t live = 0, running = 0;
    for (size_t i = 0; i < n; i++) {
        bool run = jobs[i].state == GF_STATE_RUNNING;
        live += !gf_jobs_ended(jobs[i].state);
        running += run;
        int cards[GF_PROTO_MAX_CARDS];
        size_t nc = jobs[i].n_cards;
        for (size_t c = 0; c < nc; c++)
            cards[c] = jobs[i].cards[c];
        uint64_t id = jobs[i].id;
        gf_jobs_stored_reason(&jobs[i]);
        gf_sched_add(self->sched, &jobs[i]);
        gf_sched_job *sj = gf_sched_get(self->sched, id);
        if (run && gf_sched_hold(self->sched, id, cards, nc) != 0) {
            sj->job.state = GF_STATE_PENDING;
            gf_sched_release(self->sched, id, true);
        } else if (run) {
            sj->unclaimed = true;
        }
    }
    free(jobs);
    /* Ended jobs stay in the store only: the final states the live jobs'
     * --after lists need are read back from it. */
    size_t pos = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        for (size_t a = 0; a < sj->job.spec.n_after; a++)
            gf_jobs_known(self, sj->job.spec.after[a]);
    if (n)
        GF_INFO("job store: %zu pending or running (%zu running)", live, running);
    uint64_t grace = (uint64_t)cfg->heartbeat_interval_ms * (uint64_t)cfg->heartbeat_liveness * 2 +
                     2000;
    if (running)
        self->reclaim_until = gf_now_ms() + grace;

    /* 0711: users reach the client socket and read the broker's pid file
     * by path */
    if (gf_fsmode_dir(cfg->run_dir, 0711, "run_dir") != 0)
        goto fail;
    gf_supervise_raise_nofile(self);
    self->ctx = zmq_ctx_new();
    self->clients = bind_router(self, cfg->client_endpoint, true);
    if (!self->clients)
        goto fail;
    self->workers = bind_router(self, cfg->worker_endpoint, false);
    if (!self->workers)
        goto fail;
    if (gf_metrics_start(self->metrics, self) != 0)   /* metrics.listen, metrics.textfile */
        goto fail;
    return self;
fail:
    gf_server_destroy(&self);
    return NULL;
}

void gf_server_destroy(gf_server **self_p)
{
    gf_server *self = *self_p;
    if (!self)
        return;
    gf_metrics_destroy(&self->metrics);
    for (size_t i = 0; i < self->n_out; i++)
        gf_msg_clear(&self->out[i].msg);
    free(self->out);
    for (size_t i = 0; i < self->n_later; i++)
        gf_msg_clear(&self->later[i].msg);
    free(self->later);
    free(self->dirty);
    free(self->fresh);
    free(self->behind_why);
    free(self->retire);
    gf_history_destroy(self);
    while (self->waiters) {
        waiter *w = self->waiters;
        self->waiters = w->next;
        free(w->ids);
        free(w);
    }
    gf_router_destroy(&self->clients);
    gf_router_destroy(&self->workers);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    for (size_t i = 0; i < self->n_wks; i++) {
        free(self->wks[i].plan);
        free(self->wks[i].supervision);
        free(self->wks[i].drain_reason);
        for (size_t k = 0; k < self->wks[i].n_ckpt; k++)
            free(self->wks[i].ckpt[k].key);
        free(self->wks[i].ckpt);
    }
    free(self->wks);
    gf_sched_destroy(&self->sched);
    gf_store_destroy(&self->store);
    free(self->spool);
    gf_users_destroy(&self->users);
    free(self->worker_program);
    free(self);
    *self_p = NULL;
}

void gf_server_on_hangup(gf_server *self, volatile sig_atomic_t *flag)
{
    self->hangup = flag;
}

/* SIGHUP: the log file reopened here, then in the workers this broker
 * started (each reopens its own; one started elsewhere notices the rotation
 * within a heartbeat, gf_log_check_file). Lines written meanwhile went to
 * the old file: none is lost. */
static void hangup(gf_server *self)
{
    *self->hangup = 0;
    gf_log_reopen();
    for (size_t i = 0; i < self->n_wks; i++)
        if (self->wks[i].child > 0)
            kill(self->wks[i].child, SIGHUP);
}

static size_t running_jobs(gf_server *self)
{
    size_t pos = 0, n = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        n += sj->job.state == GF_STATE_RUNNING;
    return n;
}

int gf_server_run(gf_server *self, volatile sig_atomic_t *stop)
{
    GF_INFO("gpuflockd serving %s (clients) and %s (workers), %zu cards", self->cfg->client_endpoint,
            self->cfg->worker_endpoint, self->n_wks);
    gf_supervise(self, gf_now_ms());
    for (;;) {
        if (*stop && !self->stopping) {
            self->stopping = true;
            self->stop_deadline = gf_now_ms() + (uint64_t)self->cfg->shutdown_deadline_s * 1000;
            GF_INFO("stopping: no new jobs; %zu running get up to %d s", running_jobs(self),
                    self->cfg->shutdown_deadline_s);
        }
        if (self->stopping && (running_jobs(self) == 0 || gf_now_ms() >= self->stop_deadline))
            break;
        if (self->hangup && *self->hangup)
            hangup(self);
        zmq_pollitem_t items[2];
        gf_router_pollitem(self->clients, &items[0]);
        gf_router_pollitem(self->workers, &items[1]);
        uint64_t now = gf_now_ms();
        long timeout = self->next_beat > now ? (long)(self->next_beat - now) : 0;
        if (timeout > 100)
            timeout = 100;    /* timers (kills, restarts, waiters) at 100 ms grain */
        int rc = zmq_poll(items, 2, timeout);
        if (rc < 0 && errno != EINTR) {
            GF_ERROR("zmq_poll: %s", zmq_strerror(errno));
            return GF_EIO;
        }
        uint64_t t = self->trace ? gf_now_ns() : 0;
        if (rc > 0 && (items[1].revents & ZMQ_POLLIN))
            gf_workers_on_message(self);
        if (rc > 0 && (items[0].revents & ZMQ_POLLIN))
            gf_clients_on_message(self);
        phase(self, PH_MESSAGES, &t);
        timers(self, gf_now_ms());
        gf_jobs_schedule(self);
        phase(self, PH_SCHEDULE, &t);
        gf_server_end_turn(self);
        turn_trace(self);
        if (self->sync_failed) {
            GF_ERROR("the job store's WAL could not be synced: stopping without acknowledging "
                     "more");
            return GF_EIO;
        }
    }
    gf_supervise_shutdown(self);
    GF_INFO("stopped");
    return 0;
}
