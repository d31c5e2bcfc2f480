/* runner_impl.h — the inside of a run (worker/runner.h), shared by the
 * two files that make it: runner.c (its record, locks and start) and
 * runner_supervise.c (signals, reaping, the result). Nothing else
 * includes it. */
#ifndef GF_RUNNER_IMPL_H
#define GF_RUNNER_IMPL_H

#include "worker/runner.h"

#include "worker/cgroup.h"

#include "common/lock.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

struct gf_run {
    gf_msg job;               /* the "job" message, owned */
    char *bench_lock;         /* --proof: the box-wide lock file */
    uid_t lock_owner;         /* lock_owner: trusted to own lock folders */
    char **scrub;             /* --proof: variables to remove */
    size_t n_scrub;
    gf_lock **locks;          /* card locks, ascending cards, then the bench lock */
    size_t n_locks;
    bool locked;              /* every lock is held */
    pid_t pid;                /* job process (group leader), 0 before start */
    int64_t started_ms;       /* wall clock at fork */
    char **scrubbed;          /* variables actually removed */
    size_t n_scrubbed;
    gf_diar_pool *pool;       /* diarize: pipelines, borrowed from the agent */
    int wake_fd;              /* diarize: the agent's eventfd, -1 none */
    gf_djob *djob;            /* diarize: the running thread */
    gf_spare *spare;          /* a guard started ahead, borrowed from the agent, or NULL */
    gf_cgroup *cgroups;       /* the worker's cgroup folder, borrowed; NULL: process groups */
    gf_jobcg *cg;             /* the job's cgroup, from its start until none of it is left */
    long long spool_cap;      /* spool.max_bytes: stdout and stderr kept, each; 0: all */
    int report;               /* read end of the guard's report pipe (guard/request.h), -1: none */
    bool guard_gone;          /* the guard was reaped: status and usage below */
    int guard_status;         /* its wait status */
    struct rusage guard_ru;   /* its usage, with the command's */
    int64_t guard_ended_ms;   /* wall clock when it was reaped */
    bool sent_kill;           /* we sent SIGKILL (time limit, cancel, stop) */
    int left;                 /* processes of the job still there when the guard was gone */
    bool draining;            /* those were killed; their end not seen yet */
    bool have_report;         /* the guard wrote its report: it ended with its command */
    int64_t cut[2];           /* bytes of stdout, stderr discarded past spool_cap */
    char *ckdir;              /* --yieldable: $GPUFLOCK_CHECKPOINT_DIR, NULL: none */
    bool yielding;            /* asked to yield: sent the job its yield signal */
    bool yield_killed;        /* ... and killed it when the grace ran out */
};

/* Close our lock descriptors: held ones are released unless a started job
 * inherited them (then only our copy closes and the job keeps the card). */
void gf_run_close_locks(gf_run *self);

#endif
