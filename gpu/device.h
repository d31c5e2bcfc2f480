/* gpu.h — one worker's hold on its CUDA card: context, stream, device memory,
 * loaded modules, cuBLAS handle and event timing.
 *
 * Taken once per worker (gf_gpu_open) and reused by every job: nothing here
 * allocates on the hot path except gf_gpu_alloc, which callers use at set-up.
 * Every driver call is checked; a failure is logged naming the call and
 * returned as GF_EDEVICE (a sticky error fails the job; the worker restarts). */
#ifndef GF_GPU_H
#define GF_GPU_H

#include "common/cudrv.h"
#include "common/devstats.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct gf_gpu gf_gpu;

/* Open CUDA device `ordinal`: retain its primary context, make it current,
 * create a stream. Returns 0, GF_EDEVICE or GF_ENOENT. */
int gf_gpu_open(int ordinal, gf_gpu **out);
/* The same with the stream at the greatest priority the context offers:
 * where this stream and another of the card both have blocks waiting, the
 * card places this one's first. */
int gf_gpu_open_urgent(int ordinal, gf_gpu **out);
void gf_gpu_destroy(gf_gpu **self_p);

/* The stream jobs run on (borrowed). */
gf_cu_stream gf_gpu_stream(const gf_gpu *self);
/* Compute capability as major*10+minor (90 for an H200). */
int gf_gpu_cc(const gf_gpu *self);

/* From now on, work queued on self's stream waits for the work queued so far
 * on other's stream (both gf_gpu of the same card, whose primary context they
 * share, so device memory of one is valid in the other). The host does not
 * wait. */
int gf_gpu_wait_for(gf_gpu *self, gf_gpu *other);


/* v rounded to tf32 as the kernels' cvt.rna does: to nearest on the 10-bit
 * mantissa, ties away from zero (on the magnitude); an infinity or NaN is
 * left alone. For weights packed in tf32 at upload. */
float gf_round_tf32(float v);

/* Device memory owned by the gf_gpu (freed by gf_gpu_destroy or gf_gpu_free). */
int gf_gpu_alloc(gf_gpu *self, size_t bytes, gf_cu_ptr *out);
void gf_gpu_free(gf_gpu *self, gf_cu_ptr ptr);
/* Copies on the stream; the download variant synchronises before returning. */
int gf_gpu_upload(gf_gpu *self, gf_cu_ptr dst, const void *src, size_t bytes);
int gf_gpu_download(gf_gpu *self, void *dst, gf_cu_ptr src, size_t bytes);
/* Fill with a 32-bit pattern (e.g. a NaN poison before a check). */
int gf_gpu_fill32(gf_gpu *self, gf_cu_ptr dst, unsigned pattern, size_t words);
/* Page-lock a host buffer the copies use often (they then run at the bus's
 * speed, without a staging copy); unpin before freeing it. A refusal (e.g.
 * the locked-memory limit) is warned about and returned: not fatal. */
int gf_gpu_pin(gf_gpu *self, void *host, size_t bytes);

/* Make the card's context current in the calling thread (a context is
 * current per thread: the thread that opened the card has it, another
 * thread calling in, e.g. a batcher's, diar/batcher.h, needs this first).
 * 0, or GF_EDEVICE after logging. */
int gf_gpu_bind(gf_gpu *self);
void gf_gpu_unpin(gf_gpu *self, void *host);
int gf_gpu_sync(gf_gpu *self);

/* A set of device allocations released together: each network object keeps
 * one, so its destructor frees exactly what it took. */
#define GF_GPU_ALLOCS_MAX 128
typedef struct {
    gf_gpu *gpu;                          /* the card they live on (borrowed) */
    gf_cu_ptr ptrs[GF_GPU_ALLOCS_MAX];    /* taken so far */
    size_t n;
} gf_gpu_allocs;

/* Take bytes (and record them); 0 or GF_EDEVICE. */
int gf_gpu_allocs_take(gf_gpu_allocs *a, size_t bytes, gf_cu_ptr *out);
/* Take bytes and copy host data into them. */
int gf_gpu_allocs_upload(gf_gpu_allocs *a, const void *host, size_t bytes, gf_cu_ptr *out);
/* Free everything taken; the set can be used again. */
void gf_gpu_allocs_release(gf_gpu_allocs *a);

/* Look up several kernels of one area's module: names[i] into fns[i]. */
int gf_gpu_functions(gf_gpu *self, const char *area, const char *const *names,
                     gf_cu_function *const *fns, size_t n);

/* A one-dimensional launch over n elements, 256 threads a block. */
int gf_gpu_launch1d(gf_gpu *self, gf_cu_function f, long n, void **params);

