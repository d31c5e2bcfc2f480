/* par.c — fork-join pool: a generation counter wakes the helpers, an atomic
 * task counter hands out tasks, a countdown tells the caller when the
 * helpers are done. */
#include "common/par.h"

#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    gf_par *pool;  /* owner */
    int id;        /* worker id, 1 .. threads-1 (the caller is 0) */
} helper;

struct gf_par {
    int threads;              /* workers including the caller */
    pthread_t *tids;          /* threads - 1 helpers */
    helper *helpers;          /* their arguments */
    pthread_mutex_t mu;       /* guards gen, busy, stop */
    pthread_cond_t wake;      /* helpers wait here for a new generation */
    pthread_cond_t done;      /* the caller waits here for busy == 0 */
    unsigned long gen;        /* run number */
    int busy;                 /* helpers still working on this run */
    int stop;                 /* set by destroy */
    gf_par_fn fn;             /* current run's task body */
    void *arg;                /* and its argument */
    int ntasks;               /* tasks in the current run */
    atomic_int next;          /* next task to hand out */
};

static void work(gf_par *p, int worker)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->ntasks)
            return;
        p->fn(p->arg, worker, t);
    }
}

static void *helper_main(void *v)
{
    helper *h = v;
    gf_par *p = h->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        work(p, h->id);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

gf_par *gf_par_new(int threads)
{
    assert(threads >= 1);
    gf_par *p = gf_calloc(1, sizeof *p);
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->tids = gf_calloc((size_t)threads, sizeof *p->tids);
    p->helpers = gf_calloc((size_t)threads, sizeof *p->helpers);
    for (int i = 1; i < threads; i++) {
        p->helpers[i].pool = p;
        p->helpers[i].id = i;
        if (pthread_create(&p->tids[i], NULL, helper_main, &p->helpers[i]) != 0) {
            GF_ERROR("cannot start a network thread");
            abort();
        }
    }
    return p;
}

void gf_par_destroy(gf_par **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_par *p = *self_p;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->threads; i++)
        pthread_join(p->tids[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->tids);
    free(p->helpers);
    free(p);
    *self_p = NULL;
}

int gf_par_cores(int cap)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > cap ? cap : (int)n;
}

int gf_par_threads(const gf_par *self)
{
    return self ? self->threads : 1;
}

void gf_par_run(gf_par *p, int ntasks, gf_par_fn fn, void *arg)
{
    if (!p || p->threads == 1 || ntasks <= 1) {
        for (int t = 0; t < ntasks; t++)
            fn(arg, 0, t);
        return;
    }
    int blas = openblas_get_num_threads();
    openblas_set_num_threads(1);
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    atomic_store(&p->next, 0);
    p->busy = p->threads - 1;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    openblas_set_num_threads(blas);
}
