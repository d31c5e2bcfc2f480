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
 * reclaimed by then is requeued. */
#include "broker/server.h"

#include "net/router.h"
#include "broker/sched.h"
#include "broker/store.h"
#include "broker/users.h"
#include "common/error.h"
#include "common/fsmode.h"
#include "common/log.h"
#include "net/proto.h"
#include "common/utf8.h"
#include "common/util.h"
#include "net/wire.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#define LOG_CHUNK (256u << 10)      /* bytes of log per "log" reply */
#define DRAIN_MAX 2000              /* messages per socket per turn */
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

/* One configured device and the worker that serves it. */
typedef struct {
    int device;               /* configured index */
    const gf_device_conf *conf;
    bool ready;               /* registered and alive */
    gf_peer peer;             /* its routing envelope */
    gf_card_identity card;    /* as reported in READY */
    bool have_card;
    char *plan;               /* route plan text from READY */
    char *supervision;        /* how it supervises command jobs, from READY */
    char *drain_reason;       /* drained by the operator (the scheduler knows; the store keeps
                               * it): their --reason, "" for none; NULL: in service */
    gf_stat *ckpt;            /* its jobs' checkpoint statistics, summed since we started */
    size_t n_ckpt;
    int32_t pid;              /* as reported */
    uint64_t last_seen;       /* monotonic ms of its last message */
    pid_t child;              /* our child process, 0: none */
    uint64_t child_started;   /* monotonic ms */
    uint64_t spawn_at;        /* monotonic ms of the next spawn attempt */
    int backoff_ms;           /* grows while workers keep dying young */
} wk;

/* A client waiting for jobs to end. */
typedef struct waiter {
    gf_peer peer;
    uint64_t *ids;
    size_t n;
    size_t ended;             /* ids[0..ended) are known to have ended (for good) */
    uint64_t deadline;        /* monotonic ms, 0: none */
    struct waiter *next;
} waiter;

/* A turn's phases, timed where the log level is debug (turn_trace). */
enum { PH_MESSAGES, PH_SCHEDULE, PH_COMMIT, PH_TO_WORKERS, PH_SYNC, PH_TO_CLIENTS, TURN_PHASES };

/* A message to send at the end of the turn. */
typedef struct {
    gf_router *sock;          /* NULL once sent */
    gf_peer peer;
    gf_msg msg;               /* owned */
    bool held;                /* it follows from changes of the turn (an assignment, an
                               * acknowledgement, a job's end): sent only once those are
                               * committed; else (a heartbeat, an error, an answer to a
                               * read) sent whatever the store does */
} outmsg;

struct gf_server {
    const gf_config *cfg;     /* borrowed from main */
    void *ctx;                /* libzmq */
    gf_router *clients;       /* ROUTER (net/router.h) */
    gf_router *workers;       /* ROUTER */
    gf_store *store;
    gf_sched *sched;
    wk *wks;                  /* one per configured device, ascending */
    size_t n_wks;
    waiter *waiters;
    uint64_t *retire;         /* jobs ended this turn: retired once it is committed */
    size_t n_retire, cap_retire;
    outmsg *out;              /* the outbox */
    size_t n_out, cap_out;
    outmsg *later;            /* held messages of turns whose commit failed, in order: sent
                               * after the commit that takes their changes */
    size_t n_later, cap_later;
    uint64_t *dirty;          /* jobs changed since the last commit (their sj->dirty set) */
    size_t n_dirty, cap_dirty;
    uint64_t *fresh;          /* jobs inserted this turn: they never were if it fails */
    size_t n_fresh, cap_fresh;
    bool in_tx;               /* a store transaction is open this turn */
    bool need_sync;           /* this turn acknowledges a client's change */
    bool unsynced;            /* commits since the WAL was last synced */
    bool turn_failed;         /* a store write failed this turn: no more until it ends */
    int turn_rc;              /* its code: GF_ENOSPC (disk full) or GF_EIO */
    bool behind;              /* the store could not commit: memory holds changes it lacks
                               * (the dirty jobs), rewritten every STORE_RETRY_MS */
    int behind_rc;            /* why, as a code */
    char *behind_why;         /* and as the store's text, for refusals */
    uint64_t next_retry;      /* monotonic ms of the next try to commit, while behind */
    bool sync_failed;         /* the WAL could not be synced: the broker stops */
    bool drains_dirty;        /* the drained cards changed since the last commit */
    bool stopping;            /* SIGTERM seen: no new jobs */
    uint64_t stop_deadline;   /* monotonic ms */
    uint64_t reclaim_until;   /* monotonic ms: unclaimed running jobs wait */
    uint64_t next_beat;       /* monotonic ms of the next heartbeat round */
    uint64_t next_scan;       /* monotonic ms of the next look at the running jobs' timers */
    char *spool;              /* spool_dir: job output, on a disk of its own if configured */
    gf_users *users;          /* uid -> name and groups, cached */
    char *worker_program;
    uid_t euid;
    bool trace;               /* log_level debug: each acknowledging turn's phases */
    bool traced_sync;         /* this turn's end ran an acknowledging sync */
    uint64_t phase_ns[TURN_PHASES];   /* this turn's phases (trace) */
};

/* How long a user's name and groups are believed (broker/users.h). */
#define USERS_TTL_MS 10000

/* While the store cannot commit, how often the broker tries again. */
#define STORE_RETRY_MS 1000

/* The worker socket: a worker receives every user's commands and
 * environments, so only the broker's user (and root) may connect. */
#define WORKER_SOCKET_MODE 0600

/* ------------------------------------------------------------ utilities */

static wk *wk_by_device(gf_server *self, int device)
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

static void push_id(uint64_t **v, size_t *n, size_t *cap, uint64_t id)
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

static void post_as(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m, bool held)
{
    outmsg o = { .sock = sock, .peer = *peer, .msg = *m, .held = held };
    push_out(&self->out, &self->n_out, &self->cap_out, &o);
    memset(m, 0, sizeof(*m));
}

