/* main.c — gpuflock-guard: the leader of a command job's process group.
 *
 *   gpuflock-guard WORKER_PID UID GID GROUPS CWD -- CMD [ARG...]
 *   gpuflock-guard WORKER_PID --serve
 *
 * The worker starts it with posix_spawn (a vfork-style clone: no copy of
 * the worker's memory) in a new process group, with stdin from /dev/null,
 * default signal dispositions and an empty signal mask.
 *
 * In the first form it is started for its job: stdout and stderr on the
 * job's spool files, the card lock descriptors inherited, the job's
 * environment. GROUPS is a comma list of supplementary group ids ("-":
 * none), CWD the directory to run in ("-": stay).
 *
 * In the second form, once per worker, it is the guards' fork server
 * (worker/spare.h): for each request on descriptor 3 (request.h) it forks
 * a spare guard, which then waits on a socket of its own for the job, so
 * that neither an exec nor a fork is on the way from a job's assignment to
 * its start, and the exec of a guard is paid once per worker instead of
 * once per job. The fork is a clone with CLONE_PARENT: the spare is the
 * worker's child, which waits for it, signals it and reaps it as one it
 * spawned itself. A spare shows as `gpuflock-guard WORKER_PID --wait` in
 * ps. The end of the stream (the worker no longer needs it) ends the server
 * or a spare quietly.
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
 * be set up; 127: CMD was not found (each with a line on stderr).
 *
 * A spare is a raw clone, which leaves the C library's cached thread id
 * that of the server: nothing here may rely on it (raise(3) does; the
 * guard ends itself with kill(getpid(), ...)). */
#define _GNU_SOURCE
#include "request.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define GUARD_SIGNAL (SIGRTMIN + 1)
#define MAX_GROUPS 1024
#define JOB_FD 3

extern char **environ;

/* errno of a failed exec in the vfork child (shared memory until then) */
static volatile int exec_errno;

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

/* Die with the worker from here on (and now, if it is already gone). */
static void follow(pid_t worker)
{
    prctl(PR_SET_PDEATHSIG, GUARD_SIGNAL);
    if (getppid() != worker)
        kill(0, SIGKILL);                 /* the worker died before we were set up */
}

static void read_all(int fd, char *buf, size_t len)
{
    while (len) {
        ssize_t r = read(fd, buf, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            errno = r ? errno : EPROTO;
            fail(126, "gpuflock-guard: reading the job", NULL);
        }
        buf += r;
        len -= (size_t)r;
    }
}

/* The next NUL-terminated string of the body at *pos. */
static char *next_string(char *body, uint32_t len, uint32_t *pos)
{
    char *s = body + *pos;
    char *end = *pos < len ? memchr(s, 0, len - *pos) : NULL;
    if (!end) {
        errno = EPROTO;
        fail(126, "gpuflock-guard: a truncated job", NULL);
    }
    *pos = (uint32_t)(end - body) + 1;
    return s;
}

/* Wait for the job on JOB_FD (a spare). Fills the identity and directory
 * fields, points environ at the job's environment and returns the command's
 * argv; stdout and stderr are the job's afterwards. */
static char **receive_job(char *fields[4])
{
    uint32_t head[GUARD_HEAD_WORDS];
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GUARD_MAX_FDS * sizeof(int))];
    } ctl;
    struct iovec iov = { head, sizeof head };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf };
    ssize_t r;
    while ((r = recvmsg(JOB_FD, &mh, MSG_WAITALL)) < 0 && errno == EINTR)
        ;
    if (r == 0)
        _exit(0);                         /* not needed after all */
    int fds[GUARD_MAX_FDS], nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            memcpy(fds, CMSG_DATA(c), (size_t)nfds * sizeof(int));
        }
    if (r != (ssize_t)sizeof head || head[0] != GUARD_MAGIC || head[1] > GUARD_MAX_BODY ||
        (int)head[2] != nfds || nfds < 2 || head[3] < 1 || (mh.msg_flags & MSG_CTRUNC)) {
        errno = EPROTO;
        fail(126, "gpuflock-guard: a malformed job", NULL);
    }
    if (dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0)
        fail(126, "gpuflock-guard: dup2", NULL);
    if (fds[0] > 2)
        close(fds[0]);
    if (fds[1] > 2 && fds[1] != fds[0])
        close(fds[1]);
    char *body = malloc(head[1] + 1u);
    char **argv = calloc(head[3] + 1u, sizeof(char *));
    char **env = calloc(head[4] + 1u, sizeof(char *));
    if (!body || !argv || !env)
        fail(126, "gpuflock-guard: out of memory", NULL);
    read_all(JOB_FD, body, head[1]);
    close(JOB_FD);
    uint32_t pos = 0;
    for (int i = 0; i < 4; i++)
        fields[i] = next_string(body, head[1], &pos);
    for (uint32_t i = 0; i < head[3]; i++)
        argv[i] = next_string(body, head[1], &pos);
    for (uint32_t i = 0; i < head[4]; i++)
        env[i] = next_string(body, head[1], &pos);
    environ = env;
    return argv;
}

