/* jobckpt.h — a diarize run's checkpoints: a worker's diarize job
 * (worker/diarjob.c), or a call of the library with a checkpoint file
 * (api/diarize.c: `gpuflock diarize --local --checkpoint-dir`, a Slurm
 * task of `diarize --slurm`).
 *
 * The caller makes one per run and puts it behind the pipeline's two
 * hooks (gf_diar_run_opts.resume and .boundary, pipeline.h):
 *   - resume: the checkpoint an earlier attempt of the job left in the spool
 *     (<spool_dir>/<id>.ckpt, diar/ckpt.h) is read, checked and its
 *     identity compared with this attempt's; when they match the run goes on
 *     from its last window, else the job's stderr and the worker's log say
 *     why it is not reused ("checkpoint not reused: audio file changed
 *     (...)") and the run starts at the first window;
 *   - boundary: every `every_s` seconds (worker.checkpoint_s) the state is
 *     captured, i.e. copied, on the job's thread and handed to a writer
 *     thread that writes it durably (digest, write, fsync, rename, fsync of
 *     the folder), so the pipeline never waits on the disk; a capture is
 *     skipped while the previous write still runs or while the audio's
 *     digest is not ready, and checkpoints come less often than every_s
 *     when the copy (of the windows since the last capture: it reuses the
 *     last image) would take over 1 % of the time between two, or the
 *     write of the whole state over 10 %, each predicted from the last. Asked to yield, it captures at once and waits
 *     until that checkpoint is on disk;
 *   - the audio's SHA-256, part of the identity, is computed on a thread of
 *     its own while the job runs (an hour of 16 kHz audio is ~115 MB): off
 *     the pipeline's path, except that a resumed attempt waits for it before
 *     it trusts the checkpoint.
 * The writer thread keeps the file identity of the thread that made the
 * object, and an earlier attempt's checkpoint is opened there and then:
 * make it before the job's thread takes the submitter's (the spool folder
 * is the worker's); each file is handed to the job's owner, mode 0600, and
 * one read back must be theirs. The audio is hashed as the thread that
 * calls gf_jobckpt_begin (the submitter).
 *
 * Statistics: rows checkpoint.capture and checkpoint.restore in the job's
 * devstats (no device time: the per-window results are host memory on
 * every card, so the row is "unavailable" with the caller's reason; bytes
 * and copies), and the host counters below. */
#ifndef GF_JOBCKPT_H
#define GF_JOBCKPT_H

#include "common/devstats.h"
#include "diar/ckpt.h"
#include "diar/pipeline.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    const char *path;      /* the checkpoint file, <spool_dir>/<id>.ckpt (copied) */
    uint64_t job;          /* job id, for the log */
    const char *who;       /* how the log names it (copied); NULL: "job <job>" */
    uid_t uid;             /* owner of the file: the job's user */
    gid_t gid;
    int every_s;           /* worker.checkpoint_s: seconds between checkpoints; 0: only
                              when yielding */
    int err_fd;            /* the job's stderr spool, -1: none (borrowed) */
    gf_devstats *stats;    /* the job's table (borrowed; written on the job's thread only) */
} gf_jobckpt_conf;

typedef struct {
    uint64_t written;      /* checkpoints made durable */
    uint64_t failed;       /* writes that failed (the previous checkpoint stays) */
    uint64_t skipped;      /* periodic captures not taken: a write still running, or the
                              audio's digest not ready */
    uint64_t bytes;        /* bytes written, all checkpoints */
    uint64_t capture_ns;   /* host time copying the state (the job's thread) */
    uint64_t write_ns;     /* host time computing the digest, creating and writing (the
                              writer's thread) */
    uint64_t fsync_ns;     /* host time in fsync of the file, rename, fsync of the folder */
    uint64_t restore_ns;   /* host time reading and checking a checkpoint (the job's thread;
                              waiting for the audio's digest included) */
    uint64_t digest_ns;    /* host time hashing the audio (its own thread) */
    size_t resumed_at;     /* windows taken from a checkpoint; 0: started at the first */
    bool refused;          /* a checkpoint was there and was not reused */
} gf_jobckpt_stats;

typedef struct gf_jobckpt gf_jobckpt;

/* Starts the writer thread (see above for its file identity). */
gf_jobckpt *gf_jobckpt_new(const gf_jobckpt_conf *conf);

/* This attempt's identity (every field but the audio's, which the hash
 * thread started here fills in), the audio file, the pipeline's batch
 * size, and the devstats route and reason of the checkpoint rows ("cpu",
 * "cpu card"). Call as the submitter, before gf_diar_run. */
void gf_jobckpt_begin(gf_jobckpt *self, const gf_ckpt_id *id, const char *audio, int batch,
                      const char *route, const char *reason);

/* The resume hook: the state of a matching checkpoint (valid until
 * destroy), or NULL after saying why an existing one is not reused. */
const gf_diar_state *gf_jobckpt_resume(gf_jobckpt *self, size_t total_windows);

/* The boundary hook's work. yield false: a periodic checkpoint when one is
 * due (returns false). yield true: a checkpoint now, waited for; returns
 * true when it is on disk. */
bool gf_jobckpt_boundary(gf_jobckpt *self, const gf_diar_state *st, bool yield);

/* The run is over: a write not yet started is dropped, one under way is
 * waited for, so that the counts are final. */
void gf_jobckpt_settle(gf_jobckpt *self);

/* The job ended: keep false (done, failed, cancelled) removes the file,
 * true (yielded) keeps it for the next attempt. Stops the writer. */
void gf_jobckpt_end(gf_jobckpt *self, bool keep);

/* The counts so far. */
void gf_jobckpt_counts(gf_jobckpt *self, gf_jobckpt_stats *out);

/* Stops the threads (keeping the file when gf_jobckpt_end was not called),
 * frees. Safe with NULL and twice. */
void gf_jobckpt_destroy(gf_jobckpt **self_p);

/* The identity of a run of pipeline d with o (ckpt.h's fields but the
 * audio's, which gf_jobckpt_begin's hash thread fills in): job names the run
 * (a job id; a local run's output file), math and overlap as the card runs
 * them ("fp32" or "tf32"; "on", "off", or "-" off a card), the two network
 * files' digests ("-" weight-free). The logits are kept when o->save_dir is
 * set in neural mode. The CPU networks' results do not depend on the thread
 * count (tests/unit/test_segmentation.c), and the PLDA only enters the
 * clustering, which a resumed run does again: neither is in it. */
void gf_jobckpt_identity(gf_ckpt_id *id, const gf_diar *d, const gf_diar_run_opts *o,
                         const char *job, const char *math, const char *overlap,
                         const char *seg_sha, const char *emb_sha);

/* The program and libraries fields of an identity for this process:
 * "gpuflock 0.1.0 build <GNU build id>" and the decoder's, resampler's and
 * BLAS's versions, which decide the samples and the CPU networks' bits. */
void gf_jobckpt_program(gf_ckpt_id *id);

#endif
