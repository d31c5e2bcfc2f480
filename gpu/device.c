/* gpu.c — the worker's CUDA card: context, stream, memory, modules, timing.
 *
 * Sits between the route implementations (diar/, kernels/) and the
 * driver (common/cudrv). Modules come from the PTX embedded at build time
 * (gpu/modules.h) and every one loads through the module cache
 * (gpu/modload.c picks the tier and builds the key and image,
 * gpu/modcache.c proves the key complete; this file is its loader): a
 * module is loaded once per worker and its identity is the SHA-256 of its
 * PTX text, which the route planner compares with evidence. */
#include "gpu/device.h"
#include "gpu/modcache.h"
#include "gpu/modload.h"
#include "gpu/modules.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOCS  512   /* device allocations a worker holds at once */
#define MAX_SMEM_LIMITS 32   /* kernels with a dynamic shared memory limit */
#define MAX_TIMINGS 256   /* timed regions between two collects */

typedef struct {
    char stage[GF_DEVSTATS_NAME_MAX];  /* what was timed */
    char route[GF_DEVSTATS_NAME_MAX];  /* on which route */
    gf_cu_event start, end;            /* bracketing events */
    bool ended;                        /* end event recorded */
} timing;

struct gf_gpu {
    const gf_cudrv *cu;                /* driver table */
    gf_cu_device dev;                  /* the card */
    int ordinal;                       /* CUDA ordinal */
    int cc;                            /* major*10+minor */
    int smem_optin;                    /* shared memory per block, opt-in limit */
    gf_cu_ctx ctx;                     /* primary context, retained */
    gf_cu_stream stream;               /* the stream jobs run on */
    gf_cu_ptr allocs[MAX_ALLOCS];      /* owned device memory */
    size_t n_allocs;
    gf_modcache *cache;                /* every module loaded, by complete key */
    gf_modules *modules;               /* the embedded PTX, through the cache */
    timing timings[MAX_TIMINGS];       /* regions awaiting collect */
    size_t n_timings;
    gf_cu_event events[2 * MAX_TIMINGS]; /* created on first use, reused by every region */
    size_t n_events;                   /* how many exist */
    gf_cu_event fence;                 /* gf_gpu_wait_for's, created on first use */
    bool debug;                        /* sync + check after each launch */
    struct {                           /* dynamic shared memory limits set so far */
        gf_cu_function f;
        int bytes;
    } smem_limits[MAX_SMEM_LIMITS];
    size_t n_smem_limits;
};

#define CU_CHECK(self, call, what)                                          \
    do {                                                                    \
        gf_cu_result r_ = (call);                                           \
        if (r_ != 0) {                                                      \
            GF_ERROR("cuda device %d: %s failed: %s", (self)->ordinal, what, \
                     gf_cudrv_errstr(r_));                                  \
            return GF_EDEVICE;                                              \
        }                                                                   \
    } while (0)

/* The module cache's backend: load an image into the current context. */
static int cache_load(void *ctx, const gf_modcache_image *img, void **module)
{
    gf_gpu *self = ctx;
    int opts[GF_MODCACHE_MAX_JIT];
    void *values[GF_MODCACHE_MAX_JIT];
    for (unsigned i = 0; i < img->n_jit; i++) {
        opts[i] = img->jit_opts[i];
        values[i] = (void *)(intptr_t)img->jit_values[i];
    }
    gf_cu_module m = NULL;
    CU_CHECK(self, self->cu->module_load_data(&m, img->data, img->n_jit,
                                              img->n_jit ? opts : NULL,
                                              img->n_jit ? values : NULL),
             "cuModuleLoadDataEx");
    *module = m;
    return 0;
}

static void cache_unload(void *ctx, void *module)
{
    gf_gpu *self = ctx;
    self->cu->module_unload(module);
}

