/* main.c — gpuflock-guard: the leader of a command job's process group.
 *
 *   gpuflock-guard WORKER_PID UID GID GROUPS CWD CGROUP CAP -- CMD [ARG...]
 *   gpuflock-guard WORKER_PID --serve
 *
 * The worker starts it with posix_spawn (a vfork-style clone: no copy of
 * the worker's memory) in a new process group, with stdin from /dev/null,
 * default signal dispositions and an empty signal mask.
 *
 * In the first form it is started for its job: stdout and stderr on the
 * job's spool files, the report pipe on descriptor 3 (request.h), the card
 * lock descriptors inherited, the job's environment. GROUPS is a comma list
 * of supplementary group ids ("-": none), CWD the directory to run in ("-":
 * stay), CGROUP the job's cgroup folder ("-": none, ".": a spare born in
 * it; worker/cgroup.h), CAP
 * the bytes of stdout and of stderr the spool files keep (spool.max_bytes;
 * 0: all).
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
 * The job's cgroup: a spare is born in it (the server clones it there
 * with CLONE_INTO_CGROUP, the worker having made the cgroup ahead), so its
 * command is too. A guard spawned for its job starts the command in it
 * (clone3 with CLONE_INTO_CGROUP) while the guard is still root, and the
 * command takes the submitter's identity itself before its exec; then the
 * guard takes it too, and stays in the worker's cgroup (the worker signals
 * it apart). Either way every process of the job starts inside the cgroup
 * and none can move out (the cgroup's files are root's), and no job's
 * start writes cgroup.procs, which waits for an RCU grace period. On a
 * kernel without CLONE_INTO_CGROUP (before 5.7) a guard moves itself in
 * through cgroup.procs, while it is root. The guard keeps the cgroup's
 * cgroup.kill open (close-on-exec: the command does not get it) to kill
 * the whole cgroup when the worker dies.
 *
 * Death with the worker, for the whole job: PR_SET_PDEATHSIG reaches only
 * the process that set it, so this small program stays the group leader.
 * It takes the job's identity (when started by root), the command enters
 * CWD, runs in the same group, and the guard waits for it; when the worker dies,
 * the kernel sends it GUARD_SIGNAL and it kills the job's cgroup (where it
 * has one) and the whole group with SIGKILL (the kernel then frees the
 * card's lock as the last descriptor closes). Signals aimed at the group or
 * the cgroup (cancel, time limit, SIGINT...) reach the command; the guard
 * ignores them, waits, and then ends the way the command ended, so the
 * worker sees the command's exit status or signal; just before, it writes
 * its report (request.h), so that the worker can tell a guard that ended
 * with its command from one that was killed.
 *
 * The output cap: with CAP above 0 the command's stdout and stderr are
 * pipes, and the guard copies each to its spool file up to CAP bytes, then
 * reads on and discards what comes (counting it), so the command is never
 * blocked, and ends a cut file with one line saying how much was kept and
 * discarded. What the command left in the pipes when it ended is copied
 * too; what its orphans write later is not (the worker kills them). With
 * CAP 0 the command writes to the spool files itself.
 *
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
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
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
#define REPORT_FD 3               /* a guard started for its job */
#define COPY_BUF (64 * 1024)      /* a pipe's default capacity */

extern char **environ;

/* errno of a failed exec in the vfork child (shared memory until then) */
static volatile int exec_errno;
/* the job cgroup's cgroup.kill, opened while root; -1: none */
static volatile int cgroup_kill = -1;
/* a SIGCHLD came (set in the handler, cleared by the copy loop) */
static volatile sig_atomic_t child_changed = 1;

/* One of the command's output streams under a cap. */
typedef struct {
    int in;                       /* the pipe's read end, -1 once at its end */
    int out;                      /* the spool file: 1 or 2 */
    long long kept;               /* bytes written to the file */
    long long cut;                /* bytes read and discarded past the cap */
    int werr;                     /* errno of a failed write to the file, 0: none */
    char last;                    /* the last byte kept */
} stream;

/* What the command is started with. */
typedef struct {
    char **argv;                  /* the command, NULL-terminated */
    uid_t uid;                    /* its identity (taken when we are root) */
    gid_t gid;
    const char *groups;           /* comma list, "-": none */
    const char *cwd;              /* "-": stay */
    const char *cgroup;           /* its cgroup folder, "-": none */
    int cgroup_dir;               /* that folder, opened (O_PATH); -1: none */
    pid_t worker;                 /* whom we follow */
} job;

