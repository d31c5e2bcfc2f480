/* spawn.c — run a command in its own process group (see spawn.h).
 *
 * The forwarded signals and SIGCHLD are blocked before the fork and taken
 * synchronously with sigwaitinfo, so none is lost between fork and wait and
 * no handler runs in the middle of anything. The child reports a failed exec
 * through a close-on-exec pipe: an empty read means the exec happened. */
#include "common/spawn.h"
#include "common/error.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP };

/* The signals we take synchronously: SIGCHLD and those we pass on. A signal
 * we inherited as ignored (nohup, a background job of a script) stays
 * ignored: passing it on would undo what our caller asked for. */
static void wait_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) {
        struct sigaction sa;
        if (sigaction(forwarded[i], NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
            sigaddset(set, forwarded[i]);
    }
    sigaddset(set, SIGCHLD);
}

/* Hand the terminal to group 'pgid'. A background caller would get SIGTTOU
 * for this unless it is blocked, so block it around the call. */
static void give_terminal(pid_t pgid)
{
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    sigprocmask(SIG_BLOCK, &ttou, &old);
    if (tcsetpgrp(STDIN_FILENO, pgid) != 0)
        GF_DEBUG("tcsetpgrp: %s", strerror(errno));
    sigprocmask(SIG_SETMASK, &old, NULL);
}

static bool in_terminal_foreground(void)
{
    return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

static void child_exec(char *const argv[], char *const envp[], const sigset_t *mask,
                       int report_fd, bool terminal)
{
    setpgid(0, 0);
    if (terminal)
        give_terminal(getpid());
    sigprocmask(SIG_SETMASK, mask, NULL);
    if (envp)
        execvpe(argv[0], argv, envp);
    else
        execvp(argv[0], argv);
    int err = errno;
    ssize_t w = write(report_fd, &err, sizeof err);
    (void)w;
    _exit(err == ENOENT ? 127 : 126);
}

/* 0 when the child exec'd, else its errno (the child then exits). */
static int exec_result(int report_fd)
{
    int err = 0;
    ssize_t got;
    while ((got = read(report_fd, &err, sizeof err)) < 0 && errno == EINTR)
        ;
    return got == (ssize_t)sizeof err ? err : 0;
}

/* Take the terminal back from the command's group, but only if it has it:
 * after `bg` the shell owns the terminal, not us. */
static void take_terminal_back(pid_t pid)
{
    if (tcgetpgrp(STDIN_FILENO) == pid)
        give_terminal(getpgrp());
}

/* The command stopped (^Z): take the terminal back, stop ourselves so the
 * shell sees the job stopped, and when continued pass SIGCONT on, with the
 * terminal if the shell gave it to us (`fg`), without it for `bg`. */
static void follow_stop(pid_t pid)
{
    take_terminal_back(pid);
    kill(getpid(), SIGSTOP);
    if (tcgetpgrp(STDIN_FILENO) == getpgrp())
        give_terminal(pid);
    kill(-pid, SIGCONT);
}

static int decode_status(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return 128;
}

/* Wait for the child, passing signals on; returns its raw wait status. */
static int supervise(pid_t pid, const sigset_t *set, bool terminal)
{
    for (;;) {
        int sig = sigwaitinfo(set, NULL);
        if (sig < 0)
            continue;   /* EINTR (e.g. after SIGCONT) */
        if (sig != SIGCHLD) {
            kill(-pid, sig);
            continue;
        }
        int st = 0;
        pid_t r;
        while ((r = waitpid(pid, &st, WNOHANG | (terminal ? WUNTRACED : 0))) < 0 &&
               errno == EINTR)
            ;
        if (r == pid && WIFSTOPPED(st))
            follow_stop(pid);
        else if (r == pid || (r < 0 && errno == ECHILD))
            return st;
    }
}

/* Forwarded signals that came after the command ended have nowhere to go. */
static void drain(const sigset_t *set)
{
    struct timespec zero = { 0, 0 };
    while (sigtimedwait(set, NULL, &zero) > 0)
        ;
}

int gf_spawn_run(char *const argv[], char *const envp[], int *status)
{
    sigset_t set, old;
    wait_set(&set);
    signal(SIGCHLD, SIG_DFL);   /* an inherited SIG_IGN would reap behind our back */
    sigprocmask(SIG_BLOCK, &set, &old);
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        GF_ERROR("cannot run %s: pipe: %s", argv[0], strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return GF_EIO;
    }
    bool terminal = in_terminal_foreground();
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, envp, &old, report[1], terminal);
    close(report[1]);
    if (pid < 0) {
        GF_ERROR("cannot run %s: fork: %s", argv[0], strerror(errno));
        close(report[0]);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return GF_EIO;
    }
    setpgid(pid, pid);   /* also here: whichever runs first, the group exists */
    int err = exec_result(report[0]);
    close(report[0]);
    if (err)
        GF_ERROR("cannot run %s: %s", argv[0], strerror(err));
    int st = supervise(pid, &set, terminal && !err);
    if (terminal)
        take_terminal_back(pid);
    drain(&set);
    sigprocmask(SIG_SETMASK, &old, NULL);
    *status = decode_status(st);
    return 0;
}
