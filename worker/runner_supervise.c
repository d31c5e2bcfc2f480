/* runner_supervise.c — a started run to its end (see runner.h): signals
 * and yields, the guard reaped, what is left of the job killed, and the
 * result once none of its processes is left. The run's record and start
 * are worker/runner.c. */
#include "worker/runner_impl.h"

#include "worker/cgroup.h"
#include "common/ckdir.h"
#include "worker/guard/request.h"

#include "common/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a process group's killed members may take to go before the
 * result goes out anyway (the group cannot be waited for as a cgroup can) */
#define GROUP_DRAIN_MS 1000

static void add_stat(gf_msg *r, const char *key, int64_t v)
{
    r->stats = gf_realloc(r->stats, (r->n_stats + 1) * sizeof(gf_stat));
    gf_stat *s = &r->stats[r->n_stats++];
    memset(s, 0, sizeof(*s));
    s->key = gf_strdup(key);
    s->i = v;
}

/* The guard's report (guard/request.h), written just before it ended. */
static void read_report(gf_run *self)
{
    int64_t words[GUARD_REPORT_WORDS];
    ssize_t n = read(self->report, words, sizeof words);
    if (n == (ssize_t)sizeof words && words[0] == GUARD_REPORT_MAGIC) {
        self->have_report = true;
        self->cut[0] = words[1];
        self->cut[1] = words[2];
    }
    close(self->report);
    self->report = -1;
}

/* Reap the guard if it ended, and kill what is left of the job: its
 * cgroup, else its process group. The group is killed while the guard is
 * a zombie (waitid with WNOWAIT), so that its pid, the group's number,
 * cannot have gone to another process meanwhile. */
