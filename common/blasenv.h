/* blasenv.h — a short idle spin for the BLAS library's threads in our own
 * programs that link it (gpuflock-cli, gpuflock-worker).
 *
 * OpenBLAS starts nproc - 1 threads while the program loads, before main(),
 * and each of them spins (sched_yield in a loop) for 2^28 cycles, about
 * 0.1 s, when it starts and after every parallel call before it sleeps. On
 * a 16-core box every start of such a program cost about 0.75 s of CPU: a
 * worker's start, and every `gpuflock queue` or `wait`, flooded the cores
 * the jobs and the broker run on. The library reads its spin from
 * OPENBLAS_THREAD_TIMEOUT (2^N cycles) while loading, so whoever execs one
 * of our BLAS programs sets it first (gf_blas_spin_before_exec) and the
 * program removes it again first thing in main (gf_blas_spin_forget), so
 * that the jobs and commands it starts do not inherit our choice. A value
 * the user set is left alone and passed on. */
#ifndef GF_BLASENV_H
#define GF_BLASENV_H

/* 2^20 cycles: about 0.4 ms of spin after a BLAS call, enough to catch the
 * next call of a network's layer loop. */
#define GF_BLAS_SPIN_VAR "OPENBLAS_THREAD_TIMEOUT"
#define GF_BLAS_SPIN_VALUE "20"

/* Before exec'ing gpuflock-cli or gpuflock-worker: set the spin unless the
 * environment has one already (then nothing changes). */
void gf_blas_spin_before_exec(void);

/* At the top of those programs' main: remove the spin if
 * gf_blas_spin_before_exec set it. */
void gf_blas_spin_forget(void);

#endif
