/* card.c — card identity through the CUDA driver API, loaded with dlopen.
 *
 * Only the handful of driver entry points that identity needs are resolved
 * here; kernels and memory use their own path (worker/). The driver is
 * initialised once per process; the handle stays open until exit. */
#include "common/card.h"
#include "common/error.h"
#include "common/log.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Driver API types and attribute numbers (cuda.h), restated so the build
 * needs no CUDA headers. */
typedef int cu_result;
typedef int cu_device;
typedef struct { unsigned char bytes[16]; } cu_uuid;
enum {
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_L2_CACHE_SIZE = 38,
    CU_ATTR_CC_MAJOR = 75,
    CU_ATTR_CC_MINOR = 76,
    CU_ATTR_SMEM_PER_BLOCK_OPTIN = 97,
};

typedef struct {
    void *handle;                                   /* dlopen handle; NULL: no driver */
    cu_result (*init)(unsigned);
    cu_result (*driver_version)(int *);
    cu_result (*device_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_name)(char *, int, cu_device);
    cu_result (*device_uuid)(cu_uuid *, cu_device);
    cu_result (*device_attr)(int *, int, cu_device);
    cu_result (*device_mem)(size_t *, cu_device);
    int init_result;                                /* cuInit's result, 0 when ready */
} cu_driver;

static cu_driver driver;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void driver_load(void)
{
    driver.init_result = -1;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
#define SYM(field, name)                                   \
    do {                                                   \
        *(void **)(&driver.field) = dlsym(h, name);        \
        if (!driver.field) {                               \
            GF_WARN("CUDA driver: symbol %s missing", name); \
            dlclose(h);                                    \
            return;                                        \
        }                                                  \
    } while (0)
    SYM(init, "cuInit");
    SYM(driver_version, "cuDriverGetVersion");
    SYM(device_count, "cuDeviceGetCount");
    SYM(device_get, "cuDeviceGet");
    SYM(device_name, "cuDeviceGetName");
    SYM(device_uuid, "cuDeviceGetUuid_v2");
    SYM(device_attr, "cuDeviceGetAttribute");
    SYM(device_mem, "cuDeviceTotalMem_v2");
#undef SYM
    driver.handle = h;
    driver.init_result = driver.init(0);
}

static int driver_ready(void)
{
    pthread_once(&driver_once, driver_load);
    return driver.handle && driver.init_result == 0;
}

int gf_card_cuda_count(int *count)
{
    *count = 0;
    if (!driver_ready())
        return 0;
    int n = 0;
    if (driver.device_count(&n) != 0)
        return 0;
    *count = n;
    return 0;
}

static void format_uuid(const cu_uuid *u, char *out, size_t len)
{
    const unsigned char *b = u->bytes;
    snprintf(out, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
             b[12], b[13], b[14], b[15]);
}

static int identify_cpu(const gf_device_conf *dev, gf_card_identity *out)
{
    snprintf(out->name, sizeof out->name, "cpu");
    snprintf(out->uuid, sizeof out->uuid, "cpu-%d", dev->index);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    out->sm_count = cores > 0 ? (int)cores : 1;
    out->total_mem = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
    return 0;
}

static int identify_cuda(const gf_device_conf *dev, gf_card_identity *out)
{
    if (!driver_ready()) {
        GF_ERROR("card %d: kind cuda, but the CUDA driver (libcuda.so.1) %s", dev->index,
                 driver.handle ? "failed to initialise" : "is not installed");
        return GF_EDEVICE;
    }
    int n = 0;
    if (driver.device_count(&n) != 0 || dev->index < 0 || dev->index >= n) {
        GF_ERROR("card %d: no such CUDA device (the driver sees %d)", dev->index, n);
        return GF_ENOENT;
    }
    cu_device d;
    cu_uuid u;
    int v = 0;
    if (driver.device_get(&d, dev->index) != 0 ||
        driver.device_name(out->name, (int)sizeof out->name, d) != 0 ||
        driver.device_uuid(&u, d) != 0 ||
        driver.device_attr(&out->cc_major, CU_ATTR_CC_MAJOR, d) != 0 ||
        driver.device_attr(&out->cc_minor, CU_ATTR_CC_MINOR, d) != 0 ||
        driver.device_attr(&out->sm_count, CU_ATTR_MULTIPROCESSOR_COUNT, d) != 0 ||
        driver.device_attr(&out->l2_bytes, CU_ATTR_L2_CACHE_SIZE, d) != 0 ||
        driver.device_attr(&out->smem_optin, CU_ATTR_SMEM_PER_BLOCK_OPTIN, d) != 0 ||
        driver.device_mem(&out->total_mem, d) != 0 ||
        driver.driver_version(&v) != 0) {
        GF_ERROR("card %d: the CUDA driver failed to describe the device", dev->index);
        return GF_EDEVICE;
    }
    out->driver_version = v;
    format_uuid(&u, out->uuid, sizeof out->uuid);
    return 0;
}

int gf_card_identify(const gf_device_conf *dev, gf_card_identity *out)
{
    memset(out, 0, sizeof *out);
    out->index = dev->index;
    out->kind = dev->kind;
    return dev->kind == GF_DEVICE_CUDA ? identify_cuda(dev, out) : identify_cpu(dev, out);
}

void gf_card_describe(const gf_card_identity *id, char *buf, size_t len)
{
    double gib = (double)id->total_mem / (1024.0 * 1024.0 * 1024.0);
    if (id->kind == GF_DEVICE_CUDA)
        snprintf(buf, len, "%s (cc %d.%d, %d SMs, %.1f GiB)", id->name, id->cc_major,
                 id->cc_minor, id->sm_count, gib);
    else
        snprintf(buf, len, "%s (%d cores, %.1f GiB)", id->name, id->sm_count, gib);
}
