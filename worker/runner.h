/* runner.h — one run of a command job on a worker.
 *
 * The worker takes the job's card locks (flock(2), all or none, ascending;
 * plus the bench lock for --proof) with non-blocking tries, so its event
 * loop never blocks; once they are had it starts the job under its guard
 * (a guard started ahead, worker/spare.h, or one spawned for it), which
 * gets the lock descriptors (as under flock(1)); the worker then closes its own
 * copies, so the card stays locked exactly while some process of the job
 * lives. The job runs in its own process group and, where the worker has
 * a cgroup folder (worker/cgroup.h), in a cgroup of its own, as the
 * submitter (uid, gid, groups), in the submitter's directory and
 * environment plus CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER,
 * GPUFLOCK_DEVICE, GPUFLOCK_LOCK_FILE, GPUFLOCK_JOB_ID (and
 * GPUFLOCK_ARRAY_INDEX), with stdout and stderr in its spool files (each
 * cut at spool.max_bytes by the guard), and dies with the worker
 * (PR_SET_PDEATHSIG).
 *
 * The job is over when its guard ends, however it ends (the command ended,
 * or someone killed the guard): what is left of the job is killed (its
 * cgroup; without one, its process group, which a process that called
 * setsid has left), and the result goes out once none of it is left, so
 * the card is free when the job is recorded as ended. The result: the
 * guard's wait status (the command's exit status or signal), CPU time and
 * peak RSS from wait4, and what the guard reported (guard/request.h): the
 * bytes of output cut, or, when it wrote nothing and ended by a signal the
 * worker did not send, that the guard itself was killed. *
 * A diarize job (spec.kind diarize) takes its lock the same way but runs
 * inside the worker on a thread (worker/diarjob.h), which holds the lock
 * descriptor until it ends: "started" then means the thread runs, the pid
 * is the worker's own, a signal asks the pipeline to stop at the next
 * window, and reap joins the thread. */
#ifndef GF_RUNNER_H
#define GF_RUNNER_H

#include "common/config.h"
#include "net/proto.h"
#include "worker/diarjob.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct gf_run gf_run;

/* A run for a "job" message (deep-copied). scrub: proof.scrub_env;
 * bench_lock: the box-wide lock of --proof jobs. */
gf_run *gf_run_new(const gf_msg *job, const gf_config *cfg);
void gf_run_destroy(gf_run **self_p);

/* Diarize jobs: the pipelines to run them with (borrowed) and an eventfd
 * the job's thread writes when it has progress or ended (-1: none). */
void gf_run_set_diar(gf_run *self, gf_diar_pool *pool, int wake_fd);

/* Command jobs: the agent's guard started ahead (worker/spare.h;
 * borrowed, NULL: none), used when one is waiting. */
typedef struct gf_spare gf_spare;
void gf_run_set_spare(gf_run *self, gf_spare *spare);

/* Command jobs: the worker's cgroup folder (worker/cgroup.h; borrowed,
 * NULL: supervise by process group), where each run gets a cgroup. */
typedef struct gf_cgroup gf_cgroup;
void gf_run_set_cgroups(gf_run *self, gf_cgroup *cgroups);

/* A diarize job's windows done and total; true when they changed since
 * the last call (always false for command jobs). Still answers after
 * gf_run_reap, so the last progress can go out before the result. */
bool gf_run_progress(gf_run *self, int64_t *done, int64_t *total);

uint64_t gf_run_id(const gf_run *self);
int32_t gf_run_attempt(const gf_run *self);

/* Try to take every lock now. Returns 0 (all held), GF_EBUSY (some lock is
 * held elsewhere: `why` says which card and who holds it), or another
 * error (why says what; the job cannot run). */
int gf_run_try_locks(gf_run *self, char *why, size_t len);

/* Start the job (locks held). Returns 0, or an error with why filled (the
 * spool could not be opened, fork failed). Failures inside the child (no
 * such directory or command, setuid refused) end the job with status 126
 * or 127 and a line on its stderr. */
int gf_run_start(gf_run *self, char *why, size_t len);

bool gf_run_started(const gf_run *self);
/* Does the job ask for its cards exclusively? */
bool gf_run_exclusive(const gf_run *self);
/* Do the two jobs name a card in common? */
bool gf_run_shares_card(const gf_run *a, const gf_run *b);
pid_t gf_run_pid(const gf_run *self);
int64_t gf_run_started_ms(const gf_run *self);

/* Reap the job if it ended (non-blocking). Returns true and fills a
 * "result" message (op, id, attempt, exit/signal, times, CPU, peak RSS,
 * statistics, a message when the guard was killed) when it did, which is
 * once its guard has ended and none of its processes is left (those left
 * are killed when the guard is reaped). */
bool gf_run_reap(gf_run *self, gf_msg *result);

/* Has the guard ended while processes of the job are still going (killed,
 * not yet gone)? Then gf_run_reap wants asking again soon. */
bool gf_run_draining(const gf_run *self);

/* Signal every process of the job: its cgroup's, else its process group
 * (no-op before start). */
void gf_run_signal(gf_run *self, int sig);

/* Ask a started job to yield its card (requeue: `gpuflock requeue`, which
 * also stops a job that cannot checkpoint). A diarize job checkpoints at its
 * next batch boundary and ends yielded (returns 0); a --yieldable command
 * job gets its yield signal (returns 1: the caller sends SIGKILL when the
 * grace runs out); any other job is left alone (-1), or with requeue gets
 * SIGTERM (1). The result says "yielded" when the command exited
 * GF_EXIT_CHECKPOINTED or ran out of grace. */
int gf_run_yield(gf_run *self, bool requeue);

/* A result message for a run that never started (cancelled while waiting
 * for its lock, or failed to start): exit -1, with the reason. */
void gf_run_result_unstarted(const gf_run *self, const char *why, gf_msg *result);

#endif
