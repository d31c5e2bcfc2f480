/* djouts.h — the outputs a diarize job has written, so that a later
 * attempt of the same job may write them again.
 *
 * Without --overwrite a diarize job never replaces a file (cli/diarout.h):
 * but a job whose worker died after writing its RTTM and before the broker
 * recorded the result runs again and finds its own outputs there. Each
 * output written is recorded (device, inode, size, modification time, path)
 * in the job's spool file
 * "<spool>/<id>.outs" (common/ckdir.h), made by the worker as root before
 * the job's thread takes the submitter's identity, so no user can make or
 * change it; a later attempt replaces exactly the files it recorded, still
 * as they were written, and nothing else. The record goes when the job ends
 * for good (the worker, or the broker for a job that ended elsewhere). */
#ifndef GF_DJOUTS_H
#define GF_DJOUTS_H

#include <stdbool.h>

typedef struct gf_djouts gf_djouts;

/* Open (or make, mode 0600) the record beside the job's spool file
 * out_path and read what earlier attempts wrote. NULL when there is no
 * spool, or when the record there is not a regular file of this process's
 * user (a link is not followed; one another user made in a folder they may
 * write is not trusted): then nothing is recorded and nothing counts as the
 * job's own. */
gf_djouts *gf_djouts_open(const char *out_path);

/* Whether path is a file this job wrote (an earlier attempt, or this one),
 * as it was written: the same device, inode, size and modification time. */
bool gf_djouts_ours(const gf_djouts *self, const char *path);

/* Record path (just written): in the spool file, and as this attempt's
 * own (gf_djouts_ours). Returns 0, or GF_EIO (logged). */
int gf_djouts_add(gf_djouts *self, const char *path);

/* Close; with remove, the record goes too (the job has ended for good). */
void gf_djouts_close(gf_djouts **self_p, bool remove);

#endif
