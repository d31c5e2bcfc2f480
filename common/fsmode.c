/* fsmode.c — least permissions for gpuflock's folders and files (see
 * fsmode.h). Used by the broker for run_dir, state_dir and spool_dir, by
 * the job store for its files and by the pid files. */
#include "common/fsmode.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gf_fsmode_dir(const char *path, mode_t mode, const char *what)
{
    struct stat st;
    bool made = false;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) {
            GF_ERROR("%s %s: %s", what, path, strerror(errno));
            return GF_EIO;
        }
        char *failed = NULL;
        if (gf_mkdir_p(path, 0755, &failed) != 0) {
            GF_ERROR("%s %s: cannot create %s: %s", what, path, failed ? failed : path,
                     strerror(errno));
            free(failed);
            return GF_EIO;
        }
        made = true;
        if (stat(path, &st) != 0) {
            GF_ERROR("%s %s: %s", what, path, strerror(errno));
            return GF_EIO;
        }
    }
    if (!S_ISDIR(st.st_mode)) {
        GF_ERROR("%s %s: not a folder", what, path);
        return GF_EIO;
    }
    uid_t me = geteuid();
    if (access(path, W_OK | X_OK) != 0) {
        GF_ERROR("%s %s is not writable by uid %u: %s", what, path, (unsigned)me,
                 strerror(errno));
        return errno == EACCES || errno == EPERM ? GF_EPERM : GF_EIO;
    }
    if (st.st_uid != 0 && st.st_uid != me) {
        GF_ERROR("%s %s belongs to uid %u, neither root nor this program's user (uid %u): "
                 "its owner could replace what gpuflock keeps there; give it to root or uid %u",
                 what, path, (unsigned)st.st_uid, (unsigned)me, (unsigned)me);
        return GF_EPERM;
    }
    mode_t have = st.st_mode & 07777;
    mode_t want = made ? mode : have & mode;
    if (want == have)
        return 0;
    if (chmod(path, want) != 0) {
        GF_ERROR("%s %s: cannot set mode %04o (it has %04o): %s", what, path, (unsigned)want,
                 (unsigned)have, strerror(errno));
        return errno == EPERM ? GF_EPERM : GF_EIO;
    }
    if (!made)
        GF_WARN("%s %s: mode %04o tightened to %04o (docs/operations.md, \"Files\")", what, path,
                (unsigned)have, (unsigned)want);
    return 0;
}

int gf_fsmode_fd(int fd, const char *path, mode_t mode, const char *what)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        GF_ERROR("%s %s: %s", what, path, strerror(errno));
        return GF_EIO;
    }
    mode_t have = st.st_mode & 07777, want = have & mode;
    if (want == have)
        return 0;
    if (fchmod(fd, want) != 0) {
        GF_ERROR("%s %s has mode %04o and cannot be given %04o: %s", what, path, (unsigned)have,
                 (unsigned)want, strerror(errno));
        return errno == EPERM ? GF_EPERM : GF_EIO;
    }
    GF_WARN("%s %s: mode %04o tightened to %04o (docs/operations.md, \"Files\")", what, path,
            (unsigned)have, (unsigned)want);
    return 0;
}

int gf_fsmode_file(const char *path, mode_t mode, const char *what)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        GF_ERROR("%s %s: %s", what, path, strerror(errno));
        return GF_EIO;
    }
    int rc = gf_fsmode_fd(fd, path, mode, what);
    close(fd);
    return rc;
}
