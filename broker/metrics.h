/* metrics.h — gpuflockd's Prometheus metrics (docs/operations.md,
 * "Metrics").
 *
 * The loop keeps the counters: it calls the gf_metrics_* hooks where a job
 * is recorded as submitted or ended, a result, a lock wait, a yield, a
 * requeue or a worker's start comes in, and where the store commits and
 * syncs. About once a second (gf_metrics_refresh) it renders every metric
 * into one text, from the counters and from its own state (jobs by state,
 * cards), and publishes it (broker/metrics_serve.h): scrapes and the
 * textfile writer read the last text published, on threads of their own,
 * so the loop never waits on a scrape.
 *
 * What is in it names no user and no job: labels are the job's kind and
 * state, the card's index and state, an outcome, and the stage and route
 * of device time (names from the program, as the workers report them, at
 * most GF_METRICS_MAX_ROWS pairs per card). */
#ifndef GF_METRICS_H
#define GF_METRICS_H

#include "broker/server.h"
#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stdint.h>

#define GF_METRICS_MAX_ROWS 64       /* (stage, route) pairs of device time kept per card */
#define GF_METRICS_REFRESH_MS 1000   /* how often the loop renders and publishes */

typedef struct gf_metrics gf_metrics;

/* Counters at zero for cfg's cards (cfg borrowed, outlives this); nothing
 * is served yet. */
gf_metrics *gf_metrics_new(const gf_config *cfg);

/* Start serving what cfg asks (metrics.listen, metrics.textfile) with a
 * first snapshot of srv: 0, or a code after logging (an address in use, a
 * textfile folder that is not there): the broker does not start then. */
int gf_metrics_start(gf_metrics *self, gf_server *srv);

/* Stop serving (the textfile is removed: a broker that is gone publishes
 * nothing) and free everything. */
void gf_metrics_destroy(gf_metrics **self_p);

/* Render and publish, if GF_METRICS_REFRESH_MS passed since the last time
 * (and something is served). now: monotonic ms. */
void gf_metrics_refresh(gf_metrics *self, gf_server *srv, uint64_t now);

/* The whole text as a scrape would read it now (the caller frees); *len
 * its length. */
char *gf_metrics_render(gf_metrics *self, gf_server *srv, uint64_t now, size_t *len);

/* ---- the hooks: called by the loop at the existing points */

/* A job's submit is in the store (its turn committed). */
void gf_metrics_submitted(gf_metrics *self, gf_job_kind kind);

/* A job's end is in the store: its state, its queue wait (submit to the
 * start of its last run) and its run time (that run) are counted. */
void gf_metrics_ended(gf_metrics *self, const gf_job *job);

/* A result for a running job from card's worker: its outcome, and the
 * device time of its devstats (devstats.<stage>.<route>.total_ns, .count). */
void gf_metrics_result(gf_metrics *self, int card, const gf_msg *result);

/* A job on card's worker waits for a lock: why as the worker says it
 * ("waiting for card 0: held outside gpuflock by ..."). */
void gf_metrics_lock_wait(gf_metrics *self, int card, const char *why);

/* A job that ran on card went back to the queue: yielded (or requeued on
 * request, recalled), or requeued after its worker was lost. */
void gf_metrics_yielded(gf_metrics *self, int card);
void gf_metrics_requeued(gf_metrics *self, int card);

/* The broker started a worker process for card. */
void gf_metrics_worker_started(gf_metrics *self, int card);

/* The store's commit of a turn took ns (ok: it committed), or its WAL's
 * fdatasync took ns. */
void gf_metrics_commit(gf_metrics *self, uint64_t ns, bool ok);
void gf_metrics_sync(gf_metrics *self, uint64_t ns);

#endif