static int gpu_open(int ordinal, bool urgent, gf_gpu **out)
{
    *out = NULL;
    const char *why = NULL;
    const gf_cudrv *cu = gf_cudrv_get(&why);
    if (!cu) {
        GF_ERROR("cuda device %d: %s", ordinal, why);
        return GF_EDEVICE;
    }
    int n = 0;
    if (cu->device_count(&n) != 0 || ordinal < 0 || ordinal >= n) {
        GF_ERROR("cuda device %d: no such device (the driver sees %d)", ordinal, n);
        return GF_ENOENT;
    }
    gf_gpu *self = gf_calloc(1, sizeof *self);
    self->cu = cu;
    self->ordinal = ordinal;
    self->debug = getenv("GF_GPU_DEBUG") != NULL;
    int major = 0, minor = 0;
    int rc = GF_EDEVICE;
    if (cu->device_get(&self->dev, ordinal) != 0 ||
        cu->device_attr(&major, GF_CU_ATTR_CC_MAJOR, self->dev) != 0 ||
        cu->device_attr(&minor, GF_CU_ATTR_CC_MINOR, self->dev) != 0 ||
        cu->device_attr(&self->smem_optin, GF_CU_ATTR_SMEM_PER_BLOCK_OPTIN, self->dev) != 0) {
        GF_ERROR("cuda device %d: cannot read its attributes", ordinal);
        goto fail;
    }
    self->cc = major * 10 + minor;
    gf_cu_result r = cu->primary_ctx_retain(&self->ctx, self->dev);
    if (r != 0) {
        GF_ERROR("cuda device %d: cuDevicePrimaryCtxRetain: %s", ordinal, gf_cudrv_errstr(r));
        goto fail;
    }
    r = cu->ctx_set_current(self->ctx);
    int least = 0, greatest = 0;
    if (r == 0 && urgent)
        r = cu->ctx_stream_prio_range(&least, &greatest);
    if (r == 0)
        r = cu->stream_create_prio(&self->stream, GF_CU_STREAM_NON_BLOCKING,
                                   urgent ? greatest : 0);
    if (r != 0) {
        GF_ERROR("cuda device %d: context or stream: %s", ordinal, gf_cudrv_errstr(r));
        goto fail;
    }
    gf_modcache_backend be = { cache_load, cache_unload, self };
    self->cache = gf_modcache_new(gf_modcache_default_mode(), &be);
    char who[32];
    snprintf(who, sizeof who, "cuda device %d", ordinal);
    self->modules = gf_modules_new(self->cc, gf_ptx_blobs, self->cache, who);
    *out = self;
    return 0;
fail:
    gf_gpu_destroy(&self);
    return rc;
}

int gf_gpu_open(int ordinal, gf_gpu **out) { return gpu_open(ordinal, false, out); }
int gf_gpu_open_urgent(int ordinal, gf_gpu **out) { return gpu_open(ordinal, true, out); }

void gf_gpu_destroy(gf_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_gpu *self = *self_p;
    if (self->ctx) {
        self->cu->ctx_set_current(self->ctx);
        self->cu->ctx_synchronize();
        for (size_t i = 0; i < self->n_events; i++)
            self->cu->event_destroy(self->events[i]);
        if (self->fence)
            self->cu->event_destroy(self->fence);
        gf_modules_destroy(&self->modules);
        gf_modcache_destroy(&self->cache);   /* unloads every module */
        for (size_t i = 0; i < self->n_allocs; i++)
            self->cu->mem_free(self->allocs[i]);
        if (self->stream)
            self->cu->stream_destroy(self->stream);
        self->cu->primary_ctx_release(self->dev);
    }
    free(self);
    *self_p = NULL;
}

gf_cu_stream gf_gpu_stream(const gf_gpu *self) { return self->stream; }
int gf_gpu_cc(const gf_gpu *self) { return self->cc; }

static int func_smem(gf_gpu *self, gf_cu_function f, int bytes)
{
    size_t i = 0;
    while (i < self->n_smem_limits && self->smem_limits[i].f != f)
        i++;
    if (i < self->n_smem_limits && self->smem_limits[i].bytes >= bytes)
        return 0;   /* another layer on this kernel already needs more */
    if (i == MAX_SMEM_LIMITS) {
        GF_ERROR("cuda device %d: more than %d kernels with a shared memory limit",
                 self->ordinal, MAX_SMEM_LIMITS);
        return GF_EDEVICE;
    }
    CU_CHECK(self, self->cu->func_set_attr(f, GF_CU_FUNC_ATTR_MAX_DYNAMIC_SMEM, bytes),
             "cuFuncSetAttribute(max dynamic shared memory)");
    self->smem_limits[i].f = f;
    self->smem_limits[i].bytes = bytes;
    if (i == self->n_smem_limits)
        self->n_smem_limits++;
    return 0;
}

