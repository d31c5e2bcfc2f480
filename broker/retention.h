/* retention.h — which ended jobs the job store lets go, and in what order
 * (history.keep_days, history.keep_jobs, `gpuflock purge`): the rules,
 * apart from the store and the loop (tests/unit/test_retention.c).
 *
 * A pass asks the store for one batch of candidates, by one of two
 * listings: the oldest ended jobs by id while more are kept than
 * keep_jobs allows, else those that ended before a cut (now less
 * keep_days, or a purge's date, whichever is later). A listing that comes
 * back short has been walked to its end: it rests until the caller says
 * otherwise, so that candidates nobody may remove (a job a live job waits
 * for) are not read again and again. broker/history.c runs the passes, a
 * few rows at a time (docs/operations.md, "History"). */
#ifndef GF_RETENTION_H
#define GF_RETENTION_H

#include "broker/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GF_DAY_MS (86400LL * 1000)

typedef struct {
    int keep_days;        /* history.keep_days; 0: however old */
    int keep_jobs;        /* history.keep_jobs; 0: however many */
} gf_retention_policy;

typedef enum {
    GF_RETAIN_NOTHING = 0, /* nothing to ask for now */
    GF_RETAIN_OLDEST,      /* the oldest ended jobs by id (gf_store_oldest_ended) */
    GF_RETAIN_BEFORE,      /* jobs ended before cut_ms (gf_store_ended_before) */
} gf_retain_how;

/* Listings that came back short, to leave alone for now. */
enum { GF_RETAIN_REST_OLDEST = 1, GF_RETAIN_REST_BEFORE = 2 };

typedef struct {
    gf_retain_how how;
    size_t limit;          /* rows to ask for */
    int64_t cut_ms;        /* GF_RETAIN_BEFORE: ended before this */
} gf_retention_step;

/* The next pass. n_ended: ended jobs in the store; purge_before_ms: a
 * purge under way removes every job ended before it (0: none); batch: the
 * most rows a pass takes; resting: GF_RETAIN_REST_* listings to skip. */
gf_retention_step gf_retention_next(const gf_retention_policy *p, int64_t now_ms,
                                    uint64_t n_ended, int64_t purge_before_ms, size_t batch,
                                    unsigned resting);

/* Keep in rows[0..n) those whose id is not in keep[0..n_keep) (the jobs
 * live jobs wait for: sorted here), in their order; the others are freed.
 * Returns how many are left. */
size_t gf_retention_drop_kept(gf_store_old *rows, size_t n, uint64_t *keep, size_t n_keep);

/* Is path the spool file "<...>/<id><suffix>" of job id? The files a pass
 * removes are named by the job's own record; only names of that job's
 * shape are touched. */
bool gf_retention_spool_name(const char *path, uint64_t id, const char *suffix);

#endif
