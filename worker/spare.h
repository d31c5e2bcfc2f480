/* spare.h — a job's group leader started ahead of the job.
 *
 * Each command job runs under gpuflock-guard (worker/guard/main.c), a
 * static program the worker starts with posix_spawn. Its exec costs about
 * half a millisecond here (bench/RESULTS.md), on the way from the job's
 * assignment to its start. So the worker keeps one guard started ahead
 * (`gpuflock-guard PID --wait`), idle in its own process group and bound to
 * die with the worker, and hands it the next job over a unix socket: the
 * identity, directory, command and environment, and the spool and lock
 * descriptors (SCM_RIGHTS). The guard is the worker's child either way, so
 * the job is waited for, signalled and reaped exactly as one spawned for
 * it. A new spare is started when the worker has nothing more urgent to do
 * (gf_spare_fill); without one ready, the caller spawns a guard itself. */
#ifndef GF_SPARE_H
#define GF_SPARE_H

#include <stddef.h>
#include <sys/types.h>

typedef struct gf_spare gf_spare;

/* What a guard needs to run a job. */
typedef struct {
    unsigned uid, gid;
    const char *groups;       /* comma list of group ids, "-": none */
    const char *cwd;          /* "-": stay */
    char *const *argv;        /* NULL-terminated */
    char *const *envp;        /* NULL-terminated */
    int out, err;             /* the spool files */
    const int *keep;          /* descriptors the command keeps (the locks) */
    size_t n_keep;
} gf_spare_job;

/* Start the guard program at path with argv and envp as every guard
 * starts: stdin from /dev/null, descriptor dups[i][0] also as dups[i][1],
 * a new process group, default signal dispositions (the worker ignores
 * SIGPIPE and SIGHUP, which exec would keep ignored) and no blocked
 * signal. Returns 0 with *pid, or posix_spawn's error number. */
int gf_guard_spawn(const char *path, char *const argv[], char *const envp[],
                   const int (*dups)[2], size_t n_dups, pid_t *pid);

/* No spare yet (gf_spare_fill starts one). guard: the program's path. */
gf_spare *gf_spare_new(const char *guard);

/* Stop a waiting spare and reap it. */
void gf_spare_destroy(gf_spare **self_p);

/* Start a spare if none is waiting (and reap one that died). */
void gf_spare_fill(gf_spare *self);

/* Hand job to the waiting spare: its pid (the job's group leader, now the
 * caller's to wait for), or -1 when no spare was waiting or it could not
 * take the job (the caller spawns a guard itself). */
pid_t gf_spare_take(gf_spare *self, const gf_spare_job *job);

#endif
