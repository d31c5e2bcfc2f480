/* jobenv.h — what a command job's environment says about its cards.
 *
 * One place for the rule that `gpuflock exec` (cli/jobcards.c) and the
 * worker's command jobs (worker/runner.c) share: CUDA_VISIBLE_DEVICES (card
 * UUIDs for CUDA cards, indices for CPU cards), CUDA_DEVICE_ORDER=PCI_BUS_ID,
 * GPUFLOCK_DEVICE (the indices) and GPUFLOCK_LOCK_FILE (the lock files), all
 * comma lists in ascending card order; and for --proof jobs, the variables
 * of proof.scrub_env removed. */
#ifndef GF_JOBENV_H
#define GF_JOBENV_H

#include "common/env.h"

#include <stdbool.h>
#include <stddef.h>

/* Set the card variables in env and, with proof, unset each of scrub[0..n).
 * *removed gets the names actually removed as a comma list (caller frees),
 * or NULL when none was set. */
void gf_jobenv_export(gf_env *env, const char *visible, const char *devices,
                      const char *lock_files, bool proof, char *const *scrub, size_t n_scrub,
                      char **removed);

#endif