int gf_gpu_alloc(gf_gpu *self, size_t bytes, gf_cu_ptr *out)
{
    if (self->n_allocs == MAX_ALLOCS) {
        GF_ERROR("cuda device %d: more than %d device allocations", self->ordinal, MAX_ALLOCS);
        return GF_EDEVICE;
    }
    CU_CHECK(self, self->cu->mem_alloc(out, bytes ? bytes : 4), "cuMemAlloc");
    self->allocs[self->n_allocs++] = *out;
    return 0;
}

void gf_gpu_free(gf_gpu *self, gf_cu_ptr ptr)
{
    for (size_t i = 0; i < self->n_allocs; i++) {
        if (self->allocs[i] == ptr) {
            self->cu->mem_free(ptr);
            self->allocs[i] = self->allocs[--self->n_allocs];
            return;
        }
    }
}

int gf_gpu_upload(gf_gpu *self, gf_cu_ptr dst, const void *src, size_t bytes)
{
    CU_CHECK(self, self->cu->memcpy_htod_async(dst, src, bytes, self->stream), "cuMemcpyHtoDAsync");
    return 0;
}

int gf_gpu_bind(gf_gpu *self)
{
    gf_cu_result r = self->cu->ctx_set_current(self->ctx);
    if (r != 0) {
        GF_ERROR("cuda device %d: cannot make its context current (%s)", self->ordinal,
                 gf_cudrv_errstr(r));
        return GF_EDEVICE;
    }
    return 0;
}

int gf_gpu_pin(gf_gpu *self, void *host, size_t bytes)
{
    gf_cu_result r = self->cu->mem_host_register(host, bytes, 0);
    if (r != 0) {   /* e.g. over the locked-memory limit: copies only get slower */
        GF_WARN("cuda device %d: cannot page-lock %zu bytes (%s); copies stage through "
                "pageable memory", self->ordinal, bytes, gf_cudrv_errstr(r));
        return GF_EDEVICE;
    }
    return 0;
}

void gf_gpu_unpin(gf_gpu *self, void *host)
{
    self->cu->mem_host_unregister(host);
}

int gf_gpu_download(gf_gpu *self, void *dst, gf_cu_ptr src, size_t bytes)
{
    CU_CHECK(self, self->cu->memcpy_dtoh_async(dst, src, bytes, self->stream), "cuMemcpyDtoHAsync");
    CU_CHECK(self, self->cu->stream_synchronize(self->stream), "cuStreamSynchronize");
    return 0;
}

int gf_gpu_fill32(gf_gpu *self, gf_cu_ptr dst, unsigned pattern, size_t words)
{
    CU_CHECK(self, self->cu->memset_d32_async(dst, pattern, words, self->stream), "cuMemsetD32Async");
    return 0;
}

int gf_gpu_wait_for(gf_gpu *self, gf_gpu *other)
{
    enum { EVENT_DISABLE_TIMING = 0x2 };   /* CU_EVENT_DISABLE_TIMING */
    if (!self->fence)
        CU_CHECK(self, self->cu->event_create(&self->fence, EVENT_DISABLE_TIMING),
                 "cuEventCreate");
    CU_CHECK(self, self->cu->event_record(self->fence, other->stream), "cuEventRecord");
    CU_CHECK(self, self->cu->stream_wait_event(self->stream, self->fence, 0), "cuStreamWaitEvent");
    return 0;
}

int gf_gpu_sync(gf_gpu *self)
{
    CU_CHECK(self, self->cu->stream_synchronize(self->stream), "cuStreamSynchronize");
    return 0;
}

int gf_gpu_function(gf_gpu *self, const char *area, const char *name, gf_cu_function *out,
                    const char **tier, const char **sha256)
{
    void *module = NULL;
    const char *t = NULL, *sha = NULL;
    int rc = gf_modules_get(self->modules, area, &module, &t, &sha);
    if (rc)
        return rc;
    gf_cu_result r = self->cu->module_get_function(out, module, name);
    if (r != 0) {
        GF_ERROR("cuda device %d: module %s has no kernel '%s': %s", self->ordinal, area, name,
                 gf_cudrv_errstr(r));
        return GF_EDEVICE;
    }
    if (tier)
        *tier = t;
    if (sha256)
        *sha256 = sha;
    return 0;
}

size_t gf_gpu_modules_loaded(const gf_gpu *self)
{
    return gf_modcache_count(self->cache);
}

