/* cudrv.h — the CUDA driver API, loaded at run time with dlopen.
 *
 * One binary runs on machines with and without CUDA: nothing links against
 * libcuda. gf_cudrv_get() loads libcuda.so.1 once per process and returns the
 * table of entry points gpuflock uses, or NULL (with the reason) when there is
 * no usable driver. The types below restate the driver's ABI (cuda.h), so the
 * build needs no CUDA headers. */
#ifndef GF_CUDRV_H
#define GF_CUDRV_H

#include <stddef.h>
#include <stdint.h>

typedef int gf_cu_result;                 /* CUresult; 0 is CUDA_SUCCESS */
typedef int gf_cu_device;                 /* CUdevice */
typedef struct gf_cu_ctx_st *gf_cu_ctx;   /* CUcontext */
typedef struct gf_cu_mod_st *gf_cu_module;/* CUmodule */
typedef struct gf_cu_fn_st *gf_cu_function;/* CUfunction */
typedef struct gf_cu_stream_st *gf_cu_stream;/* CUstream */
typedef struct gf_cu_event_st *gf_cu_event;  /* CUevent */
typedef uint64_t gf_cu_ptr;               /* CUdeviceptr */
typedef struct { unsigned char bytes[16]; } gf_cu_uuid;

/* Device attributes used by gpuflock (CUdevice_attribute values). */
enum {
    GF_CU_ATTR_MAX_SMEM_PER_BLOCK = 8,
    GF_CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    GF_CU_ATTR_L2_CACHE_SIZE = 38,
    GF_CU_ATTR_CC_MAJOR = 75,
    GF_CU_ATTR_CC_MINOR = 76,
    GF_CU_ATTR_SMEM_PER_BLOCK_OPTIN = 97,
};
/* cuFuncSetAttribute: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
#define GF_CU_FUNC_ATTR_MAX_DYNAMIC_SMEM 8
/* cuEventCreate flags */
#define GF_CU_EVENT_DEFAULT 0
/* cuStreamCreate flags: CU_STREAM_NON_BLOCKING */
#define GF_CU_STREAM_NON_BLOCKING 1
/* CUlaunchAttributeID: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION */
#define GF_CU_LAUNCH_ATTR_CLUSTER_DIM 4
#define GF_CU_LAUNCH_ATTR_PROGRAMMATIC 6

/* CUlaunchAttribute: the id, padding to 8 bytes, a 64-byte value union
 * (8-byte aligned); the cluster dimension and the programmatic stream
 * serialization flag are used here. */
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        struct { unsigned x, y, z; } cluster_dim;
        int programmatic;
        void *align;
    } value;
} gf_cu_launch_attr;

/* CUlaunchConfig, for cuLaunchKernelEx. */
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, smem;
    struct gf_cu_stream_st *stream;
    gf_cu_launch_attr *attrs;
    unsigned n_attrs;
} gf_cu_launch_config;
_Static_assert(sizeof(gf_cu_launch_attr) == 72, "CUlaunchAttribute is 72 bytes");

typedef struct {
    gf_cu_result (*init)(unsigned flags);
    gf_cu_result (*driver_version)(int *version);
    gf_cu_result (*device_count)(int *count);
    gf_cu_result (*device_get)(gf_cu_device *dev, int ordinal);
    gf_cu_result (*device_name)(char *name, int len, gf_cu_device dev);
    gf_cu_result (*device_uuid)(gf_cu_uuid *uuid, gf_cu_device dev);
    gf_cu_result (*device_attr)(int *value, int attr, gf_cu_device dev);
    gf_cu_result (*device_mem)(size_t *bytes, gf_cu_device dev);
    gf_cu_result (*primary_ctx_retain)(gf_cu_ctx *ctx, gf_cu_device dev);
    gf_cu_result (*primary_ctx_release)(gf_cu_device dev);
    gf_cu_result (*ctx_set_current)(gf_cu_ctx ctx);
    gf_cu_result (*ctx_synchronize)(void);
    gf_cu_result (*mem_alloc)(gf_cu_ptr *ptr, size_t bytes);
    gf_cu_result (*mem_free)(gf_cu_ptr ptr);
    gf_cu_result (*memcpy_htod_async)(gf_cu_ptr dst, const void *src, size_t n, gf_cu_stream s);
    gf_cu_result (*memcpy_dtoh_async)(void *dst, gf_cu_ptr src, size_t n, gf_cu_stream s);
    gf_cu_result (*memset_d32_async)(gf_cu_ptr dst, unsigned value, size_t n, gf_cu_stream s);
    gf_cu_result (*mem_host_register)(void *p, size_t bytes, unsigned flags);
    gf_cu_result (*mem_host_unregister)(void *p);
    gf_cu_result (*stream_create_prio)(gf_cu_stream *s, unsigned flags, int priority);
    gf_cu_result (*ctx_stream_prio_range)(int *least, int *greatest);
    gf_cu_result (*stream_destroy)(gf_cu_stream s);
    gf_cu_result (*stream_synchronize)(gf_cu_stream s);
    gf_cu_result (*stream_wait_event)(gf_cu_stream s, gf_cu_event e, unsigned flags);
    gf_cu_result (*event_create)(gf_cu_event *e, unsigned flags);
    gf_cu_result (*event_destroy)(gf_cu_event e);
    gf_cu_result (*event_record)(gf_cu_event e, gf_cu_stream s);
    gf_cu_result (*event_synchronize)(gf_cu_event e);
    gf_cu_result (*event_elapsed)(float *ms, gf_cu_event start, gf_cu_event end);
    gf_cu_result (*module_load_data)(gf_cu_module *m, const void *image, unsigned n_opts,
                                     int *opts, void **values);
    gf_cu_result (*module_unload)(gf_cu_module m);
    gf_cu_result (*module_get_function)(gf_cu_function *f, gf_cu_module m, const char *name);
    gf_cu_result (*func_set_attr)(gf_cu_function f, int attr, int value);
    gf_cu_result (*launch)(gf_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz, unsigned smem,
                           gf_cu_stream s, void **params, void **extra);
    /* cuLaunchKernelEx (CUDA 11.8 drivers on); NULL on older drivers. */
    gf_cu_result (*launch_ex)(const gf_cu_launch_config *cfg, gf_cu_function f, void **params,
                              void **extra);
    /* cuOccupancyMaxActiveClusters (CUDA 11.8 on); NULL on older drivers. */
    gf_cu_result (*max_active_clusters)(int *n, gf_cu_function f, const gf_cu_launch_config *cfg);
    gf_cu_result (*error_name)(gf_cu_result r, const char **name);
    gf_cu_result (*error_string)(gf_cu_result r, const char **text);
} gf_cudrv;

/* The driver table, loaded and initialised once; NULL when there is no
 * usable driver, with *why (static text) saying so. */
const gf_cudrv *gf_cudrv_get(const char **why);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for a result; static text. */
const char *gf_cudrv_errstr(gf_cu_result r);

#endif