/* The command: default dispositions (exec resets our one handler, and a
 * GUARD_SIGNAL before the exec does what it should in either process; the
 * death signal is not inherited), looked up in the job's own PATH. vfork,
 * not posix_spawnp: nothing to reset, so no round of sigaction calls and
 * no child stack to map. The child shares our memory until its exec, so a
 * failed exec leaves its errno in exec_errno. A function of its own, so
 * that the vfork clobbers none of the caller's variables. */
static __attribute__((noinline)) pid_t start_command(char **cmd_argv)
{
    exec_errno = 0;
    pid_t cmd = vfork();
    if (cmd == 0) {
        execvp(cmd_argv[0], cmd_argv);
        exec_errno = errno;
        _exit(127);
    }
    return cmd;
}

/* The fork server (--serve): one spare guard per byte read on JOB_FD. The
 * spare leads a new process group, follows the worker, and waits on a new
 * socket pair for its job; the reply (request.h) carries its pid, and its
 * socket's other end once it is ready. Returns in the spare only. */
static void serve(pid_t worker, char *mode)
{
    for (;;) {
        char ask;
        ssize_t r = read(JOB_FD, &ask, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            _exit(0);                     /* the worker is done with us */
        int32_t reply[2] = { 0, 0 };      /* pid, errno */
        int sv[2] = { -1, -1 };
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            reply[1] = errno;
        } else {
            pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
            if (pid == 0) {
                /* the spare: its own group before anyone may signal it */
                setpgid(0, 0);
                memcpy(mode, "--wait", 7);  /* over "--serve", which has one byte more */
                follow(worker);
                if (dup2(sv[1], JOB_FD) != JOB_FD)
                    fail(126, "gpuflock-guard: dup2", NULL);
                close(sv[0]);
                close(sv[1]);
                char ready = 'r';
                if (write(JOB_FD, &ready, 1) != 1)
                    _exit(0);
                return;
            }
            if (pid < 0) {
                reply[1] = errno;
            } else {
                reply[0] = (int32_t)pid;
                char ready;                 /* the spare is set up (or died) */
                while ((r = read(sv[0], &ready, 1)) < 0 && errno == EINTR)
                    ;
                if (r != 1)
                    reply[1] = EPIPE;       /* the worker reaps it */
            }
        }
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        struct iovec iov = { reply, sizeof reply };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        if (reply[0] > 0 && reply[1] == 0) {
            mh.msg_control = ctl.buf;
            mh.msg_controllen = sizeof ctl.buf;
            struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &sv[0], sizeof(int));
        }
        while ((r = sendmsg(JOB_FD, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
            ;
        if (sv[0] >= 0)
            close(sv[0]);
        if (sv[1] >= 0)
            close(sv[1]);
        if (r != (ssize_t)sizeof reply)
            _exit(0);                     /* the worker went away */
    }
}

int main(int argc, char **argv)
{
    bool serving = argc == 3 && strcmp(argv[2], "--serve") == 0;
    if (!serving && (argc < 8 || strcmp(argv[6], "--") != 0)) {
        dprintf(2, "usage: gpuflock-guard WORKER_PID UID GID GROUPS CWD -- CMD [ARG...]\n"
                   "       gpuflock-guard WORKER_PID --serve\n"
                   "(started by gpuflock-worker for each command job)\n");
        return 126;
    }
    pid_t worker = (pid_t)number(argv[1], "worker pid");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_worker_death;
    sigaction(GUARD_SIGNAL, &sa, NULL);
    follow(worker);
    char *fields[4];
    char **cmd_argv;
    if (serving) {
        serve(worker, argv[2]);           /* returns in a spare */
        cmd_argv = receive_job(fields);
    } else {
        for (int i = 0; i < 4; i++)
            fields[i] = argv[2 + i];
        cmd_argv = argv + 7;
    }
    become((uid_t)number(fields[0], "uid"), (gid_t)number(fields[1], "gid"), fields[2]);
    /* after the identity change (a credential change clears the death signal) */
    follow(worker);
    if (strcmp(fields[3], "-") != 0 && chdir(fields[3]) != 0)
        fail(126, "cannot enter the directory", fields[3]);

    pid_t cmd = start_command(cmd_argv);
    if (cmd < 0)
        fail(126, "cannot run", cmd_argv[0]);
    if (exec_errno) {
        int e = exec_errno;
        while (waitpid(cmd, NULL, 0) < 0 && errno == EINTR)
            ;
        errno = e;
        fail(e == ENOENT ? 127 : 126, "cannot run", cmd_argv[0]);
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
        kill(getpid(), sig);                /* not raise(): see the top */
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 126;
}
