/* ckdir.h — a job's checkpoints in the spool: the checkpoint folder of a
 * yieldable command job, and the path of a diarize job's checkpoint file.
 *
 * A command job submitted with --yieldable gets $GPUFLOCK_CHECKPOINT_DIR:
 * "<spool_dir>/<id>.ckdir", made by the worker (root) for the job's user,
 * mode 0700, kept across the job's runs (yields, requeues, a worker's
 * death) and removed when the job ends. The spool itself is root's (0711),
 * so no user can make or replace the folder; what the user puts inside is
 * removed without following any symlink (every step relative to a folder
 * opened with O_NOFOLLOW). */
#ifndef GF_CKDIR_H
#define GF_CKDIR_H

#include <stddef.h>
#include <sys/types.h>

/* "<spool>/<id>.ckdir" for a job whose stdout spool file is out_path
 * ("<spool>/<id>.out"). The caller frees. */
char *gf_ckdir_path(const char *out_path);

/* Make the folder (or accept the one an earlier run left: a folder, not a
 * symlink, owned by uid), owned by uid:gid when we are root, mode 0700.
 * Returns 0, or GF_EIO with the reason in why. */
int gf_ckdir_make(const char *path, uid_t uid, gid_t gid, char *why, size_t len);

/* Remove the folder and all in it; a missing folder is fine. Returns 0 or
 * GF_EIO (logged). */
int gf_ckdir_remove(const char *path);

/* "<spool>/<id>.ckpt", a diarize job's checkpoint (diar/ckpt.h), beside
 * out_path ("<spool>/<id>.out"); NULL without one. The caller frees. */
char *gf_ckpt_path(const char *out_path);

/* "<spool>/<id>.outs", the outputs a diarize job has written
 * (common/djouts.h), beside out_path; NULL without one. The caller frees. */
char *gf_outs_path(const char *out_path);

/* A job that has ended for good: remove what its runs kept for the next
 * one, its checkpoint file, its record of outputs written and its
 * checkpoint folder (any may be missing). The worker does it when the job ends on its card; the broker
 * again for a job that ends where no worker runs it (cancelled while
 * pending after a yield, failed for good after its worker died). */
void gf_ckpt_remove_all(const char *out_path);

#endif
