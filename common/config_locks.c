/* config_locks.c — the configuration's lock files (see config_impl.h):
 * each path as written (absolute, canonical) and, for the programs that
 * take locks, on disk (its folder free of symlinks, the file not a
 * symlink, no two paths naming one file). The messages are the reader's
 * ("FILE:LINE: key 'K': problem"). */
#include "common/config_impl.h"

#include "common/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *gf_config_lock_path_problem(const char *p)
{
    if (!*p)
        return "is empty";
    if (p[0] != '/')
        return "is relative; a lock path must be absolute (it would name another file in "
               "each working folder)";
    for (const char *c = p + 1;; ) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if (n == 0)
            return slash ? "is not canonical: it has an empty component (//)"
                         : "is not canonical: it ends with /";
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return "is not canonical: it has a . or .. component";
        if (!slash)
            return n > 5 && !strcmp(c + n - 5, ".gate")
                       ? "ends with .gate, the name of a lock's fairness gate (docs/locking.md)"
                       : NULL;
        c = slash + 1;
    }
}

/* The folder of 'path' must name itself: realpath of its deepest existing
 * part equals that part as written (no symlink on the way). */
static int check_lock_folder(parse_ctx *ctx, size_t line, const char *key, const char *path)
{
    char *dir = gf_strdup(path);
    int rc = 0;
    for (char *slash = strrchr(dir, '/'); slash && slash > dir; slash = strrchr(dir, '/')) {
        *slash = '\0';
        char *real = realpath(dir, NULL);
        if (!real) {
            if (errno == ENOENT)
                continue;            /* not made yet: look at its parent */
            break;                   /* unreadable: opening the lock will say why */
        }
        if (strcmp(real, dir) != 0)
            rc = gf_config_fail_at(ctx, line, key, "lock file '%s' is not canonical: its folder %s "
                         "resolves to %s; write the path without the symlink", path, dir, real);
        free(real);
        break;
    }
    free(dir);
    return rc;
}

/* One lock path on disk: its folder canonical, the file not a symlink; its
 * (dev, ino) for the duplicate check, or zeros when it does not exist yet. */
static int stat_lock(parse_ctx *ctx, size_t line, const char *key, const char *path,
                     dev_t *dev, ino_t *ino)
{
    *dev = 0;
    *ino = 0;
    int rc = check_lock_folder(ctx, line, key, path);
    struct stat st;
    if (rc || lstat(path, &st) != 0)
        return rc;
    if (S_ISLNK(st.st_mode))
        return gf_config_fail_at(ctx, line, key, "lock file '%s' is a symlink; lock files are opened "
                       "without following symlinks: name a plain file", path);
    *dev = st.st_dev;
    *ino = st.st_ino;
    return 0;
}

int gf_config_check_lock_files(parse_ctx *ctx)
{
    gf_config *cfg = ctx->cfg;
    size_t n = cfg->n_devices + 1;
    dev_t *dev = gf_calloc(n, sizeof *dev);
    ino_t *ino = gf_calloc(n, sizeof *ino);
    const char **path = gf_calloc(n, sizeof *path);
    size_t *line = gf_calloc(n, sizeof *line);
    char (*key)[40] = gf_calloc(n, sizeof *key);
    for (size_t i = 0; i < cfg->n_devices; i++) {
        path[i] = cfg->devices[i].lock;
        line[i] = ctx->device_line ? ctx->device_line[i] : 0;
        snprintf(key[i], sizeof key[i], "devices[%zu].lock", i);
    }
    path[n - 1] = cfg->bench_lock;
    line[n - 1] = ctx->bench_line;
    snprintf(key[n - 1], sizeof key[n - 1], "bench_lock");
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = stat_lock(ctx, line[i], key[i], path[i], &dev[i], &ino[i]);
        for (size_t j = 0; j < i && !rc; j++) {
            bool same_text = !strcmp(path[i], path[j]);
            if (same_text || (ino[i] && dev[i] == dev[j] && ino[i] == ino[j]))
                rc = gf_config_fail_at(ctx, line[i], key[i], "lock file '%s' is the same file as %s "
                             "'%s'%s", path[i], key[j], path[j],
                             same_text ? "" : " (one device and inode)");
        }
    }
    free(key);
    free(line);
    free(path);
    free(ino);
    free(dev);
    return rc;
}