/* Held: sent once the turn's changes are in the store. */
static void post(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m)
{
    post_as(self, sock, peer, m, true);
}

/* Sent at the end of the turn whatever the store does: heartbeats, errors,
 * answers to reads (queue, show, logs, workers still answer while the
 * store's disk is full). */
static void post_free(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m)
{
    post_as(self, sock, peer, m, false);
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

static void post_error(gf_server *self, gf_router *sock, const gf_peer *peer, int code,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void post_error(gf_server *self, gf_router *sock, const gf_peer *peer, int code,
                       const char *fmt, ...)
{
    gf_msg m;
    va_list ap;
    va_start(ap, fmt);
    gf_msg_errorv(&m, code, fmt, ap);
    va_end(ap);
    post_free(self, sock, peer, &m);
}

/* A write of the turn failed: nothing more is written this turn (SQLite
 * may have rolled the transaction back, and later writes would commit on
 * their own); the turn ends rolled back, its changes kept in memory. */
static void write_failed(gf_server *self, int rc)
{
    if (!self->turn_failed)
        self->turn_rc = rc == GF_ENOSPC ? GF_ENOSPC : GF_EIO;
    self->turn_failed = true;
}

static void tx(gf_server *self)
{
    if (self->in_tx || self->turn_failed || self->behind)
        return;
    int rc = gf_store_begin(self->store);
    if (rc) {
        write_failed(self, rc);
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

/* The job changed: into this turn's transaction, and on the list of jobs
 * the store lacks until the turn commits. While the store cannot commit,
 * only on the list: the next try writes every job on it as it is then. */
static void persist(gf_server *self, const gf_job *job)
{
    gf_sched_job *sj = gf_sched_get(self->sched, job->id);
    assert(sj && &sj->job == job);
    if (!sj->dirty) {
        sj->dirty = true;
        push_id(&self->dirty, &self->n_dirty, &self->cap_dirty, job->id);
    }
    tx(self);
    if (self->in_tx && !self->turn_failed) {
        int rc = write_job(self, sj);
        if (rc)
            write_failed(self, rc);
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

/* The drained cards changed: into this turn's transaction (as persist). */
static void persist_drains(gf_server *self)
{
    self->drains_dirty = true;
    tx(self);
    if (self->in_tx && !self->turn_failed) {
        int rc = write_drains(self);
        if (rc)
            write_failed(self, rc);
    }
}

/* Why a change cannot be taken now, for the client asking (op: "submit",
 * "cancel"): the store's folder and disk named. */
static int refusal(gf_server *self, const char *op, char *why, size_t len)
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
        int rc = refusal(self, "submit", why, sizeof(why));
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
        write_failed(self, rc);
        return;
    }
    self->in_tx = true;
    for (size_t i = 0; i < self->n_dirty && !self->turn_failed; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, self->dirty[i]);
        if (sj && sj->dirty && (rc = write_job(self, sj)) != 0)
            write_failed(self, rc);
    }
    if (self->drains_dirty && !self->turn_failed && (rc = write_drains(self)) != 0)
        write_failed(self, rc);
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
    if (self->unsynced && !self->sync_failed && gf_store_sync(self->store) != 0)
        self->sync_failed = true;
    self->unsynced = false;
}

static bool ended(gf_job_state s);

/* The time since *t into the turn's phase ph, where the trace is on. */
static void phase(gf_server *self, int ph, uint64_t *t)
{
    if (!self->trace)
        return;
    uint64_t now = gf_now_ns();
    self->phase_ns[ph] = now - *t;
    *t = now;
}

/* Commit the turn, then send what it produced. Workers get their messages
 * right after the commit (a job the store records as running may start:
 * that survives a broker crash); clients hear back only after the WAL is
 * synced too, when the turn acknowledges a change of theirs (a submit, a
 * cancel), so an acknowledged job survives a machine crash as well.
 *
 * A commit that fails (a full disk, a store that cannot be written) does
 * not stop the broker: fell_behind keeps the turn's changes in memory and
 * holds the messages that follow from them, and a later turn's commit
 * (try_catch_up) records them and sends those messages. A failed sync
 * stops the broker: nothing more of the turn is sent. */
static void end_turn(gf_server *self)
{
    uint64_t t = self->trace ? gf_now_ns() : 0;
    try_catch_up(self);
    bool failed = self->turn_failed, committed = false;
    if (self->in_tx) {
        self->in_tx = false;
        int rc = failed ? self->turn_rc : gf_store_commit(self->store);
        if (rc) {
            gf_store_rollback(self->store);
            write_failed(self, rc);
            failed = true;
        } else {
            committed = true;
            self->unsynced = true;
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
        if (sj && ended(sj->job.state))
            gf_sched_retire(self->sched, self->retire[i]);
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

/* -------------------------------------------------------- job lifecycle */

static void notify_waiters(gf_server *self);

static bool ended(gf_job_state s)
{
    return s == GF_STATE_DONE || s == GF_STATE_FAILED || s == GF_STATE_CANCELLED;
}

static void set_reason(gf_job *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The reason may quote a worker's message (a holder's command line from
 * /proc, a command that cannot run): bytes that are not UTF-8 are escaped,
 * since the reason goes to clients in msgpack strings. */
static void set_reason(gf_job *j, const char *fmt, ...)
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

/* The job ended (ended_ms: the worker's clock when it reported one, else
 * now); it is retired at the end of the turn. */
static void finish(gf_server *self, gf_sched_job *sj, gf_job_state state)
{
    sj->job.state = state;
    if (!sj->job.ended_ms)
        sj->job.ended_ms = gf_wall_ms();
    persist(self, &sj->job);
    if (self->n_retire == self->cap_retire) {
        self->cap_retire = self->cap_retire ? self->cap_retire * 2 : 64;
        self->retire = gf_realloc(self->retire, self->cap_retire * sizeof(uint64_t));
    }
    self->retire[self->n_retire++] = sj->job.id;
}

/* The worker of a running job vanished: requeue it or fail it. */
static void lost_job(gf_server *self, gf_sched_job *sj, const char *why)
{
    gf_job *j = &sj->job;
    bool cancel = sj->cancel_asked, timed_out = sj->timed_out;
    gf_sched_release(self->sched, j->id, false);
    if (cancel) {
        set_reason(j, "cancelled (%s)", why);
        finish(self, sj, GF_STATE_CANCELLED);
    } else if (timed_out) {
        set_reason(j, "time limit of %lld s reached (%s)", (long long)j->spec.time_limit_s, why);
        finish(self, sj, GF_STATE_FAILED);
    } else if (j->spec.no_requeue || j->attempts - j->yields >= self->cfg->max_attempts) {
        set_reason(j, "%s (attempt %d of %d%s)", why, j->attempts - j->yields,
                   self->cfg->max_attempts, j->spec.no_requeue ? ", --no-requeue" : "");
        finish(self, sj, GF_STATE_FAILED);
    } else {
        set_reason(j, "requeued: %s (attempt %d of %d)", why, j->attempts - j->yields,
                   self->cfg->max_attempts);
        j->state = GF_STATE_PENDING;
        j->progress_done = j->progress_total = 0;
        gf_sched_unqueue(self->sched, j->id);
        gf_sched_release(self->sched, j->id, true);
        persist(self, j);
        GF_INFO("job %llu requeued: %s", (unsigned long long)j->id, why);
        return;
    }
    GF_INFO("job %llu %s: %s", (unsigned long long)j->id, gf_job_state_name(j->state), j->reason);
}

/* A worker is gone (or must go). kill_it: it may still live (silent or
 * replaced): kill the process so its jobs die with it (PDEATHSIG) and no
 * requeued job ever runs beside its old self. */
static void worker_dead(gf_server *self, wk *w, const char *why, bool kill_it)
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
            lost_job(self, sj, text);
    if (kill_it && w->child > 0)
        kill(w->child, SIGKILL);      /* reaped by supervise() */
    else if (kill_it && w->pid > 0)
        kill(w->pid, SIGKILL);        /* an orphan from an earlier broker */
    notify_waiters(self);
}

/* Ask the worker of a running job to stop it, or (mode) to yield, requeue
 * or hand back a job waiting ahead. */
static void send_kill_mode(gf_server *self, gf_sched_job *sj, gf_kill_mode mode, const char *why)
{
    wk *w = wk_by_device(self, sj->worker_card);
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
    post_as(self, self->workers, &w->peer, &m, held);   /* m is the outbox's now */
    if (mode == GF_KILL_RECALL)
        return;                       /* it has not started: nothing to wait for */
    if (!sj->kill_at_ms)
        sj->kill_at_ms = gf_now_ms() + grace +
                         (uint64_t)self->cfg->heartbeat_interval_ms *
                             (uint64_t)self->cfg->heartbeat_liveness;
}

static void send_kill(gf_server *self, gf_sched_job *sj, const char *why)
{
    send_kill_mode(self, sj, GF_KILL_STOP, why);
}

/* Ask a running job to give its card back and come again (why: the reason
 * it will wait with, "yielded to job 12"); requeue: also a job that cannot
 * checkpoint (it is stopped and runs again from its start). */
static void ask_yield(gf_server *self, gf_sched_job *sj, bool requeue, const char *why)
{
    if (sj->yield_asked)
        return;
    sj->yield_asked = true;          /* asked once, whatever comes of it */
    if (sj->cancel_asked)
        return;                      /* it is being stopped anyway */
    sj->requeue_asked = requeue;
    snprintf(sj->yield_why, sizeof sj->yield_why, "%s", why);
    send_kill_mode(self, sj, requeue ? GF_KILL_REQUEUE : GF_KILL_YIELD, why);
    GF_INFO("job %llu asked to %s: %s", (unsigned long long)sj->job.id,
            requeue ? "requeue" : "yield", why);
}

/* A running job goes back to the queue in its place (it yielded, was
 * requeued or recalled): not a failure, so not an attempt. */
static void back_to_queue(gf_server *self, gf_sched_job *sj, const char *why)
{
    gf_job *j = &sj->job;
    j->yields++;
    j->state = GF_STATE_PENDING;
    j->progress_done = j->progress_total = 0;
    set_reason(j, "%s", why);
    gf_sched_unqueue(self->sched, j->id);
    gf_sched_release(self->sched, j->id, true);
    persist(self, j);
    GF_INFO("job %llu back in the queue: %s", (unsigned long long)j->id, why);
}

/* Returns false when the job failed instead (its environment is gone). */
static bool start_job(gf_server *self, const gf_sched_decision *d)
{
    gf_sched_job *sj = gf_sched_get(self->sched, d->id);
    gf_job *j = &sj->job;
    wk *w = wk_by_device(self, d->cards[0]);
    gf_msg m;
    memset(&m, 0, sizeof(m));
    gf_job_spec_copy(&m.spec, &j->spec);
    if (sj->env_stored && gf_store_job_env(self->store, j->id, &m.spec) != 0) {
        /* logged by the store: a job cannot run without its environment */
        gf_msg_clear(&m);
        gf_sched_release(self->sched, j->id, false);
        set_reason(j, "its environment could not be read back from the job store (%s)",
                   gf_store_error(self->store));
        finish(self, sj, GF_STATE_FAILED);
        GF_WARN("job %llu failed: %s", (unsigned long long)j->id, j->reason);
        return false;
    }
    j->attempts++;
    j->started_ms = 0;
    j->ended_ms = 0;
    j->exit_status = -1;
    j->term_signal = 0;
    j->progress_done = j->progress_total = 0;
    set_reason(j, NULL);
    free(j->out_path);
    free(j->err_path);
    j->out_path = gf_strfmt("%s/%llu.out", self->spool, (unsigned long long)j->id);
    j->err_path = gf_strfmt("%s/%llu.err", self->spool, (unsigned long long)j->id);
    persist(self, j);

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
        wk *cw = wk_by_device(self, d->cards[i]);
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
    post(self, self->workers, &w->peer, &m);
    GF_DEBUG("job %llu attempt %d → card %d", (unsigned long long)j->id, j->attempts,
             d->cards[0]);
    return true;
}

/* Nothing starts while the store cannot commit: a start it cannot record
 * would wait in memory with its card, to no one's gain. */
static void schedule(gf_server *self)
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
            send_kill_mode(self, sj, GF_KILL_RECALL, why);
            set_reason(&sj->job, "moving to card %d, free before card %d", d.cards[0], d.from);
            GF_DEBUG("job %llu recalled from card %d for card %d", (unsigned long long)d.id,
                     d.from, d.cards[0]);
        } else {
            set_reason(&sj->job, "%s", d.reason);
            finish(self, sj, GF_STATE_FAILED);
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
        set_reason(&sj->job, "next on card %d, after job %llu", d.cards[0],
                   (unsigned long long)d.after);
    }
    if (changed)
        notify_waiters(self);
}

/* -------------------------------------------------------------- replies */

/* A copy of a job for a reply, with its waiting reason filled in. */
static void job_for_reply(gf_server *self, const gf_sched_job *sj, gf_job *out, bool with_env)
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
            wk *w = wk_by_device(self, (int)sj->wait_arg);
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

/* A job read back from the store: a reason recorded before reasons were
 * escaped may hold bytes that are not UTF-8; escaped now, as replies need. */
static void stored_reason(gf_job *j)
{
    if (j->reason && !gf_utf8_valid(j->reason, strlen(j->reason))) {
        char *r = gf_utf8_escape_dup(j->reason);
        free(j->reason);
        j->reason = r;
    }
}

/* A copy of job id for a reply: from memory while it is live, else (ended
 * and retired) from the store. Returns 0 or GF_ENOENT. */
static int lookup(gf_server *self, uint64_t id, gf_job *out, bool with_env)
{
    gf_sched_job *sj = gf_sched_get(self->sched, id);
    if (sj) {
        job_for_reply(self, sj, out, with_env);
        return 0;
    }
    gf_job_init(out);
    if (id == 0 || gf_store_get(self->store, id, out) != 0) {
        gf_job_clear(out);
        return GF_ENOENT;
    }
    stored_reason(out);
    if (!with_env)
        gf_job_spec_drop_env(&out->spec);
    return 0;
}

/* Whether job id exists: live, retired, or ended before this broker
 * started. The last kind is read back from the store once and its final
 * state noted, so that --after can judge it and the next question is
 * answered from memory. */
static bool known(gf_server *self, uint64_t id)
{
    gf_job_state st;
    if (gf_sched_get(self->sched, id) || gf_sched_final(self->sched, id, &st))
        return true;
    gf_job j;
    if (lookup(self, id, &j, false) != 0)
        return false;
    if (ended(j.state))
        gf_sched_note_final(self->sched, id, j.state);
    gf_job_clear(&j);
    return true;
}

static void reply_jobs(gf_server *self, const gf_peer *peer, uint64_t *ids, size_t n,
                       bool with_env)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = gf_calloc(n ? n : 1, sizeof(gf_job));
    bool held = false;   /* an end the store does not have yet is not told before it has it */
    for (size_t i = 0; i < n; i++) {
        gf_sched_job *sj = gf_sched_get(self->sched, ids[i]);
        held |= sj && sj->dirty;
        if (lookup(self, ids[i], &m.jobs[m.n_jobs], with_env) == 0)
            m.n_jobs++;
    }
    post_as(self, self->clients, peer, &m, held);
}

/* Whether all the waiter's jobs ended. An end is final (a job out of
 * memory ended too), so the walk resumes where the last one stopped: a
 * wait for a batch of N costs O(N) over all its checks, not O(N) each. */
static bool all_ended(gf_server *self, waiter *w)
{
    for (; w->ended < w->n; w->ended++) {
        gf_sched_job *sj = gf_sched_get(self->sched, w->ids[w->ended]);
        if (sj && !ended(sj->job.state))
            return false;
    }
    return true;
}

static void notify_waiters(gf_server *self)
{
    uint64_t now = gf_now_ms();
    waiter **pp = &self->waiters;
    while (*pp) {
        waiter *w = *pp;
        bool done = all_ended(self, w);
        if (done || (w->deadline && now >= w->deadline)) {
            reply_jobs(self, &w->peer, w->ids, w->n, false);
            *pp = w->next;
            free(w->ids);
            free(w);
        } else {
            pp = &w->next;
        }
    }
}

/* ------------------------------------------------------- client requests */

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
    if (sp->kind == GF_JOB_DIARIZE) {
        int rc = check_diar(sp, why, len);
        if (rc)
            return rc;
    } else if (sp->diar) {
        snprintf(why, len, "a command job with diarize parameters");
        return GF_EINVAL;
    }
    if (sp->req == GF_REQ_GPU && !wk_by_device(self, sp->gpu)) {
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
    for (size_t i = 0; i < sp->n_after; i++)
        if (!known(self, sp->after[i])) {
            snprintf(why, len, "--after: no job %llu", (unsigned long long)sp->after[i]);
            return GF_ENOENT;
        }
    return 0;
}

static void on_submit(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    if (self->stopping) {
        post_error(self, self->clients, peer, GF_ESTATE, "gpuflockd is shutting down");
        return;
    }
    if (!peer->has_cred) {
        post_error(self, self->clients, peer, GF_EPERM,
                   "submit needs a local ipc:// connection (the user is learnt from it)");
        return;
    }
    if (self->euid != 0 && peer->uid != self->euid) {
        post_error(self, self->clients, peer, GF_EPERM,
                   "this gpuflockd runs as uid %u and cannot run jobs as uid %u",
                   (unsigned)self->euid, peer->uid);
        return;
    }
    char why[256];
    int rc = check_spec(self, &req->spec, why, sizeof(why));
    if (rc) {
        post_error(self, self->clients, peer, rc, "submit: %s", why);
        return;
    }
    size_t n = req->n_commands ? req->n_commands : req->array ? req->array : 1;
    if (n > GF_PROTO_MAX_BATCH) {
        post_error(self, self->clients, peer, GF_ETOOBIG, "submit: %zu jobs in one call", n);
        return;
    }
    if (self->behind || self->turn_failed) {
        char text[768];
        rc = refusal(self, "submit", text, sizeof(text));
        post_error(self, self->clients, peer, rc, "%s", text);
        return;
    }
    char *user = gf_users_name(self->users, peer->uid, peer->gid);
    self->need_sync = true;
    gf_msg rep;
    memset(&rep, 0, sizeof(rep));
    rep.op = GF_OP_IDS;
    rep.ids = gf_calloc(n, sizeof(uint64_t));
    tx(self);
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
            write_failed(self, rc);   /* the turn fails: this reply becomes an error */
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
        push_id(&self->fresh, &self->n_fresh, &self->cap_fresh, sj->job.id);
    }
    free(user);
    post(self, self->clients, peer, &rep);
}

/* Ended jobs `queue --all` lists (the most recent); `show ID` reaches any. */
#define GF_QUEUE_HISTORY 10000

static int by_job_id(const void *a, const void *b)
{
    uint64_t x = ((const gf_job *)a)->id, y = ((const gf_job *)b)->id;
    return x < y ? -1 : x > y;
}

/* The live jobs from memory; with --all also the GF_QUEUE_HISTORY most
 * recent ended ones, from the store. In id order. */
static void on_queue(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_job *old = NULL;
    size_t n_old = 0;
    if (req->all && gf_store_load_ended(self->store, GF_QUEUE_HISTORY, &old, &n_old) != 0) {
        post_error(self, self->clients, peer, GF_EIO, "queue --all: the job store failed");
        return;
    }
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    size_t pos = 0, cap = 64;
    m.jobs = gf_calloc(cap, sizeof(gf_job));
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos))) {
        if (!req->all && ended(sj->job.state))   /* ended this turn, not yet retired */
            continue;
        if (m.n_jobs == cap) {
            cap *= 2;
            m.jobs = gf_realloc(m.jobs, cap * sizeof(gf_job));
        }
        job_for_reply(self, sj, &m.jobs[m.n_jobs++], false);
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
        gf_job_spec_drop_env(&old[i].spec);
        stored_reason(&old[i]);
        m.jobs[m.n_jobs++] = old[i];
    }
    free(old);
    qsort(m.jobs, m.n_jobs, sizeof(gf_job), by_job_id);
    while (m.n_jobs > GF_PROTO_MAX_JOBS)
        gf_job_clear(&m.jobs[--m.n_jobs]);
    post_free(self, self->clients, peer, &m);
}

