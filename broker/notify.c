/* notify.c — the notifications of ended jobs (see notify.h): a queue of
 * job ids, the children running, and the child itself.
 *
 * The child is forked from the broker, which has threads (libzmq's, the
 * sweeper's): between fork and exec it calls only async-signal-safe
 * functions, on what the parent prepared (argv, environment, groups). */
#include "broker/notify.h"

#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* One queued notification. */
typedef struct {
    uint64_t id;
    uint32_t uid;
} queued;

/* One running. */
typedef struct {
    pid_t pid;                /* its process, the leader of its group */
    uint64_t id;              /* the job */
    uint32_t uid;
    uint64_t deadline;        /* monotonic ms: past it, its group is killed */
    bool killed;              /* killed at its deadline */
} running;

struct gf_notify {
    int timeout_s;            /* each may run this long */
    queued *q;                /* FIFO: q[head..n) waits */
    size_t head, n, cap;
    running run[GF_NOTIFY_RUNNING];
    size_t n_run;
    bool full_said;           /* the queue was full, said once until it has room again */
};

gf_notify *gf_notify_new(int timeout_s)
{
    gf_notify *self = gf_calloc(1, sizeof(gf_notify));
    self->timeout_s = timeout_s > 0 ? timeout_s : GF_NOTIFY_TIMEOUT_S;
    return self;
}

void gf_notify_destroy(gf_notify **self_p)
{
    gf_notify *self = *self_p;
    if (!self)
        return;
    free(self->q);
    free(self);
    *self_p = NULL;
}

size_t gf_notify_running(const gf_notify *self)
{
    return self->n_run;
}

size_t gf_notify_waiting(const gf_notify *self)
{
    return self->n - self->head;
}

bool gf_notify_queue(gf_notify *self, uint64_t id, uint32_t uid)
{
    if (gf_notify_waiting(self) >= GF_NOTIFY_QUEUED) {
        if (!self->full_said)
            GF_WARN("notify: %d notifications wait already: the end of job %llu (and of those "
                    "after it, until there is room) is not notified", GF_NOTIFY_QUEUED,
                    (unsigned long long)id);
        self->full_said = true;
        return false;
    }
    self->full_said = false;
    if (self->head > 0 && self->head == self->n)
        self->head = self->n = 0;
    if (self->n == self->cap) {
        if (self->head > self->cap / 2) {   /* slide down before growing */
            memmove(self->q, self->q + self->head, (self->n - self->head) * sizeof(queued));
            self->n -= self->head;
            self->head = 0;
        } else {
            self->cap = self->cap ? self->cap * 2 : 64;
            self->q = gf_realloc(self->q, self->cap * sizeof(queued));
        }
    }
    self->q[self->n++] = (queued){ .id = id, .uid = uid };
    return true;
}

static size_t running_of(const gf_notify *self, uint32_t uid)
{
    size_t k = 0;
    for (size_t i = 0; i < self->n_run; i++)
        k += self->run[i].uid == uid;
    return k;
}

uint64_t gf_notify_next(gf_notify *self, bool (*ready)(void *arg, uint64_t id), void *arg)
{
    if (self->n_run >= GF_NOTIFY_RUNNING)
        return 0;
    /* the first few that may go: one user's many ends do not hold the
     * others' back past the first 64 */
    for (size_t i = self->head; i < self->n && i < self->head + 64; i++) {
        queued e = self->q[i];
        if (running_of(self, e.uid) >= GF_NOTIFY_PER_USER || !ready(arg, e.id))
            continue;
        memmove(self->q + i, self->q + i + 1, (self->n - i - 1) * sizeof(queued));
        self->n--;
        return e.id;
    }
    return 0;
}

static char *numstr(long long v)
{
    return gf_strfmt("%lld", v);
}

char **gf_notify_env(const gf_notify_run *r)
{
    const gf_job *j = r->job;
    char **env = gf_calloc(16, sizeof(char *));
    size_t n = 0;
    env[n++] = gf_strdup("PATH=/usr/local/bin:/usr/bin:/bin");
    env[n++] = gf_strfmt("HOME=%s", r->home && *r->home ? r->home : "/");
    env[n++] = gf_strfmt("USER=%s", r->user);
    env[n++] = gf_strfmt("LOGNAME=%s", r->user);
    env[n++] = gf_strdup("SHELL=/bin/sh");
    env[n++] = gf_strfmt("GPUFLOCK_JOB_ID=%llu", (unsigned long long)j->id);
    env[n++] = gf_strfmt("GPUFLOCK_JOB_STATE=%s", gf_job_state_name(j->state));
    if (j->exit_status >= 0)
        env[n++] = gf_strfmt("GPUFLOCK_JOB_EXIT=%d", j->exit_status);
    else
        env[n++] = gf_strdup("GPUFLOCK_JOB_EXIT=");
    env[n++] = gf_strfmt("GPUFLOCK_JOB_SIGNAL=%d", j->term_signal);
    if (j->spec.name)
        env[n++] = gf_strfmt("GPUFLOCK_JOB_NAME=%s", j->spec.name);
    if (j->reason)
        env[n++] = gf_strfmt("GPUFLOCK_JOB_REASON=%s", j->reason);
    if (j->out_path)
        env[n++] = gf_strfmt("GPUFLOCK_JOB_STDOUT=%s", j->out_path);
    if (j->err_path)
        env[n++] = gf_strfmt("GPUFLOCK_JOB_STDERR=%s", j->err_path);
    env[n] = NULL;
    return env;
}

