/* lock.c — card lock primitives over flock(2) (see lock.h).
 *
 * A gf_lock is one open descriptor on one lock file and the mode it holds.
 * Everything here is a non-blocking flock(LOCK_NB) call; waits are loops of
 * tries and short sleeps, so a deadline, a stop flag and several files at
 * once all come for free, and a lock once held is never lost to EINTR or to
 * a failed conversion (conversions are refused: flock(2) converts by dropping
 * the old lock first). A gf_lockset orders its cards by index and takes them
 * one by one, the classic discipline that keeps two sets from deadlocking. */
#include "common/lock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_FILE_MODE 0644
#define LOCK_DIR_MODE 0755
#define GATE_SUFFIX ".gate"
#define MAX_REOPENS 16   /* a lock file replaced this often under us: give up */

struct gf_lock {
    char *path;          /* the lock file */
    char *gate_path;     /* its fairness gate: path + ".gate" */
    uid_t owner;         /* trusted besides root and us (GF_LOCK_NO_OWNER: none) */
    int fd;              /* open, close-on-exec unless inherited */
    dev_t dev;           /* the file fd has open: compared with what the path */
    ino_t ino;           /* names after each lock taken */
    int gate_fd;         /* the gate, opened when first needed; -1 before */
    bool held;           /* this descriptor holds a lock */
    gf_lock_mode mode;   /* which, when held */
    bool announced;      /* we hold the gate exclusively: an exclusive waiter */
    bool gated;          /* the last shared try was stopped at the gate */
    bool inherited;      /* shared with commands we started: close, never unlock */
};

const char *gf_lock_mode_name(gf_lock_mode mode)
{
    return mode == GF_LOCK_EXCLUSIVE ? "exclusive" : "shared";
}

/* ---- why an open failed ------------------------------------------------- */

static void say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The reason, logged once here and copied into why[len] when given. */
static void say(char *why, size_t len, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    GF_ERROR("%s", text);
    if (why && len)
        snprintf(why, len, "%s", text);
}

/* "root", "alice" or "uid 1234". */
static void user_name(uid_t uid, char *buf, size_t len)
{
    struct passwd *pw = getpwuid(uid);
    if (pw)
        snprintf(buf, len, "%s", pw->pw_name);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
}

/* ---- the folder: who may change what the path names --------------------- */

static bool trusted(uid_t uid, uid_t owner)
{
    return uid == 0 || uid == owner || uid == geteuid();
}

/* Whoever can rename or replace an entry on the way to the lock file can
 * make two holders lock two inodes. So the folder of the lock, and every
 * folder above it, must belong to root, the configured owner or ourselves;
 * the lock's own folder must be writable by its owner alone, and a folder
 * above it may be writable by others only when sticky (like /tmp or
 * /run/lock: no one may rename what is not theirs there). Returns 0,
 * GF_ENOENT when the folder does not exist yet (said nothing), or GF_EPERM
 * / GF_EIO (said why). */
static int check_folder(const char *path, uid_t owner, char *why, size_t len)
{
    char *dir = gf_strdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        free(dir);
        say(why, len, "lock file %s: the path is not absolute", path);
        return GF_EINVAL;
    }
    slash[slash == dir ? 1 : 0] = '\0';
    int rc = 0;
    size_t n = strlen(dir);
    for (size_t end = 1; end <= n && !rc; end++) {
        if (end < n && dir[end] != '/')
            continue;
        char saved = dir[end];
        dir[end] = '\0';
        const char *at = dir;
        struct stat st;
        char who[64];
        if (lstat(at, &st) != 0) {
            rc = errno == ENOENT ? GF_ENOENT : GF_EIO;
            if (rc == GF_EIO)
                say(why, len, "lock file %s: folder %s: %s", path, at, strerror(errno));
        } else if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
            say(why, len, "lock file %s: %s is %s, not a folder; write the lock path without "
                "symlinks", path, at, S_ISLNK(st.st_mode) ? "a symlink" : "something else");
            rc = GF_EPERM;
        } else if (!trusted(st.st_uid, owner)) {
            user_name(st.st_uid, who, sizeof who);
            say(why, len, "lock file %s: folder %s belongs to %s (mode %04o), not to root or "
                "lock_owner: %s could replace the lock file and let two jobs have the card; "
                "as root: chown root:root %s && chmod 0755 %s", path, at, who,
                (unsigned)(st.st_mode & 07777), who, at, at);
            rc = GF_EPERM;
        } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
                   (end == n || !(st.st_mode & S_ISVTX))) {
            user_name(st.st_uid, who, sizeof who);
            say(why, len, "lock file %s: folder %s (owner %s, mode %04o) is writable by other "
                "users%s, who could replace the lock file and let two jobs have the card; "
                "%s", path, at, who, (unsigned)(st.st_mode & 07777),
                end == n ? "" : " and not sticky",
                end == n ? "keep lock files in a folder of their own that only its owner "
                           "can write, e.g. /run/lock/gpuflock (mode 0755)"
                         : "remove the group and other write bits, or set the sticky bit");
            rc = GF_EPERM;
        }
        dir[end] = saved;
    }
    free(dir);
    return rc;
}

