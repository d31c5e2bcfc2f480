/* par.h — a small fork-join thread pool for the CPU networks.
 *
 * The networks split a batch across threads by window (SincNet, the ResNet
 * trunk) or by LSTM direction, each task on its own workspace. The pool's
 * threads start once with the network and wait between runs, so running a
 * batch creates no thread and allocates nothing. */
#ifndef GF_PAR_H
#define GF_PAR_H

typedef struct gf_par gf_par;

/* Task body: `worker` in [0, threads) names the workspace to use. */
typedef void (*gf_par_fn)(void *arg, int worker, int task);

/* The online CPUs, at least 1 and at most cap: the default thread count of
 * CPU work ("0: one per core"). */
int gf_par_cores(int cap);

/* A pool of `threads` (>= 1; the caller counts as one, so threads - 1 are
 * started). Aborts if a thread cannot be created (like out of memory). */
gf_par *gf_par_new(int threads);

/* Stop and join the threads; accepts NULL and sets *self_p to NULL. */
void gf_par_destroy(gf_par **self_p);

/* 1 for NULL: no pool is the calling thread alone. */
int gf_par_threads(const gf_par *self);

/* Run fn(arg, worker, task) for task = 0 .. ntasks-1 across the pool and
 * return when all are done (self NULL: on the calling thread, worker 0). While tasks run, OpenBLAS is held to one thread
 * per caller (the pool is the parallelism), then restored. */
void gf_par_run(gf_par *self, int ntasks, gf_par_fn fn, void *arg);

#endif