char **gf_notify_argv(const gf_job *j)
{
    char **argv = gf_calloc(8, sizeof(char *));
    argv[0] = gf_strdup("sh");
    argv[1] = gf_strdup("-c");
    argv[2] = gf_strdup(j->spec.notify ? j->spec.notify : "");
    argv[3] = gf_strdup("gpuflock-notify");   /* $0 */
    argv[4] = gf_strfmt("%llu", (unsigned long long)j->id);
    argv[5] = gf_strdup(gf_job_state_name(j->state));
    argv[6] = j->exit_status >= 0 ? numstr(j->exit_status) : gf_strdup("");
    argv[7] = NULL;
    return argv;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The child, between fork and exec: async-signal-safe calls only. Never
 * returns. */
static void child(char **argv, char **envp, const gid_t *groups, size_t n_groups, uid_t uid,
                  gid_t gid, const char *cwd, const char *home, rlim_t nofile, int timeout_s)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        sigaction(s, &dfl, NULL);     /* SIGPIPE and SIGHUP were ignored in the broker */
    setsid();
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0)
        _exit(126);
    for (int i = 0; i < 3; i++)
        if (fd != i && dup2(fd, i) < 0)
            _exit(126);
    if (fd > 2)
        close(fd);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3u, ~0u, 0u);   /* the broker's own are close-on-exec anyway */
#endif
    if (nofile) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
            rl.rlim_cur = nofile < rl.rlim_max ? nofile : rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    if (geteuid() == 0) {
        /* the submitter's identity, or nothing runs */
        if (setgroups(n_groups, groups) != 0 || setgid(gid) != 0 || setuid(uid) != 0)
            _exit(126);
        if (getuid() != uid || geteuid() != uid || getgid() != gid || getegid() != gid)
            _exit(126);
        if (uid != 0 && setuid(0) == 0)
            _exit(126);                  /* root could be taken back: never run so */
    } else if (geteuid() != uid) {
        _exit(126);                      /* not ours to run as another user */
    }
    /* as the user: a folder they cannot enter is not entered */
    if ((!cwd || chdir(cwd) != 0) && (!home || chdir(home) != 0) && chdir("/") != 0)
        _exit(126);
    umask(022);
    alarm((unsigned)timeout_s + 5);   /* where no broker is left to kill it */
    execve("/bin/sh", argv, envp);
    _exit(127);
}

pid_t gf_notify_spawn(gf_notify *self, const gf_notify_run *r, rlim_t nofile, uint64_t now_ms)
{
    const gf_job *j = r->job;
    if (self->n_run >= GF_NOTIFY_RUNNING)
        return -1;
    char **argv = gf_notify_argv(j), **envp = gf_notify_env(r);
    gid_t *groups = gf_calloc(r->n_groups ? r->n_groups : 1, sizeof(gid_t));
    for (size_t i = 0; i < r->n_groups; i++)
        groups[i] = (gid_t)r->groups[i];
    pid_t pid = fork();
    if (pid == 0)
        child(argv, envp, groups, r->n_groups, (uid_t)j->uid, (gid_t)j->gid, j->spec.cwd,
              r->home, nofile, self->timeout_s);
    int err = errno;
    free_strv(argv);
    free_strv(envp);
    free(groups);
    if (pid < 0) {
        GF_WARN("job %llu: cannot run its notify command: fork: %s", (unsigned long long)j->id,
                strerror(err));
        return -1;
    }
    self->run[self->n_run++] = (running){ .pid = pid, .id = j->id, .uid = j->uid,
                                          .deadline = now_ms + (uint64_t)self->timeout_s * 1000 };
    GF_INFO("job %llu: notify command started as %s (uid %u, pid %d)", (unsigned long long)j->id,
            r->user, (unsigned)j->uid, (int)pid);
    return pid;
}

void gf_notify_tick(gf_notify *self, uint64_t now_ms)
{
    for (size_t i = 0; i < self->n_run;) {
        running *c = &self->run[i];
        siginfo_t si;
        memset(&si, 0, sizeof si);
        /* ended? Looked at without reaping: the zombie keeps its pid, and
         * so its group's number, from being used again until the group's
         * leftovers are killed */
        int w = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT);
        if (w != 0 && errno == ECHILD) {      /* not ours to wait for (reaped elsewhere) */
            self->run[i] = self->run[--self->n_run];
            continue;
        }
        if (w == 0 && si.si_pid == c->pid) {
            kill(-c->pid, SIGKILL);
            int status = 0;
            while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
                ;
            if (c->killed)
                GF_INFO("job %llu: notify command (pid %d) killed after %d s",
                        (unsigned long long)c->id, (int)c->pid, self->timeout_s);
            else if (WIFEXITED(status))
                GF_INFO("job %llu: notify command (pid %d) exited with status %d",
                        (unsigned long long)c->id, (int)c->pid, WEXITSTATUS(status));
            else
                GF_INFO("job %llu: notify command (pid %d) ended by signal %d",
                        (unsigned long long)c->id, (int)c->pid,
                        WIFSIGNALED(status) ? WTERMSIG(status) : 0);
            self->run[i] = self->run[--self->n_run];
            continue;
        }
        if (!c->killed && now_ms >= c->deadline) {
            /* its group; a child that has not made it yet is still in ours */
            if (kill(-c->pid, SIGKILL) != 0)
                kill(c->pid, SIGKILL);
            c->killed = true;
        }
        i++;
    }
}
