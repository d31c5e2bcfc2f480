/* models.h — a models directory: its file names and its manifest.
 *
 * Layout (docs/models.md): segmentation.safetensors, embedding.safetensors,
 * plda/xvec_transform.npz, plda/plda.npz and MANIFEST.sha256, the manifest in
 * sha256sum(1) format ("<64 hex>  <path relative to the directory>"), so that
 * `sha256sum -c MANIFEST.sha256` checks it too. tools/convert-checkpoints
 * writes such a directory; `gpuflock models check` verifies one. */
#ifndef GF_MODELS_H
#define GF_MODELS_H

#include <stdbool.h>
#include <stddef.h>

#define GF_MODELS_SEGMENTATION "segmentation.safetensors"
#define GF_MODELS_EMBEDDING "embedding.safetensors"
#define GF_MODELS_XVEC "plda/xvec_transform.npz"
#define GF_MODELS_PLDA "plda/plda.npz"
#define GF_MODELS_MANIFEST "MANIFEST.sha256"

typedef struct gf_manifest gf_manifest;

/* Read DIR/MANIFEST.sha256. Returns 0 and *out; GF_ENOENT when there is no
 * manifest (nothing logged); GF_EINVAL after logging "FILE:LINE: problem" for
 * a malformed line (bad digest, absolute path, "..", duplicate). */
int gf_manifest_load(const char *dir, gf_manifest **out);

/* Free; accepts NULL and sets *self_p to NULL. */
void gf_manifest_destroy(gf_manifest **self_p);

/* The digest listed for `relpath` (borrowed), or NULL if it is not listed. */
const char *gf_manifest_sha256(const gf_manifest *self, const char *relpath);

/* The digest of DIR/name for a checkpoint's identity: man's entry (the
 * loader checked the file against it), else the file's own SHA-256; one
 * that cannot be had is made unique ("unreadable at <ms>"), so that no
 * checkpoint ever matches it. man may be NULL. */
void gf_models_digest(const char *dir, const gf_manifest *man, const char *name, char *out,
                      size_t len);

/* The files of a models directory as they are now: for each file a
 * pipeline may read from it (the two networks, the PLDA pair, the manifest
 * and the folder's own voice activity network, diar/vad.h), whether it is
 * there and its device, inode, size, modification and change times. Two
 * identities are equal when the same files are there, unchanged: a file
 * written, replaced, renamed over or touched changes its change time. What
 * a worker keeps loaded is keyed by it (worker/diarpool.h). */
#define GF_MODELS_ID_FILES 6
#define GF_MODELS_ID_SEG 0   /* f[] of the segmentation network, */
#define GF_MODELS_ID_EMB 1   /* of the embedding network (then the PLDA pair, manifest, VAD) */
typedef struct {
    bool present;
    unsigned long long dev, ino;
    long long size, mtime_ns, ctime_ns;
} gf_models_file;

typedef struct {
    gf_models_file f[GF_MODELS_ID_FILES];
} gf_models_id;

/* Open each file of dir for reading with the calling thread's file-system
 * identity (so the check is the caller's permission, now) and record it
 * in *out. A file that is not there is recorded absent. 0, or GF_EPERM /
 * GF_EIO after logging "FILE: cannot read: reason" for one that is there
 * and that the caller may not read or that cannot be opened. Does not
 * block on a FIFO. */
int gf_models_id_take(const char *dir, gf_models_id *out);

bool gf_models_id_equal(const gf_models_id *a, const gf_models_id *b);

/* Number of entries, and the path of the i-th (borrowed). */
size_t gf_manifest_count(const gf_manifest *self);
const char *gf_manifest_path_at(const gf_manifest *self, size_t i);

#endif
