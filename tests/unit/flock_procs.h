/* flock_procs.h — real flock(1) processes for the lock tests: start one,
 * wait until /proc/locks shows its lock, kill it, run `flock -n` probes.
 * Readiness is polled against a generous deadline; nothing here times the
 * code under test. */
#ifndef GF_TEST_FLOCK_PROCS_H
#define GF_TEST_FLOCK_PROCS_H

#include "common/lockinfo.h"
#include "common/util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_DEADLINE_MS 20000

/* fork + execvp argv; stdout/stderr of the child go to /dev/null when quiet. */
static inline pid_t spawn_argv(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (quiet) {
            FILE *null = freopen("/dev/null", "w", stdout);
            (void)null;
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* Exit status of a finished command, or -1. */
static inline int run_argv(char *const argv[])
{
    pid_t pid = spawn_argv(argv, 1);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* `flock -n -x|-s FILE true`: 0 when flock(1) could take it, 1 when it would block. */
static inline int flock_probe(const char *path, int exclusive)
{
    char *argv[] = { "flock", "-n", exclusive ? "-x" : "-s", (char *)path, "true", NULL };
    return run_argv(argv);
}

static inline void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Poll /proc/locks until 'pid' holds a lock on 'path'; 1 when it does. */
static inline int wait_holder(const char *path, pid_t pid)
{
    uint64_t end = gf_now_ms() + READY_DEADLINE_MS;
    while (gf_now_ms() < end) {
        gf_lock_holder *h = NULL;
        size_t n = 0;
        int found = 0;
        if (gf_lock_holders(path, &h, &n) == 0)
            for (size_t i = 0; i < n; i++)
                found |= h[i].pid == pid;
        gf_lock_holders_free(&h, n);
        if (found)
            return 1;
        sleep_ms(5);
    }
    return 0;
}

/* `flock -F -x|-s FILE sleep 600` (no fork: the pid that locks is the one
 * that sleeps), returned once it holds the lock. */
static inline pid_t flock_holder(const char *path, int exclusive)
{
    char *argv[] = { "flock", "-F", exclusive ? "-x" : "-s", (char *)path, "sleep", "600", NULL };
    pid_t pid = spawn_argv(argv, 0);
    if (pid > 0 && !wait_holder(path, pid)) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

static inline void kill_wait(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

#endif
