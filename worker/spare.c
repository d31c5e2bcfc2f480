/* spare.c — a guard ready ahead of its job, from the guards' fork server
 * (see spare.h). */
#include "worker/spare.h"

#include "worker/cgroup.h"
#include "worker/guard/request.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long the server may take to make a spare before it is taken for
 * stuck, and how long after a failure (no server, or no spare from it) to
 * try again: a box that refuses the fork keeps its workers' logs quiet. */
#define REPLY_MS 2000
#define RETRY_MS 1000

struct gf_spare {
    char *guard;              /* gpuflock-guard's path */
    gf_cgroup *cgroups;       /* the worker's cgroup folder (borrowed), NULL: none */
    gf_jobcg *asked_cg;       /* the cgroup the spare asked for is born in */
    gf_jobcg *cg;             /* the waiting spare's cgroup */
    pid_t server;             /* the fork server, 0: none */
    int ctl;                  /* our end of its request socket, -1: none */
    uint64_t retry_at;        /* monotonic ms: no new server or request before */
    bool asked;               /* a spare was asked for, the answer not read */
    pid_t pid;                /* the waiting spare, 0: none */
    int sock;                 /* our end of its job socket, -1: none */
};

int gf_guard_spawn(const char *path, char *const argv[], char *const envp[],
                   const int (*dups)[2], size_t n_dups, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    for (size_t i = 0; i < n_dups; i++)
        posix_spawn_file_actions_adddup2(&fa, dups[i][0], dups[i][1]);
    posix_spawnattr_init(&at);
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETSIGMASK);
    int e = posix_spawn(pid, path, &fa, &at, argv, envp);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return e;
}

gf_spare *gf_spare_new(const char *guard, gf_cgroup *cgroups)
{
    gf_spare *self = gf_calloc(1, sizeof(*self));
    self->guard = gf_strdup(guard);
    self->cgroups = cgroups;
    self->ctl = -1;
    self->sock = -1;
    return self;
}

/* End a child of ours and reap it. */
static void end_child(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Forget the waiting spare. */
static void drop(gf_spare *self)
{
    if (self->sock >= 0)
        close(self->sock);
    self->sock = -1;
    end_child(self->pid);
    self->pid = 0;
    gf_jobcg_destroy(&self->cg);       /* empty now: kept for the next */
}

static void stop_server(gf_spare *self)
{
    if (self->ctl >= 0)
        close(self->ctl);
    self->ctl = -1;
    self->asked = false;
    end_child(self->server);
    self->server = 0;
    gf_jobcg_destroy(&self->asked_cg);  /* kills a spare the answer never named */
}

/* Start the fork server (`gpuflock-guard PID --serve`). */
static bool start_server(gf_spare *self)
{
    if (gf_now_ms() < self->retry_at)
        return false;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        GF_WARN("guard server: socketpair: %s", strerror(errno));
        self->retry_at = gf_now_ms() + RETRY_MS;
        return false;
    }
    char parent[24];
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    char *argv[] = { "gpuflock-guard", parent, "--serve", NULL };
    char *envp[] = { NULL };
    const int dups[][2] = { { sv[1], 3 } };
    pid_t pid;
    int e = gf_guard_spawn(self->guard, argv, envp, dups, 1, &pid);
    close(sv[1]);
    if (e) {
        GF_WARN("guard server: cannot start %s: %s", self->guard, strerror(e));
        close(sv[0]);
        self->retry_at = gf_now_ms() + RETRY_MS;
        return false;
    }
    self->server = pid;
    self->ctl = sv[0];
    return true;
}

/* Read the server's answer, waiting up to timeout_ms for it: a spare's pid
 * and our end of its socket. */
