/* proto.h — the wire protocol between gpuflock, gpuflockd and the workers.
 *
 * Every message body is one msgpack map holding "v" (GF_PROTO_VERSION) and
 * "op" (the operation name) plus the fields of that operation. The message
 * set (docs/protocol.md):
 *
 *   client → broker   submit, queue, show, wait, cancel, logs, workers,
 *                     hold, release, requeue, drain, resume, purge
 *   broker → client   ids, jobs, codes, log, workers_list, error
 *   worker → broker   ready, heartbeat, progress, result, disconnect
 *   broker → worker   job, kill, heartbeat, disconnect, error
 *
 * Decoding is strict: a truncated or trailing-garbage frame, a wrong type,
 * a missing required field, an unknown key, an oversize string or array, an
 * unknown version or operation all give GF_EPROTO or GF_ETOOBIG and a
 * message naming the key and the problem; the decoder never asserts on wire
 * data. A pre-scan of the raw bytes bounds every container count by the
 * bytes that remain, so a hostile header cannot make msgpack-c allocate
 * gigabytes.
 *
 * gf_msg is one flat struct for all operations (each operation uses the
 * fields its table names; the rest stay zero). Keys added after version 1
 * (the diarize record "diar" of a spec, a job's "progress_done"/"progress_total",
 * a progress message's "done"/"total") are optional and written only when
 * set, so command jobs travel and are stored exactly as before; a peer
 * without them refuses such a message naming the key. Strings and arrays in a
 * decoded gf_msg are owned by it and freed by gf_msg_clear. */
#ifndef GF_PROTO_H
#define GF_PROTO_H

#include "common/card.h"
#include "common/version.h"

#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define GF_PROTO_VERSION GF_PROTOCOL_VERSION

/* Limits: anything larger is refused with GF_ETOOBIG. */
#define GF_PROTO_MAX_FRAME   (64u << 20)  /* bytes in one message body */
#define GF_PROTO_MAX_STR     65536u       /* bytes in one argv/env string */
#define GF_PROTO_MAX_PATH    4096u        /* bytes in a path */
#define GF_PROTO_MAX_NAME    256u         /* bytes in a job name, key, op */
#define GF_PROTO_MAX_TEXT    65536u       /* bytes in a message or reason */
#define GF_PROTO_MAX_ARGV    4096u        /* arguments of one command */
#define GF_PROTO_MAX_ENV     8192u        /* environment entries */
#define GF_PROTO_MAX_IDS     1000000u     /* ids in one wait/cancel/reply */
#define GF_PROTO_MAX_BATCH   1000000u     /* jobs in one submit */
#define GF_PROTO_MAX_JOBS    1000000u     /* jobs in one reply */
#define GF_PROTO_MAX_STATS   1024u        /* entries in a statistics map */
#define GF_PROTO_MAX_CARDS   64u          /* cards of one job, workers listed */
#define GF_PROTO_MAX_GROUPS  1024u        /* supplementary groups */
#define GF_PROTO_MAX_BIN     (4u << 20)   /* bytes of log data in one reply */
#define GF_PROTO_MAX_PLAN    (1u << 20)   /* bytes of a route plan */
#define GF_PROTO_MAX_DEPTH   6            /* nesting of maps and arrays */

typedef enum {
    GF_OP_NONE = 0,
    /* client requests */
    GF_OP_SUBMIT, GF_OP_QUEUE, GF_OP_SHOW, GF_OP_WAIT, GF_OP_CANCEL,
    GF_OP_LOGS, GF_OP_WORKERS,
    GF_OP_HOLD, GF_OP_RELEASE, GF_OP_REQUEUE, GF_OP_DRAIN, GF_OP_RESUME,
    GF_OP_PURGE,
    /* broker replies to clients */
    GF_OP_IDS, GF_OP_JOBS, GF_OP_CODES, GF_OP_LOG, GF_OP_WORKERS_LIST,
    GF_OP_ERROR,
    /* worker lifecycle */
    GF_OP_READY, GF_OP_HEARTBEAT, GF_OP_JOB, GF_OP_PROGRESS, GF_OP_RESULT,
    GF_OP_KILL, GF_OP_DISCONNECT,
    GF_OP_COUNT_,
} gf_op;

