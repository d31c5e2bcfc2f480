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
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_FILE_MODE 0666
#define LOCK_DIR_MODE 01777

struct gf_lock {
    char *path;          /* the lock file */
    int fd;              /* open, close-on-exec unless inherited */
    bool held;           /* this descriptor holds a lock */
    gf_lock_mode mode;   /* which, when held */
    bool inherited;      /* shared with commands we started: close, never unlock */
};

const char *gf_lock_mode_name(gf_lock_mode mode)
{
    return mode == GF_LOCK_EXCLUSIVE ? "exclusive" : "shared";
}

/* ---- opening ------------------------------------------------------------ */

/* Create each missing folder of 'path' (not the last component), mode 01777
 * like /run/lock: anyone may add a card's lock file, no one may remove
 * another's. */
static int make_parents(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    char *dir = gf_strdup(path), *failed = NULL;
    dir[slash - path] = '\0';
    int rc = gf_mkdir_p_exact(dir, LOCK_DIR_MODE, &failed);
    if (rc)
        GF_ERROR("lock file %s: cannot create folder %s: %s", path, failed, strerror(errno));
    free(failed);
    free(dir);
    return rc;
}

/* Open the lock file, creating it with mode 0666 whatever the umask when it
 * is new. The file nearly always exists: one open(2) then. */
static int open_lock_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0 || errno != ENOENT)
        return fd;
    fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, LOCK_FILE_MODE);
    if (fd >= 0) {
        if (fchmod(fd, LOCK_FILE_MODE) != 0)
            GF_WARN("lock file %s: cannot set mode 0666: %s", path, strerror(errno));
        return fd;
    }
    if (errno == EEXIST)   /* created by someone else meanwhile */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    return fd;
}

gf_lock *gf_lock_open(const char *path)
{
    if (!path || !*path) {
        GF_ERROR("lock file: empty path");
        return NULL;
    }
    int fd = open_lock_file(path);
    if (fd < 0 && errno == ENOENT) {
        if (make_parents(path) != 0)
            return NULL;
        fd = open_lock_file(path);
    }
    if (fd < 0) {
        GF_ERROR("lock file %s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    gf_lock *self = gf_calloc(1, sizeof *self);
    self->path = gf_strdup(path);
    self->fd = fd;
    return self;
}

void gf_lock_destroy(gf_lock **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_lock *self = *self_p;
    if (!self->inherited)
        gf_lock_release(self);
    close(self->fd);
    free(self->path);
    free(self);
    *self_p = NULL;
}

/* ---- taking and releasing ---------------------------------------------- */

int gf_lock_try(gf_lock *self, gf_lock_mode mode)
{
    if (self->held)
        return self->mode == mode ? 0 : GF_ESTATE;
    int op = (mode == GF_LOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH) | LOCK_NB;
    for (;;) {
        if (flock(self->fd, op) == 0) {
            self->held = true;
            self->mode = mode;
            return 0;
        }
        if (errno == EWOULDBLOCK)
            return GF_EBUSY;
        if (errno != EINTR) {
            GF_ERROR("lock file %s: flock: %s", self->path, strerror(errno));
            return GF_EIO;
        }
    }
}

void gf_lock_release(gf_lock *self)
{
    if (!self || !self->held)
        return;
    while (flock(self->fd, LOCK_UN) != 0 && errno == EINTR)
        ;
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
        if ((rc = waiter_pause(w, opts)) != 0)
            return rc;
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
            if (rc != GF_EBUSY)
                return rc;
        }
        if (!told) {
            for (size_t i = 0; i < n; i++)
                tell_busy(opts, locks[i]);
            told = true;
        }
        int rc = waiter_pause(&w, opts);
        if (rc)
            return rc;
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

int gf_lockset_add(gf_lockset *self, int index, const char *path)
{
    long at = insertion_point(self, index);
    if (at < 0)
        return GF_EINVAL;
    gf_lock *lock = gf_lock_open(path);
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
