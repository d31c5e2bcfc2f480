/* pidfile.c — pid files held by flock(2) (see pidfile.h). */
#include "common/pidfile.h"
#include "common/fsmode.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int gf_pidfile_take(const char *path, mode_t mode, long *holder)
{
    *holder = 0;
    char *dir = gf_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        char *failed = NULL;
        if (gf_mkdir_p_exact(dir, 0711, &failed) != 0) {
            GF_ERROR("pid file %s: cannot create the folder %s: %s", path, failed,
                     strerror(errno));
            free(failed);
            free(dir);
            return -2;
        }
    }
    free(dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        GF_ERROR("%s: %s", path, strerror(errno));
        return -2;
    }
    /* exactly `mode`, whatever the umask: tightened where an older version
     * left more (logged), set where the umask took too much */
    struct stat st;
    if (gf_fsmode_fd(fd, path, mode, "pid file") != 0 || fstat(fd, &st) != 0 ||
        ((st.st_mode & 07777) != mode && fchmod(fd, mode) != 0)) {
        GF_ERROR("pid file %s: cannot give it mode %04o", path, (unsigned)mode);
        close(fd);
        return -2;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char buf[32] = "";
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        *holder = strtol(buf, NULL, 10);
        close(fd);
        return -1;
    }
    char text[32];
    int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len)
        GF_WARN("%s: cannot write the pid: %s", path, strerror(errno));
    return fd;
}

int gf_pidfile_publish(const char *path, mode_t mode)
{
    char *tmp = gf_strfmt("%s.new", path);
    unlink(tmp);                       /* a leftover of a crash at this very step */
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        goto fail;
    if (fchmod(fd, mode) != 0 || flock(fd, LOCK_EX | LOCK_NB) != 0)
        goto fail;
    char text[32];
    int len = snprintf(text, sizeof text, "%d\n", (int)getpid());
    /* the pid is for messages; the lock says whether we live: a full disk
     * that takes the pid away is worth a warning, not a refusal to start */
    if (pwrite(fd, text, (size_t)len, 0) != len)
        GF_WARN("pid file %s: cannot write the pid: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    return fd;
fail:   /* the reason first (errno), then the file and its descriptor go */
    GF_ERROR("pid file %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    return -1;
}