typedef enum { GF_JOB_COMMAND = 0, GF_JOB_DIARIZE = 1 } gf_job_kind;
typedef enum { GF_REQ_ANY = 0, GF_REQ_GPU = 1, GF_REQ_GPUS = 2 } gf_req_kind;
typedef enum { GF_MODE_EXCLUSIVE = 0, GF_MODE_SHARED = 1 } gf_job_mode;
typedef enum {
    GF_STATE_PENDING = 0, GF_STATE_RUNNING = 1, GF_STATE_DONE = 2,
    GF_STATE_FAILED = 3, GF_STATE_CANCELLED = 4,
} gf_job_state;
typedef enum { GF_STREAM_OUT = 0, GF_STREAM_ERR = 1 } gf_stream;
/* What a kill asks of a running job (its "mode"). */
typedef enum {
    GF_KILL_STOP = 0,      /* cancel, time limit: SIGTERM, SIGKILL after grace_s */
    GF_KILL_YIELD = 1,     /* give the card back and come again: a diarize job checkpoints
                            * at its next batch boundary; a yieldable command job gets its
                            * signal and yield_grace_s; any other job is left alone */
    GF_KILL_RECALL = 2,    /* a job waiting ahead that has not started: hand it back */
    GF_KILL_REQUEUE = 3,   /* as yield, but a job that cannot checkpoint is stopped */
} gf_kill_mode;
/* How a run ended, beside its exit status (a result's "outcome"). */
typedef enum {
    GF_OUTCOME_ENDED = 0,      /* it ran to its end (or was stopped) */
    GF_OUTCOME_YIELDED = 1,    /* it checkpointed and gave the card back, to run again */
    GF_OUTCOME_RECALLED = 2,   /* it was handed back before it started */
} gf_outcome;
/* The exit status by which a yieldable command job says "my state is in
 * $GPUFLOCK_CHECKPOINT_DIR: run me again" (docs/operations.md). */
#define GF_EXIT_CHECKPOINTED 85

/* One entry of a statistics map: an integer or a float counter. */
typedef struct {
    char *key;            /* "segmentation.device_ns.total", ... */
    bool is_float;        /* which of i / f holds the value */
    int64_t i;
    double f;
} gf_stat;

/* The parameters of a diarize job: one recording through the built-in
 * pipeline (diar/pipeline.h), run inside the worker. Paths are
 * absolute (the broker refuses relative ones): the worker has its own cwd. */
typedef struct {
    char *audio;          /* the recording */
    char *rttm;           /* the RTTM to write (temporary file + rename) */
    bool json;            /* also NAME.json beside the RTTM (turns, mode, timings) */
    char *intermediates;  /* --save-intermediates DIR, NULL: none */
    char *models;         /* models directory, NULL: the worker's models_dir */
    int32_t num_speakers; /* 0: not fixed */
    int32_t min_speakers; /* 0: no lower bound */
    int32_t max_speakers; /* 0: no upper bound */
    bool overwrite;       /* replace outputs already there (false: such a file fails the job,
                           * kept as it is) */
    /* the community-1 knobs (pyannote's names in docs/diarization.md); 0 (false): the
     * recipe's value. The broker refuses values out of range. */
    double threshold;     /* clustering.threshold, the AHC cut (0.6) */
    double fa, fb;        /* clustering.Fa, clustering.Fb: VBx (0.07, 0.8) */
    double min_duration_off; /* segmentation.min_duration_off, seconds (0) */
    double segmentation_step; /* segmentation_step, of the 10 s window (0: 0.1) */
    bool keep_overlap;    /* embedding_exclude_overlap false: embeddings from every active
                           * frame, overlapped ones too */
    bool exclusive;       /* also NAME.exclusive.rttm beside the RTTM */
    bool speakers;        /* also NAME.speakers.npy (speakers' centroid embeddings) */
} gf_diar_spec;

/* What a submitter asks for: one command or diarize job. */
typedef struct {
    gf_job_kind kind;     /* command, or diarize (then diar is set) */
    char **argv;          /* the command and its arguments, argc >= 1 */
    size_t argc;
    char *cwd;            /* submitter's working directory */
    char **env;           /* "NAME=VALUE" entries, the submitter's environment */
    size_t n_env;
    gf_req_kind req;      /* any card, one named card, or several */
    int32_t gpu;          /* GF_REQ_GPU: the card index */
    int32_t gpus;         /* GF_REQ_GPUS: how many cards, all or none */
    gf_job_mode mode;    /* exclusive (default) or shared */
    bool proof;           /* also the bench lock; scrub proof.scrub_env */
    int32_t priority;     /* higher first */
    int64_t time_limit_s; /* 0: none; past it SIGTERM then SIGKILL */
    uint64_t *after;      /* run only after these ended successfully */
    size_t n_after;
    char *name;           /* display name, may be NULL */
    bool no_requeue;      /* fail at once when its worker dies */
    int64_t array_index;  /* GPUFLOCK_ARRAY_INDEX, -1: not an array job */
    int32_t yield_sig;    /* command job: yieldable, this signal asks it to checkpoint; 0 not */
    int32_t yield_grace_s; /* seconds from yield_sig to SIGKILL */
    bool hold;            /* submit: held until released */
    gf_diar_spec *diar;   /* kind diarize: its parameters (owned); NULL otherwise */
    char *notify;         /* a shell command run as the submitter once the job has ended
                           * (submit --notify); NULL: none */
} gf_job_spec;

