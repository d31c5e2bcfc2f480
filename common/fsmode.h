/* fsmode.h — the folders and files gpuflock keeps get the least
 * permissions that work, whatever the umask, and those an older gpuflock
 * made looser are tightened at start (logged).
 *
 * A shared box is hostile: the job store holds every user's commands and
 * environments (tokens, passwords), so it is the broker's alone (0600);
 * users only pass through the folders above their own spool files and the
 * sockets (0711: traversable, not listable); and a folder that another
 * user owns could have its contents replaced, so it is refused. The table
 * of every path, owner and mode is in docs/operations.md ("Files"). */
#ifndef GF_FSMODE_H
#define GF_FSMODE_H

#include <sys/types.h>

/* The folder path for `what` (e.g. "state_dir"): created when missing
 * (parents too, 0755 less the umask) with exactly `mode`; an existing one
 * keeps its mode less every bit `mode` lacks (never loosened). It must be
 * writable by the effective user (a read-only mount, a folder of root's for
 * a broker that is not root: said at start, before anything is served) and
 * belong to root or to that user. Returns 0, or GF_EIO / GF_EPERM after
 * logging what is wrong with which folder. */
int gf_fsmode_dir(const char *path, mode_t mode, const char *what);

/* An existing file (a missing one is no error): its mode loses every bit
 * `mode` lacks, logged at warn with the old and new modes. Returns 0, or
 * GF_EIO / GF_EPERM after logging (a file that cannot be tightened is one
 * that others may read). */
int gf_fsmode_file(const char *path, mode_t mode, const char *what);

/* The same on an open descriptor fd of path (for messages). */
int gf_fsmode_fd(int fd, const char *path, mode_t mode, const char *what);

#endif
