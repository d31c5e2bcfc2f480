/* ckdir.c — the checkpoint folder of a yieldable command job (see ckdir.h).
 *
 * Removal runs as the worker (root) over a tree its user filled: each
 * folder is opened relative to its parent's descriptor with O_NOFOLLOW and
 * O_DIRECTORY, each entry looked at with AT_SYMLINK_NOFOLLOW and removed
 * with unlinkat, so a symlink planted inside is removed, never followed,
 * and no path is ever resolved from the top again. */
#include "common/ckdir.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 64

char *gf_ckdir_path(const char *out_path)
{
    size_t n = strlen(out_path);
    if (n > 4 && strcmp(out_path + n - 4, ".out") == 0)
        n -= 4;
    return gf_strfmt("%.*s.ckdir", (int)n, out_path);
}

int gf_ckdir_make(const char *path, uid_t uid, gid_t gid, char *why, size_t len)
{
    if (mkdir(path, 0700) != 0 && errno != EEXIST) {
        snprintf(why, len, "checkpoint folder %s: %s", path, strerror(errno));
        return GF_EIO;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, len, "checkpoint folder %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return GF_EIO;
    }
    int rc = 0;
    if (geteuid() == 0 && st.st_uid != uid && st.st_uid != 0) {
        snprintf(why, len, "checkpoint folder %s belongs to uid %u, not the job's %u", path,
                 (unsigned)st.st_uid, (unsigned)uid);
        rc = GF_EIO;
    } else if ((geteuid() == 0 && fchown(fd, uid, gid) != 0) || fchmod(fd, 0700) != 0) {
        snprintf(why, len, "checkpoint folder %s: %s", path, strerror(errno));
        rc = GF_EIO;
    }
    close(fd);
    return rc;
}

/* Empty the folder open at dfd (taken over and closed). */
static int empty_at(int dfd, int depth, const char *top)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return GF_EIO;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;                 /* gone meanwhile */
        if (S_ISDIR(st.st_mode)) {
            int sub = depth < MAX_DEPTH ? openat(dirfd(d), e->d_name,
                                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                        : -1;
            if (sub < 0 || empty_at(sub, depth + 1, top) != 0 ||
                unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
                rc = GF_EIO;
        } else if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
            rc = GF_EIO;
        }
    }
    closedir(d);
    if (rc)
        GF_WARN("checkpoint folder %s: not everything in it could be removed", top);
    return rc;
}

int gf_ckdir_remove(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        GF_WARN("checkpoint folder %s: %s", path, strerror(errno));
        return GF_EIO;
    }
    int rc = empty_at(fd, 0, path);
    if (rmdir(path) != 0 && errno != ENOENT) {
        GF_WARN("checkpoint folder %s: %s", path, strerror(errno));
        rc = GF_EIO;
    }
    return rc;
}


/* "<spool>/<id>" + ext for "<spool>/<id>.out". */
static char *beside_out(const char *out_path, const char *ext)
{
    if (!out_path || !out_path[0])
        return NULL;
    size_t n = strlen(out_path);
    if (n > 4 && strcmp(out_path + n - 4, ".out") == 0)
        return gf_strfmt("%.*s%s", (int)(n - 4), out_path, ext);
    return gf_strfmt("%s%s", out_path, ext);
}

char *gf_ckpt_path(const char *out_path)
{
    return beside_out(out_path, ".ckpt");
}

char *gf_outs_path(const char *out_path)
{
    return beside_out(out_path, ".outs");
}

void gf_ckpt_remove_all(const char *out_path)
{
    char *files[2] = { gf_ckpt_path(out_path), gf_outs_path(out_path) };
    for (int i = 0; i < 2; i++) {
        /* the name, never what it points at */
        if (files[i] && unlink(files[i]) != 0 && errno != ENOENT)
            GF_WARN("%s: cannot remove: %s", files[i], strerror(errno));
        free(files[i]);
    }
    if (!out_path || !out_path[0])
        return;
    char *dir = gf_ckdir_path(out_path);
    gf_ckdir_remove(dir);
    free(dir);
}
