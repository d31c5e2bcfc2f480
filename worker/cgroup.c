/* cgroup.c — a cgroup v2 per command job (see cgroup.h).
 *
 * Sits under worker/runner.c, which makes a job's cgroup before it starts
 * the job's guard and kills and removes it once the guard is gone; the
 * agent opens the worker's folder once at start (worker/agent.c). Only
 * cgroupfs files are used: cgroup.procs, cgroup.kill, cgroup.events. */
#include "worker/cgroup.h"

#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FOLDER_PREFIX "gpuflock-worker-"
/* How long gf_jobcg_destroy and the sweep of a gone worker's folder wait
 * for killed processes to exit (they are SIGKILLed: a process stuck in
 * the kernel is the only one that takes longer). */
#define DRAIN_WAIT_MS 1000
#define DRAIN_STEP_MS 5

struct gf_cgroup {
    char *path;               /* <worker's cgroup>/gpuflock-worker-<pid> */
    bool kill;                /* cgroup.kill exists (Linux 5.14+) */
    gf_jobcg *kept;           /* an empty one kept for the next job, or NULL */
    uint64_t seq;             /* the last run-<n> made */
};

struct gf_jobcg {
    gf_cgroup *folder;        /* where it lives (borrowed) */
    char *path;               /* <folder>/run-<n> */
    int dir;                  /* O_PATH descriptor of it */
    int events;               /* its cgroup.events, read with pread */
    bool kill;                /* cgroup.kill exists */
    bool killed;              /* cgroup.kill was written: never kept (see gf_jobcg_destroy) */
};

/* The whole text of a (small, virtual) file; NULL with errno set. */
static char *read_text(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t len = 0, cap = 4096;
    char *buf = gf_malloc(cap);
    for (;;) {
        if (len + 1 >= cap)
            buf = gf_realloc(buf, cap *= 2);
        ssize_t r = read(fd, buf + len, cap - len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            errno = e;
            return NULL;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    buf[len] = 0;
    return buf;
}

/* mountinfo escapes blanks and backslashes as \ooo; undo it in place. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 3;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
}

/* The "0::" line's path of /proc/self/cgroup text, copied; NULL if none. */
static char *unified_path(const char *self_cgroup)
{
    for (const char *l = self_cgroup; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t n = end ? (size_t)(end - l) : strlen(l);
        if (n >= 3 && strncmp(l, "0::", 3) == 0) {
            char *p = gf_malloc(n - 2);
            memcpy(p, l + 3, n - 3);
            p[n - 3] = 0;
            return p;
        }
        l = end ? end + 1 : NULL;
    }
    return NULL;
}

char *gf_cgroup_locate(const char *mountinfo, const char *self_cgroup, char *why, size_t len)
{
    char *own = unified_path(self_cgroup);
    if (!own || own[0] != '/') {
        snprintf(why, len, "no cgroup v2 line (0::) in /proc/self/cgroup");
        free(own);
        return NULL;
    }
    char *found = NULL;
    bool any_mount = false;
    char *text = gf_strdup(mountinfo ? mountinfo : "");
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line && !found;
         line = strtok_r(NULL, "\n", &save)) {
        /* id parent major:minor root mountpoint options [optional...] - type source super */
        char *f[6] = { 0 }, *s2 = NULL, *type = NULL;
        size_t n = 0;
        for (char *tok = strtok_r(line, " ", &s2); tok; tok = strtok_r(NULL, " ", &s2)) {
            if (n < 6)
                f[n] = tok;
            if (n >= 6 && strcmp(tok, "-") == 0) {
                type = strtok_r(NULL, " ", &s2);
                break;
            }
            n++;
        }
        if (n < 6 || !type || strcmp(type, "cgroup2") != 0)
            continue;
        any_mount = true;
        char *root = f[3], *mnt = f[4];
        unescape(root);
        unescape(mnt);
        size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (rl && (strncmp(own, root, rl) != 0 || (own[rl] != '/' && own[rl] != 0)))
            continue;               /* this mount shows another part of the tree */
        const char *rest = own + rl;
        if (strcmp(rest, "/") == 0)
            rest = "";
        found = gf_strfmt("%s%s", strcmp(mnt, "/") == 0 && *rest ? "" : mnt, rest);
    }
    free(text);
    if (!found)
        snprintf(why, len, any_mount ? "this process's cgroup %s is outside every cgroup2 mount"
                                     : "no cgroup2 file system mounted (cgroup %s)", own);
    free(own);
    return found;
}

/* The pids listed in dir/cgroup.procs: their count (-1: unreadable), the
 * pids in *out (the caller frees). */
static int read_pids(const char *dir, pid_t **out)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    *out = NULL;
    char *text = read_text(path);
    if (!text)
        return -1;
    int n = 0, cap = 0;
    for (char *p = text, *end; *p; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) {
            end = p + 1;
            continue;
        }
        if (v <= 0)
            continue;
        if (n == cap)
            *out = gf_realloc(*out, (size_t)(cap = cap ? cap * 2 : 16) * sizeof(pid_t));
        (*out)[n++] = (pid_t)v;
    }
    free(text);
    return n;
}

