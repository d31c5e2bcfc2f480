/* card.h — the identity of a card: what the CUDA driver says about it, or
 * what a declared CPU card says about itself.
 *
 * The CUDA driver (libcuda.so.1) is loaded at run time with dlopen, so one
 * binary runs on machines with and without CUDA. A driver that is missing or
 * finds no device is not an error for counting (zero cards); asking for the
 * identity of a CUDA card that is not there is. */
#ifndef GF_CARD_H
#define GF_CARD_H

#include "common/config.h"

#include <stddef.h>

typedef struct {
    int index;              /* the configured device index */
    gf_device_kind kind;    /* cpu | cuda */
    char name[128];         /* "NVIDIA H200"; "cpu" for a declared CPU card */
    char uuid[48];          /* "GPU-" and the 36-character UUID (as nvidia-smi prints it); "cpu-" and the index */
    int cc_major;           /* compute capability; 0 for CPU cards */
    int cc_minor;
    int sm_count;           /* multiprocessors; for CPU cards, online cores */
    size_t total_mem;       /* bytes of device memory; for CPU cards, RAM */
    int l2_bytes;           /* L2 cache size; 0 for CPU cards */
    int smem_optin;         /* shared memory per block, opt-in limit; 0 for CPU */
    int driver_version;     /* CUDA driver version (e.g. 13000); 0 for CPU */
} gf_card_identity;

/* Number of CUDA devices the driver sees; 0 (and return 0) when there is no
 * driver or no device. */
int gf_card_cuda_count(int *count);

/* Fill *out for a configured device. For kind cuda, dev->index is the CUDA
 * ordinal in PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID). Returns 0,
 * GF_EDEVICE (driver missing or failing) or GF_ENOENT (no such device). */
int gf_card_identify(const gf_device_conf *dev, gf_card_identity *out);

/* "NVIDIA H200 (cc 9.0, 132 SMs, 139.8 GiB)" or "cpu (16 cores, 31.3 GiB)". */
void gf_card_describe(const gf_card_identity *id, char *buf, size_t len);

/* The whole identity on one line, every field named (for `gpuflock workers`
 * and logs): "NVIDIA H200 cc 9.0, 132 SMs, 139.8 GiB, L2 60.0 MiB, smem
 * opt-in 227 KiB, driver 13.0, GPU-...". The caller frees. */
char *gf_card_format(const gf_card_identity *id);

/* The identity as a json-c object (the caller puts it):
 * {"index","kind":"cuda"|"cpu","name","uuid","cc":"9.0","cc_major","cc_minor",
 *  "sms","total_mem","l2_bytes","smem_optin","driver_version"}. */
struct json_object *gf_card_to_json(const gf_card_identity *id);

/* Read an identity from such an object. "name" and "cc" (or cc_major and
 * cc_minor) and "sms" are required; the rest default to 0. Returns 0 or
 * GF_EINVAL with a reason in why[why_len] (nothing logged). */
int gf_card_from_json(struct json_object *obj, gf_card_identity *out, char *why, size_t why_len);

/* A described card "NAME:CC:SMS" ("NVIDIA H200:9.0:132"; the name may hold
 * colons: the last two fields are CC and SMS). Fills a cuda identity with
 * index -1. Returns 0 or GF_EINVAL (nothing logged). */
int gf_card_parse_spec(const char *spec, gf_card_identity *out);

/* Architecture number of a CUDA card: 10 * major + minor (90 for cc 9.0);
 * 0 for CPU cards. */
int gf_card_arch(const gf_card_identity *id);

#endif