/* Which jobs a queue or cancel asks about: every condition given must hold;
 * one left out (empty, NULL, 0) holds for every job. */
typedef struct {
    uint32_t *users;      /* the submitter is one of these uids */
    size_t n_users;
    char **states;        /* the state is one of these names ("pending", ...) */
    size_t n_states;
    char *name;           /* the job's name is exactly this */
    int64_t since_ms;     /* not ended, or ended at or after this (ms since the epoch) */
    int32_t *cards;       /* it runs or ran on one of these cards */
    size_t n_cards;
} gf_job_filter;

/* A job as the broker knows it (store rows, queue/show replies). */
typedef struct {
    uint64_t id;
    gf_job_spec spec;
    gf_job_state state;
    uint32_t uid;         /* submitter, from the connection's credentials */
    uint32_t gid;
    char *user;           /* submitter's user name, for display */
    int32_t attempts;     /* runs started so far */
    int64_t submitted_ms; /* wall clock, ms since the epoch; 0: not yet */
    int64_t started_ms;
    int64_t ended_ms;
    int32_t *cards;       /* cards it runs (ran) on, ascending */
    size_t n_cards;
    int32_t exit_status;  /* the command's exit status, -1: none */
    int32_t term_signal;  /* signal that killed it, 0: none */
    int64_t cpu_user_ms;  /* CPU time of the job's process tree */
    int64_t cpu_sys_ms;
    int64_t maxrss_kb;    /* peak resident memory */
    char *reason;         /* why it waits, or why it failed/was cancelled */
    char *out_path;       /* spool file for stdout */
    char *err_path;       /* spool file for stderr */
    gf_stat *stats;       /* statistics reported by the worker */
    size_t n_stats;
    int64_t progress_done;  /* diarize: windows done (last PROGRESS), 0: none yet */
    int64_t progress_total; /* diarize: windows in the recording, 0: unknown */
    bool held;            /* held: stays pending until released */
    uint32_t held_by;     /* held: by this uid (its owner, or root) */
    int32_t yields;       /* runs that ended by yield, requeue or recall (not failures: not
                           * counted against broker.max_attempts) */
} gf_job;

/* A job a worker already runs (ready, after a broker restart). */
typedef struct {
    uint64_t id;
    int32_t attempt;
    int32_t pid;          /* the job's process group leader; 0: not started, or ended */
    int64_t started_ms;
    bool done;            /* ended there; its result is being sent again */
} gf_running;

/* One worker as `gpuflock workers` shows it. */
typedef struct {
    int32_t device;       /* configured device index */
    gf_card_identity card;
    char *state;          /* "idle", "busy", "dead", "starting" */
    int32_t pid;          /* worker process id, 0: unknown */
    uint64_t *jobs;       /* jobs it runs now */
    size_t n_jobs;
    char *plan;           /* route plan summary */
    char *supervision;    /* how it supervises command jobs, from its ready; may be NULL */
    char *drain;          /* "draining" or "drained" by the operator, NULL: in service */
    char *drain_reason;   /* the operator's --reason, may be NULL */
    gf_stat *stats;       /* checkpoint statistics of its jobs summed since gpuflockd started */
    size_t n_stats;
    int64_t last_seen_ms; /* wall clock of its last message */
} gf_worker_info;

