/* diarpool.c — diarize pipelines kept loaded across jobs (see diarpool.h).
 *
 * A list of loaded pipelines under one mutex; the diarize threads
 * (worker/diarjob.c) take one for a job and give it back after. Loading
 * happens outside the mutex, so one job's seconds of loading never hold
 * up another's take. */
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
#include <string.h>
#include <sys/stat.h>

/* A card's shared networks for one models directory (worker.batch_jobs). */
typedef struct shared {
    char *models;           /* key: models directory */
    gf_diar_batcher *batcher;
    bool on_card;           /* its networks run on the CUDA card */
    struct shared *next;
} shared;

typedef struct entry {
    gf_diar_pipe pipe;     /* what a job borrows; first, so a pipe is its entry */
    char *models;          /* key: models directory */
    int batch;             /* key: windows per network call */
    bool busy;             /* a job runs it now */
    struct entry *next;
} entry;

struct gf_diar_pool {
    pthread_mutex_t mu;    /* guards list */
    entry *list;
    gf_diar_pool_conf conf; /* the settings every pipeline is loaded with */
    pthread_mutex_t smu;    /* guards shared, held while one is made (seconds: the
                               jobs that would use it wait for it) */
    shared *shared;         /* batch_jobs: one batcher per models directory */
};

gf_diar_pool *gf_diar_pool_new(const gf_config *cfg, gf_route_plan *plan)
{
    gf_diar_pool *self = gf_calloc(1, sizeof(*self));
    pthread_mutex_init(&self->mu, NULL);
    pthread_mutex_init(&self->smu, NULL);
    self->conf.models_dir = gf_strdup(cfg->models_dir);
    self->conf.batch = cfg->batch_size > 0 ? cfg->batch_size : 32;
    self->conf.threads = cfg->cpu_threads;
    self->conf.math = cfg->tf32 ? GF_MATH_TF32 : GF_MATH_FP32;
    self->conf.overlap = cfg->overlap;
    self->conf.checkpoint_s = cfg->checkpoint_s;
    self->conf.batch_jobs = cfg->batch_jobs;
    self->conf.card = *gf_route_plan_card(plan);
    self->conf.plan = plan;
    return self;
}

void gf_diar_pool_destroy(gf_diar_pool **self_p)
{
    gf_diar_pool *self = *self_p;
    if (!self)
        return;
    while (self->list) {
        entry *e = self->list;
        self->list = e->next;
        gf_diar_destroy(&e->pipe.diar);
        free(e->models);
        free(e);
    }
    while (self->shared) {   /* after the pipelines, their clients */
        shared *s = self->shared;
        self->shared = s->next;
        gf_diar_batcher_destroy(&s->batcher);
        free(s->models);
        free(s);
    }
    pthread_mutex_destroy(&self->mu);
    pthread_mutex_destroy(&self->smu);
    free(self->conf.models_dir);
    free(self);
    *self_p = NULL;
}

