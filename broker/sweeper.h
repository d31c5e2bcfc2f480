/* sweeper.h — the spool files of jobs the store lets go, removed on a
 * thread of their own, off the broker's turn.
 *
 * The broker hands over one batch at a time (the jobs of one retention
 * pass, broker/history.c) and removes their rows only once the sweeper is
 * done with it: a broker that dies in between finds the rows again and
 * removes them then (their files are gone already, which is no error), so
 * no spool file outlives its row unnoticed. For each job: its stdout and
 * stderr files, and what its runs kept for the next one (common/ckdir.h:
 * a checkpoint, a record of outputs, a checkpoint folder of any size,
 * removed without following symlinks). */
#ifndef GF_SWEEPER_H
#define GF_SWEEPER_H

#include "broker/store.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct gf_sweeper gf_sweeper;

/* A sweeper with its thread started (where no thread can start, each
 * batch is removed at once, in the caller). */
gf_sweeper *gf_sweeper_new(void);

/* Finish the batch under way, stop the thread, free; safe with NULL and
 * twice. */
void gf_sweeper_destroy(gf_sweeper **self_p);

/* Remove the files of rows[0..n) (taken: the sweeper frees them). Returns
 * false, taking nothing, while an earlier batch is still under way. */
bool gf_sweeper_give(gf_sweeper *self, gf_store_old *rows, size_t n);

/* Is a batch still under way? */
bool gf_sweeper_busy(gf_sweeper *self);

/* The files of one job (its row): those of its shape only
 * (gf_retention_spool_name); missing ones are no error. */
void gf_sweeper_remove_job(const gf_store_old *row);

#endif
