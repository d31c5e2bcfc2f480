/* store.h — the broker's durable job store: SQLite in WAL mode.
 *
 * One row per job. The whole job record (gf_job) travels as a msgpack blob
 * in the protocol's own encoding; the columns beside it (state, priority,
 * submitter, times) are there for queries and for people with sqlite3(1).
 * The schema carries its version in PRAGMA user_version and is migrated
 * forward on open, one step at a time, each step in its own transaction.
 *
 * Durability: synchronous=NORMAL in WAL mode, so every committed
 * transaction survives a crash of the broker; gf_store_sync then makes all
 * of them survive a crash of the machine (an fdatasync of the WAL). The
 * broker syncs before it acknowledges anything a client asked (a submit, a
 * cancel), and lets job state changes ride on the next sync: after a power
 * loss a job may run again, but no acknowledged job is lost. Callers group
 * many changes into one transaction (gf_store_begin/commit). */
#ifndef GF_STORE_H
#define GF_STORE_H

#include "broker/jobfilter.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gf_store gf_store;

/* The schema version this code writes (PRAGMA user_version). */
#define GF_STORE_SCHEMA_VERSION 5

/* Open or create the store at path (its folder must exist), migrating an
 * older schema forward. Its files are made (or tightened to) 0600: they
 * hold every user's environment. A schema newer than this code, and a
 * store this process cannot write, are refused. Returns NULL after logging
 * why. */
gf_store *gf_store_open(const char *path);

/* Close; safe with NULL and twice. */
void gf_store_destroy(gf_store **self_p);

/* The schema version of the open database. */
int gf_store_schema_version(gf_store *self);

/* Group changes into one transaction; commit makes them durable. Each
 * returns 0, GF_ENOSPC (the disk is full) or GF_EIO, logged (a failure
 * that repeats the last one, with no commit between, at debug level: a
 * caller may retry every second). Nesting is not allowed. A commit that
 * fails has rolled the transaction back: nothing of it is in the store,
 * and ids that its inserts got will be handed out again. The writes below
 * return the same codes; after one fails, roll back (SQLite may have rolled
 * the transaction back already, and later writes would each commit on
 * their own). */
int gf_store_begin(gf_store *self);
int gf_store_commit(gf_store *self);
int gf_store_rollback(gf_store *self);

/* The text of the last failure ("COMMIT: database or disk is full"), ""
 * since the last commit that worked. Borrowed. */
const char *gf_store_error(const gf_store *self);

/* Copy the WAL into the database and truncate it, outside a transaction:
 * after a commit failed on a full disk this gives the WAL's space back,
 * so a retry may fit. Failures are logged at debug only. */
void gf_store_checkpoint(gf_store *self);

/* Make every committed transaction durable against a machine crash.
 * Returns 0 or GF_EIO (logged). */
int gf_store_sync(gf_store *self);

/* Insert a new job; sets job->id (ids only grow, never reused). */
int gf_store_insert(gf_store *self, gf_job *job);

/* Rewrite the row of job->id with the record as it is now. GF_ENOENT if
 * there is no such row. */
int gf_store_update(gf_store *self, const gf_job *job);

/* The same, leaving the row's environment as it is: for a job whose
 * environment is kept in the store only (its spec has none in memory). */
int gf_store_update_record(gf_store *self, const gf_job *job);

/* The stored environment of job id into spec (replacing what it holds).
 * Returns 0, GF_ENOENT or GF_EIO. */
int gf_store_job_env(gf_store *self, uint64_t id, gf_job_spec *spec);

/* Read one job into *out (initialised here; the caller clears it). Returns
 * 0, GF_ENOENT or GF_EIO (a row that does not decode). */
int gf_store_get(gf_store *self, uint64_t id, gf_job *out);

/* Every job, in id order; with only_live, those pending or running. The
 * caller clears each and frees the array. */
int gf_store_load(gf_store *self, bool only_live, gf_job **jobs, size_t *n);

/* The `limit` most recent ended jobs the selection f takes (broker/jobfilter.h),
 * in id order, without their environments: the selection is the query's
 * WHERE clause (a user's jobs come from the uid index, --since from the
 * end times'), each row checked against f again. The caller clears each
 * and frees the array. */
int gf_store_find_ended(gf_store *self, const gf_jobfilter *f, size_t limit, gf_job **jobs,
                        size_t *n);

/* How SQLite answers gf_store_find_ended for f: its EXPLAIN QUERY PLAN
 * lines joined by "; " (a new string; "" when it cannot say), so that a
 * test sees which index a selection reads. */
char *gf_store_explain_find(gf_store *self, const gf_jobfilter *f);

/* How many ended jobs the store holds; how many of them ended before
 * cut_ms. 0 or GF_EIO. */
int gf_store_count_ended(gf_store *self, uint64_t *n);
int gf_store_count_ended_before(gf_store *self, int64_t cut_ms, uint64_t *n);

/* An ended job as the retention sees it: what to remove (docs/operations.md,
 * "History"). */
typedef struct {
    uint64_t id;
    int64_t ended_ms;
    char *out_path;           /* its spool files, NULL: none (it never ran, or its record
                               * does not decode) */
    char *err_path;
} gf_store_old;

/* Free what the two below return. */
void gf_store_old_free(gf_store_old *rows, size_t n);

/* At most `limit` ended jobs with an id above after_id, lowest ids first
 * (the oldest submitted: what history.keep_jobs removes). */
int gf_store_oldest_ended(gf_store *self, uint64_t after_id, size_t limit, gf_store_old **rows,
                          size_t *n);

/* At most `limit` jobs that ended before cut_ms, in the order they ended
 * (ended_ms, then id), after (after_ms, after_id): what history.keep_days
 * and a purge remove. */
int gf_store_ended_before(gf_store *self, int64_t cut_ms, int64_t after_ms, uint64_t after_id,
                          size_t limit, gf_store_old **rows, size_t *n);

/* Remove these jobs' rows, inside the caller's transaction, and every
 * environment no job uses any more. A job that is not ended (or not
 * there) is left alone: a live job is never removed. *removed: the rows
 * that went. Returns 0, GF_ENOSPC or GF_EIO. */
int gf_store_remove_ended(gf_store *self, const uint64_t *ids, size_t n, size_t *removed);

/* A card taken out of service (reason: the operator's text, "" for none)
 * or, with reason NULL, put back. Inside a transaction like the writes
 * above; same codes. */
int gf_store_set_drain(gf_store *self, int card, const char *reason);

/* The drained cards and their reasons (the caller frees each reason and
 * both arrays). Returns 0 or GF_EIO. */
int gf_store_drains(gf_store *self, int **cards, char ***reasons, size_t *n);

#endif