/* Create the missing folders of 'path' with mode 0755, owned by us. */
static int make_parents(const char *path, char *why, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    char *dir = gf_strdup(path), *failed = NULL;
    dir[slash - path] = '\0';
    int rc = gf_mkdir_p_exact(dir, LOCK_DIR_MODE, &failed);
    if (rc)
        say(why, len, "lock file %s: cannot create folder %s: %s", path, failed, strerror(errno));
    free(failed);
    free(dir);
    return rc;
}

/* ---- the file ------------------------------------------------------------- */

/* Open an existing lock file read-only (flock(2) needs no write permission),
 * never through a symlink, never blocking on a FIFO planted there; it must
 * be a regular file. Creates it (mode 0644 whatever the umask) when missing
 * and the folder lets us. Returns the descriptor and its file's identity in
 * *st, or -1 (said why). */
static int open_file(const char *path, struct stat *st, char *why, size_t len)
{
    const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    int fd = open(path, flags);
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, flags | O_CREAT | O_EXCL, LOCK_FILE_MODE);
        if (fd >= 0 && fchmod(fd, LOCK_FILE_MODE) != 0)
            GF_WARN("lock file %s: cannot set mode 0644: %s", path, strerror(errno));
        if (fd < 0 && errno == EEXIST)   /* created by someone else meanwhile */
            fd = open(path, flags);
        if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
            char *dir = gf_strdup(path);
            *strrchr(dir, '/') = '\0';
            say(why, len, "lock file %s does not exist, and uid %u may not create it in %s; "
                "as root: install -m 0644 /dev/null %s (gpuflockd creates the lock files at "
                "start, deploy/gpuflock.tmpfiles at boot)", path, (unsigned)geteuid(),
                *dir ? dir : "/", path);
            free(dir);
            return -1;
        }
    }
    if (fd < 0) {
        if (errno == ELOOP)
            say(why, len, "lock file %s is a symlink; lock files are opened without following "
                "symlinks: remove it (as its folder's owner) or name a plain file", path);
        else
            say(why, len, "lock file %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        say(why, len, "lock file %s is not a regular file", path);
        close(fd);
        return -1;
    }
    return fd;
}

/* The checked open of one lock (or gate) file, folders made when missing. */
static int open_checked(const char *path, uid_t owner, struct stat *st, char *why, size_t len)
{
    int rc = check_folder(path, owner, why, len);
    if (rc == GF_ENOENT) {
        if (make_parents(path, why, len) != 0)
            return -1;
        rc = check_folder(path, owner, why, len);
        if (rc == GF_ENOENT)
            say(why, len, "lock file %s: its folder vanished while it was made", path);
    }
    return rc ? -1 : open_file(path, st, why, len);
}

gf_lock *gf_lock_open(const char *path, uid_t owner, char *why, size_t len)
{
    if (!path || !*path) {
        say(why, len, "lock file: empty path");
        return NULL;
    }
    struct stat st;
    int fd = open_checked(path, owner, &st, why, len);
    if (fd < 0)
        return NULL;
    gf_lock *self = gf_calloc(1, sizeof *self);
    self->dev = st.st_dev;
    self->ino = st.st_ino;
    self->path = gf_strdup(path);
    self->gate_path = gf_strfmt("%s" GATE_SUFFIX, path);
    self->owner = owner;
    self->fd = fd;
    self->gate_fd = -1;
    return self;
}

