/* lockinfo.h — who holds a card's lock file, from /proc/locks.
 *
 * /proc/locks names each flock(2) lock by the device and inode of its file
 * and the pid of the process that took it. That pid stays the one shown for
 * as long as the lock lives, even after the taker exited while a child that
 * inherited the descriptor still holds it (a flock(1) or `gpuflock exec` that
 * was killed while its command runs on): such a holder is reported with
 * alive = false. Waiters blocked in flock(2) are not holders and are not
 * listed. A gpuflock holder is told from someone else's flock by its command
 * name (gpuflock*) or, where its environment is readable, GPUFLOCK_LOCK_FILE.
 * A Slurm job step that holds a card through the gpuflock SPANK plugin
 * (slurm/gpuflock_spank.c) is its slurmstepd, whose process title names the
 * job and step ("slurmstepd: [12.0]"): such a holder carries them. */
#ifndef GF_LOCKINFO_H
#define GF_LOCKINFO_H

#include "common/lock.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;          /* as /proc/locks gives it: the process that took the lock */
    gf_lock_mode mode;  /* shared or exclusive */
    bool alive;         /* /proc/<pid> exists (false: the taker exited and a
                           process that inherited its descriptor holds on) */
    bool gpuflock;      /* a gpuflock process or job, not someone else's flock */
    char *command;      /* its command line, arguments joined by spaces; "" if unreadable */
    uint32_t slurm_job; /* a slurmstepd's Slurm job id; 0 for any other holder */
    char slurm_step[16];/* its step: "0", "batch"...; "" for any other holder */
} gf_lock_holder;

/* The flock(2) holders of the file at 'path', matched by device and inode.
 * A missing file has no holders. Returns 0 and a new array (caller frees with
 * gf_lock_holders_free), or GF_EIO. */
int gf_lock_holders(const char *path, gf_lock_holder **out, size_t *n);
void gf_lock_holders_free(gf_lock_holder **holders_p, size_t n);

/* "pid 1234 (exclusive, flock /run/lock/gpu0.lock sleep 60)" into buf;
 * "pid 99 (exclusive, Slurm job 12 step 0: slurmstepd: [12.0])" for a step. */
void gf_lock_holder_describe(const gf_lock_holder *h, char *buf, size_t len);

#endif
