/* safetensors.h — read-only, memory-mapped safetensors model files.
 *
 * A safetensors file is an 8-byte little-endian header length, a JSON header
 * naming each tensor's dtype, shape and byte range, then the data. Opening a
 * file checks everything before any tensor is handed out: the header parses,
 * every dtype is known, every byte range matches its shape, lies inside the
 * file, is aligned, and the ranges tile the data region without gap or
 * overlap; every F32 value is finite; and, when a digest is given, the file's
 * SHA-256 matches it. Errors are logged once, naming the file and the tensor. */
#ifndef GF_SAFETENSORS_H
#define GF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define GF_SAFETENSORS_MAX_DIMS 8

typedef struct gf_safetensors gf_safetensors;

/* One tensor as the header describes it; borrowed from the file object. */
typedef struct {
    const char *name;                       /* as in the header */
    const char *dtype;                      /* "F32", "I64", ... */
    int ndim;                               /* number of dimensions (0: scalar) */
    int64_t shape[GF_SAFETENSORS_MAX_DIMS]; /* extent of each dimension */
    int64_t numel;                          /* product of the shape */
    const void *data;                       /* inside the mapping */
} gf_safetensors_tensor;

/* Map and check `path`. sha256_hex (64 hex characters) or NULL: the digest the
 * file must have. Returns NULL after logging what is wrong with the file. */
gf_safetensors *gf_safetensors_open(const char *path, const char *sha256_hex);

/* Unmap and free; accepts NULL and sets *self_p to NULL. */
void gf_safetensors_destroy(gf_safetensors **self_p);

/* The path the file was opened with (borrowed). */
const char *gf_safetensors_path(const gf_safetensors *self);

/* Number of tensors in the file and the i-th one (in data order). */
size_t gf_safetensors_count(const gf_safetensors *self);
const gf_safetensors_tensor *gf_safetensors_at(const gf_safetensors *self, size_t i);

/* The tensor called `name`, or NULL (nothing logged). */
const gf_safetensors_tensor *gf_safetensors_find(const gf_safetensors *self, const char *name);

/* The F32 tensor `name` with exactly the `ndim` extents given after it (as
 * ints). Returns its data, or NULL after logging "FILE: tensor NAME: missing"
 * or a dtype or shape mismatch with both shapes. Marks the tensor as used. */
const float *gf_safetensors_get(gf_safetensors *self, const char *name, int ndim, ...);

/* After a network took its tensors: the number of F32 tensors never fetched
 * with gf_safetensors_get (integer counters such as num_batches_tracked are
 * not counted); each one is logged as unexpected. */
int gf_safetensors_unused(const gf_safetensors *self);

#endif