int gf_lock_prepare(const char *path, uid_t owner, char *why, size_t len)
{
    char *gate = gf_strfmt("%s" GATE_SUFFIX, path);
    const char *files[] = { path, gate };
    int rc = 0;
    for (size_t i = 0; i < 2 && !rc; i++) {
        struct stat st;
        int fd = open_checked(files[i], owner, &st, why, len);
        if (fd < 0) {
            rc = GF_EIO;
            break;
        }
        /* an older gpuflock made lock files 0666: no one needs to write them */
        if (st.st_uid == geteuid() &&
            (st.st_mode & 07777) != LOCK_FILE_MODE && fchmod(fd, LOCK_FILE_MODE) != 0)
            GF_WARN("lock file %s: cannot set mode 0644: %s", files[i], strerror(errno));
        close(fd);
    }
    free(gate);
    return rc;
}

void gf_lock_destroy(gf_lock **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_lock *self = *self_p;
    if (!self->inherited)
        gf_lock_release(self);
    if (self->gate_fd >= 0)
        close(self->gate_fd);
    close(self->fd);
    free(self->gate_path);
    free(self->path);
    free(self);
    *self_p = NULL;
}

/* ---- the fairness gate ---------------------------------------------------- */

/* flock with EINTR retried: 0, GF_EBUSY, or GF_EIO (logged). */
static int try_flock(int fd, int op, const char *path)
{
    for (;;) {
        if (flock(fd, op | LOCK_NB) == 0)
            return 0;
        if (errno == EWOULDBLOCK)
            return GF_EBUSY;
        if (errno != EINTR) {
            GF_ERROR("lock file %s: flock: %s", path, strerror(errno));
            return GF_EIO;
        }
    }
}

static void unflock(int fd)
{
    while (flock(fd, LOCK_UN) != 0 && errno == EINTR)
        ;
}

/* The gate sits in the lock file's folder, checked when the lock was opened
 * (a folder only trusted users can change stays so): the file alone is
 * opened, or made. */
static int gate_fd(gf_lock *self)
{
    struct stat st;
    if (self->gate_fd < 0)
        self->gate_fd = open_file(self->gate_path, &st, NULL, 0);
    return self->gate_fd < 0 ? GF_EIO : 0;
}

/* An exclusive waiter holds the gate exclusively until it has the card; a
 * shared taker passes it (holds it shared for the moment of its own try), so
 * no new gpuflock shared holder starts while an exclusive one waits. */
static void announce(gf_lock *self)
{
    if (self->announced || gate_fd(self) != 0)
        return;
    if (try_flock(self->gate_fd, LOCK_EX, self->gate_path) == 0)
        self->announced = true;
}

static void withdraw(gf_lock *self)
{
    if (!self->announced)
        return;
    unflock(self->gate_fd);
    self->announced = false;
}

/* ---- taking and releasing ---------------------------------------------- */

/* Has the path been made to name another file since we opened it? */
static bool replaced(const gf_lock *self)
{
    struct stat now;
    if (lstat(self->path, &now) != 0)
        return true;
    return self->dev != now.st_dev || self->ino != now.st_ino;
}

/* Reopen after the path was replaced: the held lock (on an inode nobody else
 * will open again) is dropped with the old descriptor. */
static int reopen(gf_lock *self)
{
    GF_WARN("lock file %s was replaced while we locked it: locking the new one", self->path);
    struct stat st;
    int fd = open_checked(self->path, self->owner, &st, NULL, 0);
    if (fd < 0)
        return GF_EIO;
    close(self->fd);
    self->fd = fd;
    self->dev = st.st_dev;
    self->ino = st.st_ino;
    self->held = false;
    return 0;
}

