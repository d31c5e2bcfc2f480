/* card.c — card identity through the CUDA driver API, loaded with dlopen.
 *
 * The driver comes from common/cudrv (dlopen, once per process); a machine
 * without it has zero CUDA cards and its declared CPU cards. */
#include "common/card.h"
#include "common/cudrv.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <json-c/json.h>
#include <stdint.h>
#include <stdlib.h>

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

char *gf_card_format(const gf_card_identity *id)
{
    double gib = (double)id->total_mem / (1024.0 * 1024.0 * 1024.0);
    if (id->kind != GF_DEVICE_CUDA)
        return gf_strfmt("%s, %d cores, %.1f GiB, %s", id->name, id->sm_count, gib, id->uuid);
    return gf_strfmt("%s cc %d.%d, %d SMs, %.1f GiB, L2 %.1f MiB, smem opt-in %d KiB, "
                     "driver %d.%d, %s",
                     id->name, id->cc_major, id->cc_minor, id->sm_count, gib,
                     (double)id->l2_bytes / (1024.0 * 1024.0), id->smem_optin / 1024,
                     id->driver_version / 1000, (id->driver_version % 1000) / 10, id->uuid);
}

struct json_object *gf_card_to_json(const gf_card_identity *id)
{
    json_object *o = json_object_new_object();
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", id->cc_major, id->cc_minor);
    json_object_object_add(o, "index", json_object_new_int(id->index));
    json_object_object_add(o, "kind",
                           json_object_new_string(id->kind == GF_DEVICE_CUDA ? "cuda" : "cpu"));
    json_object_object_add(o, "name", json_object_new_string(id->name));
    json_object_object_add(o, "uuid", json_object_new_string(id->uuid));
    json_object_object_add(o, "cc", json_object_new_string(cc));
    json_object_object_add(o, "cc_major", json_object_new_int(id->cc_major));
    json_object_object_add(o, "cc_minor", json_object_new_int(id->cc_minor));
    json_object_object_add(o, "sms", json_object_new_int(id->sm_count));
    json_object_object_add(o, "total_mem", json_object_new_int64((int64_t)id->total_mem));
    json_object_object_add(o, "l2_bytes", json_object_new_int(id->l2_bytes));
    json_object_object_add(o, "smem_optin", json_object_new_int(id->smem_optin));
    json_object_object_add(o, "driver_version", json_object_new_int(id->driver_version));
    return o;
}

/* "9.0" -> 9, 0; 0 or -1. */
static int parse_cc(const char *s, int *major, int *minor)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '.' || a < 1 || a > 99)
        return -1;
    const char *m = end + 1;
    long b = strtol(m, &end, 10);
    if (end == m || *end || b < 0 || b > 9)
        return -1;
    *major = (int)a;
    *minor = (int)b;
    return 0;
}

static int json_int_field(json_object *obj, const char *key, int *out)
{
    json_object *v;
    if (!json_object_object_get_ex(obj, key, &v))
        return 1;
    if (!json_object_is_type(v, json_type_int))
        return -1;
    int64_t x = json_object_get_int64(v);
    if (x < INT32_MIN || x > INT32_MAX)
        return -1;
    *out = (int)x;
    return 0;
}