/* clone3(2), which the C library does not wrap: the fields up to cgroup
 * (Linux 5.7, CLONE_INTO_CGROUP) */
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define GUARD_CLONE_INTO_CGROUP 0x200000000ULL
struct guard_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    uint64_t set_tid, set_tid_size, cgroup;
};

static void fail(int status, const char *what, const char *arg)
{
    dprintf(2, "gpuflock: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "", strerror(errno));
    _exit(status);
}

static void on_worker_death(int sig)
{
    (void)sig;
    if (cgroup_kill >= 0) {
        ssize_t w = write(cgroup_kill, "1", 1);   /* also what left the group */
        (void)w;
    }
    kill(0, SIGKILL);
}

static void on_child(int sig)
{
    (void)sig;
    child_changed = 1;
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

/* Wait for the job on JOB_FD (a spare). Fills the GUARD_FIELDS fields and
 * the report descriptor, points environ at the job's environment and
 * returns the command's argv; stdout and stderr are the job's afterwards. */
static char **receive_job(char *fields[GUARD_FIELDS], int *report)
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
        (int)head[2] != nfds || nfds < 3 || head[3] < 1 || (mh.msg_flags & MSG_CTRUNC)) {
        errno = EPROTO;
        fail(126, "gpuflock-guard: a malformed job", NULL);
    }
    if (dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0)
        fail(126, "gpuflock-guard: dup2", NULL);
    if (fds[0] > 2)
        close(fds[0]);
    if (fds[1] > 2 && fds[1] != fds[0])
        close(fds[1]);
    *report = fds[2];
    char *body = malloc(head[1] + 1u);
    char **argv = calloc(head[3] + 1u, sizeof(char *));
    char **env = calloc(head[4] + 1u, sizeof(char *));
    if (!body || !argv || !env)
        fail(126, "gpuflock-guard: out of memory", NULL);
    read_all(JOB_FD, body, head[1]);
    close(JOB_FD);
    uint32_t pos = 0;
    for (int i = 0; i < GUARD_FIELDS; i++)
        fields[i] = next_string(body, head[1], &pos);
    for (uint32_t i = 0; i < head[3]; i++)
        argv[i] = next_string(body, head[1], &pos);
    for (uint32_t i = 0; i < head[4]; i++)
        env[i] = next_string(body, head[1], &pos);
    environ = env;
    return argv;
}

/* The command without a cgroup: default dispositions (exec resets our
 * handlers, and a GUARD_SIGNAL before the exec does what it should in
 * either process; the death signal is not inherited), looked up in the
 * job's own PATH, with out and err (-1: ours) as its stdout and stderr and
 * mask (NULL: ours) as its signal mask. vfork, not posix_spawnp: nothing
 * to reset, so no round of sigaction calls and no child stack to map (the
 * child's descriptor table and mask are its own). The child shares our
 * memory until its exec, so a failed exec leaves its errno in exec_errno.
 * A function of its own, so that the vfork clobbers none of the caller's
 * variables. We have taken the job's identity and directory already. */
static __attribute__((noinline)) pid_t start_command(char **cmd_argv, int out, int err,
                                                     const sigset_t *mask)
{
    exec_errno = 0;
    pid_t cmd = vfork();
    if (cmd == 0) {
        if ((out >= 0 && dup2(out, 1) != 1) || (err >= 0 && dup2(err, 2) != 2)) {
            exec_errno = errno;
            _exit(126);
        }
        if (mask)
            sigprocmask(SIG_SETMASK, mask, NULL);
        execvp(cmd_argv[0], cmd_argv);
        exec_errno = errno;
        _exit(127);
    }
    return cmd;
}

/* Our own identity and directory: the job's. */
static void settle(const job *j, bool with_cwd)
{
    become(j->uid, j->gid, j->groups);
    /* after the identity change (a credential change clears the death signal) */
    follow(j->worker);
    if (with_cwd && strcmp(j->cwd, "-") != 0 && chdir(j->cwd) != 0)
        fail(126, "cannot enter the directory", j->cwd);
}