int gf_lock_try(gf_lock *self, gf_lock_mode mode)
{
    if (self->held)
        return self->mode == mode ? 0 : GF_ESTATE;
    self->gated = false;
    for (int attempt = 0; attempt < MAX_REOPENS; attempt++) {
        int rc;
        if (mode == GF_LOCK_SHARED) {
            if ((rc = gate_fd(self)) != 0)
                return rc;
            rc = try_flock(self->gate_fd, LOCK_SH, self->gate_path);
            if (rc == GF_EBUSY)
                self->gated = true;
            if (rc)
                return rc;
            rc = try_flock(self->fd, LOCK_SH, self->path);
            unflock(self->gate_fd);
        } else {
            rc = try_flock(self->fd, LOCK_EX, self->path);
            if (rc == GF_EBUSY)
                announce(self);
        }
        if (rc)
            return rc;
        self->held = true;
        self->mode = mode;
        if (!replaced(self)) {
            if (mode == GF_LOCK_EXCLUSIVE)
                withdraw(self);
            return 0;
        }
        if ((rc = reopen(self)) != 0)
            return rc;
    }
    GF_ERROR("lock file %s keeps being replaced: giving up", self->path);
    return GF_EIO;
}

void gf_lock_release(gf_lock *self)
{
    if (!self)
        return;
    withdraw(self);
    if (!self->held)
        return;
    unflock(self->fd);
    self->held = false;
}

int gf_lock_inherit(gf_lock *self)
{
    int flags = fcntl(self->fd, F_GETFD);
    if (flags < 0 || fcntl(self->fd, F_SETFD, flags & ~FD_CLOEXEC) != 0) {
        GF_ERROR("lock file %s: cannot clear close-on-exec: %s", self->path, strerror(errno));
        return GF_EIO;
    }
    self->inherited = true;
    return 0;
}

bool gf_lock_held(const gf_lock *self)
{
    return self->held;
}

gf_lock_mode gf_lock_mode_held(const gf_lock *self)
{
    return self->mode;
}

int gf_lock_fd(const gf_lock *self)
{
    return self->fd;
}

const char *gf_lock_path(const gf_lock *self)
{
    return self->path;
}

const char *gf_lock_gate_path(const gf_lock *self)
{
    return self->gate_path;
}

bool gf_lock_gated(const gf_lock *self)
{
    return self->gated;
}

/* ---- waiting ------------------------------------------------------------ */

/* A deadline and the growing pause between tries. */
typedef struct {
    bool forever;        /* no deadline */
    uint64_t end_ns;     /* monotonic deadline */
    long pause_ms;       /* next sleep */
} waiter;

static waiter waiter_start(int timeout_ms)
{
    waiter w = { .forever = timeout_ms < 0, .end_ns = 0, .pause_ms = 1 };
    if (timeout_ms >= 0)
        w.end_ns = gf_now_ns() + (uint64_t)timeout_ms * 1000000u;
    return w;
}

static bool stopped(const gf_lock_wait_opts *opts)
{
    return opts && opts->stop && *opts->stop;
}

/* Sleep before the next try: GF_ETIMEDOUT past the deadline, GF_EINTR when
 * stopped, else 0. A signal cuts the sleep short; the loop then re-checks. */
static int waiter_pause(waiter *w, const gf_lock_wait_opts *opts)
{
    if (stopped(opts))
        return GF_EINTR;
    uint64_t now = gf_now_ns();
    if (!w->forever && now >= w->end_ns)
        return GF_ETIMEDOUT;
    uint64_t ns = (uint64_t)w->pause_ms * 1000000u;
    if (!w->forever && w->end_ns - now < ns)
        ns = w->end_ns - now;
    struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
                           .tv_nsec = (long)(ns % 1000000000u) };
    nanosleep(&ts, NULL);
    if (w->pause_ms < GF_LOCK_POLL_MAX_MS)
        w->pause_ms = w->pause_ms * 2 > GF_LOCK_POLL_MAX_MS ? GF_LOCK_POLL_MAX_MS
                                                            : w->pause_ms * 2;
    return stopped(opts) ? GF_EINTR : 0;
}

static void tell_busy(const gf_lock_wait_opts *opts, const gf_lock *lock)
{
    if (opts && opts->on_busy)
        opts->on_busy(lock, opts->arg);
}

/* One lock, against an already running waiter (so a set shares one deadline). */
static int wait_one(gf_lock *self, gf_lock_mode mode, waiter *w, const gf_lock_wait_opts *opts)
{
    bool told = false;
    for (;;) {
        int rc = gf_lock_try(self, mode);
        if (rc != GF_EBUSY)
            return rc;
        if (!told) {
            tell_busy(opts, self);
            told = true;
        }
        if ((rc = waiter_pause(w, opts)) != 0) {
            withdraw(self);          /* given up: no longer ahead of anyone */
            return rc;
        }
    }
}

