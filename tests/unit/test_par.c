/* test_par.c — the fork-join pool (common/par.c) on real threads:
 * every task of a run runs exactly once, on a worker index below the
 * pool's size, with each worker's tasks never overlapping (a worker owns
 * its workspace); a pool is reused across runs; and no pool (NULL) runs
 * the tasks in order on the calling thread as worker 0. */
#include "common/par.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TASKS 1000
#define MAX_WORKERS 8

typedef struct {
    atomic_int runs[MAX_TASKS];          /* times each task ran */
    atomic_int busy[MAX_WORKERS];        /* tasks of each worker running now */
    atomic_int overlap;                  /* a worker ran two tasks at once */
    atomic_int bad_worker;               /* a worker index out of range */
    int threads;
    int order[MAX_TASKS];                /* the calling thread's order (NULL pool) */
    atomic_int n_order;
    pthread_t caller;
    atomic_int off_caller;               /* tasks run off the calling thread */
} run_log;

static void task(void *arg, int worker, int t)
{
    run_log *log = arg;
    if (worker < 0 || worker >= log->threads) {
        atomic_fetch_add(&log->bad_worker, 1);
        return;
    }
    if (atomic_fetch_add(&log->busy[worker], 1) != 0)
        atomic_fetch_add(&log->overlap, 1);
    volatile double x = 0;   /* a little work, so that tasks meet */
    for (int i = 0; i < 2000; i++)
        x += i * 0.5;
    atomic_fetch_add(&log->runs[t], 1);
    if (!pthread_equal(pthread_self(), log->caller))
        atomic_fetch_add(&log->off_caller, 1);
    log->order[atomic_fetch_add(&log->n_order, 1) % MAX_TASKS] = t;
    atomic_fetch_sub(&log->busy[worker], 1);
}

static run_log *fresh_log(int threads)
{
    run_log *log = calloc(1, sizeof *log);
    log->threads = threads;
    log->caller = pthread_self();
    return log;
}

static void check_each_once(const run_log *log, int ntasks)
{
    for (int t = 0; t < ntasks; t++)
        assert_int_equal(atomic_load(&log->runs[t]), 1);
    assert_int_equal(atomic_load(&log->overlap), 0);
    assert_int_equal(atomic_load(&log->bad_worker), 0);
}

static void test_pool_runs_each_task_once(void **state)
{
    (void)state;
    const int sizes[] = { 1, 3, MAX_WORKERS };
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        gf_par *p = gf_par_new(sizes[s]);
        assert_int_equal(gf_par_threads(p), sizes[s]);
        const int counts[] = { 0, 1, 2, 7, MAX_TASKS };   /* and the pool reused each time */
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            run_log *log = fresh_log(sizes[s]);
            gf_par_run(p, counts[c], task, log);
            check_each_once(log, counts[c]);
            for (int t = counts[c]; t < MAX_TASKS; t++)
                assert_int_equal(atomic_load(&log->runs[t]), 0);
            free(log);
        }
        gf_par_destroy(&p);
        assert_null(p);
    }
}

static void test_no_pool_is_the_calling_thread(void **state)
{
    (void)state;
    assert_int_equal(gf_par_threads(NULL), 1);
    run_log *log = fresh_log(1);
    gf_par_run(NULL, 50, task, log);
    check_each_once(log, 50);
    assert_int_equal(atomic_load(&log->off_caller), 0);
    for (int t = 0; t < 50; t++)
        assert_int_equal(log->order[t], t);
    free(log);
    gf_par_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_runs_each_task_once),
        cmocka_unit_test(test_no_pool_is_the_calling_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
