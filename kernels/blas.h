/* blas.h — the BLAS thread count the CPU networks run with.
 *
 * OpenBLAS keeps one process-wide pool; the worker sets it once from the
 * configuration (cpu_threads) before running the networks. */
#ifndef GF_BLAS_H
#define GF_BLAS_H

/* Use n threads in BLAS calls (n <= 0: one per core). Returns the count set. */
int gf_blas_set_threads(int n);

#endif