int gf_lock_wait(gf_lock *self, gf_lock_mode mode, int timeout_ms, const gf_lock_wait_opts *opts)
{
    waiter w = waiter_start(timeout_ms);
    return wait_one(self, mode, &w, opts);
}

int gf_lock_wait_any(gf_lock **locks, size_t n, gf_lock_mode mode, int timeout_ms,
                     const gf_lock_wait_opts *opts, size_t *which)
{
    waiter w = waiter_start(timeout_ms);
    bool told = false;
    for (;;) {
        for (size_t i = 0; i < n; i++) {
            int rc = gf_lock_try(locks[i], mode);
            if (rc == 0)
                *which = i;
            if (rc != GF_EBUSY) {
                for (size_t k = 0; k < n; k++)
                    if (k != i)
                        withdraw(locks[k]);   /* only the one had is waited for no more */
                return rc;
            }
        }
        if (!told) {
            for (size_t i = 0; i < n; i++)
                tell_busy(opts, locks[i]);
            told = true;
        }
        int rc = waiter_pause(&w, opts);
        if (rc) {
            for (size_t i = 0; i < n; i++)
                withdraw(locks[i]);
            return rc;
        }
    }
}

/* ---- lock sets ---------------------------------------------------------- */

typedef struct {
    int index;          /* card index: the order of taking */
    gf_lock *lock;      /* its lock file */
} set_entry;

struct gf_lockset {
    set_entry *items;   /* sorted by index */
    size_t n;
};

gf_lockset *gf_lockset_new(void)
{
    return gf_calloc(1, sizeof(gf_lockset));
}

void gf_lockset_destroy(gf_lockset **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_lockset *self = *self_p;
    for (size_t i = 0; i < self->n; i++)
        gf_lock_destroy(&self->items[i].lock);
    free(self->items);
    free(self);
    *self_p = NULL;
}

/* Where card 'index' goes in the sorted set, or -1 if it is there already. */
static long insertion_point(const gf_lockset *self, int index)
{
    size_t at = 0;
    while (at < self->n && self->items[at].index < index)
        at++;
    if (at < self->n && self->items[at].index == index) {
        GF_ERROR("card %d named twice", index);
        return -1;
    }
    return (long)at;
}

static void insert_at(gf_lockset *self, size_t at, int index, gf_lock *lock)
{
    self->items = gf_realloc(self->items, (self->n + 1) * sizeof *self->items);
    memmove(&self->items[at + 1], &self->items[at], (self->n - at) * sizeof *self->items);
    self->items[at] = (set_entry){ .index = index, .lock = lock };
    self->n++;
}

int gf_lockset_add(gf_lockset *self, int index, const char *path, uid_t owner)
{
    long at = insertion_point(self, index);
    if (at < 0)
        return GF_EINVAL;
    gf_lock *lock = gf_lock_open(path, owner, NULL, 0);
    if (!lock)
        return GF_EIO;
    insert_at(self, (size_t)at, index, lock);
    return 0;
}

int gf_lockset_adopt(gf_lockset *self, int index, gf_lock **lock_p)
{
    long at = insertion_point(self, index);
    if (at < 0)
        return GF_EINVAL;
    insert_at(self, (size_t)at, index, *lock_p);
    *lock_p = NULL;
    return 0;
}

int gf_lockset_take(gf_lockset *self, gf_lock_mode mode, int timeout_ms,
                    const gf_lock_wait_opts *opts)
{
    waiter w = waiter_start(timeout_ms);
    for (size_t i = 0; i < self->n; i++) {
        int rc = wait_one(self->items[i].lock, mode, &w, opts);
        if (rc) {
            gf_lockset_release(self);
            return rc;
        }
    }
    return 0;
}

void gf_lockset_release(gf_lockset *self)
{
    for (size_t i = self->n; i-- > 0;)
        gf_lock_release(self->items[i].lock);
}

size_t gf_lockset_count(const gf_lockset *self)
{
    return self->n;
}

gf_lock *gf_lockset_lock(const gf_lockset *self, size_t i)
{
    return i < self->n ? self->items[i].lock : NULL;
}

int gf_lockset_index(const gf_lockset *self, size_t i)
{
    return i < self->n ? self->items[i].index : -1;
}
