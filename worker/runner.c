/* runner.c — one run of a command job (see runner.h): its record, its
 * locks and its start.
 *
 * Sits between the worker's event loop (worker/agent.c) and the job's
 * processes: locks, spool files, the job's cgroup (worker/cgroup.h) and
 * the guard that runs the command with the submitter's identity. What
 * follows the start (signals, the guard reaped, what is left of the job
 * killed, the result once none of its processes is left) is
 * worker/runner_supervise.c; the record both share is worker/runner_impl.h. */
#include "worker/runner_impl.h"

#include "worker/cgroup.h"
#include "common/ckdir.h"
#include "worker/spare.h"

#include "common/env.h"
#include "common/error.h"
#include "common/jobenv.h"
#include "common/lock.h"
#include "common/lockinfo.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

gf_run *gf_run_new(const gf_msg *job, const gf_config *cfg)
{
    gf_run *self = gf_calloc(1, sizeof(*self));
    assert(job->op == GF_OP_JOB);
    gf_msg_copy(&self->job, job);
    self->bench_lock = gf_strdup(cfg->bench_lock);
    self->lock_owner = cfg->lock_owner_uid;
    self->scrub = gf_calloc(cfg->n_scrub_env + 1, sizeof(char *));
    for (size_t i = 0; i < cfg->n_scrub_env; i++)
        self->scrub[i] = gf_strdup(cfg->scrub_env[i]);
    self->n_scrub = cfg->n_scrub_env;
    self->n_locks = job->n_locks + (job->spec.proof ? 1 : 0);
    self->locks = gf_calloc(self->n_locks ? self->n_locks : 1, sizeof(gf_lock *));
    self->wake_fd = -1;
    self->spool_cap = cfg->spool_max_bytes;
    self->report = -1;
    return self;
}

void gf_run_set_diar(gf_run *self, gf_diar_pool *pool, int wake_fd)
{
    self->pool = pool;
    self->wake_fd = wake_fd;
}

bool gf_run_progress(gf_run *self, int64_t *done, int64_t *total)
{
    return self->djob && gf_djob_progress(self->djob, done, total);
}

void gf_run_close_locks(gf_run *self)
{
    for (size_t i = 0; i < self->n_locks; i++)
        gf_lock_destroy(&self->locks[i]);
    self->locked = false;
}

void gf_run_destroy(gf_run **self_p)
{
    gf_run *self = *self_p;
    if (!self)
        return;
    gf_djob_destroy(&self->djob);     /* stops and joins a diarize thread */
    free(self->ckdir);
    gf_jobcg_destroy(&self->cg);      /* kills what is left of the job */
    if (self->report >= 0)
        close(self->report);
    gf_run_close_locks(self);
    free(self->locks);
    gf_msg_clear(&self->job);
    free(self->bench_lock);
    for (size_t i = 0; i < self->n_scrub; i++)
        free(self->scrub[i]);
    free(self->scrub);
    for (size_t i = 0; i < self->n_scrubbed; i++)
        free(self->scrubbed[i]);
    free(self->scrubbed);
    free(self);
    *self_p = NULL;
}

uint64_t gf_run_id(const gf_run *self) { return self->job.id; }
int32_t gf_run_attempt(const gf_run *self) { return self->job.attempt; }
bool gf_run_started(const gf_run *self) { return self->pid > 0; }
bool gf_run_exclusive(const gf_run *self) { return self->job.spec.mode != GF_MODE_SHARED; }

bool gf_run_shares_card(const gf_run *a, const gf_run *b)
{
    for (size_t i = 0; i < a->job.n_cards; i++)
        for (size_t k = 0; k < b->job.n_cards; k++)
            if (a->job.cards[i] == b->job.cards[k])
                return true;
    return false;
}
pid_t gf_run_pid(const gf_run *self) { return self->pid; }
int64_t gf_run_started_ms(const gf_run *self) { return self->started_ms; }

/* "pid 1234 (exclusive, flock: flock /run/lock/gpu0.lock sleep 60)": who
 * holds path now, from /proc/locks. */
static void describe_holders(const char *path, char *buf, size_t len)
{
    gf_lock_holder *h = NULL;
    size_t n = 0;
    if (gf_lock_holders(path, &h, &n) != 0 || n == 0) {
        snprintf(buf, len, "a process /proc/locks does not show");
    } else {
        gf_lock_holder_describe(&h[0], buf, len);
        if (n > 1) {
            size_t l = strlen(buf);
            snprintf(buf + l, len - l, " and %zu more", n - 1);
        }
    }
    gf_lock_holders_free(&h, n);
}

