/* djouts.c — a diarize job's written outputs (see djouts.h). */
#include "common/djouts.h"

#include "common/ckdir.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_RECORD = 1 << 20 };   /* a record larger than this is not read */

/* A file as written: an inode number is reused once its file is gone, so
 * its size and modification time (ns) are part of what must match. */
typedef struct {
    uintmax_t dev, ino, size, mtime_ns;
    char *path;
} entry;

static entry entry_of(const struct stat *st)
{
    return (entry){ .dev = (uintmax_t)st->st_dev, .ino = (uintmax_t)st->st_ino,
                    .size = (uintmax_t)st->st_size,
                    .mtime_ns = (uintmax_t)st->st_mtim.tv_sec * 1000000000u
                                + (uintmax_t)st->st_mtim.tv_nsec };
}

struct gf_djouts {
    char *path;      /* the record */
    int fd;          /* open for appending */
    entry *v;        /* what earlier attempts wrote */
    size_t n;
};

/* Lines "DEV INO SIZE MTIME_NS PATH\n"; a damaged line is skipped. */
static void parse(gf_djouts *self, char *text)
{
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        entry e = { 0 };
        int used = 0;
        if (sscanf(line, "%ju %ju %ju %ju %n", &e.dev, &e.ino, &e.size, &e.mtime_ns, &used) != 4
            || used == 0 || !line[used])
            continue;
        e.path = gf_strdup(line + used);
        self->v = gf_realloc(self->v, (self->n + 1) * sizeof *self->v);
        self->v[self->n++] = e;
    }
}

gf_djouts *gf_djouts_open(const char *out_path)
{
    char *path = gf_outs_path(out_path);
    if (!path)
        return NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        GF_WARN("%s: cannot open: %s (a later attempt of this job will not replace its own "
                "outputs)", path, strerror(errno));
        free(path);
        return NULL;
    }
    /* only a record of our own says what is ours: in a folder others may
     * write (a --checkpoint-dir in /tmp), one they made first is not */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        GF_WARN("%s: not a file of this user's: not read, not written (nothing there counts as "
                "this run's own output)", path);
        close(fd);
        free(path);
        return NULL;
    }
    gf_djouts *self = gf_calloc(1, sizeof *self);
    self->path = path;
    self->fd = fd;
    if (st.st_size > 0 && st.st_size < MAX_RECORD) {
        char *text = gf_malloc((size_t)st.st_size + 1);
        ssize_t got = pread(fd, text, (size_t)st.st_size, 0);
        text[got > 0 ? got : 0] = '\0';
        parse(self, text);
        free(text);
    }
    return self;
}

bool gf_djouts_ours(const gf_djouts *self, const char *path)
{
    struct stat st;
    if (!self || lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    entry e = entry_of(&st);
    for (size_t i = 0; i < self->n; i++) {
        const entry *r = &self->v[i];
        if (r->dev == e.dev && r->ino == e.ino && r->size == e.size && r->mtime_ns == e.mtime_ns
            && strcmp(r->path, path) == 0)
            return true;
    }
    return false;
}

int gf_djouts_add(gf_djouts *self, const char *path)
{
    struct stat st;
    if (!self || strchr(path, '\n'))
        return 0;
    if (lstat(path, &st) != 0) {
        GF_WARN("%s: cannot look at what was written: %s", path, strerror(errno));
        return GF_EIO;
    }
    entry e = entry_of(&st);
    char *line = gf_strfmt("%ju %ju %ju %ju %s\n", e.dev, e.ino, e.size, e.mtime_ns, path);
    /* this attempt's own files are its own too */
    e.path = gf_strdup(path);
    self->v = gf_realloc(self->v, (self->n + 1) * sizeof *self->v);
    self->v[self->n++] = e;
    size_t len = strlen(line);
    ssize_t w = write(self->fd, line, len);
    free(line);
    if (w != (ssize_t)len) {
        GF_WARN("%s: cannot record an output: %s", self->path, w < 0 ? strerror(errno)
                                                                     : "short write");
        return GF_EIO;
    }
    return 0;
}

void gf_djouts_close(gf_djouts **self_p, bool remove)
{
    gf_djouts *self = *self_p;
    if (!self)
        return;
    close(self->fd);
    if (remove && unlink(self->path) != 0 && errno != ENOENT)
        GF_WARN("%s: cannot remove: %s", self->path, strerror(errno));
    for (size_t i = 0; i < self->n; i++)
        free(self->v[i].path);
    free(self->v);
    free(self->path);
    free(self);
    *self_p = NULL;
}
