/* util.c — allocation wrappers and clocks (see util.h). */
#include "common/util.h"
#include "common/error.h"
#include "common/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int gf_open_regular(const char *path, long long max, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return GF_ENOENT;
        GF_ERROR("%s: cannot open: %s", path, strerror(e));
        return e == EACCES || e == EPERM ? GF_EPERM : GF_EIO;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        GF_ERROR("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return GF_EIO;
    }
    if (!S_ISREG(sb.st_mode)) {
        GF_ERROR("%s: not a regular file (a FIFO, a device, a socket or a folder)", path);
        close(fd);
        return GF_EUNSUP;
    }
    if (max > 0 && (long long)sb.st_size > max) {
        GF_ERROR("%s: %lld bytes, over the limit of %lld", path, (long long)sb.st_size, max);
        close(fd);
        return GF_ETOOBIG;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (st)
        *st = sb;
    return fd;
}

static void oom(size_t size)
{
    fprintf(stderr, "gpuflock: out of memory (asked for %zu bytes)\n", size);
    abort();
}

void *gf_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        oom(size);
    return p;
}

void *gf_calloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom(n * size);
    return p;
}

void *gf_realloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        oom(size);
    return p;
}

char *gf_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = gf_malloc(n);
    memcpy(p, s, n);
    return p;
}

char *gf_strfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom(strlen(fmt));
    return out;
}

uint64_t gf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gf_now_ms(void)
{
    return gf_now_ns() / 1000000u;
}

uint64_t gf_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

float gf_rand_sym(uint64_t *s, float a)
{
    double u = ((double)(gf_splitmix64(s) >> 11) + 0.5) / 9007199254740992.0;
    return (float)((2.0 * u - 1.0) * a);
}

int64_t gf_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gf_write_file(const char *path, const void *buf, size_t len, bool replace)
{
    char *tmp = gf_strfmt("%s.tmp.%d.%d", path, (int)getpid(), (int)gettid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        GF_ERROR("%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return errno == ENOSPC ? GF_ENOSPC : GF_EIO;
    }
    const char *p = buf;
    size_t left = len;
    int err = 0;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = w < 0 ? errno : EIO;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (close(fd) != 0 && !err)
        err = errno;
    int rc = 0;
    if (err) {
        GF_ERROR("%s: cannot write: %s", path, strerror(err));
        rc = err == ENOSPC ? GF_ENOSPC : GF_EIO;
    } else if (replace) {
        if (rename(tmp, path) != 0) {
            GF_ERROR("%s: cannot write: %s", path, strerror(errno));
            rc = GF_EIO;
        }
    } else if (link(tmp, path) != 0) {
        if (errno == EEXIST) {
            GF_ERROR("%s exists: not replaced", path);
            rc = GF_EEXIST;
        } else {
            GF_ERROR("%s: cannot write: %s", path, strerror(errno));
            rc = GF_EIO;
        }
    }
    /* renamed: the name is gone already; linked or failed: remove it */
    if (!(rc == 0 && replace))
        unlink(tmp);
    free(tmp);
    return rc;
}

int gf_write_file_atomic(const char *path, const void *buf, size_t len)
{
    return gf_write_file(path, buf, len, true);
}

char *gf_beside_self(const char *name)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    return gf_strfmt("%s/%s", slash ? exe : ".", name);
}

static int mkdir_p(const char *path, mode_t mode, bool exact, char **failed)
{
    if (failed)
        *failed = NULL;
    char *buf = gf_strdup(path);
    for (char *p = buf + 1;; p++) {
        bool last = *p == '\0';
        if (*p == '/' || last) {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, mode) == 0) {
                if (exact && chmod(buf, mode) != 0)
                    GF_WARN("%s: cannot set mode %o: %s", buf, (unsigned)mode, strerror(errno));
            } else if (errno != EEXIST) {
                int e = errno;
                if (failed)
                    *failed = gf_strdup(buf);
                free(buf);
                errno = e;
                return GF_EIO;
            }
            *p = saved;
        }
        if (last)
            break;
    }
    free(buf);
    return 0;
}

int gf_mkdir_p(const char *path, mode_t mode, char **failed)
{
    return mkdir_p(path, mode, false, failed);
}

int gf_mkdir_p_exact(const char *path, mode_t mode, char **failed)
{
    return mkdir_p(path, mode, true, failed);
}
