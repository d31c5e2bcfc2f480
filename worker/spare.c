/* spare.c — a guard started ahead of its job (see spare.h). */
#include "worker/spare.h"

#include "worker/guard/request.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
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


struct gf_spare {
    char *guard;              /* gpuflock-guard's path */
    pid_t pid;                /* the waiting guard, 0: none */
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

gf_spare *gf_spare_new(const char *guard)
{
    gf_spare *self = gf_calloc(1, sizeof(*self));
    self->guard = gf_strdup(guard);
    self->sock = -1;
    return self;
}

/* Forget the waiting guard: end it and reap it. */
static void drop(gf_spare *self)
{
    if (self->sock >= 0)
        close(self->sock);
    self->sock = -1;
    if (self->pid > 0) {
        kill(self->pid, SIGKILL);
        while (waitpid(self->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    self->pid = 0;
}

void gf_spare_destroy(gf_spare **self_p)
{
    gf_spare *self = *self_p;
    if (!self)
        return;
    drop(self);
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
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        GF_WARN("spare guard: socketpair: %s", strerror(errno));
        return;
    }
    char parent[24];
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    char *argv[] = { "gpuflock-guard", parent, "--wait", NULL };
    char *envp[] = { NULL };
    const int dups[][2] = { { sv[1], 3 } };
    pid_t pid;
    int e = gf_guard_spawn(self->guard, argv, envp, dups, 1, &pid);
    close(sv[1]);
    if (e) {
        GF_WARN("spare guard: cannot start %s: %s", self->guard, strerror(e));
        close(sv[0]);
        return;
    }
    self->pid = pid;
    self->sock = sv[0];
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

pid_t gf_spare_take(gf_spare *self, const gf_spare_job *job)
{
    if (self->pid <= 0 || job->n_keep + 2 > GUARD_MAX_FDS)
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
    uint32_t argc = 0, envc = 0;
    for (; job->argv[argc]; argc++)
        put(&body, &len, &cap, job->argv[argc]);
    for (; job->envp[envc]; envc++)
        put(&body, &len, &cap, job->envp[envc]);
    uint32_t head[GUARD_HEAD_WORDS] = { GUARD_MAGIC, (uint32_t)len, (uint32_t)(job->n_keep + 2), argc, envc };
    int fds[GUARD_MAX_FDS];
    fds[0] = job->out;
    fds[1] = job->err;
    if (job->n_keep)
        memcpy(fds + 2, job->keep, job->n_keep * sizeof(int));
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(GUARD_MAX_FDS * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = { head, sizeof head };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                         .msg_controllen = CMSG_SPACE((job->n_keep + 2) * sizeof(int)) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((job->n_keep + 2) * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (job->n_keep + 2) * sizeof(int));
    ssize_t w;
    while ((w = sendmsg(self->sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    bool ok = w == (ssize_t)sizeof head;
    for (size_t off = 0; ok && off < len;) {
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
    return pid;
}
