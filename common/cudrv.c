/* cudrv.c — dlopen of the CUDA driver and its entry-point table (cudrv.h).
 *
 * Loaded once per process under pthread_once; the handle stays open until
 * exit (the driver must outlive every context made through it). */
#include "common/cudrv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static gf_cudrv table;
static const gf_cudrv *loaded;
static const char *load_why = "not loaded";
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static int resolve(void *h, void *slot, const char *name)
{
    void *fn = dlsym(h, name);
    if (!fn)
        return -1;
    memcpy(slot, &fn, sizeof fn);
    return 0;
}

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        load_why = "the CUDA driver (libcuda.so.1) is not installed";
        return;
    }
    static const struct { size_t off; const char *name; } syms[] = {
#define S(field, name) { offsetof(gf_cudrv, field), name }
        S(init, "cuInit"),
        S(driver_version, "cuDriverGetVersion"),
        S(device_count, "cuDeviceGetCount"),
        S(device_get, "cuDeviceGet"),
        S(device_name, "cuDeviceGetName"),
        S(device_uuid, "cuDeviceGetUuid_v2"),
        S(device_attr, "cuDeviceGetAttribute"),
        S(device_mem, "cuDeviceTotalMem_v2"),
        S(primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
        S(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2"),
        S(ctx_set_current, "cuCtxSetCurrent"),
        S(ctx_synchronize, "cuCtxSynchronize"),
        S(mem_alloc, "cuMemAlloc_v2"),
        S(mem_free, "cuMemFree_v2"),
        S(memcpy_htod_async, "cuMemcpyHtoDAsync_v2"),
        S(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2"),
        S(memset_d32_async, "cuMemsetD32Async"),
        S(mem_host_register, "cuMemHostRegister_v2"),
        S(mem_host_unregister, "cuMemHostUnregister"),
        S(stream_create_prio, "cuStreamCreateWithPriority"),
        S(ctx_stream_prio_range, "cuCtxGetStreamPriorityRange"),
        S(stream_destroy, "cuStreamDestroy_v2"),
        S(stream_synchronize, "cuStreamSynchronize"),
        S(stream_wait_event, "cuStreamWaitEvent"),
        S(event_create, "cuEventCreate"),
        S(event_destroy, "cuEventDestroy_v2"),
        S(event_record, "cuEventRecord"),
        S(event_synchronize, "cuEventSynchronize"),
        S(event_elapsed, "cuEventElapsedTime_v2"),
        S(module_load_data, "cuModuleLoadDataEx"),
        S(module_unload, "cuModuleUnload"),
        S(module_get_function, "cuModuleGetFunction"),
        S(func_set_attr, "cuFuncSetAttribute"),
        S(launch, "cuLaunchKernel"),
        S(launch_ex, "cuLaunchKernelEx"),
        S(max_active_clusters, "cuOccupancyMaxActiveClusters"),
        S(error_name, "cuGetErrorName"),
        S(error_string, "cuGetErrorString"),
#undef S
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (resolve(h, (char *)&table + syms[i].off, syms[i].name) != 0) {
            /* cuEventElapsedTime_v2 is recent; older drivers have the plain name. */
            if (strcmp(syms[i].name, "cuEventElapsedTime_v2") == 0 &&
                resolve(h, (char *)&table + syms[i].off, "cuEventElapsedTime") == 0)
                continue;
            if (strcmp(syms[i].name, "cuLaunchKernelEx") == 0 ||
                strcmp(syms[i].name, "cuOccupancyMaxActiveClusters") == 0)
                continue;   /* optional: cluster launches only */
            load_why = "the CUDA driver lacks an entry point gpuflock needs (too old?)";
            dlclose(h);
            return;
        }
    }
    if (table.init(0) != 0) {
        load_why = "the CUDA driver failed to initialise (no device, or driver error)";
        return;
    }
    loaded = &table;
    load_why = NULL;
}

const gf_cudrv *gf_cudrv_get(const char **why)
{
    pthread_once(&load_once, load);
    if (why)
        *why = load_why;
    return loaded;
}

const char *gf_cudrv_errstr(gf_cu_result r)
{
    static __thread char buf[160];
    const char *name = NULL, *text = NULL;
    if (loaded) {
        loaded->error_name(r, &name);
        loaded->error_string(r, &text);
    }
    snprintf(buf, sizeof buf, "%s (%s)", name ? name : "CUDA error", text ? text : "?");
    if (!name)
        snprintf(buf, sizeof buf, "CUDA error %d", r);
    return buf;
}
