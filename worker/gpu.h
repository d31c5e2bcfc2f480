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
void gf_gpu_destroy(gf_gpu **self_p);

/* The driver table and the stream jobs run on (borrowed). */
const gf_cudrv *gf_gpu_driver(const gf_gpu *self);
gf_cu_stream gf_gpu_stream(const gf_gpu *self);
/* Compute capability as major*10+minor (90 for an H200). */
int gf_gpu_cc(const gf_gpu *self);

/* Shared memory per block a kernel may opt in to (bytes). */
int gf_gpu_smem_optin(const gf_gpu *self);
/* Let kernel f use up to `bytes` of dynamic shared memory. */
int gf_gpu_func_smem(gf_gpu *self, gf_cu_function f, int bytes);

/* Device memory owned by the gf_gpu (freed by gf_gpu_destroy or gf_gpu_free). */
int gf_gpu_alloc(gf_gpu *self, size_t bytes, gf_cu_ptr *out);
void gf_gpu_free(gf_gpu *self, gf_cu_ptr ptr);
/* Copies on the stream; the download variant synchronises before returning. */
int gf_gpu_upload(gf_gpu *self, gf_cu_ptr dst, const void *src, size_t bytes);
int gf_gpu_download(gf_gpu *self, void *dst, gf_cu_ptr src, size_t bytes);
/* Fill with a 32-bit pattern (e.g. a NaN poison before a check). */
int gf_gpu_fill32(gf_gpu *self, gf_cu_ptr dst, unsigned pattern, size_t words);
int gf_gpu_sync(gf_gpu *self);

/* The kernel `name` of the embedded module for `area`, at the best PTX tier
 * this card runs (sm90 on cc >= 9.0, else sm75); modules load once. On
 * success *sha256 (may be NULL) points at the module's identity hash. */
int gf_gpu_function(gf_gpu *self, const char *area, const char *name, gf_cu_function *out,
                    const char **tier, const char **sha256);
/* Launch on the job stream; in debug builds (GF_GPU_DEBUG set in the
 * environment) synchronise and check after each launch. */
int gf_gpu_launch(gf_gpu *self, gf_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                  unsigned bx, unsigned by, unsigned bz, unsigned smem, void **params);

/* Device timing of a region on the stream, by events. begin/end bracket the
 * region; gf_gpu_timing_collect synchronises and adds the samples to stats:
 * measured when both events completed, failed-or-unproven otherwise. */
int gf_gpu_timing_begin(gf_gpu *self, const char *stage, const char *route);
int gf_gpu_timing_end(gf_gpu *self);
void gf_gpu_timing_collect(gf_gpu *self, gf_devstats *stats);

#endif
