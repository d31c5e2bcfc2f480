/* diarpool.c — diarize pipelines kept loaded across jobs (see diarpool.h).
 *
 * A list of model sets (a models directory and its files' identity, each
 * with its pipelines and batcher) under one mutex; the diarize threads
 * (worker/diarjob.c) take a pipeline for a job and give it back after.
 * Loading and freeing happen outside the mutex, so one job's seconds of
 * loading never hold up another's take; a set being loaded or used is
 * pinned (busy) and never dropped. */
#include "worker/diarpool.h"

#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "diar/backend_cpu.h"
#include "diar/backend_gpu.h"
#include "diar/batcher.h"
#include "diar/models.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

typedef struct mset mset;

typedef struct entry {
    gf_diar_pipe pipe;     /* what a job borrows; first, so a pipe is its entry */
    mset *set;             /* the models it was loaded from */
    bool busy;             /* a job runs it now */
    struct entry *next;
} entry;

/* One models directory as its files were when it was loaded: its
 * pipelines and, with worker.batch_jobs, the batcher holding the card's one
 * copy of its networks. */
struct mset {
    char *models;          /* key: the directory, */
    gf_models_id id;       /* and its files' identity */
    pthread_mutex_t make;  /* held while the batcher is made (seconds: the jobs that
                              would use it wait for it) */
    bool made;             /* the batcher was tried (and is NULL if it failed) */
    gf_diar_batcher *batcher;
    bool on_card;          /* the batcher's networks run on the CUDA card */
    int busy;              /* pipelines taken and takes under way: never dropped then */
    bool stale;            /* its files changed: never taken again, dropped when idle */
    uint64_t used;         /* the pool's tick at its last take or give */
    entry *entries;
    mset *next;
};

struct gf_diar_pool {
    pthread_mutex_t mu;    /* guards sets, every set's entries, busy, stale, used, tick */
    mset *sets;
    size_t n_sets;
    uint64_t tick;
    gf_diar_pool_conf conf; /* the settings every pipeline is loaded with */
};

gf_diar_pool *gf_diar_pool_new(const gf_config *cfg, gf_route_plan *plan)
{
    gf_diar_pool *self = gf_calloc(1, sizeof(*self));
    pthread_mutex_init(&self->mu, NULL);
    self->conf.models_dir = gf_strdup(cfg->models_dir);
    self->conf.batch = cfg->batch_size > 0 ? cfg->batch_size : 32;
    self->conf.threads = cfg->cpu_threads;
    self->conf.math = cfg->tf32 ? GF_MATH_TF32 : GF_MATH_FP32;
    self->conf.overlap = cfg->overlap;
    self->conf.checkpoint_s = cfg->checkpoint_s;
    self->conf.batch_jobs = cfg->batch_jobs;
    self->conf.model_sets = cfg->model_sets > 0 ? cfg->model_sets : 2;
    self->conf.card = *gf_route_plan_card(plan);
    self->conf.plan = plan;
    return self;
}

/* Free a set that no job uses and no list holds: its pipelines first, then
 * the batcher they are clients of. */
static void set_free(mset *s)
{
    while (s->entries) {
        entry *e = s->entries;
        s->entries = e->next;
        gf_diar_destroy(&e->pipe.diar);
        free(e);
    }
    gf_diar_batcher_destroy(&s->batcher);
    pthread_mutex_destroy(&s->make);
    free(s->models);
    free(s);
}

void gf_diar_pool_destroy(gf_diar_pool **self_p)
{
    gf_diar_pool *self = *self_p;
    if (!self)
        return;
    while (self->sets) {
        mset *s = self->sets;
        self->sets = s->next;
        set_free(s);
    }
    pthread_mutex_destroy(&self->mu);
    free(self->conf.models_dir);
    free(self);
    *self_p = NULL;
}

const gf_diar_pool_conf *gf_diar_pool_settings(const gf_diar_pool *self)
{
    return &self->conf;
}

size_t gf_diar_pool_sets(gf_diar_pool *self)
{
    pthread_mutex_lock(&self->mu);
    size_t n = self->n_sets;
    pthread_mutex_unlock(&self->mu);
    return n;
}

