/* diarjob.h — a diarize job inside the worker process.
 *
 * A diarize job is not a program to exec: the worker runs the built-in
 * pipeline (diar/pipeline.h) on a thread of its own, so its event
 * loop keeps heartbeating. The runner (worker/runner.c) takes the card's
 * lock first and keeps its descriptor for the job's duration; this module
 * does the rest:
 *   - the pipeline comes from the worker's pool (worker/diarpool.h), which
 *     keeps pipelines loaded between jobs;
 *   - the thread reads and writes files as the submitter (per-thread
 *     filesystem uid, gid and groups when the worker is root), so the RTTM
 *     it writes is the submitter's, and a path the submitter may not touch
 *     fails as it would for them;
 *   - windows done / total are published for PROGRESS messages, and a
 *     cancel stops the pipeline at the next window boundary;
 *   - the RTTM (and the JSON with --json) go through a temporary file
 *     renamed into place; the result carries the mode (weight-free or
 *     neural), per-stage timings and the devstats table as statistics;
 *   - the job's progress is checkpointed (worker/jobckpt.h) into
 *     <spool_dir>/<id>.ckpt beside its .out and .err (from the job's
 *     out_path) every worker.checkpoint_s seconds and when it is asked to
 *     yield; a later attempt of the job resumes from it when its identity
 *     matches. The file is removed when the job ends done, failed or
 *     cancelled, and kept when it yields or its worker dies. */
#ifndef GF_DIARJOB_H
#define GF_DIARJOB_H

#include "net/proto.h"
#include "worker/diarpool.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct gf_djob gf_djob;

/* Start the thread for the "job" message job (deep-copied). out_fd and
 * err_fd (taken over) are its spool files: a summary line, or why it
 * failed. wake_fd (an eventfd, or -1) is written when there is progress to
 * report or the job ended. Returns 0 and *out, or GF_EIO with why. */
int gf_djob_start(const gf_msg *job, gf_diar_pool *pool, int out_fd, int err_fd, int wake_fd,
                  gf_djob **out, char *why, size_t len);

/* Windows done and total; true when they changed since the last call
 * (also after gf_djob_reap: the final count). */
bool gf_djob_progress(gf_djob *self, int64_t *done, int64_t *total);

/* Ask the pipeline to stop at the next window boundary. */
void gf_djob_cancel(gf_djob *self);

/* Ask the job to give its card back (an exclusive job waits for it): at
 * the next batch boundary it writes a checkpoint, waits until it is on
 * disk, and stops. gf_djob_reap then gives a result with exit status 75
 * (EX_TEMPFAIL), the message "AUDIO: yielded after K of N windows
 * (checkpoint kept for the next attempt)" (or why none could be written)
 * and the statistic diarize.yielded 1, and gf_djob_yielded says so: the
 * job is to go back to the queue, not to fail, and its next attempt
 * resumes at window K. A job past its last batch (clustering) finishes
 * instead; a cancel wins over a yield. Thread-safe, idempotent. */
void gf_djob_yield(gf_djob *self);

/* After gf_djob_reap: true when the job stopped because it yielded. */
bool gf_djob_yielded(gf_djob *self);

/* When the thread has ended: join it, fill a "result" message (exit 0, or
 * -1 with the error text in message; statistics) and return true. */
bool gf_djob_reap(gf_djob *self, gf_msg *result);

/* Cancel, wait for the thread, free. Safe with NULL and twice. */
void gf_djob_destroy(gf_djob **self_p);

#endif