static void on_show(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = gf_calloc(1, sizeof(gf_job));
    if (lookup(self, req->id, &m.jobs[0], true) != 0) {
        free(m.jobs);
        post_error(self, self->clients, peer, GF_ENOENT, "no job %llu",
                   (unsigned long long)req->id);
        return;
    }
    m.n_jobs = 1;
    /* the environment only to its owner (and root) */
    if (!peer->has_cred || (peer->uid != 0 && peer->uid != m.jobs[0].uid))
        gf_job_spec_drop_env(&m.jobs[0].spec);
    post_free(self, self->clients, peer, &m);
}

static void on_wait(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    for (size_t i = 0; i < req->n_ids; i++)
        if (!known(self, req->ids[i])) {
            post_error(self, self->clients, peer, GF_ENOENT, "no job %llu",
                       (unsigned long long)req->ids[i]);
            return;
        }
    waiter *w = gf_calloc(1, sizeof(*w));
    w->peer = *peer;
    w->ids = req->ids;
    w->n = req->n_ids;
    if (all_ended(self, w)) {
        reply_jobs(self, peer, req->ids, req->n_ids, false);
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
        if (lookup(self, id, &j, false) != 0) {
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

static void on_cancel(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_CODES;
    m.codes = gf_calloc(req->n_ids ? req->n_ids : 1, sizeof(int32_t));
    m.n_codes = req->n_ids;
    if (self->behind || self->turn_failed) {
        /* a cancel is acknowledged once recorded, and cannot be now; the
         * job's owner can still signal its processes */
        gf_msg_clear(&m);
        char text[768];
        int rc = refusal(self, "cancel", text, sizeof(text));
        post_error(self, self->clients, peer, rc, "%s", text);
        return;
    }
    self->need_sync = true;
    for (size_t i = 0; i < req->n_ids; i++) {
        gf_sched_job *sj = owned_job(self, peer, req->ids[i], &m.codes[i]);
        if (!sj)
            continue;
        gf_job *j = &sj->job;
        char *who = gf_users_name(self->users, peer->uid, peer->gid);
        if (j->state == GF_STATE_PENDING) {
            gf_sched_unqueue(self->sched, j->id);
            set_reason(j, "cancelled by %s", who);
            finish(self, sj, GF_STATE_CANCELLED);
        } else if (j->state == GF_STATE_RUNNING && req->checkpoint && gf_sched_yieldable(sj) &&
                   sj->started && !sj->cancel_asked) {
            /* stop now, keep the progress: it checkpoints and waits, held */
            char why[96];
            snprintf(why, sizeof why, "held by %s (cancel --checkpoint)", who);
            sj->hold_after = true;
            sj->hold_by = peer->uid;
            ask_yield(self, sj, false, why);
        } else if (j->state == GF_STATE_RUNNING) {
            if (!sj->cancel_asked) {
                sj->cancel_asked = true;
                set_reason(j, "cancelled by %s", who);
                send_kill(self, sj, "cancelled");
                if (sj->worker_card < 0 || !wk_by_device(self, sj->worker_card)->ready)
                    lost_job(self, sj, "cancelled while its worker was away");
            }
        } else {
            m.codes[i] = GF_ESTATE;
        }
        free(who);
    }
    post(self, self->clients, peer, &m);
    notify_waiters(self);
}

/* ------------------------------------------------- the operator's hands */

/* A change to some jobs or cards cannot be recorded now: refused. */
static bool refused(gf_server *self, const gf_peer *peer, const char *op)
{
    if (!self->behind && !self->turn_failed)
        return false;
    char text[768];
    int rc = refusal(self, op, text, sizeof(text));
    post_error(self, self->clients, peer, rc, "%s", text);
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
            send_kill_mode(self, sj, GF_KILL_RECALL, "held");
            persist(self, j);
        } else if (req->op == GF_OP_HOLD || req->op == GF_OP_RELEASE) {
            rc = gf_sched_set_held(self->sched, j->id, req->op == GF_OP_HOLD, peer->uid);
            if (!rc) {
                set_reason(j, req->op == GF_OP_HOLD ? "held by %s" : "released by %s", who);
                persist(self, j);
            }
        } else if (j->state != GF_STATE_RUNNING || sj->cancel_asked) {
            rc = GF_ESTATE;
        } else if (!sj->yield_asked) {
            char why[96];
            snprintf(why, sizeof why, "requeued by %s", who);
            ask_yield(self, sj, true, why);
        }
        m.codes[i] = rc;
    }
    free(who);
    post(self, self->clients, peer, &m);
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
            ask_yield(self, sj, false, why);
    }
    return n;
}