/* Under mu: unlink the sets to drop onto *out: the idle ones whose files
 * changed or that hold no pipeline (their load failed), then, least
 * recently used first, idle ones while more than worker.model_sets are
 * loaded, never the configured models directory's (jobs naming other
 * folders cannot push it out). A set in use stays. */
static void trim_locked(gf_diar_pool *self, mset **out)
{
    for (;;) {
        mset **victim = NULL;
        for (mset **pp = &self->sets; *pp; pp = &(*pp)->next) {
            mset *s = *pp;
            if (s->busy)
                continue;
            if (s->stale || !s->entries) {
                victim = pp;
                break;
            }
            bool configured = strcmp(s->models, self->conf.models_dir) == 0;
            if (self->n_sets > (size_t)self->conf.model_sets && !configured &&
                (!victim || s->used < (*victim)->used))
                victim = pp;
        }
        if (!victim)
            return;
        mset *s = *victim;
        *victim = s->next;
        self->n_sets--;
        s->next = *out;
        *out = s;
    }
}

/* Free the sets trim_locked unlinked, outside mu (freeing networks on a card
 * takes a while), saying why each went. */
static void drop_sets(gf_diar_pool *self, mset *list)
{
    while (list) {
        mset *s = list;
        list = s->next;
        GF_INFO("card %d: dropped the pipelines of %s (%s)", self->conf.card.index, s->models,
                s->stale      ? "its files changed since they were loaded"
                : !s->entries ? "its pipeline could not be loaded"
                              : "more models directories loaded than worker.model_sets");
        set_free(s);
    }
}

/* The networks of models on the pool's CUDA card: 0 and *be, or non-zero
 * after warning that they stay on the CPU. */
static int gpu_backend(gf_diar_pool *self, const char *models, gf_diar_backend *be)
{
    int rc = gf_diar_backend_gpu(self->conf.plan, models, self->conf.batch, self->conf.math,
                                 self->conf.overlap, be);
    if (rc != 0)
        GF_WARN("card %d: networks stay on the CPU (the CUDA backend could not start)",
                self->conf.card.index);
    return rc;
}

/* The card's networks of models for the batcher: a CUDA backend on a CUDA
 * card, else the CPU networks. 0, or a GF_E* after logging. */
static int card_backend(gf_diar_pool *self, const char *models, gf_diar_backend *be,
                        bool *on_card)
{
    *on_card = self->conf.card.kind == GF_DEVICE_CUDA && gpu_backend(self, models, be) == 0;
    if (*on_card)
        return 0;
    return gf_diar_backend_cpu(models, self->conf.batch, self->conf.threads, be);
}

/* The set's batcher, made now by the first job that needs it (the others
 * wait on make); NULL when it could not be made. */
static gf_diar_batcher *set_batcher(gf_diar_pool *self, mset *s)
{
    pthread_mutex_lock(&s->make);
    if (!s->made) {
        s->made = true;
        gf_diar_backend be;
        bool on_card;
        if (card_backend(self, s->models, &be, &on_card) == 0) {
            s->batcher = gf_diar_batcher_new(&be, self->conf.batch);
            s->on_card = on_card;
            GF_INFO("card %d: diarize jobs share one copy of the networks of %s (%s), "
                    "batches of up to %d windows", self->conf.card.index, s->models,
                    on_card ? "on the card" : "on the CPU", self->conf.batch);
        }
    }
    pthread_mutex_unlock(&s->make);
    return s->batcher;
}

/* Under mu: the set for models as its files are now (id), pinned for the
 * caller (busy); made when there is none. A set of the same directory
 * whose files were different is marked stale. */
static mset *set_for_locked(gf_diar_pool *self, const char *models, const gf_models_id *id)
{
    mset *found = NULL;
    for (mset *s = self->sets; s; s = s->next) {
        if (s->stale || strcmp(s->models, models) != 0)
            continue;
        if (gf_models_id_equal(&s->id, id))
            found = s;
        else
            s->stale = true;
    }
    if (!found) {
        found = gf_calloc(1, sizeof *found);
        found->models = gf_strdup(models);
        found->id = *id;
        pthread_mutex_init(&found->make, NULL);
        found->next = self->sets;
        self->sets = found;
        self->n_sets++;
    }
    found->busy++;
    found->used = ++self->tick;
    return found;
}

