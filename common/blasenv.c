/* blasenv.c — a short idle spin for the BLAS library's threads (see
 * blasenv.h). */
#include "common/blasenv.h"

#include <stdlib.h>

/* Marks a spin set by gf_blas_spin_before_exec, not by the user. */
#define MARK "GPUFLOCK_BLAS_SPIN_SET"

void gf_blas_spin_before_exec(void)
{
    if (getenv(GF_BLAS_SPIN_VAR))
        return;
    setenv(GF_BLAS_SPIN_VAR, GF_BLAS_SPIN_VALUE, 1);
    setenv(MARK, "1", 1);
}

void gf_blas_spin_forget(void)
{
    if (!getenv(MARK))
        return;
    unsetenv(GF_BLAS_SPIN_VAR);
    unsetenv(MARK);
}
