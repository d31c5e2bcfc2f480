/* sweeper.c — spool files removed on a thread of their own (see
 * sweeper.h). */
#include "broker/sweeper.h"

#include "broker/retention.h"
#include "common/ckdir.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gf_sweeper {
    pthread_t thread;
    bool started;             /* the thread runs; false: batches are removed in the caller */
    pthread_mutex_t mu;       /* guards what follows */
    pthread_cond_t cv;        /* a batch came, or stop */
    gf_store_old *rows;       /* the batch under way, NULL: none */
    size_t n;
    bool busy;                /* a batch was given and is not done yet */
    bool stop;                /* destroy: finish and end */
};

static void unlink_quiet(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        GF_WARN("%s: cannot remove: %s", path, strerror(errno));
}

void gf_sweeper_remove_job(const gf_store_old *row)
{
    if (gf_retention_spool_name(row->err_path, row->id, ".err"))
        unlink_quiet(row->err_path);
    if (!gf_retention_spool_name(row->out_path, row->id, ".out"))
        return;
    unlink_quiet(row->out_path);
    gf_ckpt_remove_all(row->out_path);   /* <id>.ckpt, <id>.outs, <id>.ckdir */
}

static void remove_batch(gf_store_old *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gf_sweeper_remove_job(&rows[i]);
    gf_store_old_free(rows, n);
}

static void *sweep(void *arg)
{
    gf_sweeper *self = arg;
    pthread_mutex_lock(&self->mu);
    for (;;) {
        while (!self->rows && !self->stop)
            pthread_cond_wait(&self->cv, &self->mu);
        if (!self->rows)
            break;
        gf_store_old *rows = self->rows;
        size_t n = self->n;
        pthread_mutex_unlock(&self->mu);
        remove_batch(rows, n);
        pthread_mutex_lock(&self->mu);
        self->rows = NULL;
        self->n = 0;
        self->busy = false;
    }
    pthread_mutex_unlock(&self->mu);
    return NULL;
}

gf_sweeper *gf_sweeper_new(void)
{
    gf_sweeper *self = gf_calloc(1, sizeof(*self));
    pthread_mutex_init(&self->mu, NULL);
    pthread_cond_init(&self->cv, NULL);
    if (pthread_create(&self->thread, NULL, sweep, self) == 0)
        self->started = true;
    else
        GF_WARN("no thread for removing old spool files: they are removed on the broker's turn");
    return self;
}

void gf_sweeper_destroy(gf_sweeper **self_p)
{
    gf_sweeper *self = *self_p;
    if (!self)
        return;
    if (self->started) {
        pthread_mutex_lock(&self->mu);
        self->stop = true;
        pthread_cond_signal(&self->cv);
        pthread_mutex_unlock(&self->mu);
        pthread_join(self->thread, NULL);
    }
    gf_store_old_free(self->rows, self->n);
    pthread_cond_destroy(&self->cv);
    pthread_mutex_destroy(&self->mu);
    free(self);
    *self_p = NULL;
}

bool gf_sweeper_give(gf_sweeper *self, gf_store_old *rows, size_t n)
{
    if (!self->started || n == 0) {
        remove_batch(rows, n);
        return true;
    }
    pthread_mutex_lock(&self->mu);
    bool taken = !self->busy;
    if (taken) {
        self->rows = rows;
        self->n = n;
        self->busy = true;
        pthread_cond_signal(&self->cv);
    }
    pthread_mutex_unlock(&self->mu);
    return taken;
}

bool gf_sweeper_busy(gf_sweeper *self)
{
    pthread_mutex_lock(&self->mu);
    bool busy = self->busy;
    pthread_mutex_unlock(&self->mu);
    return busy;
}