/* Both network files are in models (else the weight-free mode, or an error
 * gf_diar_new reports). */
static bool has_networks(const gf_models_id *id)
{
    return id->f[GF_MODELS_ID_SEG].present && id->f[GF_MODELS_ID_EMB].present;
}

/* A new pipeline of set s, for the job about to run on it (busy). */
static entry *load(gf_diar_pool *self, mset *s)
{
    bool weight_free = false;
    gf_diar *d = NULL;
    /* batch_jobs: the card's shared networks, and a pipeline that loads none of its own */
    gf_diar_batcher *b = self->conf.batch_jobs && has_networks(&s->id) ? set_batcher(self, s)
                                                                         : NULL;
    if (b) {
        gf_diar_backend client = gf_diar_batcher_client(b);
        d = gf_diar_new_with(s->models, self->conf.batch, self->conf.threads, &client);
    } else {
        d = gf_diar_new(s->models, self->conf.batch, self->conf.threads, &weight_free);
    }
    if (!d)
        return NULL;
    entry *e = gf_calloc(1, sizeof(*e));
    gf_diar_pipe *p = &e->pipe;
    if (b) {   /* the job's batches go through the card's batcher */
        p->on_card = s->on_card;
    } else if (!weight_free && self->conf.card.kind == GF_DEVICE_CUDA) {
        gf_diar_backend be;
        if (gpu_backend(self, s->models, &be) == 0) {
            gf_diar_set_backend(d, &be);
            p->on_card = true;
        }
    }
    if (weight_free) {
        GF_WARN("weight-free mode: no model files in %s (%s, %s)", s->models,
                GF_MODELS_SEGMENTATION, GF_MODELS_EMBEDDING);
        snprintf(p->seg_sha, sizeof p->seg_sha, "-");
        snprintf(p->emb_sha, sizeof p->emb_sha, "-");
    } else {
        gf_manifest *man = NULL;
        gf_manifest_load(s->models, &man);   /* loaded already: a bad one failed the load */
        gf_models_digest(s->models, man, GF_MODELS_SEGMENTATION, p->seg_sha, sizeof p->seg_sha);
        gf_models_digest(s->models, man, GF_MODELS_EMBEDDING, p->emb_sha, sizeof p->emb_sha);
        gf_manifest_destroy(&man);
    }
    p->diar = d;
    e->set = s;
    e->busy = true;
    return e;
}

gf_diar_pipe *gf_diar_pool_take(gf_diar_pool *self, const char *models, bool *cached)
{
    if (!models)
        models = self->conf.models_dir;
    *cached = false;
    /* as the caller: the job's user must be able to read the files, loaded or not */
    gf_models_id id;
    if (gf_models_id_take(models, &id) != 0)
        return NULL;
    mset *drop = NULL;
    pthread_mutex_lock(&self->mu);
    mset *s = set_for_locked(self, models, &id);
    entry *e = s->entries;
    while (e && e->busy)
        e = e->next;
    if (e) {
        e->busy = true;
        *cached = true;
    }
    trim_locked(self, &drop);   /* a new set may make one too many, a stale one can go */
    pthread_mutex_unlock(&self->mu);
    drop_sets(self, drop);
    if (e)
        return &e->pipe;
    e = load(self, s);   /* outside mu: seconds; s stays, pinned by busy */
    drop = NULL;
    pthread_mutex_lock(&self->mu);
    if (e) {
        e->next = s->entries;
        s->entries = e;
    } else {
        s->busy--;
    }
    trim_locked(self, &drop);
    pthread_mutex_unlock(&self->mu);
    drop_sets(self, drop);
    return e ? &e->pipe : NULL;
}

void gf_diar_pool_give(gf_diar_pool *self, gf_diar_pipe **pipe_p)
{
    entry *e = (entry *)*pipe_p;   /* a pipe is its entry's first member */
    mset *drop = NULL;
    pthread_mutex_lock(&self->mu);
    assert(e->busy && e->set->busy > 0);
    e->busy = false;
    e->set->busy--;
    e->set->used = ++self->tick;
    trim_locked(self, &drop);
    pthread_mutex_unlock(&self->mu);
    drop_sets(self, drop);
    *pipe_p = NULL;
}