/* drain CARD [reason] / resume CARD: root only; kept in the store. */
static void on_card_verb(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    const char *op = gf_proto_op_name(req->op);
    if (!peer->has_cred || peer->uid != 0) {
        post_error(self, self->clients, peer, GF_EPERM, "%s: only root may %s a card", op, op);
        return;
    }
    wk *w = wk_by_device(self, req->device);
    if (!w) {
        post_error(self, self->clients, peer, GF_ENOENT, "%s: no card %d is configured", op,
                   req->device);
        return;
    }
    if (req->message && strlen(req->message) > GF_PROTO_MAX_NAME) {
        post_error(self, self->clients, peer, GF_EINVAL, "%s: the reason is longer than %u bytes",
                   op, GF_PROTO_MAX_NAME);
        return;
    }
    if (refused(self, peer, op))
        return;
    self->need_sync = true;
    bool drain = req->op == GF_OP_DRAIN;
    free(w->drain_reason);
    w->drain_reason = drain ? gf_utf8_escape_dup(req->message ? req->message : "") : NULL;
    gf_sched_card_drain(self->sched, w->device, drain);
    persist_drains(self);
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
    post(self, self->clients, peer, &m);
}

static void on_logs(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    gf_job j;
    if (lookup(self, req->id, &j, false) != 0) {
        post_error(self, self->clients, peer, GF_ENOENT, "no job %llu",
                   (unsigned long long)req->id);
        return;
    }
    if (!peer->has_cred || (peer->uid != 0 && peer->uid != j.uid)) {
        post_error(self, self->clients, peer, GF_EPERM, "job %llu is not yours",
                   (unsigned long long)req->id);
        gf_job_clear(&j);
        return;
    }
    bool over = ended(j.state);
    const char *path = req->stream == GF_STREAM_ERR ? j.err_path : j.out_path;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_LOG;
    m.offset = req->offset;
    m.data = gf_malloc(LOG_CHUNK);
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        ssize_t got = pread(fd, m.data, LOG_CHUNK, (off_t)req->offset);
        if (got > 0) {
            m.data_len = (size_t)got;
            m.offset += (uint64_t)got;
        }
        close(fd);
    }
    m.eof = over && m.data_len == 0;
    post_free(self, self->clients, peer, &m);
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
    post_free(self, self->clients, peer, &m);
}