static void collect(gf_spare *self, int timeout_ms)
{
    if (!self->asked)
        return;
    struct pollfd pfd = { self->ctl, POLLIN, 0 };
    int n;
    while ((n = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
        ;
    if (n == 0 && timeout_ms < REPLY_MS)
        return;                            /* not yet */
    int32_t reply[2] = { 0, 0 };
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct iovec iov = { reply, sizeof reply };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = sizeof ctl.buf };
    ssize_t r = -1;
    if (n == 1)
        while ((r = recvmsg(self->ctl, &mh, MSG_WAITALL | MSG_CMSG_CLOEXEC)) < 0 &&
               errno == EINTR)
            ;
    self->asked = false;
    int fd = -1;
    for (struct cmsghdr *c = r > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if (r != (ssize_t)sizeof reply) {
        /* gone, stuck or confused: the next fill starts another */
        GF_WARN("guard server %d: no spare: %s", (int)self->server,
                r < 0 && n == 1 ? strerror(errno) : n == 0 ? "no answer" : "it has gone");
        if (fd >= 0)
            close(fd);
        stop_server(self);
        self->retry_at = gf_now_ms() + RETRY_MS;
        return;
    }
    if (reply[1] || reply[0] <= 0 || fd < 0) {
        GF_WARN("guard server %d: no spare: %s", (int)self->server,
                strerror(reply[1] ? reply[1] : EPROTO));
        if (fd >= 0)
            close(fd);
        end_child(reply[0]);      /* ours (CLONE_PARENT), died before it was ready */
        gf_jobcg_destroy(&self->asked_cg);
        self->retry_at = gf_now_ms() + RETRY_MS;
        return;
    }
    self->pid = reply[0];
    self->sock = fd;
    self->cg = self->asked_cg;
    self->asked_cg = NULL;
}

void gf_spare_destroy(gf_spare **self_p)
{
    gf_spare *self = *self_p;
    if (!self)
        return;
    collect(self, REPLY_MS);               /* a spare asked for is ours to end too */
    drop(self);
    stop_server(self);
    free(self->guard);
    free(self);
    *self_p = NULL;
}

void gf_spare_fill(gf_spare *self)
{
    if (self->pid > 0) {
        if (waitpid(self->pid, NULL, WNOHANG) == 0)
            return;                        /* waiting, as it should */
        self->pid = 0;                     /* it died (or was killed): reaped */
        drop(self);
    }
    if (self->server > 0 && waitpid(self->server, NULL, WNOHANG) != 0) {
        self->server = 0;                  /* reaped */
        stop_server(self);
    }
    if (self->asked || gf_now_ms() < self->retry_at ||
        (self->server <= 0 && !start_server(self)))
        return;
    /* the spare is born in the cgroup of the job it will run */
    char why[512];
    if (self->cgroups && !self->asked_cg &&
        !(self->asked_cg = gf_jobcg_new(self->cgroups, why, sizeof why))) {
        GF_WARN("no spare guard: %s", why);
        self->retry_at = gf_now_ms() + RETRY_MS;
        return;
    }
    char ask = 's';
    ssize_t w = guard_send_with_fd(self->ctl, &ask, 1,
                                   self->asked_cg ? gf_jobcg_fd(self->asked_cg) : -1);
    if (w == 1) {
        self->asked = true;
    } else {
        GF_WARN("guard server %d: cannot ask for a spare: %s", (int)self->server,
                strerror(errno));
        stop_server(self);
    }
}

int gf_spare_fd(const gf_spare *self)
{
    return self->asked ? self->ctl : -1;
}

void gf_spare_collect(gf_spare *self)
{
    collect(self, 0);
}

/* Append s and its NUL to the buffer. */
static void put(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s) + 1;
    if (*len + n > *cap) {
        *cap = (*len + n) * 2;
        *buf = gf_realloc(*buf, *cap);
    }
    memcpy(*buf + *len, s, n);
    *len += n;
}

pid_t gf_spare_take(gf_spare *self, const gf_spare_job *job, gf_jobcg **cg)
{
    *cg = NULL;
    if (self->pid <= 0)
        collect(self, REPLY_MS);           /* asked for: a fork away */
    if (self->pid <= 0 || job->n_keep + 3 > GUARD_MAX_FDS)
        return -1;
    char *body = NULL;
    size_t len = 0, cap = 0;
    char num[24];
    snprintf(num, sizeof num, "%u", job->uid);
    put(&body, &len, &cap, num);
    snprintf(num, sizeof num, "%u", job->gid);
    put(&body, &len, &cap, num);
    put(&body, &len, &cap, job->groups);
    put(&body, &len, &cap, job->cwd);
    put(&body, &len, &cap, self->cg ? "." : "-");    /* ".": born in its cgroup */
    snprintf(num, sizeof num, "%lld", job->cap);
    put(&body, &len, &cap, num);
    uint32_t argc = 0, envc = 0;
    for (; job->argv[argc]; argc++)
        put(&body, &len, &cap, job->argv[argc]);
    for (; job->envp[envc]; envc++)
        put(&body, &len, &cap, job->envp[envc]);
    size_t nfds = job->n_keep + 3;
    uint32_t head[GUARD_HEAD_WORDS] = { GUARD_MAGIC, (uint32_t)len, (uint32_t)nfds, argc, envc };
    int fds[GUARD_MAX_FDS];
    fds[0] = job->out;
    fds[1] = job->err;
    fds[2] = job->report;
    if (job->n_keep)
        memcpy(fds + 3, job->keep, job->n_keep * sizeof(int));
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GUARD_MAX_FDS * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    /* header and body in one message: one wake-up of the spare, whose
     * reads take them apart; a body too big for the socket's buffer
     * follows in more sends */
    struct iovec iov[2] = { { head, sizeof head }, { body, len } };
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf,
                         .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    ssize_t w;
    while ((w = sendmsg(self->sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    bool ok = w >= (ssize_t)sizeof head;
    for (size_t off = ok ? (size_t)w - sizeof head : 0; ok && off < len;) {
        w = send(self->sock, body + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    free(body);
    if (!ok) {
        /* it died waiting; the caller starts a guard of its own */
        GF_WARN("spare guard %d: cannot hand it the job: %s", (int)self->pid, strerror(errno));
        drop(self);
        return -1;
    }
    pid_t pid = self->pid;
    close(self->sock);
    self->sock = -1;
    self->pid = 0;
    *cg = self->cg;
    self->cg = NULL;
    return pid;
}