int gf_card_from_json(struct json_object *obj, gf_card_identity *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    out->index = -1;
    out->kind = GF_DEVICE_CUDA;
    json_object *v;
    if (!obj || !json_object_is_type(obj, json_type_object)) {
        snprintf(why, why_len, "card identity is not an object");
        return GF_EINVAL;
    }
    if (json_object_object_get_ex(obj, "kind", &v)) {
        const char *k = json_object_get_string(v);
        if (!json_object_is_type(v, json_type_string) ||
            (strcmp(k, "cuda") != 0 && strcmp(k, "cpu") != 0)) {
            snprintf(why, why_len, "card 'kind' must be \"cuda\" or \"cpu\"");
            return GF_EINVAL;
        }
        out->kind = strcmp(k, "cuda") == 0 ? GF_DEVICE_CUDA : GF_DEVICE_CPU;
    }
    if (!json_object_object_get_ex(obj, "name", &v) || !json_object_is_type(v, json_type_string) ||
        json_object_get_string_len(v) == 0 ||
        (size_t)json_object_get_string_len(v) >= sizeof out->name) {
        snprintf(why, why_len, "card 'name' missing or not a short string");
        return GF_EINVAL;
    }
    snprintf(out->name, sizeof out->name, "%s", json_object_get_string(v));
    if (json_object_object_get_ex(obj, "cc", &v)) {
        if (!json_object_is_type(v, json_type_string) ||
            parse_cc(json_object_get_string(v), &out->cc_major, &out->cc_minor) != 0) {
            snprintf(why, why_len, "card 'cc' must be a string \"MAJOR.MINOR\"");
            return GF_EINVAL;
        }
    } else if (out->kind == GF_DEVICE_CUDA &&
               (json_int_field(obj, "cc_major", &out->cc_major) != 0 ||
                json_int_field(obj, "cc_minor", &out->cc_minor) != 0)) {
        snprintf(why, why_len, "card 'cc' missing");
        return GF_EINVAL;
    }
    if (json_int_field(obj, "sms", &out->sm_count) != 0 || out->sm_count <= 0) {
        snprintf(why, why_len, "card 'sms' missing or not a positive integer");
        return GF_EINVAL;
    }
    if (json_object_object_get_ex(obj, "uuid", &v) && json_object_is_type(v, json_type_string))
        snprintf(out->uuid, sizeof out->uuid, "%s", json_object_get_string(v));
    if (json_object_object_get_ex(obj, "total_mem", &v) && json_object_is_type(v, json_type_int))
        out->total_mem = (size_t)json_object_get_int64(v);
    if (json_int_field(obj, "index", &out->index) < 0 ||
        json_int_field(obj, "l2_bytes", &out->l2_bytes) < 0 ||
        json_int_field(obj, "smem_optin", &out->smem_optin) < 0 ||
        json_int_field(obj, "driver_version", &out->driver_version) < 0) {
        snprintf(why, why_len, "card 'index', 'l2_bytes', 'smem_optin', 'driver_version' must be integers");
        return GF_EINVAL;
    }
    return 0;
}

int gf_card_parse_spec(const char *spec, gf_card_identity *out)
{
    memset(out, 0, sizeof *out);
    out->index = -1;
    out->kind = GF_DEVICE_CUDA;
    const char *last = strrchr(spec, ':');
    if (!last || last == spec)
        return GF_EINVAL;
    const char *mid = last - 1;
    while (mid > spec && *mid != ':')
        mid--;
    if (*mid != ':' || mid == spec)
        return GF_EINVAL;
    size_t name_len = (size_t)(mid - spec);
    if (name_len >= sizeof out->name)
        return GF_EINVAL;
    char cc[16];
    size_t cc_len = (size_t)(last - mid - 1);
    if (cc_len == 0 || cc_len >= sizeof cc)
        return GF_EINVAL;
    memcpy(cc, mid + 1, cc_len);
    cc[cc_len] = '\0';
    if (parse_cc(cc, &out->cc_major, &out->cc_minor) != 0)
        return GF_EINVAL;
    char *end;
    long sms = strtol(last + 1, &end, 10);
    if (end == last + 1 || *end || sms <= 0 || sms > 100000)
        return GF_EINVAL;
    out->sm_count = (int)sms;
    memcpy(out->name, spec, name_len);
    out->name[name_len] = '\0';
    snprintf(out->uuid, sizeof out->uuid, "described");
    return 0;
}

int gf_card_arch(const gf_card_identity *id)
{
    return id->kind == GF_DEVICE_CUDA ? id->cc_major * 10 + id->cc_minor : 0;
}