static void on_client(gf_server *self)
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
                post_error(self, self->clients, &peer, rc, "%s", err);
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
        default:
            post_error(self, self->clients, &peer, GF_EPROTO,
                       "operation '%s' is not a client request", gf_proto_op_name(m.op));
        }
        gf_msg_clear(&m);
    }
}

/* ------------------------------------------------------- worker messages */

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
    wk *w = wk_by_device(self, m->device);
    if (!w) {
        post_error(self, self->workers, peer, GF_EINVAL, "no card %d is configured", m->device);
        return;
    }
    wk *old = wk_by_peer(self, peer);
    if (old && old != w)
        worker_dead(self, old, "re-registered for another card", false);
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
                lost_job(self, sj, "its worker re-registered without it");
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
                lost_job(self, sj, "its worker came back without it after a broker restart");
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
            set_reason(&sj->job, NULL);
            persist(self, &sj->job);
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
                send_kill(self, sj, "cancelled");
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
            post_free(self, self->workers, peer, &k);
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
        set_reason(&sj->job, NULL);
        if (sj->job.spec.time_limit_s > 0)
            sj->deadline_ms = gf_now_ms() + (uint64_t)sj->job.spec.time_limit_s * 1000;
        persist(self, &sj->job);
    } else if (m->message && !sj->started) {
        /* e.g. "waiting for card 0: held outside gpuflock by pid 4242 (flock ...)" */
        set_reason(&sj->job, "%s", m->message);
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
    if (m->outcome == GF_OUTCOME_RECALLED && !cancelled) {
        if (sj->recall_to < 0) {      /* asked to yield before it had started */
            back_to_queue(self, sj, sj->yield_why[0] ? sj->yield_why : "handed back unstarted");
            notify_waiters(self);
            return;
        }
        int to = sj->recall_to;
        j->yields++;
        gf_sched_recalled(self->sched, j->id, true);
        set_reason(j, "moved to card %d (free before card %d)", to, w->device);
        persist(self, j);
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
        back_to_queue(self, sj, why);
        notify_waiters(self);
        return;
    }
    gf_job_state st;
    if (cancelled) {
        st = GF_STATE_CANCELLED;
    } else if (timed_out) {
        st = GF_STATE_FAILED;
        set_reason(j, "time limit of %lld s reached", (long long)j->spec.time_limit_s);
    } else if (m->term_signal == 0 && m->exit_status == 0) {
        st = GF_STATE_DONE;
        set_reason(j, NULL);
    } else {
        st = GF_STATE_FAILED;
        if (m->message)
            set_reason(j, "%s", m->message);
        else if (m->term_signal)
            set_reason(j, "killed by signal %d (%s)", m->term_signal, strsignal(m->term_signal));
        else
            set_reason(j, "exit status %d", m->exit_status);
    }
    j->ended_ms = m->ended_ms;
    finish(self, sj, st);
    GF_DEBUG("job %llu %s", (unsigned long long)j->id, gf_job_state_name(st));
    notify_waiters(self);
}

