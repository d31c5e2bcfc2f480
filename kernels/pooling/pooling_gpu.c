/* pool_gpu.c — the statistics pooling on the card, library and own routes
 * (see pool_gpu.h). */
#include "kernels/pooling/pooling_gpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Must match kernels/pooling/pooling.cu: 32 rows of a window a block of 128
 * threads, static shared memory only. */
#define OWN_ROWS 32
#define OWN_THREADS 128

struct gf_pool_gpu {
    gf_gpu *gpu;                   /* borrowed */
    int max_batch, max_jobs;       /* capacity */
    gf_route_kind route;
    gf_cu_function glue, own;      /* library: gf_statspool; own: loaded when chosen */
    gf_cu_ptr w;                   /* [max_jobs][125] the jobs' weights */
    gf_cu_ptr idx;                 /* job_window, win_start, win_jobs (int) */
    int *host_idx;                 /* the same on the host, staged for the copy */
    int batch, n_jobs;             /* the jobs set last */
    gf_gpu_allocs mem;
};

/* int offsets into idx: job_window [max_jobs], win_start [max_batch + 1],
 * win_jobs [max_jobs]. */
static size_t idx_ints(const gf_pool_gpu *p) { return 2 * (size_t)p->max_jobs + p->max_batch + 1; }
static size_t off_start(const gf_pool_gpu *p) { return (size_t)p->max_jobs; }
static size_t off_jobs(const gf_pool_gpu *p) { return (size_t)p->max_jobs + p->max_batch + 1; }

gf_pool_gpu *gf_pool_gpu_new(gf_gpu *gpu, int max_batch, int max_jobs)
{
    assert(max_batch >= 1 && max_jobs >= 1);
    gf_pool_gpu *p = gf_calloc(1, sizeof *p);
    p->gpu = gpu;
    p->max_batch = max_batch;
    p->max_jobs = max_jobs;
    p->mem.gpu = gpu;
    p->host_idx = gf_calloc(idx_ints(p), sizeof(int));
    static const char *const names[] = { "gf_statspool" };
    gf_cu_function *const fns[] = { &p->glue };
    int rc = gf_gpu_allocs_take(&p->mem, sizeof(float) * GF_POOL_T * (size_t)max_jobs, &p->w);
    if (rc)
        goto fail;
    rc = gf_gpu_allocs_take(&p->mem, sizeof(int) * idx_ints(p), &p->idx);
    if (rc)
        goto fail;
    rc = gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    if (rc)
        goto fail;
    return p;
fail:
    gf_pool_gpu_destroy(&p);
    return NULL;
}

void gf_pool_gpu_destroy(gf_pool_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_gpu_allocs_release(&(*self_p)->mem);
    free((*self_p)->host_idx);
    free(*self_p);
    *self_p = NULL;
}

gf_route_kind gf_pool_gpu_route(const gf_pool_gpu *self) { return self->route; }

int gf_pool_gpu_plan(const char *area, char *why, size_t len)
{
    return gf_plan_refuse_area(area, "pooling", "pooling.stats", why, len);
}

int gf_pool_gpu_set_route(gf_pool_gpu *p, gf_route_kind kind, const char **module_sha256)
{
    if (kind == GF_ROUTE_LIBRARY) {
        p->route = GF_ROUTE_LIBRARY;
        return 0;
    }
    const char *sha = NULL;
    int rc = gf_gpu_own_kernel(p->gpu, "pooling.stats", "pooling", "gf_pool_stats", 0, &p->own,
                               &sha);
    if (rc)
        return rc;
    p->route = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

int gf_pool_gpu_jobs(gf_pool_gpu *p, int B, const int *job_window, const float *w, int n_jobs)
{
    p->n_jobs = 0;
    if (B < 1 || B > p->max_batch || n_jobs < 0 || n_jobs > p->max_jobs) {
        GF_ERROR("pooling (gpu): %d jobs on %d windows, capacity %d jobs on %d windows", n_jobs,
                 B, p->max_jobs, p->max_batch);
        return GF_EINVAL;
    }
    for (int j = 0; j < n_jobs; j++)
        if (job_window[j] < 0 || job_window[j] >= B) {
            GF_ERROR("pooling (gpu): job %d names window %d of %d", j, job_window[j], B);
            return GF_EINVAL;
        }
    /* The own kernel's index: each window's jobs, in job order. */
    int *jw = p->host_idx, *start = jw + off_start(p), *jobs = jw + off_jobs(p);
    memcpy(jw, job_window, sizeof(int) * (size_t)n_jobs);
    memset(start, 0, sizeof(int) * ((size_t)B + 1));
    for (int j = 0; j < n_jobs; j++)
        start[job_window[j] + 1]++;
    for (int b = 0; b < B; b++)
        start[b + 1] += start[b];
    for (int j = 0, *fill = start; j < n_jobs; j++)
        jobs[fill[job_window[j]]++] = j;
    for (int b = B; b > 0; b--)   /* the fill moved each start to the next window's */
        start[b] = start[b - 1];
    start[0] = 0;
    if (n_jobs > 0) {
        GF_TRY(gf_gpu_upload(p->gpu, p->w, w, sizeof(float) * GF_POOL_T * (size_t)n_jobs));
        GF_TRY(gf_gpu_upload(p->gpu, p->idx, p->host_idx, sizeof(int) * idx_ints(p)));
    }
    p->batch = B;
    p->n_jobs = n_jobs;
    return 0;
}

int gf_pool_gpu_run(gf_pool_gpu *p, gf_cu_ptr x, gf_cu_ptr out)
{
    if (p->n_jobs == 0)
        return 0;
    int rows = GF_POOL_ROWS, t = GF_POOL_T;
    gf_cu_ptr job_window = p->idx, start = p->idx + sizeof(int) * off_start(p);
    gf_cu_ptr jobs = p->idx + sizeof(int) * off_jobs(p);
    if (p->route == GF_ROUTE_OWN) {
        void *params[] = { &x, &rows, &p->w, &start, &jobs, &out };
        return gf_gpu_launch(p->gpu, p->own, GF_POOL_ROWS / OWN_ROWS, (unsigned)p->batch, 1,
                             OWN_THREADS, 1, 1, 0, params);
    }
    void *params[] = { &x, &rows, &t, &p->w, &job_window, &out };
    return gf_gpu_launch(p->gpu, p->glue, (unsigned)p->n_jobs, 1, 1, 256, 1, 1, 0, params);
}
