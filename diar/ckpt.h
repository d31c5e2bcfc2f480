/* ckpt.h — a diarize job's checkpoint file: where a run stood at a batch
 * boundary (a gf_diar_state, pipeline.h) and the identity that says when
 * those results may be reused (diar/ckpt_id.h).
 *
 * The file, in the byte order of the machine that wrote it (which it names):
 *   "GFCKPT\r\n"  u32 format (GF_CKPT_FORMAT)  u32 0x01020304  u32 identity
 *   bytes  u32 flags (embeddings, logits, weight-free)  u64 windows
 *   u64 embedding size  u64 statistics blocks  f64 the energy VAD's noise
 *   floor  u64 the trained VAD's chunks (flag: trained VAD);
 *   the identity as "key=value\n" lines in gf_ckpt_field order, NUL-padded
 *   to 8 bytes; one record per window (its activity, then its embeddings
 *   and logits when the flags say so), so that the image of K windows
 *   begins as that of fewer did; the statistics blocks; with the trained
 *   VAD, its gf_vad_state and each chunk's speech flag; then the SHA-256
 *   of every byte before it as 64 hex digits. Floats are stored as bits
 *   (float32), so NaN stays NaN and a resumed run sees exactly what the
 *   interrupted one computed.
 *
 * A reader trusts nothing in it: a symlink, anything but a regular file, a
 * file of another owner, a wrong magic, format or byte order, counts beyond
 * what the audio can have, a size other than the counts say and a digest
 * that does not match are all refused with the reason, before any count is
 * used to allocate. Writing goes through NAME.tmp, fsync, rename and an
 * fsync of the folder, so a crash or a full disk at any point leaves the
 * previous checkpoint whole. */
#ifndef GF_DIAR_CKPT_H
#define GF_DIAR_CKPT_H

#include "diar/ckpt_id.h"
#include "diar/pipeline.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GF_CKPT_FORMAT 2            /* bumped on any change of the layout above */
#define GF_CKPT_HEADER_BYTES 64     /* fixed part before the identity */
#define GF_CKPT_DIGEST_BYTES 64     /* the trailing SHA-256, hex */

typedef struct gf_ckpt gf_ckpt;

/* A checkpoint of st under id: the whole file image. reuse (may be NULL)
 * is an earlier capture whose memory is taken over and returned: when it
 * was of the same run (same identity and mode, no more windows), only the
 * windows after its own are copied, since a window's results never change
 * once done. *copied (may be NULL) says what that took. The caller
 * destroys the result; its gf_ckpt_state has the counts only. */
typedef struct {
    uint64_t copies;    /* arrays copied into: activity, embeddings, logits, blocks, the
                           trained VAD's state and flags (one) */
    uint64_t bytes;     /* bytes copied */
    size_t windows;     /* windows copied: those after the reused image's */
} gf_ckpt_copied;
gf_ckpt *gf_ckpt_capture(const gf_ckpt_id *id, const gf_diar_state *st, gf_ckpt *reuse,
                         gf_ckpt_copied *copied);

/* Bytes of the file it makes (or was read from). */
size_t gf_ckpt_bytes(const gf_ckpt *self);

/* A capture's file image, digest included (computed at the first call);
 * borrowed. */
const void *gf_ckpt_image(gf_ckpt *self, size_t *len);

/* Write durably to path: path.tmp (a stale one removed first; created
 * mode 0600, not following a symlink, owned by uid:gid when we are root
 * and uid is not (uid_t)-1), written whole, fsync, renamed over path, the
 * folder fsync-ed. Host nanoseconds spent on the digest, creating and
 * writing, and on syncing and renaming, are added to *write_ns and
 * *fsync_ns (may be NULL). Returns 0, or GF_EIO with why
 * naming the file and the error; path is then as it was and path.tmp gone.
 * Nothing is logged. */
int gf_ckpt_write(gf_ckpt *self, const char *path, uid_t uid, gid_t gid, uint64_t *write_ns,
                  uint64_t *fsync_ns, char *why, size_t len);

/* Read path (not following a symlink) into *out. owner: the uid the file
 * must belong to ((uid_t)-1: any). max_windows bounds the window count
 * (the audio's windows); nothing larger than such a file can be is read.
 * Returns 0; GF_ENOENT when there is none (why ""); GF_EINVAL when it is
 * damaged or not to be trusted, GF_EIO when it cannot be read, with the
 * reason in why. Nothing is logged. */
int gf_ckpt_read(const char *path, uid_t owner, size_t max_windows, gf_ckpt **out, char *why,
                 size_t len);

/* gf_ckpt_read in two steps, for a caller that opens with one identity and
 * reads later with another: open path as gf_ckpt_read does (0 and *fd, or
 * its GF_ENOENT, GF_EINVAL, GF_EIO and why), then read the open file (the
 * caller closes fd). */
int gf_ckpt_open(const char *path, int *fd, char *why, size_t len);
int gf_ckpt_read_fd(int fd, uid_t owner, size_t max_windows, gf_ckpt **out, char *why,
                    size_t len);

/* The same from len bytes in memory (copied). */
int gf_ckpt_decode(const void *buf, size_t len, size_t max_windows, gf_ckpt **out, char *why,
                   size_t wlen);

/* Its identity and state (borrowed; a read or decoded checkpoint's arrays
 * live in self, a capture's state has its counts only). */
const gf_ckpt_id *gf_ckpt_identity(const gf_ckpt *self);
const gf_diar_state *gf_ckpt_state(const gf_ckpt *self);

/* Remove path and path.tmp and sync the folder. Returns 0 (also when there
 * was nothing), or GF_EIO with why. Nothing is logged. */
int gf_ckpt_remove(const char *path, char *why, size_t len);

void gf_ckpt_destroy(gf_ckpt **self_p);

#endif