static void on_worker(gf_server *self)
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
                post_error(self, self->workers, &peer, rc, "%s", err);
            continue;
        }
        /* Only root or the broker's own user may act as a worker: a worker
         * gets other users' commands and environments. On ipc:// the kernel
         * names the peer; one it could not name is refused too (on tcp://
         * the CURVE key is what admits a worker). */
        bool allowed = peer.has_cred ? peer.uid == 0 || peer.uid == self->euid
                                     : !gf_config_ipc_path(self->cfg->worker_endpoint);
        if (!allowed) {
            post_error(self, self->workers, &peer, GF_EPERM, "uid %u may not act as a worker",
                       peer.uid);
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
                post_free(self, self->workers, &peer, &d);
            }
        } else {
            w->last_seen = gf_now_ms();
            switch (m.op) {
            case GF_OP_HEARTBEAT: break;
            case GF_OP_PROGRESS: on_progress(self, w, &m); break;
            case GF_OP_RESULT: on_result(self, w, &m); break;
            case GF_OP_DISCONNECT: worker_dead(self, w, "disconnected", false); break;
            default:
                post_error(self, self->workers, &peer, GF_EPROTO,
                           "operation '%s' is not a worker message", gf_proto_op_name(m.op));
            }
        }
        gf_msg_clear(&m);
    }
}

