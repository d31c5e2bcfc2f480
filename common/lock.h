/* lock.h — card lock primitives: flock(2) on a card's lock file.
 *
 * The locks are the same kind flock(1) takes, so a hand-run
 * `flock /run/lock/gpuflock/gpu0.lock ./bench` and gpuflock respect each
 * other. A lock file and its folder are created when missing (file mode 0666,
 * folder 01777, whatever the umask) and never unlinked: unlinking would let
 * two holders lock two different inodes. Descriptors are opened close-on-exec;
 * gf_lock_inherit() lets a command inherit one, as flock(1) does.
 *
 * Waiting is polling: a non-blocking try, then sleeps that grow from 1 ms to
 * GF_LOCK_POLL_MAX_MS. So a wait has a deadline, can watch several files at
 * once, never converts or drops a lock already held, and sees a stop flag
 * set by a signal handler within one poll period. (A waiter blocked inside
 * flock(2), such as flock(1), may win a race for a freed lock against it.) */
#ifndef GF_LOCK_H
#define GF_LOCK_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GF_LOCK_POLL_MAX_MS 10

typedef enum {
    GF_LOCK_SHARED = 0,     /* LOCK_SH: several holders at once */
    GF_LOCK_EXCLUSIVE = 1,  /* LOCK_EX: one holder, no one else */
} gf_lock_mode;

/* "shared" / "exclusive". */
const char *gf_lock_mode_name(gf_lock_mode mode);

typedef struct gf_lock gf_lock;

/* How a wait behaves; a NULL options pointer means: no stop flag, no callback. */
typedef struct {
    const volatile sig_atomic_t *stop;   /* non-zero: give up with GF_EINTR */
    void (*on_busy)(const gf_lock *lock, void *arg);  /* once per lock found busy */
    void *arg;                           /* passed to on_busy */
} gf_lock_wait_opts;

/* Open the lock file at 'path', creating it and its folder when missing.
 * Returns NULL after logging the path and the reason. */
gf_lock *gf_lock_open(const char *path);

/* Release (if held), close and free; accepts NULL, sets *self_p to NULL.
 * An inherited lock is only closed: LOCK_UN would unlock it for the
 * commands that share the descriptor. */
void gf_lock_destroy(gf_lock **self_p);

/* Non-blocking try: 0 (held now), GF_EBUSY (someone else holds it), GF_ESTATE
 * (this lock is already held in the other mode: no conversions), GF_EIO. */
int gf_lock_try(gf_lock *self, gf_lock_mode mode);

/* Wait for the lock: timeout_ms < 0 waits forever, 0 tries once. Returns 0,
 * GF_ETIMEDOUT, GF_EINTR (opts->stop was set), GF_ESTATE or GF_EIO. */
int gf_lock_wait(gf_lock *self, gf_lock_mode mode, int timeout_ms, const gf_lock_wait_opts *opts);

/* Wait until any one of locks[0..n) is had, trying them in order, so the first
 * free one wins. Returns 0 and its position in *which, or as gf_lock_wait. */
int gf_lock_wait_any(gf_lock **locks, size_t n, gf_lock_mode mode, int timeout_ms,
                     const gf_lock_wait_opts *opts, size_t *which);

/* Release the lock (LOCK_UN, for every process sharing the descriptor); a
 * no-op when not held. */
void gf_lock_release(gf_lock *self);

/* Keep the descriptor open across exec (clear FD_CLOEXEC): a command started
 * after this holds the lock for as long as it or any child of it lives.
 * Returns 0 or GF_EIO. */
int gf_lock_inherit(gf_lock *self);

bool gf_lock_held(const gf_lock *self);
gf_lock_mode gf_lock_mode_held(const gf_lock *self);
int gf_lock_fd(const gf_lock *self);
const char *gf_lock_path(const gf_lock *self);   /* borrowed */

/* ---- lock sets: several cards, all or none, in ascending index order ---- */

typedef struct gf_lockset gf_lockset;

gf_lockset *gf_lockset_new(void);
void gf_lockset_destroy(gf_lockset **self_p);

/* Add card 'index' with its lock file (opened now). Returns 0, GF_EINVAL for
 * an index already in the set, or GF_EIO when the file cannot be opened. */
int gf_lockset_add(gf_lockset *self, int index, const char *path);

/* Add card 'index' with a lock already open (held or not), taking it over:
 * *lock_p becomes NULL. Returns 0 or GF_EINVAL (index already in the set;
 * the lock stays the caller's). */
int gf_lockset_adopt(gf_lockset *self, int index, gf_lock **lock_p);

/* Take every lock, one after another in ascending index order, within one
 * deadline (timeout_ms as in gf_lock_wait). On any failure the locks taken
 * so far are released: the set is held entirely or not at all. */
int gf_lockset_take(gf_lockset *self, gf_lock_mode mode, int timeout_ms,
                    const gf_lock_wait_opts *opts);

void gf_lockset_release(gf_lockset *self);
size_t gf_lockset_count(const gf_lockset *self);
/* The i-th card in ascending index order: its lock and index. */
gf_lock *gf_lockset_lock(const gf_lockset *self, size_t i);
int gf_lockset_index(const gf_lockset *self, size_t i);

#endif