const gf_diar_pool_conf *gf_diar_pool_settings(const gf_diar_pool *self)
{
    return &self->conf;
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

/* The card's networks of models for the batcher: a CUDA backend on one row
 * of routes on a CUDA card, else the CPU networks. 0, or a GF_E* after
 * logging. */
static int card_backend(gf_diar_pool *self, const char *models, gf_diar_backend *be,
                        bool *on_card)
{
    *on_card = self->conf.card.kind == GF_DEVICE_CUDA && gpu_backend(self, models, be) == 0;
    if (*on_card) {
        int rc = gf_diar_backend_gpu_one_row(be);
        assert(rc == 0);
        (void)rc;
        return 0;
    }
    return gf_diar_backend_cpu(models, self->conf.batch, self->conf.threads, be);
}

/* Both network files are in models (else the weight-free mode, or an error
 * gf_diar_new reports). */
static bool has_networks(const char *models)
{
    struct stat st;
    char *seg = gf_strfmt("%s/%s", models, GF_MODELS_SEGMENTATION);
    char *emb = gf_strfmt("%s/%s", models, GF_MODELS_EMBEDDING);
    bool both = stat(seg, &st) == 0 && stat(emb, &st) == 0;
    free(seg);
    free(emb);
    return both;
}

/* The shared networks for models, made now when there are none yet. */
static shared *shared_for(gf_diar_pool *self, const char *models)
{
    pthread_mutex_lock(&self->smu);
    shared *s = self->shared;
    while (s && strcmp(s->models, models) != 0)
        s = s->next;
    if (!s) {
        gf_diar_backend be;
        bool on_card;
        if (card_backend(self, models, &be, &on_card) == 0) {
            s = gf_calloc(1, sizeof *s);
            s->models = gf_strdup(models);
            s->batcher = gf_diar_batcher_new(&be, self->conf.batch);
            s->on_card = on_card;
            s->next = self->shared;
            self->shared = s;
            GF_INFO("card %d: diarize jobs share one copy of the networks of %s (%s), "
                    "batches of up to %d windows", self->conf.card.index, models,
                    on_card ? "on the card" : "on the CPU", self->conf.batch);
        }
    }
    pthread_mutex_unlock(&self->smu);
    return s;
}

gf_diar_pipe *gf_diar_pool_take(gf_diar_pool *self, const char *models, bool *cached)
{
    if (!models)
        models = self->conf.models_dir;
    pthread_mutex_lock(&self->mu);
    for (entry *e = self->list; e; e = e->next)
        if (!e->busy && e->batch == self->conf.batch && strcmp(e->models, models) == 0) {
            e->busy = true;
            pthread_mutex_unlock(&self->mu);
            *cached = true;
            return &e->pipe;
        }
    pthread_mutex_unlock(&self->mu);
    *cached = false;
    bool weight_free = false;
    gf_diar *d = NULL;
    /* batch_jobs: the card's shared networks, and a pipeline that loads none of its own */
    shared *sh = self->conf.batch_jobs && has_networks(models) ? shared_for(self, models) : NULL;
    if (sh) {
        gf_diar_backend client = gf_diar_batcher_client(sh->batcher);
        d = gf_diar_new_with(models, self->conf.batch, self->conf.threads, &client);
    } else {
        d = gf_diar_new(models, self->conf.batch, self->conf.threads, &weight_free);
    }
    if (!d)
        return NULL;
    entry *e = gf_calloc(1, sizeof(*e));
    gf_diar_pipe *p = &e->pipe;
    if (sh) {   /* the job's batches go through the card's batcher */
        p->on_card = sh->on_card;
    } else if (!weight_free && self->conf.card.kind == GF_DEVICE_CUDA) {
        gf_diar_backend be;
        if (gpu_backend(self, models, &be) == 0) {
            gf_diar_set_backend(d, &be);
            p->on_card = true;
        }
    }
    if (weight_free) {
        GF_WARN("weight-free mode: no model files in %s (%s, %s)", models, GF_MODELS_SEGMENTATION,
                GF_MODELS_EMBEDDING);
        snprintf(p->seg_sha, sizeof p->seg_sha, "-");
        snprintf(p->emb_sha, sizeof p->emb_sha, "-");
    } else {
        gf_manifest *man = NULL;
        gf_manifest_load(models, &man);   /* loaded already: a bad one failed the load */
        gf_models_digest(models, man, GF_MODELS_SEGMENTATION, p->seg_sha, sizeof p->seg_sha);
        gf_models_digest(models, man, GF_MODELS_EMBEDDING, p->emb_sha, sizeof p->emb_sha);
        gf_manifest_destroy(&man);
    }
    e->models = gf_strdup(models);
    e->batch = self->conf.batch;
    p->diar = d;
    e->busy = true;
    pthread_mutex_lock(&self->mu);
    e->next = self->list;
    self->list = e;
    pthread_mutex_unlock(&self->mu);
    return p;
}

void gf_diar_pool_give(gf_diar_pool *self, gf_diar_pipe **pipe_p)
{
    pthread_mutex_lock(&self->mu);
    for (entry *e = self->list; e; e = e->next)
        if (&e->pipe == *pipe_p)
            e->busy = false;
    pthread_mutex_unlock(&self->mu);
    *pipe_p = NULL;
}