/* --------------------------------------------------------------- timers */

static bool worker_pidfile_held(gf_server *self, int device)
{
    char *path = gf_strfmt("%s/worker%d.pid", self->cfg->run_dir, device);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

static void spawn_worker(gf_server *self, wk *w)
{
    char dev[16];
    snprintf(dev, sizeof(dev), "%d", w->device);
    pid_t pid = fork();
    if (pid < 0) {
        GF_ERROR("cannot start a worker for card %d: fork: %s", w->device, strerror(errno));
        return;
    }
    if (pid == 0) {
        /* its own session: a broker crash or a ^C at the broker's terminal
         * must not take the worker and its jobs with it */
        setsid();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (self->cfg->path)
            execl(self->worker_program, "gpuflock-worker", "--device", dev, "--config",
                  self->cfg->path, (char *)NULL);
        else
            execl(self->worker_program, "gpuflock-worker", "--device", dev, (char *)NULL);
        fprintf(stderr, "gpuflockd: cannot run %s: %s\n", self->worker_program, strerror(errno));
        _exit(127);
    }
    w->child = pid;
    w->child_started = gf_now_ms();
    GF_INFO("started worker for card %d (pid %d)", w->device, (int)pid);
}

static void supervise(gf_server *self, uint64_t now)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (size_t i = 0; i < self->n_wks; i++) {
            wk *w = &self->wks[i];
            if (w->child != pid)
                continue;
            w->child = 0;
            if (WIFSIGNALED(status))
                GF_WARN("worker of card %d (pid %d) killed by signal %d", w->device, (int)pid,
                        WTERMSIG(status));
            else
                GF_WARN("worker of card %d (pid %d) exited with status %d", w->device, (int)pid,
                        WEXITSTATUS(status));
            if (w->ready)
                worker_dead(self, w, "exited", false);
            /* backoff: doubles while workers die young, resets after a
             * minute of life */
            bool young = now - w->child_started < 60000;
            w->backoff_ms = !young ? BACKOFF_MIN_MS
                            : w->backoff_ms ? (w->backoff_ms * 2 > BACKOFF_MAX_MS
                                                   ? BACKOFF_MAX_MS : w->backoff_ms * 2)
                                            : BACKOFF_MIN_MS;
            w->spawn_at = now + (uint64_t)w->backoff_ms;
        }
    }
    if (!self->cfg->spawn_workers || self->stopping)
        return;
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        if (w->child > 0 || w->ready || now < w->spawn_at)
            continue;
        /* a worker left from an earlier broker still holds its pid file:
         * it will reconnect; look again later */
        if (worker_pidfile_held(self, w->device)) {
            w->spawn_at = now + 1000;
            continue;
        }
        spawn_worker(self, w);
    }
}

#define TIMER_GRAIN_MS 50

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
            ask_yield(self, gf_sched_get(self->sched, ids[i]), false, why);
    }
}

