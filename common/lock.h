/* lock.h — card lock primitives: flock(2) on a card's lock file.
 *
 * The locks are the same kind flock(1) takes, so a hand-run
 * `flock /run/lock/gpuflock/gpu0.lock ./bench` and gpuflock respect each
 * other. The lock is never granted twice:
 *  - a lock file's folder, and each folder above it, must belong to root, the
 *    configured lock owner or ourselves, and the folder must be writable by
 *    its owner alone (a folder above may be writable by others only when
 *    sticky): otherwise someone could rename the file under a holder;
 *  - lock files are opened read-only (flock(2) needs no more), without
 *    following symlinks, and must be regular files; a missing one is created
 *    (mode 0644, folders 0755) where the folder lets us, and never unlinked;
 *  - after each lock taken, the path must still name the locked inode, else
 *    the lock is dropped and the new file locked (the lock-file race check).
 * Descriptors are opened close-on-exec; gf_lock_inherit() lets a command
 * inherit one, as flock(1) does.
 *
 * The fairness gate: beside each lock file, "<lock>.gate". An exclusive
 * taker that finds the card busy takes the gate exclusively (it is an
 * announced waiter) and keeps it until it has the card or gives up; a shared
 * taker must pass the gate (hold it shared for the moment of its try), so no
 * new gpuflock shared holder starts while an exclusive one waits. A hand-run
 * flock(1) on the lock file knows no gate: it is respected, and is the one
 * way around the gate.
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

/* No configured lock owner: root and ourselves only. */
#define GF_LOCK_NO_OWNER ((uid_t)-1)

/* Open the lock file at 'path' (checked as above), creating it and its
 * folders when missing and allowed. owner: the configured lock_owner, or
 * GF_LOCK_NO_OWNER. Returns NULL after logging the path and the reason,
 * also copied into why[len] when why is not NULL. */
gf_lock *gf_lock_open(const char *path, uid_t owner, char *why, size_t len);

/* Make sure the lock file and its gate exist, as gpuflockd does at start:
 * folders made (0755), files created 0644 (and an older 0666 file of ours
 * set to 0644). Returns 0, or GF_EIO / GF_EPERM with the reason in why. */
int gf_lock_prepare(const char *path, uid_t owner, char *why, size_t len);

/* Release (if held), close and free; accepts NULL, sets *self_p to NULL.
 * An inherited lock is only closed: LOCK_UN would unlock it for the
 * commands that share the descriptor. */
void gf_lock_destroy(gf_lock **self_p);

/* Non-blocking try: 0 (held now), GF_EBUSY (someone else holds it, or for a
 * shared try an exclusive waiter is announced at the gate), GF_ESTATE (this
 * lock is already held in the other mode: no conversions), GF_EIO. An
 * exclusive try that finds the lock busy announces itself at the gate until
 * it has the lock or is released or destroyed. */
int gf_lock_try(gf_lock *self, gf_lock_mode mode);

/* Wait for the lock: timeout_ms < 0 waits forever, 0 tries once. Returns 0,
 * GF_ETIMEDOUT, GF_EINTR (opts->stop was set), GF_ESTATE or GF_EIO. */
int gf_lock_wait(gf_lock *self, gf_lock_mode mode, int timeout_ms, const gf_lock_wait_opts *opts);

/* Wait until any one of locks[0..n) is had, trying them in order, so the first
 * free one wins. Returns 0 and its position in *which, or as gf_lock_wait. */
int gf_lock_wait_any(gf_lock **locks, size_t n, gf_lock_mode mode, int timeout_ms,
                     const gf_lock_wait_opts *opts, size_t *which);

/* Release the lock (LOCK_UN, for every process sharing the descriptor) and
 * withdraw an announcement; a no-op when neither is held. */
void gf_lock_release(gf_lock *self);

/* Keep the descriptor open across exec (clear FD_CLOEXEC): a command started
 * after this holds the lock for as long as it or any child of it lives.
 * Returns 0 or GF_EIO. */
int gf_lock_inherit(gf_lock *self);

bool gf_lock_held(const gf_lock *self);
gf_lock_mode gf_lock_mode_held(const gf_lock *self);
int gf_lock_fd(const gf_lock *self);
const char *gf_lock_path(const gf_lock *self);       /* borrowed */
const char *gf_lock_gate_path(const gf_lock *self);  /* borrowed: "<lock>.gate" */
/* The last shared try was stopped at the gate by an announced exclusive waiter. */
bool gf_lock_gated(const gf_lock *self);

/* ---- lock sets: several cards, all or none, in ascending index order ---- */

typedef struct gf_lockset gf_lockset;

gf_lockset *gf_lockset_new(void);
void gf_lockset_destroy(gf_lockset **self_p);

/* Add card 'index' with its lock file (opened now, as gf_lock_open with
 * 'owner'). Returns 0, GF_EINVAL for an index already in the set, or GF_EIO
 * when the file cannot be opened. */
int gf_lockset_add(gf_lockset *self, int index, const char *path, uid_t owner);

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
