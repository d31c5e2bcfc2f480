/* ptx.h — the PTX of the CUDA kernels (kernels/<op>/<area>.cu), embedded in the binary at build time.
 *
 * Each kernels/<op>/<area>.cu is compiled by nvcc to PTX for two tiers: sm75 (the
 * baseline, JIT-compiled by the driver on any newer card) and sm90 (Hopper).
 * A module's identity is (area, tier, SHA-256 of its PTX text). In a build
 * without nvcc the table is empty and every boundary takes the CPU or library
 * route. */
#ifndef GF_PTX_H
#define GF_PTX_H

#include <stddef.h>

typedef struct {
    const char *area;   /* "lstm", "glue", ... (the .cu file's name) */
    const char *tier;   /* "sm75" | "sm90" */
    const char *text;   /* NUL-terminated PTX */
    size_t len;         /* strlen(text) */
} gf_ptx_blob;

/* Terminated by an entry with area NULL. */
extern const gf_ptx_blob gf_ptx_blobs[];
extern const int gf_ptx_blob_count;

#endif