static void timers(gf_server *self, uint64_t now)
{
    uint64_t interval = (uint64_t)self->cfg->heartbeat_interval_ms;
    uint64_t dead_after = interval * (uint64_t)self->cfg->heartbeat_liveness;
    if (now >= self->next_beat) {
        self->next_beat = now + interval;
        sync_store(self);   /* broker.sync_acks false: power loss costs at most this interval */
        for (size_t i = 0; i < self->n_wks; i++) {
            wk *w = &self->wks[i];
            if (!w->ready)
                continue;
            if (now - w->last_seen > dead_after) {
                worker_dead(self, w, "silent (missed heartbeats)", true);
                continue;
            }
            gf_msg m;
            memset(&m, 0, sizeof(m));
            m.op = GF_OP_HEARTBEAT;
            post_free(self, self->workers, &w->peer, &m);
        }
    }
    /* the jobs' own timers at TIMER_GRAIN_MS: the walk covers every live
     * job, thousands when a big batch waits, and every turn would be much */
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
            ask_yield(self, sj, false, why);
        }
        if (sj->deadline_ms && now >= sj->deadline_ms && !sj->timed_out && !sj->yield_asked) {
            sj->timed_out = true;
            GF_INFO("job %llu: time limit of %lld s reached", (unsigned long long)sj->job.id,
                    (long long)sj->job.spec.time_limit_s);
            send_kill(self, sj, "time limit reached");
        }
        if (sj->kill_at_ms && now >= sj->kill_at_ms) {
            /* its worker did not report the job's end after a kill: the
             * worker is broken; killing it kills the job (PDEATHSIG)
             * before the job can be requeued */
            wk *w = wk_by_device(self, sj->worker_card);
            if (w && w->ready)
                worker_dead(self, w, "did not stop a job after a kill", true);
            else
                lost_job(self, sj, "did not stop after a kill");
        }
        else if (reclaim_over && sj->unclaimed)
            lost_job(self, sj, "not reclaimed after a broker restart");
    }
    if (reclaim_over)
        self->reclaim_until = 0;
    if (scan)
        yields_due(self, now);
    supervise(self, now);
    notify_waiters(self);
}

/* ---------------------------------------------------------------- setup */

/* Give an ipc socket file its mode and, for the client socket, the
 * configured owner and group: 0, or GF_ECONFIG after logging. */
static int socket_access(gf_server *self, const char *path, mode_t mode, bool client)
{
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
    if ((uid != (uid_t)-1 || gid != (gid_t)-1) && chown(path, uid, gid) != 0) {
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
        wk *w = wk_by_device(self, cards[i]);
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
        live += !ended(jobs[i].state);
        running += run;
        int cards[GF_PROTO_MAX_CARDS];
        size_t nc = jobs[i].n_cards;
        for (size_t c = 0; c < nc; c++)
            cards[c] = jobs[i].cards[c];
        uint64_t id = jobs[i].id;
        stored_reason(&jobs[i]);
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
            known(self, sj->job.spec.after[a]);
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
    self->ctx = zmq_ctx_new();
    self->clients = bind_router(self, cfg->client_endpoint, true);
    if (!self->clients)
        goto fail;
    self->workers = bind_router(self, cfg->worker_endpoint, false);
    if (!self->workers)
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

/* ------------------------------------------------------------------ run */

static size_t running_jobs(gf_server *self)
{
    size_t pos = 0, n = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        n += sj->job.state == GF_STATE_RUNNING;
    return n;
}

/* Stop: local workers get SIGTERM (they stop their jobs), others are told
 * to disconnect; jobs still running go back to pending for the next start. */
static void shutdown_workers(gf_server *self)
{
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        if (w->ready && w->child <= 0) {
            gf_msg d;
            memset(&d, 0, sizeof(d));
            d.op = GF_OP_DISCONNECT;
            d.message = gf_strdup("gpuflockd is shutting down");
            post_free(self, self->workers, &w->peer, &d);
        }
        if (w->child > 0)
            kill(w->child, SIGTERM);
    }
    size_t pos = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        if (sj->job.state == GF_STATE_RUNNING) {
            gf_sched_release(self->sched, sj->job.id, false);
            sj->job.state = GF_STATE_PENDING;
            set_reason(&sj->job, "requeued: gpuflockd shut down while it ran");
            persist(self, &sj->job);
        }
    self->next_retry = 0;   /* a last try, if the store is behind */
    end_turn(self);
    if (self->behind)
        GF_ERROR("stopping with %zu job changes the job store could not take (%s): the next "
                 "gpuflockd finds those jobs as the store last recorded them (a job that ended "
                 "meanwhile may run again)", self->n_dirty, self->behind_why);
    /* wait a little for our children, then make sure */
    uint64_t until = gf_now_ms() + (uint64_t)self->cfg->kill_grace_s * 1000 + 1000;
    for (;;) {
        bool any = false;
        for (size_t i = 0; i < self->n_wks; i++) {
            wk *w = &self->wks[i];
            if (w->child > 0 && waitpid(w->child, NULL, WNOHANG) == w->child)
                w->child = 0;
            any |= w->child > 0;
        }
        if (!any)
            break;
        if (gf_now_ms() > until) {
            for (size_t i = 0; i < self->n_wks; i++)
                if (self->wks[i].child > 0) {
                    kill(self->wks[i].child, SIGKILL);
                    waitpid(self->wks[i].child, NULL, 0);
                    self->wks[i].child = 0;
                }
            break;
        }
        usleep(20000);
    }
}

int gf_server_run(gf_server *self, volatile sig_atomic_t *stop)
{
    GF_INFO("gpuflockd serving %s (clients) and %s (workers), %zu cards", self->cfg->client_endpoint,
            self->cfg->worker_endpoint, self->n_wks);
    supervise(self, gf_now_ms());
    for (;;) {
        if (*stop && !self->stopping) {
            self->stopping = true;
            self->stop_deadline = gf_now_ms() + (uint64_t)self->cfg->shutdown_deadline_s * 1000;
            GF_INFO("stopping: no new jobs; %zu running get up to %d s", running_jobs(self),
                    self->cfg->shutdown_deadline_s);
        }
        if (self->stopping && (running_jobs(self) == 0 || gf_now_ms() >= self->stop_deadline))
            break;
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
            on_worker(self);
        if (rc > 0 && (items[0].revents & ZMQ_POLLIN))
            on_client(self);
        phase(self, PH_MESSAGES, &t);
        timers(self, gf_now_ms());
        schedule(self);
        phase(self, PH_SCHEDULE, &t);
        end_turn(self);
        turn_trace(self);
        if (self->sync_failed) {
            GF_ERROR("the job store's WAL could not be synced: stopping without acknowledging "
                     "more");
            return GF_EIO;
        }
    }
    shutdown_workers(self);
    GF_INFO("stopped");
    return 0;
}