int gf_gpu_own_kernel(gf_gpu *self, const char *boundary, const char *area, const char *name,
                      int smem, gf_cu_function *out, const char **sha256)
{
    if (smem > self->smem_optin) {
        GF_WARN("%s: the own kernel needs %d bytes of shared memory a block, this card offers "
                "%d: refused", boundary, smem, self->smem_optin);
        return GF_EUNSUP;
    }
    GF_TRY(gf_gpu_function(self, area, name, out, NULL, sha256));
    return smem ? func_smem(self, *out, smem) : 0;
}

int gf_gpu_own_kernel_extra(gf_gpu *self, int min_cc, const char *boundary, const char *area,
                            const char *name, int smem, gf_cu_function *out,
                            const char **sha256, bool *have)
{
    *have = false;
    if (gf_gpu_cc(self) < min_cc)
        return 0;
    int rc = gf_gpu_own_kernel(self, boundary, area, name, smem, out, sha256);
    *have = rc == 0;
    return rc == GF_EUNSUP ? 0 : rc;
}

float gf_round_tf32(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

int gf_gpu_launch(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                  unsigned bx, unsigned by, unsigned bz, unsigned smem, void **params)
{
    CU_CHECK(self, self->cu->launch(f, gx, gy, gz, bx, by, bz, smem, self->stream, params, NULL),
             "cuLaunchKernel");
    if (self->debug)
        CU_CHECK(self, self->cu->stream_synchronize(self->stream), "kernel (debug sync)");
    return 0;
}

/* A launch configuration on the job stream with clusters of cluster_x
 * blocks along x; attr is its one attribute, filled here. */
static gf_cu_launch_config cluster_config(gf_gpu *self, unsigned gx, unsigned gy, unsigned gz,
                                          unsigned bx, unsigned smem, unsigned cluster_x,
                                          gf_cu_launch_attr *attr)
{
    *attr = (gf_cu_launch_attr){ .id = GF_CU_LAUNCH_ATTR_CLUSTER_DIM };
    attr->value.cluster_dim.x = cluster_x;
    attr->value.cluster_dim.y = 1;
    attr->value.cluster_dim.z = 1;
    return (gf_cu_launch_config){ gx, gy, gz, bx, 1, 1, smem, self->stream, attr, 1 };
}

/* cuLaunchKernelEx with cfg, checked as gf_gpu_launch checks its launches. */
static int launch_ex(gf_gpu *self, const gf_cu_launch_config *cfg, gf_cu_function f,
                     void **params, const char *what)
{
    CU_CHECK(self, self->cu->launch_ex(cfg, f, params, NULL), what);
    if (self->debug)
        CU_CHECK(self, self->cu->stream_synchronize(self->stream), "kernel (debug sync)");
    return 0;
}

int gf_gpu_launch_cluster(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned smem, unsigned cluster_x, void **params)
{
    if (!self->cu->launch_ex)
        return GF_EUNSUP;
    gf_cu_launch_attr attr;
    gf_cu_launch_config cfg = cluster_config(self, gx, gy, gz, bx, smem, cluster_x, &attr);
    return launch_ex(self, &cfg, f, params, "cuLaunchKernelEx (cluster)");
}

int gf_gpu_launch_dependent(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned bx,
                            void **params)
{
    if (!self->cu->launch_ex || gf_gpu_cc(self) < 90)
        return gf_gpu_launch(self, f, gx, 1, 1, bx, 1, 1, 0, params);
    gf_cu_launch_attr attr = { .id = GF_CU_LAUNCH_ATTR_PROGRAMMATIC };
    attr.value.programmatic = 1;
    gf_cu_launch_config cfg = { gx, 1, 1, bx, 1, 1, 0, self->stream, &attr, 1 };
    return launch_ex(self, &cfg, f, params, "cuLaunchKernelEx (dependent)");
}

bool gf_gpu_can_launch_clusters(const gf_gpu *self)
{
    return self->cu->launch_ex && self->cu->max_active_clusters && gf_gpu_cc(self) >= 90;
}

int gf_gpu_max_active_clusters(gf_gpu *self, gf_cu_function f, unsigned bx, unsigned smem,
                               unsigned cluster_x)
{
    if (!gf_gpu_can_launch_clusters(self))
        return 0;
    gf_cu_launch_attr attr;
    gf_cu_launch_config cfg = cluster_config(self, cluster_x, 1, 1, bx, smem, cluster_x, &attr);
    int n = 0;
    return self->cu->max_active_clusters(&n, f, &cfg) == 0 ? n : 0;
}

/* The i-th event of the pool, created the first time it is needed: timing
 * allocates nothing once every slot has been used. */
static int pool_event(gf_gpu *self, size_t i, gf_cu_event *out)
{
    while (self->n_events <= i) {
        CU_CHECK(self, self->cu->event_create(&self->events[self->n_events], GF_CU_EVENT_DEFAULT),
                 "cuEventCreate");
        self->n_events++;
    }
    *out = self->events[i];
    return 0;
}

int gf_gpu_timing_begin(gf_gpu *self, const char *stage, const char *route)
{
    if (self->n_timings == MAX_TIMINGS) {
        GF_ERROR("cuda device %d: more than %d timed regions before a collect", self->ordinal,
                 MAX_TIMINGS);
        return GF_ESTATE;
    }
    timing *t = &self->timings[self->n_timings];
    memset(t, 0, sizeof *t);
    snprintf(t->stage, sizeof t->stage, "%s", stage);
    snprintf(t->route, sizeof t->route, "%s", route);
    int rc = pool_event(self, 2 * self->n_timings, &t->start);
    if (rc)
        return rc;
    CU_CHECK(self, self->cu->event_record(t->start, self->stream), "cuEventRecord");
    self->n_timings++;
    return 0;
}

int gf_gpu_timing_end(gf_gpu *self)
{
    if (self->n_timings == 0 || self->timings[self->n_timings - 1].ended) {
        GF_ERROR("cuda device %d: timing end without a begin", self->ordinal);
        return GF_ESTATE;
    }
    timing *t = &self->timings[self->n_timings - 1];
    int rc = pool_event(self, 2 * (self->n_timings - 1) + 1, &t->end);
    if (rc)
        return rc;
    CU_CHECK(self, self->cu->event_record(t->end, self->stream), "cuEventRecord");
    t->ended = true;
    return 0;
}

void gf_gpu_timing_drop(gf_gpu *self)
{
    if (self->n_timings > 0 && !self->timings[self->n_timings - 1].ended)
        self->n_timings--;
}

void gf_gpu_timing_collect(gf_gpu *self, gf_devstats *stats)
{
    for (size_t i = 0; i < self->n_timings; i++) {
        timing *t = &self->timings[i];
        float ms = 0.0f;
        bool ok = t->ended && self->cu->event_synchronize(t->end) == 0 &&
                  self->cu->event_elapsed(&ms, t->start, t->end) == 0 && ms >= 0.0f;
        if (ok)
            gf_devstats_measured(stats, t->stage, t->route, (uint64_t)((double)ms * 1e6 + 0.5));
        else
            gf_devstats_failed(stats, t->stage, t->route);
    }
    self->n_timings = 0;
}

int gf_gpu_allocs_take(gf_gpu_allocs *a, size_t bytes, gf_cu_ptr *out)
{
    if (a->n == GF_GPU_ALLOCS_MAX) {
        GF_ERROR("cuda device: more than %d allocations in one set", GF_GPU_ALLOCS_MAX);
        return GF_EDEVICE;
    }
    int rc = gf_gpu_alloc(a->gpu, bytes, out);
    if (!rc)
        a->ptrs[a->n++] = *out;
    return rc;
}

int gf_gpu_allocs_upload(gf_gpu_allocs *a, const void *host, size_t bytes, gf_cu_ptr *out)
{
    GF_TRY(gf_gpu_allocs_take(a, bytes, out));
    return gf_gpu_upload(a->gpu, *out, host, bytes);
}

void gf_gpu_allocs_release(gf_gpu_allocs *a)
{
    for (size_t i = 0; i < a->n; i++)
        gf_gpu_free(a->gpu, a->ptrs[i]);
    a->n = 0;
}

int gf_gpu_functions(gf_gpu *self, const char *area, const char *const *names,
                     gf_cu_function *const *fns, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = gf_gpu_function(self, area, names[i], fns[i], NULL, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

int gf_gpu_launch1d(gf_gpu *self, gf_cu_function f, long n, void **params)
{
    return gf_gpu_launch(self, f, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, params);
}