/* Any message; `op` says which fields are meaningful (docs/protocol.md). */
typedef struct {
    gf_op op;
    /* submit */
    gf_job_spec spec;     /* submit, job */
    uint32_t array;       /* submit: N jobs with array_index 0..N-1 */
    char **commands;      /* submit --file: one job per line (sh -c) */
    size_t n_commands;
    /* ids and selection */
    uint64_t id;          /* show, logs, job, progress, result, kill */
    uint64_t *ids;        /* wait, cancel, ids */
    size_t n_ids;
    bool all;             /* queue: ended jobs too */
    gf_job_filter *filter; /* queue, cancel: only the jobs it selects (owned); NULL: none */
    int64_t before_ms;    /* purge: ended jobs that ended before this; 0: every ended job */
    bool checkpoint;      /* cancel: a yieldable running job checkpoints and is held instead */
    int64_t timeout_ms;   /* wait: 0 = until they end */
    /* logs */
    gf_stream stream;     /* logs: stdout or stderr */
    uint64_t offset;      /* logs: from this byte; log: next offset */
    uint8_t *data;        /* log: bytes */
    size_t data_len;
    bool eof;             /* log: the job has ended and data is all */
    /* replies */
    gf_job *jobs;         /* jobs */
    size_t n_jobs;
    int32_t *codes;       /* codes: one result per id of a cancel */
    size_t n_codes;
    gf_worker_info *workers; /* workers_list */
    size_t n_workers;
    int32_t code;         /* error: a GF_E* code */
    char *message;        /* error, disconnect, kill, progress: text */
    /* worker lifecycle */
    int32_t device;       /* ready: the configured device index */
    int32_t pid;          /* ready: worker pid; progress: job pgid */
    gf_card_identity card; /* ready */
    char *plan;           /* ready: route plan, may be NULL */
    char *supervision;    /* ready: "cgroup <folder>" or "process group: ..." (may be NULL) */
    gf_running *running;  /* ready: jobs still running from before */
    size_t n_running;
    int32_t attempt;      /* job, progress, result, kill */
    uint32_t uid;         /* job: run as */
    uint32_t gid;
    uint32_t *groups;     /* job: supplementary groups */
    size_t n_groups;
    char *out_path;       /* job: spool files */
    char *err_path;
    char **locks;         /* job: lock files, ascending card order */
    size_t n_locks;
    int32_t *cards;       /* job: card indices, ascending */
    size_t n_cards;
    char *visible;        /* job: CUDA_VISIBLE_DEVICES value */
    int32_t grace_s;      /* kill: SIGTERM → SIGKILL delay */
    gf_kill_mode kill_mode; /* kill: stop, yield, recall or requeue */
    gf_outcome outcome;   /* result: ended, yielded or recalled */
    /* result */
    int32_t exit_status;  /* -1: none (killed or never started) */
    int32_t term_signal;
    int64_t started_ms;   /* progress, result */
    int64_t ended_ms;
    int64_t cpu_user_ms;
    int64_t cpu_sys_ms;
    int64_t maxrss_kb;
    gf_stat *stats;
    size_t n_stats;
    int64_t done;         /* progress: diarize windows done, 0: none */
    int64_t total;        /* progress: diarize windows in all, 0: none */
} gf_msg;

/* Operation name ("submit") or NULL for an unknown op. */
const char *gf_proto_op_name(gf_op op);

/* Encode msg into a new buffer (*buf, freed with free()). Returns 0, or
 * GF_ETOOBIG / GF_EINVAL when the message breaks a limit or names an
 * unknown op (a bug of the sender, reported not asserted). */
int gf_proto_encode(const gf_msg *msg, uint8_t **buf, size_t *len);

/* Decode one message body. On success returns 0 and fills *out (cleared
 * first; the caller calls gf_msg_clear). On failure returns GF_EPROTO or
 * GF_ETOOBIG, leaves *out cleared and writes a message naming the problem
 * into err (errlen bytes, may be 0): valid UTF-8, the bytes it quotes from
 * buf escaped as \xNN. */
int gf_proto_decode(const void *buf, size_t len, gf_msg *out, char *err,
                    size_t errlen);

/* Free everything a message owns and zero it; safe twice. */
void gf_msg_clear(gf_msg *msg);

/* Deep copy of src into dst (dst is overwritten, not freed): its op and
 * the fields its op's table names, which are what travels, each string,
 * array and record copied (dst shares no pointer with src); every other
 * field zero, as after a decode. The caller clears dst (gf_msg_clear). */
void gf_msg_copy(gf_msg *dst, const gf_msg *src);

/* An "error" reply: op GF_OP_ERROR, the code, and the printf-formatted
 * message (allocated; gf_msg_clear frees it), with any byte that is not
 * valid UTF-8 written as \xNN (common/utf8.h): it may quote a peer. */
void gf_msg_errorv(gf_msg *msg, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Initialise spec with the defaults (exclusive, any card, no array). */
void gf_job_spec_init(gf_job_spec *spec);
/* Free what spec owns and zero it. */
void gf_job_spec_clear(gf_job_spec *spec);
/* Free spec's environment only (no entries afterwards). */
void gf_job_spec_drop_env(gf_job_spec *spec);
/* Deep copy of src into dst (dst is overwritten, not freed). */
void gf_job_spec_copy(gf_job_spec *dst, const gf_job_spec *src);
/* Initialise / free / deep-copy a job record. */
void gf_job_init(gf_job *job);
void gf_job_clear(gf_job *job);
void gf_job_copy(gf_job *dst, const gf_job *src);

/* Names of enum values as they travel ("pending", "x", "any"...). */
const char *gf_job_state_name(gf_job_state s);
int gf_job_state_parse(const char *name, gf_job_state *out);

#endif