/* The command with a cgroup: a child made inside it by clone3 with
 * CLONE_INTO_CGROUP while we are still root (the kernel checks the
 * caller's right to write the cgroup), which takes the job's identity and
 * directory itself and reports its own failures (as "gpuflock: ..." on
 * its stderr, exit 126 or 127). Entering a cgroup at birth takes the
 * cgroup lock's read side only; writing cgroup.procs takes its write side,
 * which waits for an RCU grace period: 8 ms (p50) on a 2-core VM when
 * idle, against a whole submit-to-start of about 3 (bench/RESULTS.md).
 * CLONE_VFORK without CLONE_VM: our memory is the child's copy, and we
 * resume once it has exec'd, as after vfork. -1 with errno: not made. */
static pid_t clone_command(const job *j, int out, int err, const sigset_t *mask)
{
    struct guard_clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = GUARD_CLONE_INTO_CGROUP | CLONE_VFORK;
    ca.exit_signal = SIGCHLD;
    ca.cgroup = (uint64_t)j->cgroup_dir;
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid != 0)
        return (pid_t)pid;
    if ((out >= 0 && dup2(out, 1) != 1) || (err >= 0 && dup2(err, 2) != 2))
        _exit(126);
    become(j->uid, j->gid, j->groups);
    if (strcmp(j->cwd, "-") != 0 && chdir(j->cwd) != 0)
        fail(126, "cannot enter the directory", j->cwd);
    if (mask)
        sigprocmask(SIG_SETMASK, mask, NULL);
    execvp(j->argv[0], j->argv);
    fail(errno == ENOENT ? 127 : 126, "cannot run", j->argv[0]);
    return -1;
}

/* Start the job's command (see the two above); out, err, mask as there.
 * Returns its pid; failures end the guard (126, 127) with a line on
 * stderr. Afterwards we run as the job's user, with the death signal set. */
static pid_t start(job *j, int out, int err, const sigset_t *mask)
{
    if (j->cgroup_dir >= 0) {
        pid_t cmd = clone_command(j, out, err, mask);
        int e = errno;
        if (cmd > 0 || (e != ENOSYS && e != EINVAL && e != E2BIG)) {
            if (cmd < 0)
                fail(126, "gpuflock-guard: cannot start the command in the job's cgroup", j->cgroup);
            close(j->cgroup_dir);
            j->cgroup_dir = -1;
            settle(j, false);
            return cmd;
        }
        /* a kernel without CLONE_INTO_CGROUP (before Linux 5.7): we move
         * ourselves in, while still root, and the command is born there */
        char path[4096];
        snprintf(path, sizeof path, "%s/cgroup.procs", j->cgroup);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
            fail(126, "gpuflock-guard: cannot enter the job's cgroup", j->cgroup);
        close(fd);
        close(j->cgroup_dir);
        j->cgroup_dir = -1;
    }
    settle(j, true);
    pid_t cmd = start_command(j->argv, out, err, mask);
    if (cmd < 0)
        fail(126, "cannot run", j->argv[0]);
    if (exec_errno) {
        int e = exec_errno;
        while (waitpid(cmd, NULL, 0) < 0 && errno == EINTR)
            ;
        errno = e;
        fail(e == ENOENT ? 127 : 126, "cannot run", j->argv[0]);
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
        int cg = -1;                      /* the cgroup the spare is to be born in */
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(sizeof(int))];
        } in;
        struct iovec aiov = { &ask, 1 };
        struct msghdr am = { .msg_iov = &aiov, .msg_iovlen = 1, .msg_control = in.buf,
                             .msg_controllen = sizeof in.buf };
        ssize_t r = recvmsg(JOB_FD, &am, MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            _exit(0);                     /* the worker is done with us */
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&am); c; c = CMSG_NXTHDR(&am, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                c->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&cg, CMSG_DATA(c), sizeof(int));
        int32_t reply[2] = { 0, 0 };      /* pid, errno */
        int sv[2] = { -1, -1 };
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
            reply[1] = errno;
        } else {
            /* born in the job's cgroup (the read side of the cgroup lock
             * only, guard/main.c's top); a kernel before 5.7 makes a plain
             * fork, which then moves itself in: slowly, but ahead of the job */
            bool inside = false;
            pid_t pid = -1;
            if (cg >= 0) {
                struct guard_clone_args ca;
                memset(&ca, 0, sizeof ca);
                ca.flags = CLONE_PARENT | GUARD_CLONE_INTO_CGROUP;
                ca.cgroup = (uint64_t)cg;
                pid = (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
                inside = pid >= 0;
            }
            if (!inside)
                pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
            if (pid == 0) {
                /* the spare: its own group before anyone may signal it */
                setpgid(0, 0);
                memcpy(mode, "--wait", 7);  /* over "--serve", which has one byte more */
                follow(worker);
                if (cg >= 0) {
                    int fd = inside ? -1 : openat(cg, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                    if (!inside && (fd < 0 || write(fd, "0", 1) != 1))
                        fail(126, "gpuflock-guard: cannot enter the job's cgroup", NULL);
                    if (fd >= 0)
                        close(fd);
                    cgroup_kill = openat(cg, "cgroup.kill", O_WRONLY | O_CLOEXEC);
                    close(cg);
                }
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
                /* the spare's end only in the spare: its death is the end of the stream */
                close(sv[1]);
                sv[1] = -1;
                reply[0] = (int32_t)pid;
                char ready;                 /* the spare is set up (or died) */
                while ((r = read(sv[0], &ready, 1)) < 0 && errno == EINTR)
                    ;
                if (r != 1)
                    reply[1] = EPIPE;       /* the worker reaps it */
            }
        }
        r = guard_send_with_fd(JOB_FD, reply, sizeof reply,
                               reply[0] > 0 && reply[1] == 0 ? sv[0] : -1);
        if (cg >= 0)
            close(cg);
        if (sv[0] >= 0)
            close(sv[0]);
        if (sv[1] >= 0)
            close(sv[1]);
        if (r != (ssize_t)sizeof reply)
            _exit(0);                     /* the worker went away */
    }
}

