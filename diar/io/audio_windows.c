/* audio_windows.c — the pipeline's sliding windows (see audio_windows.h):
 * one window's buffer over a gf_audio_reader (a file, or samples in
 * memory), filled from the reader and slid by memmove, so a three-hour
 * file costs the same memory as a ten-second one. */
#include "diar/io/audio_windows.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

struct gf_audio_windows {
    gf_audio_reader *reader;  /* the stream behind the windows */
    char *path;               /* the file, for messages */
    size_t size;              /* window length, samples */
    size_t step;              /* hop between windows, samples */
    float *buf;               /* the current window */
    size_t filled;            /* samples of buf that came from the file */
    int64_t start;            /* first sample of the current window */
    bool started;             /* the first window was produced */
    bool finished;            /* no window left */
};

/* The windows over reader r (taken), or NULL when r is NULL. */
static gf_audio_windows *windows_on(gf_audio_reader *r, const char *path, size_t size,
                                    size_t step)
{
    assert(size > 0 && step > 0 && step <= size);
    if (!r)
        return NULL;
    gf_audio_windows *self = gf_calloc(1, sizeof *self);
    self->reader = r;
    self->path = gf_strdup(path);
    self->size = size;
    self->step = step;
    self->buf = gf_calloc(size, sizeof(float));
    return self;
}

gf_audio_windows *gf_audio_windows_new(const char *path, size_t size, size_t step, int *err)
{
    return windows_on(gf_audio_reader_new(path, err), path, size, step);
}

gf_audio_windows *gf_audio_windows_new_samples(const float *x, size_t n, int rate,
                                               const char *name, size_t size, size_t step,
                                               int *err)
{
    return windows_on(gf_audio_reader_new_samples(x, n, rate, name, err), name, size, step);
}

void gf_audio_windows_destroy(gf_audio_windows **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_audio_windows *self = *self_p;
    gf_audio_reader_destroy(&self->reader);
    free(self->path);
    free(self->buf);
    free(self);
    *self_p = NULL;
}

const gf_audio_info *gf_audio_windows_info(const gf_audio_windows *self)
{
    return gf_audio_reader_info(self->reader);
}

size_t gf_audio_windows_count(int64_t n, size_t size, size_t step)
{
    if (n <= 0)
        return 0;
    if ((uint64_t)n < size)
        return 1;
    size_t rest = (size_t)n - size;
    return rest / step + 1 + (rest % step ? 1 : 0);
}

/* Read until buf[from..size) is full or the file ends; 0 or GF_E*. */
static int fill(gf_audio_windows *self, size_t from)
{
    size_t pos = from;
    while (pos < self->size) {
        ssize_t got = gf_audio_reader_read(self->reader, self->buf + pos, self->size - pos);
        if (got < 0)
            return (int)got;
        if (got == 0)
            break;
        pos += (size_t)got;
    }
    self->filled = pos;
    if (pos < self->size)
        memset(self->buf + pos, 0, (self->size - pos) * sizeof(float));
    return 0;
}

int gf_audio_windows_next(gf_audio_windows *self, const float **win, int64_t *start,
                          size_t *valid)
{
    assert(self && win && start);
    if (self->finished)
        return 0;
    int rc;
    if (!self->started) {
        self->started = true;
        if ((rc = fill(self, 0)) != 0)
            return rc;
        if (self->filled == 0) {
            self->finished = true;
            GF_ERROR("audio file %s: empty (no samples decoded)", self->path);
            return GF_EINVAL;
        }
    } else {
        /* The previous window was the last one when the file ended inside
         * it at or before the next step's start plus a whole window. */
        if (self->filled < self->size) {
            self->finished = true;
            return 0;
        }
        size_t keep = self->size - self->step;
        memmove(self->buf, self->buf + self->step, keep * sizeof(float));
        if ((rc = fill(self, keep)) != 0)
            return rc;
        if (self->filled == keep) {
            /* Nothing beyond the previous window: it was the last. */
            self->finished = true;
            return 0;
        }
        self->start += (int64_t)self->step;
    }
    *win = self->buf;
    *start = self->start;
    if (valid)
        *valid = self->filled;
    return 1;
}
