/* jobfilter.h — which jobs a client's `queue` or `cancel` selects (its
 * "filter" record, net/proto.h: users, states, name, since, cards), checked
 * once and then asked of each job.
 *
 * Pure: no store, no sockets. The broker asks it of the live jobs in its
 * memory; the job store (broker/store.h) turns the same selection into the
 * WHERE clause of its query over ended jobs, so a user with 100,000 ended
 * jobs is answered from an index, and asks it again of each row it read
 * (tests/unit/test_jobfilter.c holds the rules). */
#ifndef GF_JOBFILTER_H
#define GF_JOBFILTER_H

#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>

/* At most this many users in one selection (the store binds each). */
#define GF_JOBFILTER_MAX_USERS 256

/* A checked selection. Borrows the wire record it was made from. */
typedef struct {
    const gf_job_filter *wire;  /* the client's record, NULL: every job */
    unsigned states;            /* 1 << gf_job_state for each state asked; every state when
                                 * none was named */
} gf_jobfilter;

/* Check the client's record (NULL: no selection) and make *out from it.
 * Returns 0, or GF_EINVAL with why (an unknown state, too many users). */
int gf_jobfilter_init(gf_jobfilter *out, const gf_job_filter *wire, char *why, size_t len);

/* Does the job meet every condition? since: a job not ended meets it, an
 * ended one when it ended at or after since_ms. cards: the cards the job
 * runs or ran on (a pending job has none). */
bool gf_jobfilter_match(const gf_jobfilter *f, const gf_job *j);

/* May a job in state s meet it (the states asked)? */
bool gf_jobfilter_state(const gf_jobfilter *f, gf_job_state s);

/* May any ended job meet it? false: the store need not be asked. */
bool gf_jobfilter_wants_ended(const gf_jobfilter *f);

#endif
