/* server_int.h — what the broker's rooms share: gpuflockd's state and the
 * turn's primitives.
 *
 * The broker is one loop (server.c) whose turn reads both sockets, runs the
 * timers, schedules, commits and then sends; the rooms around it act on one
 * kind of message or event each: clients.c (client requests and the
 * operator's verbs), workers.c (worker messages and liveness), jobs.c (a
 * job's life from start to end, replies about jobs, waiters), supervise.c
 * (the local worker processes). Internal to broker/: nothing outside it
 * includes this; broker/server.h is the broker's contract.
 *
 * The rules every room keeps: a change to a job goes through
 * gf_server_persist (into the turn's transaction), a message through the
 * outbox (gf_server_post: sent once the turn's changes are committed;
 * gf_server_post_free: sent whatever the store does), never straight to a
 * socket. */
#ifndef GF_SERVER_INT_H
#define GF_SERVER_INT_H

#include "broker/metrics.h"
#include "broker/sched.h"
#include "broker/server.h"
#include "broker/store.h"
#include "broker/users.h"
#include "common/config.h"
#include "net/proto.h"
#include "net/router.h"
#include "net/wire.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define DRAIN_MAX 2000              /* messages per socket per turn */

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

/* What the broker does with ended jobs: retention, purge, notifications
 * (history.c). */
typedef struct gf_history gf_history;

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
    rlim_t nofile_soft;       /* RLIMIT_NOFILE's soft limit we were started with: the
                               * workers get it back (supervise.c) */
    volatile sig_atomic_t *hangup; /* main's SIGHUP flag (gf_server_on_hangup), may be NULL */
    gf_metrics *metrics;      /* counters, and what serves them (metrics.listen, textfile) */
    bool trace;               /* log_level debug: each acknowledging turn's phases */
    bool traced_sync;         /* this turn's end ran an acknowledging sync */
    uint64_t phase_ns[TURN_PHASES];   /* this turn's phases (trace) */
    gf_history *history;      /* retention, purge, notifications; made at first use */
};

/* ---- server.c: the turn, its outbox and its transaction */

/* Append id to the growing array *v (*n used, *cap allocated). */
void gf_server_push_id(uint64_t **v, size_t *n, size_t *cap, uint64_t id);

/* m (taken: *m is zeroed) to peer on sock at the end of the turn; held:
 * only once the turn's changes are committed (gf_server_post), else
 * whatever the store does (gf_server_post_free). */
void gf_server_post_as(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m,
                       bool held);

/* Held: sent once the turn's changes are in the store. */
void gf_server_post(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m);

/* Sent at the end of the turn whatever the store does: heartbeats, errors,
 * answers to reads (queue, show, logs, workers still answer while the
 * store's disk is full). */
void gf_server_post_free(gf_server *self, gf_router *sock, const gf_peer *peer, gf_msg *m);