static bool reap_guard(gf_run *self)
{
    if (!self->cg) {
        siginfo_t si;
        si.si_pid = 0;
        if (waitid(P_PID, (id_t)self->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            si.si_pid != self->pid)
            return false;
        kill(-self->pid, SIGKILL);
    }
    if (wait4(self->pid, &self->guard_status, WNOHANG, &self->guard_ru) != self->pid)
        return false;
    self->guard_gone = true;
    self->guard_ended_ms = gf_wall_ms();
    read_report(self);
    if (self->cg) {
        /* empty now stays empty: only root moves processes in */
        self->draining = gf_jobcg_populated(self->cg);
        if (self->draining)
            self->left = gf_jobcg_kill(self->cg);
    } else {
        self->draining = true;       /* the group was killed above, maybe with members */
    }
    return true;
}

/* Does a live process (not a zombie) lead or belong to process group
 * pgid? Signal 0 first (zombies answer it too: orphans wait for init,
 * which may reap them late, and a zombie holds no descriptor, so no card),
 * then /proc, only when that finds someone. */
static bool group_alive(pid_t pgid)
{
    if (kill(-pgid, 0) != 0)
        return false;
    DIR *d = opendir("/proc");
    if (!d)
        return true;
    bool alive = false;
    struct dirent *e;
    while (!alive && (e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        buf[n] = 0;
        /* "pid (comm) state ppid pgrp ...": comm may hold anything but the last ')' */
        char *rp = strrchr(buf, ')'), state;
        int ppid, pgrp;
        if (rp && sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pgid &&
            state != 'Z' && state != 'X')
            alive = true;
    }
    closedir(d);
    return alive;
}

/* Is none of the job left? The cgroup says so itself (killed again each
 * time without cgroup.kill: a round may miss a fork); the process group
 * is empty when no live process has its number any more (looked at only:
 * the number may be another group's once ours is gone), or after a
 * second. */
static bool rest_gone(gf_run *self)
{
    if (!self->draining)
        return true;
    if (self->cg) {
        if (!gf_jobcg_populated(self->cg))
            return true;
        if (!gf_cgroup_has_kill(self->cgroups))
            gf_jobcg_kill(self->cg);
        return false;
    }
    return !group_alive(self->pid) || gf_wall_ms() - self->guard_ended_ms > GROUP_DRAIN_MS;
}

bool gf_run_reap(gf_run *self, gf_msg *r)
{
    if (self->pid <= 0)
        return false;
    if (self->djob) {
        if (!gf_djob_reap(self->djob, r))
            return false;
        if (gf_djob_yielded(self->djob))
            r->outcome = GF_OUTCOME_YIELDED;
        /* the joined job stays until destroy: its last progress may still
         * have to be read (gf_run_progress) */
        gf_run_close_locks(self);           /* the card is free once the thread is done */
        self->pid = -1;
        return true;
    }
    if (!self->guard_gone && !reap_guard(self))
        return false;
    if (!rest_gone(self))
        return false;                /* killed, not gone yet: asked again next turn */
    int status = self->guard_status;
    const struct rusage *ru = &self->guard_ru;
    memset(r, 0, sizeof(*r));
    r->op = GF_OP_RESULT;
    r->id = self->job.id;
    r->attempt = self->job.attempt;
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    r->started_ms = self->started_ms;
    r->ended_ms = gf_wall_ms();      /* when none of the job is left */
    r->cpu_user_ms = (int64_t)ru->ru_utime.tv_sec * 1000 + ru->ru_utime.tv_usec / 1000;
    r->cpu_sys_ms = (int64_t)ru->ru_stime.tv_sec * 1000 + ru->ru_stime.tv_usec / 1000;
    r->maxrss_kb = ru->ru_maxrss;
    add_stat(r, "wall_ms", r->ended_ms - r->started_ms);
    for (size_t i = 0; i < self->n_scrubbed; i++) {
        char *k = gf_strfmt("proof.scrubbed.%s", self->scrubbed[i]);
        add_stat(r, k, 1);
        free(k);
    }
    if (self->cut[0])
        add_stat(r, "spool.stdout_cut_bytes", self->cut[0]);
    if (self->cut[1])
        add_stat(r, "spool.stderr_cut_bytes", self->cut[1]);
    if (self->left)
        add_stat(r, "supervision.killed_at_end", self->left);
    /* asked to yield: it saved its state and said so, or ran out of grace */
    if (self->yielding && (r->exit_status == GF_EXIT_CHECKPOINTED || self->yield_killed))
        r->outcome = GF_OUTCOME_YIELDED;
    if (r->outcome != GF_OUTCOME_YIELDED && self->ckdir)
        gf_ckdir_remove(self->ckdir);   /* the job is over: its checkpoint too */
    if (!self->have_report && WIFSIGNALED(status) && !self->sent_kill) {
        /* not the command's end mirrored, and not ours: someone killed the guard */
        if (self->cg)
            r->message = gf_strfmt("the job's guard was killed by signal %d; its %d remaining "
                                   "processes were killed", WTERMSIG(status), self->left);
        else
            r->message = gf_strfmt("the job's guard was killed by signal %d; what was left of "
                                   "its process group was killed", WTERMSIG(status));
    }
    gf_jobcg_destroy(&self->cg);     /* empty: removed */
    self->pid = -1;
    return true;
}

bool gf_run_draining(const gf_run *self)
{
    return self->pid > 0 && self->guard_gone;
}

void gf_run_signal(gf_run *self, int sig)
{
    if (self->djob) {
        /* our own pid: never kill(); TERM, KILL, INT stop the pipeline
         * (a no-op once it has ended) */
        if (self->pid > 0 && sig != SIGCONT && sig != 0)
            gf_djob_cancel(self->djob);
        return;
    }
    if (self->pid <= 0)
        return;
    if (sig == SIGKILL) {
        self->sent_kill = true;
        self->yield_killed |= self->yielding;
    }
    /* the cgroup reaches every process of the job, also one that left the
     * group. Until the guard has started the command in it, it is empty and
     * the group is used (the guard leads it from its start); once the guard
     * is reaped the group's number is no longer ours to use */
    if (self->cg && (self->guard_gone || gf_jobcg_populated(self->cg))) {
        if (sig == SIGKILL)
            gf_jobcg_kill(self->cg);
        else
            gf_jobcg_signal(self->cg, sig);
        if (!self->guard_gone)
            kill(self->pid, sig);    /* the guard stays outside the cgroup (guard/main.c) */
    } else if (!self->guard_gone) {
        kill(-self->pid, sig);
    }
}

int gf_run_yield(gf_run *self, bool requeue)
{
    const gf_job_spec *sp = &self->job.spec;
    if (self->djob) {
        gf_djob_yield(self->djob);      /* a checkpoint at the next batch boundary */
        return 0;
    }
    if (self->pid <= 0)
        return -1;
    if (sp->yield_sig > 0) {
        self->yielding = true;
        gf_run_signal(self, sp->yield_sig);
        gf_run_signal(self, SIGCONT);
        return 1;
    }
    if (!requeue)
        return -1;                      /* not yieldable: never interrupted */
    gf_run_signal(self, SIGTERM);       /* requeued, it starts again from its start */
    gf_run_signal(self, SIGCONT);
    return 1;
}

void gf_run_result_unstarted(const gf_run *self, const char *why, gf_msg *r)
{
    memset(r, 0, sizeof(*r));
    r->op = GF_OP_RESULT;
    r->id = self->job.id;
    r->attempt = self->job.attempt;
    r->exit_status = -1;
    r->ended_ms = gf_wall_ms();
    r->message = gf_strdup(why);
}
