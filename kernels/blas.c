/* blas.c — OpenBLAS thread control for the CPU networks. */
#include "kernels/blas.h"

#include <cblas.h>

int gf_blas_set_threads(int n)
{
    if (n <= 0)
        n = openblas_get_num_procs();
    openblas_set_num_threads(n);
    return openblas_get_num_threads();
}

