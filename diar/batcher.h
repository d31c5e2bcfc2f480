/* batcher.h — one card's network batches, shared by the pipelines of the
 * jobs that run on it side by side (continuous batching, as servers of
 * language models batch across requests).
 *
 * Each job keeps its own pipeline (diar/pipeline.h): it decodes its audio
 * ahead, keeps its per-window results, checkpoints and clusters on its own
 * thread. Only the networks are shared: the pipeline's backend is a client
 * of the batcher (gf_diar_batcher_client), whose run_batch hands the
 * batch's windows to the batcher's thread and waits. That thread fills
 * each network batch, up to its capacity, from every job waiting, in the
 * order their windows came (a job's batch may be split over two), runs it
 * through the one backend the batcher owns (diar/netbatch.h), and hands
 * each window's results back to its job. A window's results do not depend
 * on the other windows of its batch (a backend whose numbers depend on the
 * batch's size has every batch padded to the capacity, fixed_batch in
 * diar/backend.h): a job's turns are those of the same job run alone,
 * through the batcher or through its own pipeline. Thread-safe. */
#ifndef GF_DIAR_BATCHER_H
#define GF_DIAR_BATCHER_H

#include "diar/backend.h"

#include <stdint.h>

typedef struct gf_diar_batcher gf_diar_batcher;

/* A batcher over *backend (taken: *backend is zeroed; destroyed with the
 * batcher) for batches of up to cap windows; its thread starts now. */
gf_diar_batcher *gf_diar_batcher_new(gf_diar_backend *backend, int cap);

/* Stops the thread (after the batches waiting) and destroys the backend.
 * No client may be running a batch. */
void gf_diar_batcher_destroy(gf_diar_batcher **self_p);

/* A backend table for one pipeline (gf_diar_set_backend) whose batches go
 * through the batcher: run_batch, the backend's identity and name; no AHC
 * linkage on the device (the clustering links on the CPU). The table owns
 * nothing (its destroy is NULL); the batcher must outlive the pipeline. */
gf_diar_backend gf_diar_batcher_client(gf_diar_batcher *self);

/* What the batcher has run: batches, windows in them, the largest number
 * of jobs one batch carried; and the requests waiting now for a batch. */
typedef struct {
    uint64_t batches;
    uint64_t windows;
    int most_jobs;
    int waiting;
} gf_diar_batcher_counts;
void gf_diar_batcher_counts_get(gf_diar_batcher *self, gf_diar_batcher_counts *out);

#endif
