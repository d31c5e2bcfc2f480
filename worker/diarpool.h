/* diarpool.h — diarize pipelines kept loaded across jobs.
 *
 * Loading a pipeline (its model files, the CUDA backend on a CUDA card)
 * takes seconds, so a worker keeps the ones it loaded, keyed by models
 * directory and the identity of its files (gf_models_id, diar/models.h),
 * taken for every job as the job's user: a user who may not read the files
 * now cannot use them because they are loaded, and files changed since
 * they were loaded are loaded again. One pipeline serves one job at a
 * time; shared jobs running side by side on one card get one each, kept for
 * later. With worker.batch_jobs (the default) the networks are loaded once
 * per models directory, behind a batcher (diar/batcher.h) that fills each
 * network batch from every job's pipeline. Idle directories beyond
 * worker.model_sets are dropped, least recently used first but never the
 * configured one (and those whose files changed, or that failed to load,
 * at once), so that users naming many folders cannot make a worker hold the
 * networks of each, nor push out the configured ones.
 * Each records the digests of the network files it loaded, which enter
 * the checkpoints' identity (worker/diarjob.c). Thread-safe. */
#ifndef GF_DIARPOOL_H
#define GF_DIARPOOL_H

#include "common/card.h"
#include "common/config.h"
#include "common/mathmode.h"
#include "diar/ckpt.h"
#include "diar/pipeline.h"
#include "route/plan.h"

#include <stdbool.h>

/* What every pipeline of the pool is loaded with, from the configuration. */
typedef struct {
    char *models_dir;      /* default models directory (models_dir) */
    int batch;             /* worker.batch_size, 32 when not set */
    int threads;           /* worker.cpu_threads */
    gf_math math;          /* worker.math: fp32 or tf32 on a CUDA card */
    bool overlap;          /* worker.overlap */
    int checkpoint_s;      /* worker.checkpoint_s */
    bool batch_jobs;       /* worker.batch_jobs: the jobs' batches through one batcher per
                              models directory (diar/batcher.h) */
    int model_sets;        /* worker.model_sets: idle models directories kept loaded */
    gf_card_identity card; /* the worker's card (the plan's): CUDA networks when it is one */
    gf_route_plan *plan;   /* the worker's route plan (borrowed), applied to every GPU backend */
} gf_diar_pool_conf;

/* One loaded pipeline, as a job borrows it. */
typedef struct {
    gf_diar *diar;                    /* the pipeline */
    bool on_card;                     /* its networks run on the CUDA card */
    char seg_sha[GF_CKPT_VALUE_MAX];  /* digests of the network files it loaded, for the */
    char emb_sha[GF_CKPT_VALUE_MAX];  /* checkpoints' identity ("-": weight-free mode) */
} gf_diar_pipe;

typedef struct gf_diar_pool gf_diar_pool;

/* Pipelines kept across jobs. cfg (borrowed) gives models_dir,
 * batch_size, cpu_threads, the math mode, overlap and checkpoint_s; plan
 * (borrowed, outlives the pool) is the worker's route plan: its card says
 * whether the networks may go on a CUDA card, and every GPU backend the pool
 * builds applies it (diar/backend_gpu.h). */
gf_diar_pool *gf_diar_pool_new(const gf_config *cfg, gf_route_plan *plan);
void gf_diar_pool_destroy(gf_diar_pool **self_p);

/* The settings (borrowed, as long as the pool). */
const gf_diar_pool_conf *gf_diar_pool_settings(const gf_diar_pool *self);

/* A pipeline for models (NULL: the configured directory), taken from the
 * pool or loaded now; *cached says which. Call it with the job's user's
 * file-system identity: its files are opened as them every time. Borrowed
 * until gf_diar_pool_give. NULL after logging when the model files are
 * unusable (or unreadable to the caller). */
gf_diar_pipe *gf_diar_pool_take(gf_diar_pool *self, const char *models, bool *cached);

/* Give a taken pipeline back for a later job; sets *pipe_p to NULL. */
void gf_diar_pool_give(gf_diar_pool *self, gf_diar_pipe **pipe_p);

/* How many models directories are loaded now (idle or in use). */
size_t gf_diar_pool_sets(gf_diar_pool *self);

#endif
