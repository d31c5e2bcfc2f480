/* batcher.c — one card's network batches shared by several pipelines
 * (batcher.h).
 *
 * A queue of requests under one mutex: a client's run_batch appends its
 * pieces and sleeps on `done`; the batcher's thread takes windows from the
 * head of the queue until the batch is full (a request's windows in order,
 * a request split where the batch ends), runs the batch without the lock,
 * then credits each request with its windows, the batch's stage seconds and
 * its device timings, and wakes the clients whose requests are complete.
 * A batch that fails fails every request in it; a failed request's windows
 * still waiting are dropped. */
#include "diar/batcher.h"

#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/netbatch.h"
#include "diar/pipeline.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct request {
    gf_diar_piece piece;     /* the client's windows and outputs (borrowed) */
    int taken;               /* windows put in a batch so far */
    int finished;            /* windows whose batch has run (or that were dropped) */
    int rc;                  /* the first failure, else 0 */
    gf_devstats *stats;      /* the client's (may be NULL) */
    gf_diar_times *times;    /* the client's (may be NULL) */
    struct request *next;    /* queue order */
} request;

struct gf_diar_batcher {
    gf_diar_backend be;      /* the one backend (owned) */
    gf_diar_netbatch *net;   /* the batch's host buffers (the thread's) */
    int cap;                 /* windows per batch at most */
    pthread_t thread;
    pthread_mutex_t mu;      /* guards everything below */
    pthread_cond_t work;     /* a request came, or stop */
    pthread_cond_t done;     /* a request completed */
    request *head, *tail;    /* requests with windows not yet taken */
    bool stop;
    gf_diar_batcher_counts counts;
};

/* Windows [from, from + n) of piece p, with their outputs. */
static gf_diar_piece sub_piece(const gf_diar_piece *p, int from, int n)
{
    gf_diar_piece s = *p;
    size_t w = (size_t)from;
    s.in.samples = p->in.samples + w * (size_t)p->in.step;
    s.in.windows = n;
    s.seg = p->seg + w * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
    s.emb = p->emb + w * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM;
    s.logits = p->logits ? p->logits + w * GF_DIAR_FRAMES * GF_DIAR_CLASSES : NULL;
    return s;
}

static void *batcher_main(void *arg)
{
    gf_diar_batcher *self = arg;
    gf_diar_piece *pieces = gf_malloc((size_t)self->cap * sizeof *pieces);
    request **owner = gf_malloc((size_t)self->cap * sizeof *owner);
    pthread_mutex_lock(&self->mu);
    for (;;) {
        while (!self->stop && !self->head)
            pthread_cond_wait(&self->work, &self->mu);
        if (!self->head)
            break;   /* stopped, nothing waiting */
        /* fill the batch from the head of the queue */
        int n = 0, filled = 0;
        while (self->head && filled < self->cap) {
            request *r = self->head;
            int left = r->piece.in.windows - r->taken;
            int take = left < self->cap - filled ? left : self->cap - filled;
            pieces[n] = sub_piece(&r->piece, r->taken, take);
            owner[n++] = r;
            r->taken += take;
            filled += take;
            if (r->taken == r->piece.in.windows) {   /* all its windows are in a batch */
                self->head = r->next;
                if (!self->head)
                    self->tail = NULL;
            }
        }
        pthread_mutex_unlock(&self->mu);
        /* a fixed_batch backend's batches are padded to cap by netbatch */
        gf_devstats *st = gf_devstats_new();
        gf_diar_times t = { 0 };
        int rc = gf_diar_netbatch_run(self->net, &self->be, pieces, n, st, &t);
        pthread_mutex_lock(&self->mu);
        self->counts.batches++;
        self->counts.windows += (uint64_t)filled;
        if (n > self->counts.most_jobs)
            self->counts.most_jobs = n;
        for (int i = 0; i < n; i++) {   /* a request is in a batch at most once */
            request *r = owner[i];
            if (r->stats)
                gf_devstats_merge(r->stats, st);
            if (r->times) {
                r->times->segmentation += t.segmentation;
                r->times->fbank += t.fbank;
                r->times->embedding += t.embedding;
            }
        }
        for (int i = 0; i < n; i++) {
            request *r = owner[i];
            r->finished += pieces[i].in.windows;
            if (rc && !r->rc)
                r->rc = rc;
        }
        gf_devstats_destroy(&st);
        pthread_cond_broadcast(&self->done);
    }
    pthread_mutex_unlock(&self->mu);
    free(pieces);
    free(owner);
    return NULL;
}

