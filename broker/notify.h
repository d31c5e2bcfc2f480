/* notify.h — `submit --notify CMD`: CMD run by the broker once the job has
 * ended, as its submitter, with the job's id, state and exit status in
 * its environment (task-spooler's TS_ONFINISH, Slurm's strigger).
 *
 * The broker runs it, not the worker: a job also ends where no worker
 * runs it (cancelled while pending, a dependency failed, its worker died
 * for good), and the broker is the one place that sees every end. It
 * runs after the job's end is in the store, at most once per end.
 *
 * As whom. The broker forks, and the child takes the submitter's
 * supplementary groups, gid and uid (the same the job got, broker/users.h)
 * before it runs anything of the user's; a child that cannot take them
 * runs nothing. Only root's own jobs notify as root; a broker that does not
 * run as root only has jobs of its own user. The child gets default
 * signal dispositions and an empty mask, a session and process group of
 * its own, /dev/null on stdin, stdout and stderr (its output is discarded:
 * redirect inside CMD to keep it), no descriptor of the broker's, the
 * descriptor limit the broker was started with, umask 022, and an
 * environment of its own (gf_notify_env), nothing of the broker's. It runs
 * `/bin/sh -c CMD gpuflock-notify ID STATE EXIT` in the job's directory
 * (else the user's home, else /). The job's name and reason reach it only
 * as variables, never inside the command's text.
 *
 * Nothing waits for it. At most GF_NOTIFY_RUNNING run at once (and
 * GF_NOTIFY_PER_USER of one user), the rest queue (up to GF_NOTIFY_QUEUED;
 * past that, ends are not notified, and the log says so); each may run
 * GF_NOTIFY_TIMEOUT_S seconds, then its whole process group is killed
 * (SIGKILL), and when it ends, what it left running in its group is killed
 * too. Its own SIGALRM at the limit ends it where no broker is left to. */
#ifndef GF_NOTIFY_H
#define GF_NOTIFY_H

#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#define GF_NOTIFY_TIMEOUT_S 60
#define GF_NOTIFY_RUNNING 16
#define GF_NOTIFY_PER_USER 4
#define GF_NOTIFY_QUEUED 10000
#define GF_NOTIFY_SPAWNS_PER_TURN 4

typedef struct gf_notify gf_notify;

/* What one notification runs with: the ended job and its submitter. */
typedef struct {
    const gf_job *job;        /* ended, with spec.notify set */
    const char *user;         /* the submitter's name */
    const char *home;         /* their home folder, NULL: unknown */
    const uint32_t *groups;   /* their supplementary groups (at least the gid) */
    size_t n_groups;
} gf_notify_run;

/* Notifications that may each run timeout_s seconds (GF_NOTIFY_TIMEOUT_S
 * in the broker). */
gf_notify *gf_notify_new(int timeout_s);

/* Free; notifications still running are left to their time limit (their
 * SIGALRM); safe with NULL and twice. */
void gf_notify_destroy(gf_notify **self_p);

/* Job id of user uid, whose spec has a notify command, has ended: queued.
 * Returns false when the queue is full (the end is not notified). */
bool gf_notify_queue(gf_notify *self, uint64_t id, uint32_t uid);

/* The next queued job that may start now (the limits above), or 0: its
 * id, taken off the queue. now_ms: monotonic. The caller spawns it
 * (gf_notify_spawn) or drops it; ready(id) says whether its end is in the
 * store yet (those not ready stay queued, in their place). */
uint64_t gf_notify_next(gf_notify *self, bool (*ready)(void *arg, uint64_t id), void *arg);

/* Fork the child for r (see the top of this file). nofile: the descriptor
 * limit to give it (0: as it is). Returns its pid, or -1 after logging. */
pid_t gf_notify_spawn(gf_notify *self, const gf_notify_run *r, rlim_t nofile, uint64_t now_ms);

/* Reap what ended (their groups' leftovers killed first, while the leader
 * is still a zombie, so that the group's number cannot have been reused),
 * kill what ran past its time. Call every turn. */
void gf_notify_tick(gf_notify *self, uint64_t now_ms);

/* How many run now / wait. */
size_t gf_notify_running(const gf_notify *self);
size_t gf_notify_waiting(const gf_notify *self);

/* The child's environment for r: a new NULL-terminated array (free each
 * and the array). PATH, HOME, USER, LOGNAME, SHELL, and GPUFLOCK_JOB_ID,
 * _STATE (done, failed, cancelled), _EXIT (its exit status, "" for none),
 * _SIGNAL (0: none), and where the job has them _NAME, _REASON, _STDOUT,
 * _STDERR. */
char **gf_notify_env(const gf_notify_run *r);

/* The child's argv: sh -c CMD gpuflock-notify ID STATE EXIT (new, as
 * gf_notify_env). */
char **gf_notify_argv(const gf_job *j);

#endif