/* Once the command runs: the signals aimed at the job reach it, and we
 * wait (SIGPIPE: the worker's end of the report may be gone). */
static void ignore_passed(void)
{
    static const int passed[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++)
        signal(passed[i], SIG_IGN);
}

/* The job's cgroup folder, opened while we are root, and its cgroup.kill,
 * kept for the worker's death. "-": none. */
static void open_cgroup(job *j)
{
    j->cgroup_dir = -1;
    if (strcmp(j->cgroup, "-") == 0 || strcmp(j->cgroup, ".") == 0)
        return;                           /* none, or a spare born inside it */
    j->cgroup_dir = open(j->cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (j->cgroup_dir < 0)
        fail(126, "gpuflock-guard: cannot open the job's cgroup", j->cgroup);
    cgroup_kill = openat(j->cgroup_dir, "cgroup.kill", O_WRONLY | O_CLOEXEC);  /* -1 before 5.14 */
}

static void write_all(stream *s, const char *buf, size_t len)
{
    while (len && !s->werr) {
        ssize_t w = write(s->out, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            s->werr = w < 0 ? errno : EIO;
            break;
        }
        buf += w;
        len -= (size_t)w;
        s->kept += w;
    }
}

/* Read once (at most max bytes) from the stream's pipe: up to the cap into
 * the file, the rest counted and dropped. Returns the bytes read, 0 at the
 * pipe's end (then closed), -1 when the read was interrupted. */
static ssize_t pump(stream *s, long long cap, size_t max)
{
    static char buf[COPY_BUF];
    ssize_t r = read(s->in, buf, max < sizeof buf ? max : sizeof buf);
    if (r < 0)
        return -1;                        /* EINTR */
    if (r == 0) {
        close(s->in);
        s->in = -1;
        return 0;
    }
    long long room = s->werr ? 0 : cap - s->kept;
    size_t keep = room <= 0 ? 0 : room < r ? (size_t)room : (size_t)r;
    long long before = s->kept;
    write_all(s, buf, keep);
    if (s->kept > before)
        s->last = buf[s->kept - before - 1];
    s->cut += r - (s->kept - before);
    return r;
}

/* The command with its stdout and stderr through pipes copied up to cap
 * (see the top); returns its wait status, fills the two streams. The
 * child's end of SIGCHLD is taken in ppoll only, so none is missed between
 * a check and the wait. */
static int run_capped(job *j, long long cap, stream s[2])
{
    /* blocking, both ends: we read only what ppoll or FIONREAD says is there */
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0)
        fail(126, "gpuflock-guard: pipe", NULL);
    s[0] = (stream){ .in = po[0], .out = 1 };
    s[1] = (stream){ .in = pe[0], .out = 2 };
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child;
    sa.sa_flags = SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    pid_t cmd = start(j, po[1], pe[1], &old);
    close(po[1]);
    close(pe[1]);
    ignore_passed();
    sigset_t during = old;
    sigdelset(&during, SIGCHLD);
    int status = 0;
    for (;;) {
        if (child_changed) {
            child_changed = 0;
            if (waitpid(cmd, &status, WNOHANG) == cmd)
                break;
        }
        struct pollfd p[2];
        stream *ps[2];
        nfds_t n = 0;
        for (int i = 0; i < 2; i++)
            if (s[i].in >= 0) {
                p[n] = (struct pollfd){ s[i].in, POLLIN, 0 };
                ps[n++] = &s[i];
            }
        if (ppoll(p, n, NULL, &during) <= 0)
            continue;                     /* SIGCHLD (or another signal) */
        for (nfds_t k = 0; k < n; k++)
            if (p[k].revents)
                pump(ps[k], cap, COPY_BUF);
    }
    /* what the command left in the pipes, and no more: an orphan that
     * goes on writing must not keep us here */
    for (int i = 0; i < 2; i++) {
        int avail = 0;
        if (s[i].in >= 0 && ioctl(s[i].in, FIONREAD, &avail) == 0)
            while (avail > 0) {
                ssize_t r = pump(&s[i], cap, (size_t)avail);
                if (r <= 0)
                    break;
                avail -= (int)r;
            }
        if (s[i].in >= 0)
            close(s[i].in);
        s[i].in = -1;
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return status;
}

/* The last line of a cut file. */
static void mark_cut(stream *s)
{
    if (!s->cut)
        return;
    int e = s->werr;
    if (!e && s->kept > 0 && s->last != '\n')
        dprintf(s->out, "\n");
    if (e)
        dprintf(s->out, "[gpuflock: output cut after %lld bytes (spool file: %s); %lld more bytes "
                        "discarded]\n", s->kept, strerror(e), s->cut);
    else
        dprintf(s->out, "[gpuflock: output cut after %lld bytes (spool.max_bytes); %lld more "
                        "bytes discarded]\n", s->kept, s->cut);
}

int main(int argc, char **argv)
{
    bool serving = argc == 3 && strcmp(argv[2], "--serve") == 0;
    if (!serving && (argc < 10 || strcmp(argv[8], "--") != 0)) {
        dprintf(2, "usage: gpuflock-guard WORKER_PID UID GID GROUPS CWD CGROUP CAP -- CMD [ARG...]\n"
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
    char *fields[GUARD_FIELDS];
    char **cmd_argv;
    int report = REPORT_FD;
    if (serving) {
        serve(worker, argv[2]);           /* returns in a spare */
        cmd_argv = receive_job(fields, &report);
    } else {
        for (int i = 0; i < GUARD_FIELDS; i++)
            fields[i] = argv[2 + i];
        cmd_argv = argv + 9;
    }
    fcntl(report, F_SETFD, FD_CLOEXEC);  /* ours, not the command's */
    job j = { .argv = cmd_argv, .uid = (uid_t)number(fields[0], "uid"),
              .gid = (gid_t)number(fields[1], "gid"), .groups = fields[2], .cwd = fields[3],
              .cgroup = fields[4], .worker = worker };
    long long cap = number(fields[5], "output cap");
    open_cgroup(&j);

    int status = 0;
    stream s[2];
    memset(s, 0, sizeof s);
    if (cap > 0) {
        status = run_capped(&j, cap, s);
        mark_cut(&s[0]);
        mark_cut(&s[1]);
    } else {
        pid_t cmd = start(&j, -1, -1, NULL);
        ignore_passed();
        while (waitpid(cmd, &status, 0) < 0 && errno == EINTR)
            ;
    }
    int64_t words[GUARD_REPORT_WORDS] = { GUARD_REPORT_MAGIC, s[0].cut, s[1].cut };
    ssize_t w = write(report, words, sizeof words);   /* one write below PIPE_BUF: whole */
    (void)w;
    close(report);
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
