/* supervise.c — the local worker processes (see server_int.h): one per
 * configured card, started in a session of its own, restarted with a
 * backoff that doubles while workers die young; a worker left by an
 * earlier broker (its pid file still locked) is left to reconnect. At
 * shutdown: workers told or stopped, running jobs requeued, a last commit,
 * the children waited for. And the broker's own descriptor limit, raised
 * at start for libzmq's sake, the workers' put back. */
#include "broker/server_int.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000

/* The most descriptors the broker asks for (the kernel's default nr_open). */
#define NOFILE_MAX ((rlim_t)1 << 20)

/* libzmq aborts the whole process when an ipc:// listener cannot accept a
 * connection for want of descriptors (src/ipc_listener.cpp, accept: EMFILE
 * is not among the errors its errno_assert takes, in 4.3.4 as in its
 * master), and any local user may connect to the client socket. So the
 * broker raises its soft RLIMIT_NOFILE to the hard one (under systemd
 * 524288 unless LimitNOFILE says otherwise); each connection costs the
 * one who opens it a descriptor too. The workers get the old limit back
 * (spawn_worker). */
void gf_supervise_raise_nofile(gf_server *self)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    self->nofile_soft = rl.rlim_cur;
    rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > NOFILE_MAX ? NOFILE_MAX
                                                                           : rl.rlim_max;
    if (rl.rlim_cur >= want)
        return;
    rl.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        GF_WARN("cannot raise the descriptor limit from %llu to %llu: %s (past it, a flood of "
                "client connections makes libzmq abort gpuflockd)",
                (unsigned long long)self->nofile_soft, (unsigned long long)want, strerror(errno));
    else
        GF_DEBUG("descriptor limit raised from %llu to %llu", (unsigned long long)self->nofile_soft,
                 (unsigned long long)want);
}

static bool worker_pidfile_held(gf_server *self, int device)
{
    char *path = gf_strfmt("%s/worker%d.pid", self->cfg->run_dir, device);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return false;
    bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    close(fd);
    return held;
}

static void spawn_worker(gf_server *self, wk *w)
{
    char dev[16];
    snprintf(dev, sizeof(dev), "%d", w->device);
    pid_t pid = fork();
    if (pid < 0) {
        GF_ERROR("cannot start a worker for card %d: fork: %s", w->device, strerror(errno));
        return;
    }
    if (pid == 0) {
        /* its own session: a broker crash or a ^C at the broker's terminal
         * must not take the worker and its jobs with it */
        setsid();
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* the descriptor limit the broker was started with (it raised its
         * own, gf_supervise_raise_nofile), for the worker and its jobs */
        struct rlimit rl;
        if (self->nofile_soft && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
            rl.rlim_cur = self->nofile_soft;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        if (self->cfg->path)
            execl(self->worker_program, "gpuflock-worker", "--device", dev, "--config",
                  self->cfg->path, (char *)NULL);
        else
            execl(self->worker_program, "gpuflock-worker", "--device", dev, (char *)NULL);
        fprintf(stderr, "gpuflockd: cannot run %s: %s\n", self->worker_program, strerror(errno));
        _exit(127);
    }
    w->child = pid;
    w->child_started = gf_now_ms();
    gf_metrics_worker_started(self->metrics, w->device);
    GF_INFO("started worker for card %d (pid %d)", w->device, (int)pid);
}

void gf_supervise(gf_server *self, uint64_t now)
{
    /* each worker by its pid: the broker has other children (notify
     * commands, broker/notify.c), reaped where they are known */
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        int status;
        pid_t pid = w->child;
        if (pid <= 0 || waitpid(pid, &status, WNOHANG) != pid)
            continue;
        w->child = 0;
        if (WIFSIGNALED(status))
            GF_WARN("worker of card %d (pid %d) killed by signal %d", w->device, (int)pid,
                    WTERMSIG(status));
        else
            GF_WARN("worker of card %d (pid %d) exited with status %d", w->device, (int)pid,
                    WEXITSTATUS(status));
        if (w->ready)
            gf_workers_dead(self, w, "exited", false);
        /* backoff: doubles while workers die young, resets after a
         * minute of life */
        bool young = now - w->child_started < 60000;
        w->backoff_ms = !young ? BACKOFF_MIN_MS
                        : w->backoff_ms ? (w->backoff_ms * 2 > BACKOFF_MAX_MS
                                               ? BACKOFF_MAX_MS : w->backoff_ms * 2)
                                        : BACKOFF_MIN_MS;
        w->spawn_at = now + (uint64_t)w->backoff_ms;
    }
    if (!self->cfg->spawn_workers || self->stopping)
        return;
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        if (w->child > 0 || w->ready || now < w->spawn_at)
            continue;
        /* a worker left from an earlier broker still holds its pid file:
         * it will reconnect; look again later */
        if (worker_pidfile_held(self, w->device)) {
            w->spawn_at = now + 1000;
            continue;
        }
        spawn_worker(self, w);
    }
}

void gf_supervise_shutdown(gf_server *self)
{
    for (size_t i = 0; i < self->n_wks; i++) {
        wk *w = &self->wks[i];
        if (w->ready && w->child <= 0) {
            gf_msg d;
            memset(&d, 0, sizeof(d));
            d.op = GF_OP_DISCONNECT;
            d.message = gf_strdup("gpuflockd is shutting down");
            gf_server_post_free(self, self->workers, &w->peer, &d);
        }
        if (w->child > 0)
            kill(w->child, SIGTERM);
    }
    size_t pos = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        if (sj->job.state == GF_STATE_RUNNING) {
            gf_sched_release(self->sched, sj->job.id, false);
            sj->job.state = GF_STATE_PENDING;
            gf_jobs_set_reason(&sj->job, "requeued: gpuflockd shut down while it ran");
            gf_server_persist(self, &sj->job);
        }
    self->next_retry = 0;   /* a last try, if the store is behind */
    gf_server_end_turn(self);
    if (self->behind)
        GF_ERROR("stopping with %zu job changes the job store could not take (%s): the next "
                 "gpuflockd finds those jobs as the store last recorded them (a job that ended "
                 "meanwhile may run again)", self->n_dirty, self->behind_why);
    /* wait a little for our children, then make sure */
    uint64_t until = gf_now_ms() + (uint64_t)self->cfg->kill_grace_s * 1000 + 1000;
    for (;;) {
        bool any = false;
        for (size_t i = 0; i < self->n_wks; i++) {
            wk *w = &self->wks[i];
            if (w->child > 0 && waitpid(w->child, NULL, WNOHANG) == w->child)
                w->child = 0;
            any |= w->child > 0;
        }
        if (!any)
            break;
        if (gf_now_ms() > until) {
            for (size_t i = 0; i < self->n_wks; i++)
                if (self->wks[i].child > 0) {
                    kill(self->wks[i].child, SIGKILL);
                    waitpid(self->wks[i].child, NULL, 0);
                    self->wks[i].child = 0;
                }
            break;
        }
        usleep(20000);
    }
}