/* An "error" reply (code, message), sent whatever the store does. */
void gf_server_post_error(gf_server *self, gf_router *sock, const gf_peer *peer, int code,
                          const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* A write of the turn failed: nothing more is written this turn (SQLite
 * may have rolled the transaction back, and later writes would commit on
 * their own); the turn ends rolled back, its changes kept in memory. */
void gf_server_write_failed(gf_server *self, int rc);

/* Open the turn's store transaction unless it is open, a write of the turn
 * failed, or the store is behind. */
void gf_server_tx(gf_server *self);

/* The job changed: into this turn's transaction, and on the list of jobs
 * the store lacks until the turn commits. While the store cannot commit,
 * only on the list: the next try writes every job on it as it is then. */
void gf_server_persist(gf_server *self, const gf_job *job);

/* The drained cards changed: into this turn's transaction (as persist). */
void gf_server_persist_drains(gf_server *self);

/* Why a change cannot be taken now, for the client asking (op: "submit",
 * "cancel"): the store's folder and disk named. */
int gf_server_refusal(gf_server *self, const char *op, char *why, size_t len);

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
void gf_server_end_turn(gf_server *self);

/* ---- jobs.c: a job's life, replies about jobs, waiters */

/* Is s a final state (done, failed, cancelled)? */
bool gf_jobs_ended(gf_job_state s);

/* The reason may quote a worker's message (a holder's command line from
 * /proc, a command that cannot run): bytes that are not UTF-8 are escaped,
 * since the reason goes to clients in msgpack strings. */
void gf_jobs_set_reason(gf_job *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The job ended (ended_ms: the worker's clock when it reported one, else
 * now); it is retired at the end of the turn. */
void gf_jobs_finish(gf_server *self, gf_sched_job *sj, gf_job_state state);

/* The worker of a running job vanished: requeue it or fail it. */
void gf_jobs_lost(gf_server *self, gf_sched_job *sj, const char *why);

/* Ask the worker of a running job to stop it, or (mode) to yield, requeue
 * or hand back a job waiting ahead. */
void gf_jobs_kill_mode(gf_server *self, gf_sched_job *sj, gf_kill_mode mode, const char *why);

/* gf_jobs_kill_mode with GF_KILL_STOP: SIGTERM, SIGKILL after kill_grace_s. */
void gf_jobs_kill(gf_server *self, gf_sched_job *sj, const char *why);

/* Ask a running job to give its card back and come again (why: the reason
 * it will wait with, "yielded to job 12"); requeue: also a job that cannot
 * checkpoint (it is stopped and runs again from its start). */
void gf_jobs_ask_yield(gf_server *self, gf_sched_job *sj, bool requeue, const char *why);

/* A running job goes back to the queue in its place (it yielded, was
 * requeued or recalled): not a failure, so not an attempt. */
void gf_jobs_back_to_queue(gf_server *self, gf_sched_job *sj, const char *why);

/* Nothing starts while the store cannot commit: a start it cannot record
 * would wait in memory with its card, to no one's gain. */
void gf_jobs_schedule(gf_server *self);

/* A copy of a job for a reply, with its waiting reason filled in. */
void gf_jobs_for_reply(gf_server *self, const gf_sched_job *sj, gf_job *out, bool with_env);

/* A job read back from the store: a reason recorded before reasons were
 * escaped may hold bytes that are not UTF-8; escaped now, as replies need. */
void gf_jobs_stored_reason(gf_job *j);

/* A copy of job id for a reply: from memory while it is live, else (ended
 * and retired) from the store. Returns 0 or GF_ENOENT. */
int gf_jobs_lookup(gf_server *self, uint64_t id, gf_job *out, bool with_env);

/* Whether job id exists: live, retired, or ended before this broker
 * started. The last kind is read back from the store once and its final
 * state noted, so that --after can judge it and the next question is
 * answered from memory. */
bool gf_jobs_known(gf_server *self, uint64_t id);

/* A "jobs" reply with the jobs ids[0..n) (environments only with_env), held
 * while one of them has an end the store does not have yet. */
void gf_jobs_reply(gf_server *self, const gf_peer *peer, uint64_t *ids, size_t n, bool with_env);

/* Whether all the waiter's jobs ended. An end is final (a job out of
 * memory ended too), so the walk resumes where the last one stopped: a
 * wait for a batch of N costs O(N) over all its checks, not O(N) each. */
bool gf_jobs_all_ended(gf_server *self, waiter *w);

/* Answer the waiters whose jobs all ended or whose timeout passed. */
void gf_jobs_notify_waiters(gf_server *self);

/* The running jobs' own timers, at TIMER_GRAIN_MS: time limits (a
 * yieldable job checkpoints before its limit), kills not answered, jobs not
 * reclaimed after a restart, yields due. The walk covers every live job,
 * thousands when a big batch waits, and every turn would be much. */
void gf_jobs_timers(gf_server *self, uint64_t now);

/* ---- workers.c: worker messages and liveness */

/* The worker slot of configured card `device`, NULL for none. */
wk *gf_workers_by_device(gf_server *self, int device);

/* A worker is gone (or must go). kill_it: it may still live (silent or
 * replaced): kill the process so its jobs die with it (PDEATHSIG) and no
 * requeued job ever runs beside its old self. */
void gf_workers_dead(gf_server *self, wk *w, const char *why, bool kill_it);

/* Take what waits on the worker socket (up to DRAIN_MAX messages). */
void gf_workers_on_message(gf_server *self);

/* A heartbeat round, every heartbeat_interval_ms: a worker silent for
 * `liveness` intervals is dead, the others get a heartbeat. */
void gf_workers_beat(gf_server *self, uint64_t now);

/* ---- clients.c: client requests */

/* Take what waits on the client socket (up to DRAIN_MAX messages). */
void gf_clients_on_message(gf_server *self);

/* ---- history.c: ended jobs (retention, purge, notifications) */

/* On the turn's timers: a retention pass when one is due (a few rows,
 * docs/operations.md, "History"), notifications reaped, killed past their
 * time, started. */
void gf_history_timers(gf_server *self, uint64_t now);

/* A job ended (gf_jobs_finish): counted; its notify command queued, run
 * once the end is in the store. */
void gf_history_job_ended(gf_server *self, const gf_job *j);

/* The client's `purge`: root only; the jobs ended before its date go in
 * the retention's passes. */
void gf_history_on_purge(gf_server *self, const gf_peer *peer, gf_msg *req);

/* Stop the sweeper (it finishes its batch) and free; safe when none. */
void gf_history_destroy(gf_server *self);

/* ---- supervise.c: the local worker processes */

/* Reap the local workers that ended (their jobs are lost; a restart waits
 * out a backoff) and start those due, unless broker.spawn_workers is false
 * or the broker stops. */
void gf_supervise(gf_server *self, uint64_t now);

/* Raise the soft RLIMIT_NOFILE to the hard one (at most 2^20), keeping the
 * old in nofile_soft: libzmq aborts the broker when its ipc:// listener runs
 * out of descriptors, and any local user can connect. */
void gf_supervise_raise_nofile(gf_server *self);

/* Stop: local workers get SIGTERM (they stop their jobs), others are told
 * to disconnect; jobs still running go back to pending for the next start. */
void gf_supervise_shutdown(gf_server *self);

#endif
