/* main.c — gpuflock-guard: the leader of a command job's process group.
 *
 *   gpuflock-guard WORKER_PID UID GID GROUPS CWD -- CMD [ARG...]
 *
 * The worker starts it with posix_spawn (a vfork-style clone: no copy of
 * the worker's memory) in a new process group, with stdin from /dev/null,
 * stdout and stderr on the job's spool files, default signal dispositions,
 * an empty signal mask, the card lock descriptors inherited, and the job's
 * environment. GROUPS is a comma list of supplementary group ids ("-":
 * none), CWD the directory to run in ("-": stay).
 *
 * Death with the worker, for the whole job: PR_SET_PDEATHSIG reaches only
 * the process that set it, so this small program stays the group leader.
 * It takes the job's identity (when started by root), enters CWD, spawns
 * the command into the same group and waits for it; when the worker dies,
 * the kernel sends it GUARD_SIGNAL and it kills the whole group with
 * SIGKILL (the kernel then frees the card's lock as the last descriptor
 * closes). Signals aimed at the group (cancel, time limit, SIGINT...) reach
 * the command; the guard ignores them, waits, and then ends the way the
 * command ended, so the worker sees the command's exit status or signal.
 * It is linked statically and uses nothing but the C library, so starting
 * it costs little more than the exec itself. Exit 126: the job could not
 * be set up; 127: CMD was not found (each with a line on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUARD_SIGNAL (SIGRTMIN + 1)
#define MAX_GROUPS 1024

extern char **environ;

static void fail(int status, const char *what, const char *arg)
{
    dprintf(2, "gpuflock: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "", strerror(errno));
    _exit(status);
}

static void on_worker_death(int sig)
{
    (void)sig;
    kill(0, SIGKILL);
}

static long number(const char *s, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < 0) {
        errno = EINVAL;
        fail(126, "gpuflock-guard: bad", what);
    }
    return v;
}

/* Take the job's identity: groups, gid, then uid (root only). */
static void become(uid_t uid, gid_t gid, const char *groups)
{
    if (geteuid() != 0)
        return;
    if (uid != 0) {
        gid_t list[MAX_GROUPS];
        size_t n = 0;
        if (strcmp(groups, "-") != 0) {
            char *copy = strdup(groups), *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t && n < MAX_GROUPS;
                 t = strtok_r(NULL, ",", &save))
                list[n++] = (gid_t)number(t, "group");
            free(copy);
        }
        if (setgroups(n, list) != 0)
            fail(126, "setgroups", NULL);
        if (setgid(gid) != 0)
            fail(126, "setgid", NULL);
        if (setuid(uid) != 0)
            fail(126, "setuid", NULL);
    } else if (setgid(gid) != 0) {
        fail(126, "setgid", NULL);
    }
}

int main(int argc, char **argv)
{
    if (argc < 8 || strcmp(argv[6], "--") != 0) {
        dprintf(2, "usage: gpuflock-guard WORKER_PID UID GID GROUPS CWD -- CMD [ARG...]\n"
                   "(started by gpuflock-worker for each command job)\n");
        return 126;
    }
    pid_t worker = (pid_t)number(argv[1], "worker pid");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_worker_death;
    sigaction(GUARD_SIGNAL, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, GUARD_SIGNAL);
    if (getppid() != worker)
        kill(0, SIGKILL);                 /* the worker died before we were set up */
    become((uid_t)number(argv[2], "uid"), (gid_t)number(argv[3], "gid"), argv[4]);
    /* after the identity change (a credential change clears the death signal) */
    prctl(PR_SET_PDEATHSIG, GUARD_SIGNAL);
    if (getppid() != worker)
        kill(0, SIGKILL);
    if (strcmp(argv[5], "-") != 0 && chdir(argv[5]) != 0)
        fail(126, "cannot enter the directory", argv[5]);

    /* the command: default dispositions (exec resets our handler; the death
     * signal is not inherited), looked up in the job's own PATH */
    pid_t cmd;
    int e = posix_spawnp(&cmd, argv[7], NULL, NULL, argv + 7, environ);
    if (e) {
        errno = e;
        fail(e == ENOENT ? 127 : 126, "cannot run", argv[7]);
    }
    static const int passed[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++)
        signal(passed[i], SIG_IGN);
    int status = 0;
    while (waitpid(cmd, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit no_core = { 0, 0 };
        setrlimit(RLIMIT_CORE, &no_core);   /* the command's core, if any, is already written */
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