gf_diar_batcher *gf_diar_batcher_new(gf_diar_backend *backend, int cap)
{
    assert(cap >= 1);
    gf_diar_batcher *self = gf_calloc(1, sizeof *self);
    self->be = *backend;
    memset(backend, 0, sizeof *backend);
    self->cap = cap;
    self->net = gf_diar_netbatch_new(cap);
    pthread_mutex_init(&self->mu, NULL);
    pthread_cond_init(&self->work, NULL);
    pthread_cond_init(&self->done, NULL);
    if (pthread_create(&self->thread, NULL, batcher_main, self) != 0) {
        GF_ERROR("batcher: cannot start its thread");
        abort();   /* as out of memory: a worker that cannot make a thread cannot run jobs */
    }
    return self;
}

void gf_diar_batcher_destroy(gf_diar_batcher **self_p)
{
    gf_diar_batcher *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    pthread_mutex_lock(&self->mu);
    self->stop = true;
    pthread_cond_signal(&self->work);
    pthread_mutex_unlock(&self->mu);
    pthread_join(self->thread, NULL);
    assert(!self->head);
    if (self->be.destroy)
        self->be.destroy(self->be.ctx);
    gf_diar_netbatch_destroy(&self->net);
    pthread_mutex_destroy(&self->mu);
    pthread_cond_destroy(&self->work);
    pthread_cond_destroy(&self->done);
    free(self);
    *self_p = NULL;
}

/* A failed request's windows still waiting: dropped, as finished. */
static void drop_failed(gf_diar_batcher *self, request *r)
{
    if (!r->rc || r->taken == r->piece.in.windows)
        return;
    r->finished += r->piece.in.windows - r->taken;
    r->taken = r->piece.in.windows;
    request **pp = &self->head, *prev = NULL;
    while (*pp && *pp != r) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = r->next;
        if (self->tail == r)
            self->tail = prev;
    }
}

static int client_run_batch(void *ctx, const gf_diar_piece *pieces, int n_pieces,
                            gf_devstats *stats, gf_diar_times *times)
{
    gf_diar_batcher *self = ctx;
    request *req = gf_calloc((size_t)n_pieces, sizeof *req);
    pthread_mutex_lock(&self->mu);
    for (int i = 0; i < n_pieces; i++) {
        assert(pieces[i].in.windows >= 1);
        req[i].piece = pieces[i];
        req[i].stats = stats;
        req[i].times = times;
        if (self->tail)
            self->tail->next = &req[i];
        else
            self->head = &req[i];
        self->tail = &req[i];
    }
    pthread_cond_signal(&self->work);
    int rc = 0;
    for (int i = 0; i < n_pieces; i++) {
        while (req[i].finished < req[i].piece.in.windows) {
            drop_failed(self, &req[i]);
            if (req[i].finished < req[i].piece.in.windows)
                pthread_cond_wait(&self->done, &self->mu);
        }
        if (req[i].rc && !rc)
            rc = req[i].rc;
    }
    pthread_mutex_unlock(&self->mu);
    free(req);
    return rc;
}

gf_diar_backend gf_diar_batcher_client(gf_diar_batcher *self)
{
    return (gf_diar_backend){
        .name = self->be.name,
        .route = self->be.route,
        .run_batch = client_run_batch,
        .ctx = self,
        .identity = self->be.identity,
        /* no AHC linkage on the card: it would share the card's stream and
         * timers with the batcher's thread (the card failed so); the
         * clustering links on the CPU */
    };
}

void gf_diar_batcher_counts_get(gf_diar_batcher *self, gf_diar_batcher_counts *out)
{
    pthread_mutex_lock(&self->mu);
    *out = self->counts;
    out->waiting = 0;
    for (request *r = self->head; r; r = r->next)
        out->waiting++;
    pthread_mutex_unlock(&self->mu);
}