/* The kernel `name` of the embedded module for `area`, at the best PTX tier
 * this card runs (sm90 on cc >= 9.0, else sm75; an arch-specific tier such
 * as resnet's sm_90a on its own capability only; gpu/modload.c). Every
 * module loads through the module cache, once per key (gpu/modcache.h:
 * in debug and test builds a key proven incomplete aborts). On success
 * *sha256 (may be NULL) points at the module's identity hash. */
int gf_gpu_function(gf_gpu *self, const char *area, const char *name, gf_cu_function *out,
                    const char **tier, const char **sha256);
/* Modules loaded so far on this card (one per module cache key). */
size_t gf_gpu_modules_loaded(const gf_gpu *self);

/* An own route's kernel: gf_gpu_function, allowed smem bytes of dynamic
 * shared memory per block (0: static only). GF_EUNSUP, logged with the
 * boundary's name, where the card offers less. The limit only rises: layers
 * of several sizes on one kernel (segconv.conv1 and conv2) keep the largest,
 * which every smaller launch fits. */
int gf_gpu_own_kernel(gf_gpu *self, const char *boundary, const char *area, const char *name,
                      int smem, gf_cu_function *out, const char **sha256);
/* A faster own kernel beside a route's portable one, for cards of compute
 * capability min_cc and up only (major·10 + minor; below, its tier does not
 * load and it traps). *have says whether it loaded: below min_cc, or where
 * the card offers less shared memory (GF_EUNSUP, logged), it did not and the
 * portable kernel serves, which is not an error. Returns 0 or a driver
 * error. */
int gf_gpu_own_kernel_extra(gf_gpu *self, int min_cc, const char *boundary, const char *area,
                            const char *name, int smem, gf_cu_function *out,
                            const char **sha256, bool *have);
/* Launch on the job stream; in debug builds (GF_GPU_DEBUG set in the
 * environment) synchronise and check after each launch. */
int gf_gpu_launch(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                  unsigned bx, unsigned by, unsigned bz, unsigned smem, void **params);

/* Launch blocks of bx threads as thread-block clusters of cluster_x blocks
 * along x (gx a multiple of it), through cuLaunchKernelEx; GF_EUNSUP where
 * the driver has no cuLaunchKernelEx. */
int gf_gpu_launch_cluster(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, unsigned smem, unsigned cluster_x, void **params);
/* Launch as gf_gpu_launch does, but let the kernel start before the one
 * before it on the stream has finished (programmatic dependent launch, cc
 * >= 9.0 with cuLaunchKernelEx; elsewhere a plain launch): f must execute
 * `griddepcontrol.wait` before it touches anything the kernel before it
 * writes, and may execute `griddepcontrol.launch_dependents` to let the
 * next such launch start early. Saves the gap between short dependent
 * kernels. */
int gf_gpu_launch_dependent(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned bx,
                            void **params);
/* Whether this card and driver run cluster launches (cc >= 9.0 and
 * cuLaunchKernelEx present). */
bool gf_gpu_can_launch_clusters(const gf_gpu *self);
/* How many clusters of cluster_x blocks of bx threads and smem bytes of
 * dynamic shared memory of f the card can hold at once
 * (cuOccupancyMaxActiveClusters); 0 where it can hold none, cannot launch
 * clusters, or the query fails. */
int gf_gpu_max_active_clusters(gf_gpu *self, gf_cu_function f, unsigned bx, unsigned smem,
                               unsigned cluster_x);

/* Device timing of a region on the stream, by events. begin/end bracket the
 * region; gf_gpu_timing_collect synchronises and adds the samples to stats:
 * measured when both events completed, failed-or-unproven otherwise. */
int gf_gpu_timing_begin(gf_gpu *self, const char *stage, const char *route);
int gf_gpu_timing_end(gf_gpu *self);
void gf_gpu_timing_collect(gf_gpu *self, gf_devstats *stats);

/* One timed stage: where stats is not NULL, begin/end events on gpu bracket
 * the launches of call (an int expression; its error returns from the caller,
 * as GF_TRY does). */
#define GF_GPU_STAGE(gpu, stats, stage, route, call)                  \
    do {                                                              \
        if (stats)                                                    \
            GF_TRY(gf_gpu_timing_begin(gpu, stage, route));           \
        GF_TRY(call);                                                 \
        if (stats)                                                    \
            GF_TRY(gf_gpu_timing_end(gpu));                           \
    } while (0)
/* Forget the last region, begun and not ended, when nothing was launched in
 * it (the work went elsewhere): it is then neither measured nor failed. */
void gf_gpu_timing_drop(gf_gpu *self);

#endif