static int signal_each(const char *dir, int sig)
{
    pid_t *pids;
    int n = read_pids(dir, &pids);
    for (int i = 0; i < n; i++)
        kill(pids[i], sig);
    free(pids);
    return n < 0 ? 0 : n;
}

/* SIGKILL everything in dir: the count listed before. */
static int kill_all(const char *dir, bool has_kill)
{
    if (!has_kill)
        return signal_each(dir, SIGKILL);
    pid_t *pids;
    int n = read_pids(dir, &pids);
    free(pids);
    if (n <= 0)
        return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.kill", dir);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1", 1) != 1) {
        GF_WARN("cgroup %s: cgroup.kill: %s; killing each process", dir, strerror(errno));
        signal_each(dir, SIGKILL);
    }
    if (fd >= 0)
        close(fd);
    return n;
}

/* "populated 1" in the text of a cgroup.events file. */
static bool populated_in(const char *text)
{
    const char *p = strstr(text, "populated ");
    return p && p[10] == '1';
}

static bool populated_at(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.events", dir);
    char *text = read_text(path);
    bool pop = text && populated_in(text);
    free(text);
    return pop;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Kill what dir holds, wait for it to go, remove dir. Returns how many
 * processes were killed; *removed says whether dir went. */
static int drain_remove(const char *dir, bool has_kill, bool *removed)
{
    int killed = 0;
    for (int waited = 0; populated_at(dir) && waited <= DRAIN_WAIT_MS; waited += DRAIN_STEP_MS) {
        int n = kill_all(dir, has_kill);
        if (waited == 0)
            killed = n;
        sleep_ms(DRAIN_STEP_MS);
    }
    *removed = rmdir(dir) == 0 || errno == ENOENT;
    if (!*removed)
        GF_WARN("cgroup %s: cannot remove it: %s", dir, strerror(errno));
    return killed;
}

/* Empty and remove each cgroup inside folder (the job cgroups of the
 * worker with pid owner, gone), logging what had to be killed. */
static void empty_folder(const char *folder, long owner, bool has_kill)
{
    DIR *d = opendir(folder);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        char *sub = gf_strfmt("%s/%s", folder, e->d_name);
        bool removed;
        int n = drain_remove(sub, has_kill, &removed);
        if (n > 0)
            GF_WARN("cgroup %s of a worker that is gone (pid %ld): killed the %d processes left "
                    "in it", sub, owner, n);
        free(sub);
    }
    closedir(d);
}

/* Remove the folders of workers that are gone, found beside ours. */
static void sweep(const char *base, bool has_kill)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (e->d_type != DT_DIR || strncmp(e->d_name, FOLDER_PREFIX, strlen(FOLDER_PREFIX)) != 0)
            continue;
        long pid = strtol(e->d_name + strlen(FOLDER_PREFIX), &end, 10);
        if (*end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;                  /* not ours to judge, ourselves, or alive */
        char *folder = gf_strfmt("%s/%s", base, e->d_name);
        empty_folder(folder, pid, has_kill);
        if (rmdir(folder) == 0)
            GF_INFO("removed the cgroup folder %s of a worker that is gone (pid %ld)", folder, pid);
        else
            GF_WARN("cgroup folder %s of a worker that is gone: cannot remove it: %s", folder,
                    strerror(errno));
        free(folder);
    }
    closedir(d);
}

