/* card.c — card identity through the CUDA driver API, loaded with dlopen.
 *
 * The driver comes from common/cudrv (dlopen, once per process); a machine
 * without it has zero CUDA cards and its declared CPU cards. */
#include "common/card.h"
#include "common/cudrv.h"
#include "common/error.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int gf_card_cuda_count(int *count)
{
    *count = 0;
    const gf_cudrv *cu = gf_cudrv_get(NULL);
    int n = 0;
    if (!cu || cu->device_count(&n) != 0)
        return 0;
    *count = n;
    return 0;
}

static void format_uuid(const gf_cu_uuid *u, char *out, size_t len)
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
    const char *why = NULL;
    const gf_cudrv *cu = gf_cudrv_get(&why);
    if (!cu) {
        GF_ERROR("card %d: kind cuda, but %s", dev->index, why);
        return GF_EDEVICE;
    }
    int n = 0;
    if (cu->device_count(&n) != 0 || dev->index < 0 || dev->index >= n) {
        GF_ERROR("card %d: no such CUDA device (the driver sees %d)", dev->index, n);
        return GF_ENOENT;
    }
    gf_cu_device d;
    gf_cu_uuid u;
    int v = 0;
    if (cu->device_get(&d, dev->index) != 0 ||
        cu->device_name(out->name, (int)sizeof out->name, d) != 0 ||
        cu->device_uuid(&u, d) != 0 ||
        cu->device_attr(&out->cc_major, GF_CU_ATTR_CC_MAJOR, d) != 0 ||
        cu->device_attr(&out->cc_minor, GF_CU_ATTR_CC_MINOR, d) != 0 ||
        cu->device_attr(&out->sm_count, GF_CU_ATTR_MULTIPROCESSOR_COUNT, d) != 0 ||
        cu->device_attr(&out->l2_bytes, GF_CU_ATTR_L2_CACHE_SIZE, d) != 0 ||
        cu->device_attr(&out->smem_optin, GF_CU_ATTR_SMEM_PER_BLOCK_OPTIN, d) != 0 ||
        cu->device_mem(&out->total_mem, d) != 0 ||
        cu->driver_version(&v) != 0) {
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
