/* jobcards.h — the cards a command job runs on: which, taken how, and what
 * the command is told about them.
 *
 * Taking the cards of a job means: for --proof, the box-wide bench lock
 * first (exclusive); then either the listed cards, all or none in ascending
 * index order, or (--any) the first free card of the configuration, else
 * whichever frees first; all within one deadline. While it waits it says
 * once on stderr who holds each busy lock. The job's environment then names
 * the cards (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, GPUFLOCK_DEVICE,
 * GPUFLOCK_LOCK_FILE) and, for --proof, lacks proof.scrub_env. */
#ifndef GF_JOBCARDS_H
#define GF_JOBCARDS_H

#include "common/config.h"
#include "common/env.h"
#include "common/lock.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    gf_lock_mode mode;      /* shared or exclusive */
    const int *cards;       /* requested card indices; NULL with n_cards 0: any card */
    size_t n_cards;
    bool proof;             /* also take bench_lock exclusively */
    int timeout_ms;         /* < 0: wait forever; 0: try once */
    const char *who;        /* prefix of the lines on stderr, e.g. "gpuflock exec" */
} gf_jobcards_request;

typedef struct gf_jobcards gf_jobcards;

/* Take the cards of 'req' under 'cfg'. Returns 0 and the held cards in *out,
 * or: GF_ENOENT (a card not in the configuration), GF_ECONFIG (no card
 * configured at all),
 * GF_ETIMEDOUT, GF_EIO (a lock file unusable), GF_EDEVICE (a CUDA card the
 * driver cannot name); each logged. On failure nothing stays held. */
int gf_jobcards_take(const gf_config *cfg, const gf_jobcards_request *req, gf_jobcards **out);

/* Let commands started from now on inherit every lock (card and bench). */
int gf_jobcards_inherit(gf_jobcards *self);

/* Name the cards in 'env' and, for a proof job, remove the scrubbed
 * variables; the removed names are appended to 'removed' (a comma list,
 * caller frees; NULL when none was set). */
void gf_jobcards_export(const gf_jobcards *self, gf_env *env, char **removed);

void gf_jobcards_destroy(gf_jobcards **self_p);

#endif