int gf_run_try_locks(gf_run *self, char *why, size_t len)
{
    if (self->locked)
        return 0;
    gf_lock_mode mode = self->job.spec.mode == GF_MODE_SHARED ? GF_LOCK_SHARED : GF_LOCK_EXCLUSIVE;
    /* all or none, ascending card order, then the bench lock */
    for (size_t i = 0; i < self->n_locks; i++) {
        bool bench = i >= self->job.n_locks;
        const char *path = bench ? self->bench_lock : self->job.locks[i];
        if (!self->locks[i] &&
            !(self->locks[i] = gf_lock_open(path, self->lock_owner, why, len))) {
            gf_run_close_locks(self);
            return GF_EIO;
        }
        int rc = gf_lock_try(self->locks[i], bench ? GF_LOCK_EXCLUSIVE : mode);
        if (rc == 0)
            continue;
        char who[512];
        if (rc == GF_EBUSY && gf_lock_gated(self->locks[i])) {
            describe_holders(gf_lock_gate_path(self->locks[i]), who, sizeof(who));
            snprintf(why, len, "waiting for card %d: an exclusive waiter outside the broker is "
                     "ahead at its gate: %s", self->job.cards[i], who);
        } else if (rc == GF_EBUSY) {
            describe_holders(path, who, sizeof(who));
            if (bench)
                snprintf(why, len, "waiting for the bench lock %s: held by %s", path, who);
            else
                snprintf(why, len, "waiting for card %d: held outside gpuflock by %s",
                         self->job.cards[i], who);
        } else {
            snprintf(why, len, "lock file %s: %s", path, gf_strerror(rc));
        }
        for (size_t k = 0; k < i; k++)
            gf_lock_release(self->locks[k]);
        return rc == GF_EBUSY ? GF_EBUSY : GF_EIO;
    }
    self->locked = true;
    return 0;
}

