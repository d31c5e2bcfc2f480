/* lockinfo.c — the holders of a lock file, read from /proc/locks (see
 * lockinfo.h).
 *
 * A line of /proc/locks for a flock(2) lock reads
 *     "7: FLOCK  ADVISORY  WRITE 1234 fe:00:10953830 0 EOF"
 * (the device's major and minor in hex, the inode in decimal); a waiter
 * blocked behind it reads "7: -> FLOCK ...". We keep the FLOCK holders whose
 * device and inode are those of the file, then describe each pid from
 * /proc/<pid>/{cmdline,comm,environ}. */
#include "common/lockinfo.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define PROC_LOCKS "/proc/locks"
#define CMDLINE_MAX 4096
#define ENVIRON_MAX (1 << 20)

/* Read up to max bytes of a /proc file; returns the length or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n < max) {
        ssize_t got = read(fd, buf + n, max - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    return (ssize_t)n;
}

/* The command line with its NUL separators turned into spaces. */
static char *read_cmdline(pid_t pid)
{
    char path[64], buf[CMDLINE_MAX + 1];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    ssize_t n = read_proc(path, buf, CMDLINE_MAX);
    if (n < 0)
        n = 0;
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
    return gf_strdup(buf);
}

static bool comm_is_gpuflock(pid_t pid)
{
    char path[64], buf[32];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    ssize_t n = read_proc(path, buf, sizeof buf - 1);
    return n >= 8 && strncmp(buf, "gpuflock", 8) == 0;
}

/* Is 'item' one of the comma-separated entries of 'list'? */
static bool list_has(const char *list, const char *item)
{
    size_t len = strlen(item);
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && strncmp(p, item, len) == 0)
            return true;
        if (!comma)
            return false;
        p = comma + 1;
    }
}

/* GPUFLOCK_LOCK_FILE in the environment (readable for our own processes, or
 * as root) naming this lock file among its comma-separated list. */
static bool environ_names_lock(pid_t pid, const char *lock_path)
{
    static const char key[] = "GPUFLOCK_LOCK_FILE=";
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    char *buf = gf_malloc(ENVIRON_MAX + 1);
    ssize_t n = read_proc(path, buf, ENVIRON_MAX);
    bool found = false;
    if (n > 0) {
        buf[n] = '\0';
        for (char *e = buf; e < buf + n && !found; e += strlen(e) + 1)
            found = strncmp(e, key, sizeof key - 1) == 0 && list_has(e + sizeof key - 1, lock_path);
    }
    free(buf);
    return found;
}

/* A slurmstepd's title "slurmstepd: [JOB.STEP]" into h (the gpuflock SPANK
 * plugin holds a step's cards in it). */
static void parse_slurm_step(gf_lock_holder *h)
{
    char path[64], comm[32];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)h->pid);
    ssize_t n = read_proc(path, comm, sizeof comm - 1);
    if (n < 10 || strncmp(comm, "slurmstepd", 10) != 0)
        return;
    unsigned long job = 0;
    char step[sizeof h->slurm_step];
    int used = 0;
    if (sscanf(h->command, "slurmstepd: [%lu.%15[0-9a-z]]%n", &job, step, &used) == 2 && used > 0 &&
        job > 0 && job <= UINT32_MAX) {
        h->slurm_job = (uint32_t)job;
        snprintf(h->slurm_step, sizeof h->slurm_step, "%s", step);
        h->gpuflock = true;
    }
}

static void describe_pid(gf_lock_holder *h, const char *lock_path)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d", (int)h->pid);
    h->alive = h->pid > 0 && access(dir, F_OK) == 0;
    h->command = h->alive ? read_cmdline(h->pid) : gf_strdup("");
    h->gpuflock = h->alive && (comm_is_gpuflock(h->pid) || environ_names_lock(h->pid, lock_path));
    if (h->alive)
        parse_slurm_step(h);
}

/* Parse one line of /proc/locks: 1 and the holder when it is a flock(2)
 * lock on (maj, min, ino), else 0. */
static int parse_line(const char *line, unsigned maj, unsigned min, unsigned long ino,
                      gf_lock_holder *h)
{
    char type[16], adv[16], rw[16];
    int pid = 0;
    unsigned lmaj = 0, lmin = 0;
    unsigned long lino = 0;
    const char *p = strchr(line, ':');
    if (!p)
        return 0;
    p++;
    while (*p == ' ')
        p++;
    if (strncmp(p, "->", 2) == 0)   /* a blocked waiter, not a holder */
        return 0;
    if (sscanf(p, "%15s %15s %15s %d %x:%x:%lu", type, adv, rw, &pid, &lmaj, &lmin, &lino) != 7)
        return 0;
    if (strcmp(type, "FLOCK") != 0 || lmaj != maj || lmin != min || lino != ino)
        return 0;
    h->pid = (pid_t)pid;
    h->mode = strcmp(rw, "WRITE") == 0 ? GF_LOCK_EXCLUSIVE : GF_LOCK_SHARED;
    return 1;
}

int gf_lock_holders(const char *path, gf_lock_holder **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        GF_ERROR("lock file %s: %s", path, strerror(errno));
        return GF_EIO;
    }
    FILE *f = fopen(PROC_LOCKS, "re");
    if (!f) {
        GF_ERROR("%s: %s", PROC_LOCKS, strerror(errno));
        return GF_EIO;
    }
    char line[512];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        gf_lock_holder h = { 0 };
        if (!parse_line(line, major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, &h))
            continue;
        describe_pid(&h, path);
        if (*n == cap)
            *out = gf_realloc(*out, (cap = cap ? cap * 2 : 4) * sizeof **out);
        (*out)[(*n)++] = h;
    }
    fclose(f);
    return 0;
}

void gf_lock_holders_free(gf_lock_holder **holders_p, size_t n)
{
    if (!holders_p || !*holders_p)
        return;
    for (size_t i = 0; i < n; i++)
        free((*holders_p)[i].command);
    free(*holders_p);
    *holders_p = NULL;
}

void gf_lock_holder_describe(const gf_lock_holder *h, char *buf, size_t len)
{
    if (!h->alive)
        snprintf(buf, len, "pid %d (%s, exited; a process that inherited its descriptor "
                 "holds the lock)", (int)h->pid, gf_lock_mode_name(h->mode));
    else if (h->slurm_job)
        snprintf(buf, len, "pid %d (%s, Slurm job %u step %s: %s)", (int)h->pid,
                 gf_lock_mode_name(h->mode), (unsigned)h->slurm_job, h->slurm_step, h->command);
    else
        snprintf(buf, len, "pid %d (%s, %s: %s)", (int)h->pid, gf_lock_mode_name(h->mode),
                 h->gpuflock ? "gpuflock" : "flock", *h->command ? h->command : "?");
}
