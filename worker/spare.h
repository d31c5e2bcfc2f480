/* spare.h — a job's group leader made ready ahead of the job.
 *
 * Each command job runs under gpuflock-guard (worker/guard/main.c), a
 * static program. Started for its job with posix_spawn, its exec costs
 * about half a millisecond on a small VM (bench/RESULTS.md), on the way
 * from the job's assignment to its start and on the CPU every job needs.
 * So the worker starts one guard per worker as a fork server
 * (`gpuflock-guard PID --serve`) and asks it, at the end of each turn of
 * its loop (gf_spare_fill; the answer is read in a later turn), for a
 * spare: a fork of the server, the
 * worker's own child (CLONE_PARENT), idle in its own process group and
 * bound to die with the worker; where the worker has a cgroup folder
 * (worker/cgroup.h), born inside the cgroup of the job it will run (made
 * ahead; CLONE_INTO_CGROUP), so that a job's start writes no cgroup.procs
 * and makes no cgroup. The next command job is handed to the spare over a
 * unix socket: the identity, directory, command and environment, its
 * output cap, and the spool, report and lock descriptors (SCM_RIGHTS); its
 * cgroup goes to the caller. The job is then waited for, signalled and
 * reaped exactly as one spawned for it.
 * Without a spare ready (no server, or it died), the caller spawns a guard
 * itself. */
#ifndef GF_SPARE_H
#define GF_SPARE_H

#include "worker/cgroup.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct gf_spare gf_spare;

/* What a guard needs to run a job. */
typedef struct {
    unsigned uid, gid;
    const char *groups;       /* comma list of group ids, "-": none */
    const char *cwd;          /* "-": stay */
    char *const *argv;        /* NULL-terminated */
    char *const *envp;        /* NULL-terminated */
    long long cap;            /* bytes of stdout and of stderr kept (spool.max_bytes), 0: all */
    int out, err;             /* the spool files */
    int report;               /* write end of the guard's report pipe (guard/request.h) */
    const int *keep;          /* descriptors the command keeps (the locks) */
    size_t n_keep;
} gf_spare_job;

/* Start the guard program at path with argv and envp as every guard
 * starts: stdin from /dev/null, descriptor dups[i][0] also as dups[i][1],
 * a new process group, default signal dispositions (the worker ignores
 * SIGPIPE, which exec would keep ignored) and no blocked
 * signal. Returns 0 with *pid, or posix_spawn's error number. */
int gf_guard_spawn(const char *path, char *const argv[], char *const envp[],
                   const int (*dups)[2], size_t n_dups, pid_t *pid);

/* No server and no spare yet (gf_spare_fill starts them). guard: the
 * program's path; cgroups: the worker's cgroup folder (borrowed, outlives
 * this), NULL: spares without a cgroup. */
gf_spare *gf_spare_new(const char *guard, gf_cgroup *cgroups);

/* Stop the waiting spare and the server, and reap them. */
void gf_spare_destroy(gf_spare **self_p);

/* Ask the server for a spare if none is waiting or asked for: reaps a
 * spare or a server that died, and starts the server if there is none.
 * Within a second of a failure (a server that would not start, or an
 * answer without a spare) it asks nothing. Does not wait for the answer. */
void gf_spare_fill(gf_spare *self);

/* The descriptor to poll for the server's answer, or -1 when none is
 * awaited; gf_spare_collect reads it once it is readable. */
int gf_spare_fd(const gf_spare *self);
void gf_spare_collect(gf_spare *self);

/* Hand job to the waiting spare (after waiting up to two seconds for one
 * asked for): its pid (the job's group leader, now the caller's to wait
 * for) and, in *cg, the cgroup it runs in (the caller's; NULL without a
 * cgroup folder); or -1 when no spare was waiting
 * or asked for, or it could not take the job (the caller spawns a guard
 * itself). */
pid_t gf_spare_take(gf_spare *self, const gf_spare_job *job, gf_jobcg **cg);

#endif