static int open_spool(const char *path, uid_t uid, gid_t gid, char *why, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(why, len, "spool file %s: %s", path, strerror(errno));
        return -1;
    }
    if (geteuid() == 0 && fchown(fd, uid, gid) != 0) {
        snprintf(why, len, "spool file %s: chown: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* list + "," + item (item alone when list is NULL); frees list. */
static char *list_add(char *list, const char *item)
{
    char *next = list ? gf_strfmt("%s,%s", list, item) : gf_strdup(item);
    free(list);
    return next;
}

/* "0,1": the job's cards; "" for none. */
static char *join_cards(const gf_run *self)
{
    char *list = NULL, num[16];
    for (size_t i = 0; i < self->job.n_cards; i++) {
        snprintf(num, sizeof num, "%d", self->job.cards[i]);
        list = list_add(list, num);
    }
    return list ? list : gf_strdup("");
}

/* The job's lock files, comma-separated; "" for none. */
static char *join_locks(const gf_run *self)
{
    char *list = NULL;
    for (size_t i = 0; i < self->job.n_locks; i++)
        list = list_add(list, self->job.locks[i]);
    return list ? list : gf_strdup("");
}

/* The job's environment: the submitter's, with the card variables every
 * gpuflock command job gets (common/jobenv), GPUFLOCK_JOB_ID and
 * GPUFLOCK_ARRAY_INDEX; for --proof without proof.scrub_env. */
static gf_env *build_env(gf_run *self)
{
    const gf_job_spec *sp = &self->job.spec;
    gf_env *env = gf_env_new(NULL);
    for (size_t i = 0; i < sp->n_env; i++)
        gf_env_put(env, sp->env[i]);   /* entries without a name are left out */
    if (!gf_env_get(env, "PATH"))
        gf_env_set(env, "PATH", "/usr/local/bin:/usr/bin:/bin");
    char *devices = join_cards(self), *locks = join_locks(self), *removed = NULL;
    gf_jobenv_export(env, self->job.visible ? self->job.visible : devices, devices, locks,
                     sp->proof, self->scrub, self->n_scrub, &removed);
    free(devices);
    free(locks);
    char id[32];
    snprintf(id, sizeof(id), "%llu", (unsigned long long)self->job.id);
    gf_env_set(env, "GPUFLOCK_JOB_ID", id);
    /* runs before this one (yields, requeues, a worker's death), as Slurm's
     * SLURM_RESTART_COUNT */
    snprintf(id, sizeof(id), "%d", self->job.attempt > 0 ? self->job.attempt - 1 : 0);
    gf_env_set(env, "GPUFLOCK_RESTART_COUNT", id);
    if (self->ckdir)
        gf_env_set(env, "GPUFLOCK_CHECKPOINT_DIR", self->ckdir);
    else
        gf_env_unset(env, "GPUFLOCK_CHECKPOINT_DIR");
    if (sp->array_index >= 0) {
        snprintf(id, sizeof(id), "%lld", (long long)sp->array_index);
        gf_env_set(env, "GPUFLOCK_ARRAY_INDEX", id);
    } else {
        gf_env_unset(env, "GPUFLOCK_ARRAY_INDEX");
    }
    /* the names removed, kept for the result's statistics */
    for (char *save = NULL, *tok = removed ? strtok_r(removed, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        self->scrubbed = gf_realloc(self->scrubbed, (self->n_scrubbed + 1) * sizeof(char *));
        self->scrubbed[self->n_scrubbed++] = gf_strdup(tok);
    }
    free(removed);
    return env;
}

/* "1,2,3" from the job's groups, "-" for none. */
static char *join_groups(const gf_run *self)
{
    char *list = NULL, num[16];
    for (size_t i = 0; i < self->job.n_groups; i++) {
        snprintf(num, sizeof num, "%u", self->job.groups[i]);
        list = list_add(list, num);
    }
    return list ? list : gf_strdup("-");
}

/* The cgroup the guard starts the command in, "-" for none. */
static const char *cgroup_arg(const gf_run *self)
{
    return self->cg ? gf_jobcg_path(self->cg) : "-";
}

/* Start gpuflock-guard (worker/guard/main.c), the job's group leader, for
 * this job (gf_guard_spawn: stdout and stderr on the spool files, the
 * report pipe on descriptor 3, the lock descriptors inherited). Returns
 * its pid, or -1 with the reason in why. */
static pid_t spawn_guard(gf_run *self, int out, int err, int report, char *const envp[],
                         char *why, size_t len)
{
    const gf_job_spec *sp = &self->job.spec;
    char *guard = gf_beside_self("gpuflock-guard");
    if (!guard) {
        snprintf(why, len, "cannot find gpuflock-guard beside the worker: %s", strerror(errno));
        return -1;
    }
    char parent[24], uid[24], gid[24], cap[24];
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    snprintf(uid, sizeof uid, "%u", (unsigned)self->job.uid);
    snprintf(gid, sizeof gid, "%u", (unsigned)self->job.gid);
    snprintf(cap, sizeof cap, "%lld", self->spool_cap);
    char *groups = join_groups(self);
    char **argv = gf_calloc(sp->argc + 10, sizeof(char *));
    size_t n = 0;
    argv[n++] = "gpuflock-guard";
    argv[n++] = parent;
    argv[n++] = uid;
    argv[n++] = gid;
    argv[n++] = groups;
    argv[n++] = sp->cwd ? sp->cwd : "-";
    argv[n++] = (char *)cgroup_arg(self);
    argv[n++] = cap;
    argv[n++] = "--";
    for (size_t i = 0; i < sp->argc; i++)
        argv[n++] = sp->argv[i];
    argv[n] = NULL;

    const int dups[][2] = { { out, 1 }, { err, 2 }, { report, 3 } };
    pid_t pid;
    int e = gf_guard_spawn(guard, argv, envp, dups, 3, &pid);
    if (e)
        snprintf(why, len, "cannot start %s: %s", guard, strerror(e));
    free(argv);
    free(groups);
    free(guard);
    return e ? -1 : pid;
}

/* Hand the job to the agent's spare guard (worker/spare.h): its pid, or -1
 * when there is none (spawn_guard then). */
static pid_t take_spare(gf_run *self, int out, int err, int report, char *const envp[])
{
    if (!self->spare)
        return -1;
    const gf_job_spec *sp = &self->job.spec;
    int keep[GF_PROTO_MAX_CARDS + 1];
    if (self->n_locks > sizeof(keep) / sizeof(keep[0]))
        return -1;
    for (size_t i = 0; i < self->n_locks; i++)
        keep[i] = gf_lock_fd(self->locks[i]);
    char **argv = gf_calloc(sp->argc + 1, sizeof(char *));
    for (size_t i = 0; i < sp->argc; i++)
        argv[i] = sp->argv[i];
    char *groups = join_groups(self);
    gf_spare_job job = {
        .uid = self->job.uid, .gid = self->job.gid, .groups = groups,
        .cwd = sp->cwd ? sp->cwd : "-", .argv = argv, .envp = envp,
        .cap = self->spool_cap,
        .out = out, .err = err, .report = report, .keep = keep, .n_keep = self->n_locks,
    };
    pid_t pid = gf_spare_take(self->spare, &job, &self->cg);
    free(groups);
    free(argv);
    return pid;
}

void gf_run_set_spare(gf_run *self, gf_spare *spare)
{
    self->spare = spare;
}

void gf_run_set_cgroups(gf_run *self, gf_cgroup *cgroups)
{
    self->cgroups = cgroups;
}

/* A command job: the guard started on the spool files out and err
 * (borrowed: the guard gets its own copies), with the report pipe, the
 * checkpoint folder of a --yieldable job, the environment, the lock
 * descriptors passed on and, without a spare, a cgroup made now. */
static int start_command(gf_run *self, int out, int err, char *why, size_t len)
{
    const gf_job_spec *sp = &self->job.spec;
    /* the guard's last word (guard/request.h): ended with its command, or killed */
    int report[2];
    if (pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(why, len, "pipe: %s", strerror(errno));
        return GF_EIO;
    }
    int rc = GF_EIO;
    if (sp->yield_sig > 0 && !self->ckdir) {
        char *dir = gf_ckdir_path(self->job.out_path);
        if (gf_ckdir_make(dir, self->job.uid, self->job.gid, why, len) != 0) {
            free(dir);
            goto out_close_report;
        }
        self->ckdir = dir;
    }
    gf_env *env = build_env(self);
    for (size_t i = 0; i < self->n_scrubbed; i++)
        dprintf(err, "gpuflock: --proof removed %s from the environment\n", self->scrubbed[i]);
    /* the lock descriptors stay open across the job's exec: it holds the
     * card (our copies close right after the fork, before any other fork) */
    for (size_t i = 0; i < self->n_locks; i++)
        if (gf_lock_inherit(self->locks[i]) != 0) {
            snprintf(why, len, "cannot pass the lock on to the job");
            goto out_free_env;
        }
    /* a spare comes with the job's cgroup, born in it; a guard spawned for
     * the job gets one made now, and starts the command in it */
    pid_t pid = take_spare(self, out, err, report[1], gf_env_array(env));
    if (pid < 0 && self->cgroups && !(self->cg = gf_jobcg_new(self->cgroups, why, len)))
        goto out_free_env;
    if (pid < 0)
        pid = spawn_guard(self, out, err, report[1], gf_env_array(env), why, len);
    if (pid < 0) {
        gf_jobcg_destroy(&self->cg);     /* nothing started in it */
        goto out_free_env;
    }
    self->pid = pid;
    self->started_ms = gf_wall_ms();
    if (self->cg)
        GF_DEBUG("job %llu: cgroup %s", (unsigned long long)self->job.id, gf_jobcg_path(self->cg));
    self->report = report[0];
    report[0] = -1;
    /* our copies of the lock descriptors go: the job's tree holds the card */
    gf_run_close_locks(self);
    rc = 0;
out_free_env:
    gf_env_destroy(&env);
out_close_report:
    close(report[1]);
    if (report[0] >= 0)
        close(report[0]);
    return rc;
}

int gf_run_start(gf_run *self, char *why, size_t len)
{
    const gf_job_spec *sp = &self->job.spec;
    uid_t uid = self->job.uid;
    gid_t gid = self->job.gid;
    if (geteuid() != 0 && uid != geteuid()) {
        snprintf(why, len, "this worker runs as uid %u and cannot run a job as uid %u",
                 (unsigned)geteuid(), (unsigned)uid);
        return GF_EPERM;
    }
    int rc = GF_EIO;
    int out = open_spool(self->job.out_path, uid, gid, why, len);
    if (out < 0)
        return rc;
    int err = open_spool(self->job.err_path, uid, gid, why, len);
    if (err < 0)
        goto out_close_out;
    if (sp->kind != GF_JOB_DIARIZE) {
        rc = start_command(self, out, err, why, len);
        goto out_close_err;
    }
    /* in this process, on a thread that keeps our lock descriptors */
    if (!self->pool || !sp->diar) {
        snprintf(why, len, "diarize job without %s", self->pool ? "its parameters"
                                                               : "a pipeline pool");
        rc = GF_EINVAL;
        goto out_close_err;
    }
    /* the spool descriptors go with the job, started or not */
    rc = gf_djob_start(&self->job, self->pool, out, err, self->wake_fd, &self->djob, why, len);
    if (rc)
        return rc;
    self->pid = getpid();
    self->started_ms = gf_wall_ms();
    return 0;
out_close_err:
    close(err);
out_close_out:
    close(out);
    return rc;
}
