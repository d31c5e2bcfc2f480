/* jobenv.c — the card variables of a command job (see jobenv.h). */
#include "common/jobenv.h"

#include "common/util.h"

#include <stdlib.h>

void gf_jobenv_export(gf_env *env, const char *visible, const char *devices,
                      const char *lock_files, bool proof, char *const *scrub, size_t n_scrub,
                      char **removed)
{
    *removed = NULL;
    if (proof)
        for (size_t i = 0; i < n_scrub; i++)
            if (gf_env_unset(env, scrub[i])) {
                char *next = *removed ? gf_strfmt("%s,%s", *removed, scrub[i]) : gf_strdup(scrub[i]);
                free(*removed);
                *removed = next;
            }
    gf_env_set(env, "CUDA_VISIBLE_DEVICES", visible);
    gf_env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    gf_env_set(env, "GPUFLOCK_DEVICE", devices);
    gf_env_set(env, "GPUFLOCK_LOCK_FILE", lock_files);
}