/* clone3(2) with CLONE_INTO_CGROUP (Linux 5.7), which the C library does
 * not wrap: the arguments up to cgroup. */
struct clone_into {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
    uint64_t set_tid, set_tid_size, cgroup;
};
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define CLONE_INTO_CGROUP_FLAG 0x200000000ULL

/* Prove that a process can be born in a cgroup of folder, as the guards'
 * are (clone3 with CLONE_INTO_CGROUP; where the kernel has none, a child
 * moves itself in through cgroup.procs, as the guards then do), and that
 * it lives there: 0, or -1 with why filled. *born_inside: clone3 served. */
static int probe(const char *folder, bool *born_inside, char *why, size_t len)
{
    char *dir = gf_strfmt("%s/probe", folder);
    char *procs = gf_strfmt("%s/cgroup.procs", dir);
    int rc = -1, fd = -1;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(why, len, "cannot make the cgroup %s: %s", dir, strerror(errno));
        goto out_free;
    }
    fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct clone_into ca = { .flags = CLONE_INTO_CGROUP_FLAG, .exit_signal = SIGCHLD,
                             .cgroup = (uint64_t)fd };
    pid_t pid = fd < 0 ? -1 : (pid_t)syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0)
        _exit(0);
    *born_inside = pid > 0;
    if (pid < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG)) {
        pid = fork();
        if (pid == 0) {
            int pfd = open(procs, O_WRONLY | O_CLOEXEC);
            int e = pfd < 0 || write(pfd, "0", 1) != 1 ? errno : 0;
            _exit(e > 0 && e < 256 ? e : e ? 255 : 0);
        }
    }
    int e = errno, st = 0;
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    bool removed;
    drain_remove(dir, false, &removed);
    if (pid < 0)
        snprintf(why, len, "cannot start a process in the cgroup %s: %s", dir, strerror(e));
    else if (WIFSIGNALED(st))
        /* seen after a cgroup.kill on the cgroup a child is cloned from:
         * the kernel kills each child born elsewhere (kill_seq) */
        snprintf(why, len, "a process born in the cgroup %s was killed at once (signal %d)", dir,
                 WTERMSIG(st));
    else if (WEXITSTATUS(st) != 0)
        snprintf(why, len, "cannot move a process into the cgroup %s: %s", dir,
                 strerror(WEXITSTATUS(st)));
    else
        rc = 0;
out_free:
    if (fd >= 0)
        close(fd);
    free(procs);
    free(dir);
    return rc;
}

gf_cgroup *gf_cgroup_open(char *why, size_t len)
{
    char *mountinfo = read_text("/proc/self/mountinfo");
    char *self_cg = read_text("/proc/self/cgroup");
    char *base = mountinfo && self_cg ? gf_cgroup_locate(mountinfo, self_cg, why, len) : NULL;
    if (!mountinfo || !self_cg)
        snprintf(why, len, "cannot read /proc/self/%s: %s", mountinfo ? "cgroup" : "mountinfo",
                 strerror(errno));
    free(mountinfo);
    free(self_cg);
    if (!base)
        return NULL;
    gf_cgroup *self = gf_calloc(1, sizeof(*self));
    self->path = gf_strfmt("%s/" FOLDER_PREFIX "%ld", base, (long)getpid());
    bool made = mkdir(self->path, 0755) == 0;
    if (!made && errno != EEXIST) {
        snprintf(why, len, "cannot make the cgroup %s: %s", self->path, strerror(errno));
        goto fail;
    }
    /* asked of the folder: the root cgroup has no cgroup.kill of its own */
    char kill_path[PATH_MAX];
    snprintf(kill_path, sizeof kill_path, "%s/cgroup.kill", self->path);
    self->kill = access(kill_path, F_OK) == 0;
    sweep(base, self->kill);
    if (!made)
        empty_folder(self->path, (long)getpid(), self->kill);   /* an earlier process of our pid's */
    bool inside = false;
    if (probe(self->path, &inside, why, len) != 0) {
        rmdir(self->path);
        goto fail;
    }
    if (!inside)
        GF_INFO("cgroup %s: no CLONE_INTO_CGROUP here (Linux < 5.7): each job's guard moves "
                "itself in through cgroup.procs, which waits for an RCU grace period",
                self->path);
    free(base);
    return self;
fail:
    free(base);
    free(self->path);
    free(self);
    return NULL;
}

static void free_jobcg(gf_jobcg *self)
{
    if (self->dir >= 0)
        close(self->dir);
    if (self->events >= 0)
        close(self->events);
    free(self->path);
    free(self);
}

void gf_cgroup_destroy(gf_cgroup **self_p)
{
    gf_cgroup *self = *self_p;
    if (!self)
        return;
    if (self->kept) {
        if (rmdir(self->kept->path) != 0 && errno != ENOENT)
            GF_WARN("cgroup %s: cannot remove it: %s", self->kept->path, strerror(errno));
        free_jobcg(self->kept);
    }
    if (rmdir(self->path) != 0 && errno != ENOENT)
        GF_WARN("cgroup folder %s: cannot remove it: %s", self->path, strerror(errno));
    free(self->path);
    free(self);
    *self_p = NULL;
}

const char *gf_cgroup_path(const gf_cgroup *self) { return self->path; }
bool gf_cgroup_has_kill(const gf_cgroup *self) { return self->kill; }

gf_jobcg *gf_jobcg_new(gf_cgroup *folder, char *why, size_t len)
{
    if (folder->kept) {
        gf_jobcg *self = folder->kept;
        folder->kept = NULL;
        return self;
    }
    gf_jobcg *self = gf_calloc(1, sizeof(*self));
    self->folder = folder;
    self->kill = folder->kill;
    self->path = gf_strfmt("%s/run-%llu", folder->path, (unsigned long long)++folder->seq);
    self->dir = self->events = -1;
    if (mkdir(self->path, 0755) != 0) {
        snprintf(why, len, "cannot make the cgroup %s: %s", self->path, strerror(errno));
        free_jobcg(self);
        return NULL;
    }
    self->dir = open(self->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    self->events = self->dir < 0 ? -1 : openat(self->dir, "cgroup.events", O_RDONLY | O_CLOEXEC);
    if (self->events < 0) {
        snprintf(why, len, "cannot open the cgroup %s: %s", self->path, strerror(errno));
        rmdir(self->path);
        free_jobcg(self);
        return NULL;
    }
    return self;
}

int gf_jobcg_fd(const gf_jobcg *self) { return self->dir; }

const char *gf_jobcg_path(const gf_jobcg *self) { return self->path; }

int gf_jobcg_signal(gf_jobcg *self, int sig)
{
    return signal_each(self->path, sig);
}

int gf_jobcg_kill(gf_jobcg *self)
{
    int n = kill_all(self->path, self->kill);
    self->killed |= n > 0 && self->kill;
    return n;
}

bool gf_jobcg_populated(gf_jobcg *self)
{
    /* one pread of the open file: cgroupfs regenerates it at offset 0 */
    char buf[256];
    ssize_t n = pread(self->events, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return false;
    buf[n] = 0;
    return populated_in(buf);
}

void gf_jobcg_destroy(gf_jobcg **self_p)
{
    gf_jobcg *self = *self_p;
    if (!self)
        return;
    *self_p = NULL;
    bool removed = false;
    if (gf_jobcg_populated(self)) {
        int n = drain_remove(self->path, self->kill, &removed);
        if (n > 0)
            GF_WARN("cgroup %s: killed the %d processes still in it", self->path, n);
        free_jobcg(self);
        return;
    }
    /* empty stays empty (only root moves processes in): the next job's,
     * unless cgroup.kill was written to it, after which the kernel (6.18
     * here) kills every process born in it with CLONE_INTO_CGROUP: the
     * child is judged by the kill count of the cgroup it is cloned from */
    gf_cgroup *folder = self->folder;
    if (!folder->kept && !self->killed) {
        folder->kept = self;
        return;
    }
    if (rmdir(self->path) != 0 && errno != ENOENT)
        GF_WARN("cgroup %s: cannot remove it: %s", self->path, strerror(errno));
    free_jobcg(self);
}
