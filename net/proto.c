/* proto.c — the msgpack codec of gpuflock's message set (see proto.h).
 *
 * Each operation is described once, by a table of fields (key, type,
 * where it lives in gf_msg, limits, required or not); nested records
 * (job spec, job, card identity, worker, running job) have tables of their
 * own. One table drives the encoder (msgpack-c's packer), the decoder and
 * the destructor, so the three cannot disagree.
 *
 * The decoder reads the msgpack bytes with its own bounds-checked cursor
 * rather than msgpack_unpack: msgpack-c allocates a container's elements
 * from the count in its header before reading them, so a 5-byte header can
 * ask for gigabytes. Here every container count is checked against the
 * bytes that remain and against the field's limit, arrays grow only as their
 * elements actually decode, and the reader descends only where a table
 * says a nested record is, so hostile nesting cannot recurse. */
#include "net/proto.h"

#include "common/error.h"
#include "common/utf8.h"
#include "common/util.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tables */

typedef enum {
    F_STR,      /* char *, NULL travels as nil when optional */
    F_CHARS,    /* char[limit + 1] inside the record */
    F_BOOL,
    F_I32, F_I64, F_U32, F_U64,
    F_SIZE,     /* size_t, travels as an unsigned integer */
    F_ENUM,     /* int-sized enum, travels as one of names[] */
    F_STRV,     /* char ** + size_t count */
    F_U64V,     /* uint64_t * + count */
    F_I32V,     /* int32_t * + count */
    F_U32V,     /* uint32_t * + count */
    F_BIN,      /* uint8_t * + size_t length */
    F_STRUCT,   /* nested record inside this one */
    F_STRUCTV,  /* pointer to an array of records + count */
    F_STATS,    /* gf_stat * + count: a map of name → integer or float */
    F_OPTREC,   /* pointer to one nested record, NULL: the key is left out */
} ftype;

typedef struct field {
    const char *key;
    ftype type;
    bool required;
    size_t off;                 /* offset of the value (or pointer) */
    size_t count_off;           /* vectors: offset of the size_t count */
    size_t limit;               /* string bytes, or element count */
    size_t slimit;              /* F_STRV: bytes per string */
    size_t elem_size;           /* F_STRUCTV: sizeof one record */
    const struct field *sub;    /* F_STRUCT(V): the record's table */
    const char *const *names;   /* F_ENUM: value names, NULL-terminated */
    int64_t def;                /* numbers: value when the key is absent */
    bool omit;                  /* encoder leaves the key out while it holds
                                 * its default (0/def, false, NULL): keys added
                                 * after version 1 (see proto.h) */
} field;

#define AT(st, m) offsetof(st, m)
#define END { NULL, 0, false, 0, 0, 0, 0, 0, NULL, NULL, 0, false }

static const char *const kind_names[] = { "command", "diarize", NULL };
static const char *const req_names[] = { "any", "gpu", "gpus", NULL };
static const char *const mode_names[] = { "x", "s", NULL };
static const char *const state_names[] = { "pending", "running", "done", "failed",
                                           "cancelled", NULL };
static const char *const stream_names[] = { "out", "err", NULL };
static const char *const devkind_names[] = { "cpu", "cuda", NULL };
static const char *const kill_mode_names[] = { "stop", "yield", "recall", "requeue", NULL };
static const char *const outcome_names[] = { "ended", "yielded", "recalled", NULL };

static const field diar_fields[] = {
    { .key = "audio", .type = F_STR, .required = true, .off = AT(gf_diar_spec, audio),
      .limit = GF_PROTO_MAX_PATH },
    { .key = "rttm", .type = F_STR, .required = true, .off = AT(gf_diar_spec, rttm),
      .limit = GF_PROTO_MAX_PATH },
    { .key = "json", .type = F_BOOL, .off = AT(gf_diar_spec, json) },
    { .key = "intermediates", .type = F_STR, .off = AT(gf_diar_spec, intermediates),
      .limit = GF_PROTO_MAX_PATH },
    { .key = "models", .type = F_STR, .off = AT(gf_diar_spec, models), .limit = GF_PROTO_MAX_PATH },
    { .key = "num_speakers", .type = F_I32, .off = AT(gf_diar_spec, num_speakers) },
    { .key = "min_speakers", .type = F_I32, .off = AT(gf_diar_spec, min_speakers) },
    { .key = "max_speakers", .type = F_I32, .off = AT(gf_diar_spec, max_speakers) },
    END,
};

static const field spec_fields[] = {
    { .key = "kind", .type = F_ENUM, .off = AT(gf_job_spec, kind), .names = kind_names },
    { .key = "argv", .type = F_STRV, .required = true, .off = AT(gf_job_spec, argv),
      .count_off = AT(gf_job_spec, argc), .limit = GF_PROTO_MAX_ARGV, .slimit = GF_PROTO_MAX_STR },
    { .key = "cwd", .type = F_STR, .off = AT(gf_job_spec, cwd), .limit = GF_PROTO_MAX_PATH },
    { .key = "env", .type = F_STRV, .off = AT(gf_job_spec, env), .count_off = AT(gf_job_spec, n_env),
      .limit = GF_PROTO_MAX_ENV, .slimit = GF_PROTO_MAX_STR },
    { .key = "req", .type = F_ENUM, .off = AT(gf_job_spec, req), .names = req_names },
    { .key = "gpu", .type = F_I32, .off = AT(gf_job_spec, gpu) },
    { .key = "gpus", .type = F_I32, .off = AT(gf_job_spec, gpus) },
    { .key = "mode", .type = F_ENUM, .off = AT(gf_job_spec, mode), .names = mode_names },
    { .key = "proof", .type = F_BOOL, .off = AT(gf_job_spec, proof) },
    { .key = "priority", .type = F_I32, .off = AT(gf_job_spec, priority) },
    { .key = "time", .type = F_I64, .off = AT(gf_job_spec, time_limit_s) },
    { .key = "after", .type = F_U64V, .off = AT(gf_job_spec, after),
      .count_off = AT(gf_job_spec, n_after), .limit = GF_PROTO_MAX_IDS },
    { .key = "name", .type = F_STR, .off = AT(gf_job_spec, name), .limit = GF_PROTO_MAX_NAME },
    { .key = "no_requeue", .type = F_BOOL, .off = AT(gf_job_spec, no_requeue) },
    { .key = "array_index", .type = F_I64, .off = AT(gf_job_spec, array_index), .def = -1 },
    { .key = "yield_sig", .type = F_I32, .off = AT(gf_job_spec, yield_sig), .omit = true },
    { .key = "yield_grace_s", .type = F_I32, .off = AT(gf_job_spec, yield_grace_s), .omit = true },
    { .key = "hold", .type = F_BOOL, .off = AT(gf_job_spec, hold), .omit = true },
    { .key = "diar", .type = F_OPTREC, .off = AT(gf_job_spec, diar), .omit = true,
      .elem_size = sizeof(gf_diar_spec), .sub = diar_fields },
    END,
};

static const field job_fields[] = {
    { .key = "id", .type = F_U64, .required = true, .off = AT(gf_job, id) },
    { .key = "spec", .type = F_STRUCT, .required = true, .off = AT(gf_job, spec),
      .sub = spec_fields },
    { .key = "state", .type = F_ENUM, .required = true, .off = AT(gf_job, state),
      .names = state_names },
    { .key = "uid", .type = F_U32, .off = AT(gf_job, uid) },
    { .key = "gid", .type = F_U32, .off = AT(gf_job, gid) },
    { .key = "user", .type = F_STR, .off = AT(gf_job, user), .limit = GF_PROTO_MAX_NAME },
    { .key = "attempts", .type = F_I32, .off = AT(gf_job, attempts) },
    { .key = "submitted", .type = F_I64, .off = AT(gf_job, submitted_ms) },
    { .key = "started", .type = F_I64, .off = AT(gf_job, started_ms) },
    { .key = "ended", .type = F_I64, .off = AT(gf_job, ended_ms) },
    { .key = "cards", .type = F_I32V, .off = AT(gf_job, cards), .count_off = AT(gf_job, n_cards),
      .limit = GF_PROTO_MAX_CARDS },
    { .key = "exit", .type = F_I32, .off = AT(gf_job, exit_status), .def = -1 },
    { .key = "signal", .type = F_I32, .off = AT(gf_job, term_signal) },
    { .key = "cpu_user_ms", .type = F_I64, .off = AT(gf_job, cpu_user_ms) },
    { .key = "cpu_sys_ms", .type = F_I64, .off = AT(gf_job, cpu_sys_ms) },
    { .key = "maxrss_kb", .type = F_I64, .off = AT(gf_job, maxrss_kb) },
    { .key = "reason", .type = F_STR, .off = AT(gf_job, reason), .limit = GF_PROTO_MAX_TEXT },
    { .key = "out", .type = F_STR, .off = AT(gf_job, out_path), .limit = GF_PROTO_MAX_PATH },
    { .key = "err", .type = F_STR, .off = AT(gf_job, err_path), .limit = GF_PROTO_MAX_PATH },
    { .key = "stats", .type = F_STATS, .off = AT(gf_job, stats), .count_off = AT(gf_job, n_stats),
      .limit = GF_PROTO_MAX_STATS },
    { .key = "progress_done", .type = F_I64, .off = AT(gf_job, progress_done), .omit = true },
    { .key = "progress_total", .type = F_I64, .off = AT(gf_job, progress_total), .omit = true },
    { .key = "held", .type = F_BOOL, .off = AT(gf_job, held), .omit = true },
    { .key = "held_by", .type = F_U32, .off = AT(gf_job, held_by), .omit = true },
    { .key = "yields", .type = F_I32, .off = AT(gf_job, yields), .omit = true },
    END,
};

static const field card_fields[] = {
    { .key = "index", .type = F_I32, .required = true, .off = AT(gf_card_identity, index) },
    { .key = "kind", .type = F_ENUM, .required = true, .off = AT(gf_card_identity, kind),
      .names = devkind_names },
    { .key = "name", .type = F_CHARS, .required = true, .off = AT(gf_card_identity, name),
      .limit = sizeof(((gf_card_identity *)0)->name) - 1 },
    { .key = "uuid", .type = F_CHARS, .required = true, .off = AT(gf_card_identity, uuid),
      .limit = sizeof(((gf_card_identity *)0)->uuid) - 1 },
    { .key = "cc_major", .type = F_I32, .off = AT(gf_card_identity, cc_major) },
    { .key = "cc_minor", .type = F_I32, .off = AT(gf_card_identity, cc_minor) },
    { .key = "sm_count", .type = F_I32, .off = AT(gf_card_identity, sm_count) },
    { .key = "total_mem", .type = F_SIZE, .off = AT(gf_card_identity, total_mem) },
    { .key = "l2_bytes", .type = F_I32, .off = AT(gf_card_identity, l2_bytes) },
    { .key = "smem_optin", .type = F_I32, .off = AT(gf_card_identity, smem_optin) },
    { .key = "driver_version", .type = F_I32, .off = AT(gf_card_identity, driver_version) },
    END,
};

static const field running_fields[] = {
    { .key = "id", .type = F_U64, .required = true, .off = AT(gf_running, id) },
    { .key = "attempt", .type = F_I32, .required = true, .off = AT(gf_running, attempt) },
    { .key = "pid", .type = F_I32, .required = true, .off = AT(gf_running, pid) },
    { .key = "started", .type = F_I64, .off = AT(gf_running, started_ms) },
    { .key = "done", .type = F_BOOL, .off = AT(gf_running, done) },
    END,
};

static const field worker_fields[] = {
    { .key = "device", .type = F_I32, .required = true, .off = AT(gf_worker_info, device) },
    { .key = "card", .type = F_STRUCT, .required = true, .off = AT(gf_worker_info, card),
      .sub = card_fields },
    { .key = "state", .type = F_STR, .required = true, .off = AT(gf_worker_info, state),
      .limit = GF_PROTO_MAX_NAME },
    { .key = "pid", .type = F_I32, .off = AT(gf_worker_info, pid) },
    { .key = "jobs", .type = F_U64V, .off = AT(gf_worker_info, jobs),
      .count_off = AT(gf_worker_info, n_jobs), .limit = GF_PROTO_MAX_IDS },
    { .key = "plan", .type = F_STR, .off = AT(gf_worker_info, plan), .limit = GF_PROTO_MAX_PLAN },
    { .key = "supervision", .type = F_STR, .off = AT(gf_worker_info, supervision),
      .limit = GF_PROTO_MAX_TEXT },
    { .key = "drain", .type = F_STR, .off = AT(gf_worker_info, drain), .limit = GF_PROTO_MAX_NAME,
      .omit = true },
    { .key = "drain_reason", .type = F_STR, .off = AT(gf_worker_info, drain_reason),
      .limit = GF_PROTO_MAX_TEXT, .omit = true },
    { .key = "stats", .type = F_STATS, .off = AT(gf_worker_info, stats),
      .count_off = AT(gf_worker_info, n_stats), .limit = GF_PROTO_MAX_STATS, .omit = true },
    { .key = "last_seen", .type = F_I64, .off = AT(gf_worker_info, last_seen_ms) },
    END,
};

/* Fields of gf_msg, shared by the op tables below. */
#define M(m) AT(gf_msg, m)
#define MF_SPEC(req)  { .key = "spec", .type = F_STRUCT, .required = req, .off = M(spec), .sub = spec_fields }
#define MF_ID         { .key = "id", .type = F_U64, .required = true, .off = M(id) }
#define MF_IDS(req)   { .key = "ids", .type = F_U64V, .required = req, .off = M(ids), \
                        .count_off = M(n_ids), .limit = GF_PROTO_MAX_IDS }
#define MF_ATTEMPT    { .key = "attempt", .type = F_I32, .required = true, .off = M(attempt) }
#define MF_MESSAGE(req) { .key = "message", .type = F_STR, .required = req, .off = M(message), \
                          .limit = GF_PROTO_MAX_TEXT }
#define MF_I64(k, m)  { .key = k, .type = F_I64, .off = M(m) }

static const field submit_fields[] = {
    MF_SPEC(true),
    { .key = "array", .type = F_U32, .off = M(array) },
    { .key = "commands", .type = F_STRV, .off = M(commands), .count_off = M(n_commands),
      .limit = GF_PROTO_MAX_BATCH, .slimit = GF_PROTO_MAX_STR },
    END,
};
static const field queue_fields[] = {
    { .key = "all", .type = F_BOOL, .off = M(all) },
    END,
};
static const field show_fields[] = { MF_ID, END };
static const field wait_fields[] = {
    MF_IDS(true),
    MF_I64("timeout_ms", timeout_ms),
    END,
};
static const field cancel_fields[] = {
    MF_IDS(true),
    { .key = "checkpoint", .type = F_BOOL, .off = M(checkpoint), .omit = true },
    END,
};
static const field ids_only_fields[] = { MF_IDS(true), END };
static const field drain_fields[] = {
    { .key = "device", .type = F_I32, .required = true, .off = M(device) },
    MF_MESSAGE(false),
    END,
};
static const field logs_fields[] = {
    MF_ID,
    { .key = "stream", .type = F_ENUM, .off = M(stream), .names = stream_names },
    { .key = "offset", .type = F_U64, .off = M(offset) },
    END,
};
static const field empty_fields[] = { END };
static const field ids_fields[] = { MF_IDS(true), END };
static const field jobs_fields[] = {
    { .key = "jobs", .type = F_STRUCTV, .required = true, .off = M(jobs), .count_off = M(n_jobs),
      .limit = GF_PROTO_MAX_JOBS, .elem_size = sizeof(gf_job), .sub = job_fields },
    END,
};
static const field codes_fields[] = {
    { .key = "codes", .type = F_I32V, .required = true, .off = M(codes), .count_off = M(n_codes),
      .limit = GF_PROTO_MAX_IDS },
    MF_MESSAGE(false),
    END,
};
static const field log_fields[] = {
    { .key = "data", .type = F_BIN, .required = true, .off = M(data), .count_off = M(data_len),
      .limit = GF_PROTO_MAX_BIN },
    { .key = "offset", .type = F_U64, .required = true, .off = M(offset) },
    { .key = "eof", .type = F_BOOL, .required = true, .off = M(eof) },
    END,
};
static const field workers_list_fields[] = {
    { .key = "workers", .type = F_STRUCTV, .required = true, .off = M(workers),
      .count_off = M(n_workers), .limit = GF_PROTO_MAX_CARDS, .elem_size = sizeof(gf_worker_info),
      .sub = worker_fields },
    END,
};
static const field error_fields[] = {
    { .key = "code", .type = F_I32, .required = true, .off = M(code) },
    MF_MESSAGE(true),
    END,
};
static const field ready_fields[] = {
    { .key = "device", .type = F_I32, .required = true, .off = M(device) },
    { .key = "pid", .type = F_I32, .off = M(pid) },
    { .key = "card", .type = F_STRUCT, .required = true, .off = M(card), .sub = card_fields },
    { .key = "plan", .type = F_STR, .off = M(plan), .limit = GF_PROTO_MAX_PLAN },
    { .key = "supervision", .type = F_STR, .off = M(supervision), .limit = GF_PROTO_MAX_TEXT },
    { .key = "running", .type = F_STRUCTV, .off = M(running), .count_off = M(n_running),
      .limit = GF_PROTO_MAX_CARDS * 64, .elem_size = sizeof(gf_running), .sub = running_fields },
    END,
};
static const field job_msg_fields[] = {
    MF_ID,
    MF_ATTEMPT,
    MF_SPEC(true),
    { .key = "uid", .type = F_U32, .required = true, .off = M(uid) },
    { .key = "gid", .type = F_U32, .required = true, .off = M(gid) },
    { .key = "groups", .type = F_U32V, .off = M(groups), .count_off = M(n_groups),
      .limit = GF_PROTO_MAX_GROUPS },
    { .key = "out", .type = F_STR, .required = true, .off = M(out_path), .limit = GF_PROTO_MAX_PATH },
    { .key = "err", .type = F_STR, .required = true, .off = M(err_path), .limit = GF_PROTO_MAX_PATH },
    { .key = "locks", .type = F_STRV, .required = true, .off = M(locks), .count_off = M(n_locks),
      .limit = GF_PROTO_MAX_CARDS, .slimit = GF_PROTO_MAX_PATH },
    { .key = "cards", .type = F_I32V, .required = true, .off = M(cards), .count_off = M(n_cards),
      .limit = GF_PROTO_MAX_CARDS },
    { .key = "visible", .type = F_STR, .off = M(visible), .limit = GF_PROTO_MAX_TEXT },
    END,
};
static const field progress_fields[] = {
    MF_ID,
    MF_ATTEMPT,
    { .key = "pid", .type = F_I32, .off = M(pid) },
    MF_I64("started", started_ms),
    MF_MESSAGE(false),
    { .key = "done", .type = F_I64, .off = M(done), .omit = true },
    { .key = "total", .type = F_I64, .off = M(total), .omit = true },
    END,
};
static const field result_fields[] = {
    MF_ID,
    MF_ATTEMPT,
    { .key = "exit", .type = F_I32, .required = true, .off = M(exit_status) },
    { .key = "signal", .type = F_I32, .required = true, .off = M(term_signal) },
    MF_I64("started", started_ms),
    MF_I64("ended", ended_ms),
    MF_I64("cpu_user_ms", cpu_user_ms),
    MF_I64("cpu_sys_ms", cpu_sys_ms),
    MF_I64("maxrss_kb", maxrss_kb),
    { .key = "stats", .type = F_STATS, .off = M(stats), .count_off = M(n_stats),
      .limit = GF_PROTO_MAX_STATS },
    MF_MESSAGE(false),
    { .key = "outcome", .type = F_ENUM, .off = M(outcome), .names = outcome_names, .omit = true },
    END,
};
static const field kill_fields[] = {
    MF_ID,
    MF_ATTEMPT,
    { .key = "grace_s", .type = F_I32, .off = M(grace_s) },
    MF_MESSAGE(false),
    { .key = "mode", .type = F_ENUM, .off = M(kill_mode), .names = kill_mode_names, .omit = true },
    END,
};
static const field disconnect_fields[] = { MF_MESSAGE(false), END };

typedef struct {
    const char *name;
    const field *fields;
} op_desc;

static const op_desc ops[GF_OP_COUNT_] = {
    [GF_OP_SUBMIT]       = { "submit", submit_fields },
    [GF_OP_QUEUE]        = { "queue", queue_fields },
    [GF_OP_SHOW]         = { "show", show_fields },
    [GF_OP_WAIT]         = { "wait", wait_fields },
    [GF_OP_CANCEL]       = { "cancel", cancel_fields },
    [GF_OP_LOGS]         = { "logs", logs_fields },
    [GF_OP_WORKERS]      = { "workers", empty_fields },
    [GF_OP_HOLD]         = { "hold", ids_only_fields },
    [GF_OP_RELEASE]      = { "release", ids_only_fields },
    [GF_OP_REQUEUE]      = { "requeue", ids_only_fields },
    [GF_OP_DRAIN]        = { "drain", drain_fields },
    [GF_OP_RESUME]       = { "resume", drain_fields },
    [GF_OP_IDS]          = { "ids", ids_fields },
    [GF_OP_JOBS]         = { "jobs", jobs_fields },
    [GF_OP_CODES]        = { "codes", codes_fields },
    [GF_OP_LOG]          = { "log", log_fields },
    [GF_OP_WORKERS_LIST] = { "workers_list", workers_list_fields },
    [GF_OP_ERROR]        = { "error", error_fields },
    [GF_OP_READY]        = { "ready", ready_fields },
    [GF_OP_HEARTBEAT]    = { "heartbeat", empty_fields },
    [GF_OP_JOB]          = { "job", job_msg_fields },
    [GF_OP_PROGRESS]     = { "progress", progress_fields },
    [GF_OP_RESULT]       = { "result", result_fields },
    [GF_OP_KILL]         = { "kill", kill_fields },
    [GF_OP_DISCONNECT]   = { "disconnect", disconnect_fields },
};

const char *gf_proto_op_name(gf_op op)
{
    if ((int)op <= GF_OP_NONE || op >= GF_OP_COUNT_)
        return NULL;
    return ops[op].name;
}

#define PTR(base, off, T) ((T *)((char *)(base) + (off)))
#define CPTR(base, off, T) ((const T *)((const char *)(base) + (off)))

static size_t enum_count(const char *const *names)
{
    size_t n = 0;
    while (names[n])
        n++;
    return n;
}

/* ----------------------------------------------------------------- free */

static void free_record(const field *fs, void *base);

static void free_field(const field *f, void *base)
{
    switch (f->type) {
    case F_STR:
        free(*PTR(base, f->off, char *));
        *PTR(base, f->off, char *) = NULL;
        break;
    case F_STRV: {
        char **v = *PTR(base, f->off, char **);
        size_t n = *PTR(base, f->count_off, size_t);
        for (size_t i = 0; v && i < n; i++)
            free(v[i]);
        free(v);
        *PTR(base, f->off, char **) = NULL;
        *PTR(base, f->count_off, size_t) = 0;
        break;
    }
    case F_STATS: {
        gf_stat *v = *PTR(base, f->off, gf_stat *);
        size_t n = *PTR(base, f->count_off, size_t);
        for (size_t i = 0; v && i < n; i++)
            free(v[i].key);
        free(v);
        *PTR(base, f->off, gf_stat *) = NULL;
        *PTR(base, f->count_off, size_t) = 0;
        break;
    }
    case F_U64V: case F_I32V: case F_U32V: case F_BIN:
        free(*PTR(base, f->off, void *));
        *PTR(base, f->off, void *) = NULL;
        *PTR(base, f->count_off, size_t) = 0;
        break;
    case F_STRUCT:
        free_record(f->sub, PTR(base, f->off, char));
        break;
    case F_OPTREC: {
        void *v = *PTR(base, f->off, void *);
        if (v)
            free_record(f->sub, v);
        free(v);
        *PTR(base, f->off, void *) = NULL;
        break;
    }
    case F_STRUCTV: {
        char *v = *PTR(base, f->off, char *);
        size_t n = *PTR(base, f->count_off, size_t);
        for (size_t i = 0; v && i < n; i++)
            free_record(f->sub, v + i * f->elem_size);
        free(v);
        *PTR(base, f->off, void *) = NULL;
        *PTR(base, f->count_off, size_t) = 0;
        break;
    }
    default:
        break;
    }
}

static void free_record(const field *fs, void *base)
{
    for (const field *f = fs; f->key; f++)
        free_field(f, base);
}

void gf_msg_clear(gf_msg *msg)
{
    if (!msg)
        return;
    /* Free every field any op can own: the union of all tables. */
    for (int op = 1; op < GF_OP_COUNT_; op++)
        free_record(ops[op].fields, msg);
    memset(msg, 0, sizeof(*msg));
}

/* ------------------------------------------------------------- defaults */

static void set_defaults(const field *fs, void *base)
{
    for (const field *f = fs; f->key; f++) {
        switch (f->type) {
        case F_I32: *PTR(base, f->off, int32_t) = (int32_t)f->def; break;
        case F_I64: *PTR(base, f->off, int64_t) = f->def; break;
        case F_STRUCT: set_defaults(f->sub, PTR(base, f->off, char)); break;
        default: break;
        }
    }
}

void gf_job_spec_init(gf_job_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    set_defaults(spec_fields, spec);
}

void gf_job_spec_clear(gf_job_spec *spec)
{
    if (!spec)
        return;
    free_record(spec_fields, spec);
    gf_job_spec_init(spec);
}

void gf_job_spec_drop_env(gf_job_spec *spec)
{
    for (size_t i = 0; i < spec->n_env; i++)
        free(spec->env[i]);
    free(spec->env);
    spec->env = NULL;
    spec->n_env = 0;
}

void gf_job_init(gf_job *job)
{
    memset(job, 0, sizeof(*job));
    set_defaults(job_fields, job);
}

void gf_job_clear(gf_job *job)
{
    if (!job)
        return;
    free_record(job_fields, job);
    gf_job_init(job);
}

/* ----------------------------------------------------------------- copy */

static void copy_record(const field *fs, void *dst, const void *src);

/* Bytes of a value held inside the record, 0 for what is owned through a
 * pointer. */
static size_t inline_size(const field *f)
{
    switch (f->type) {
    case F_CHARS: return f->limit + 1;
    case F_BOOL: return sizeof(bool);
    case F_I32: return sizeof(int32_t);
    case F_I64: return sizeof(int64_t);
    case F_U32: return sizeof(uint32_t);
    case F_U64: return sizeof(uint64_t);
    case F_SIZE: return sizeof(size_t);
    case F_ENUM: return sizeof(int);
    default: return 0;
    }
}

/* One field of src into dst: a value as it is, an owned string, array or
 * record as a copy of its own (with its count). */
static void copy_field(const field *f, void *dst, const void *src)
{
    size_t n = 0;
    if (f->count_off) {
        n = *CPTR(src, f->count_off, size_t);
        *PTR(dst, f->count_off, size_t) = n;
    }
    switch (f->type) {
    case F_STR:
        *PTR(dst, f->off, char *) = gf_strdup(*CPTR(src, f->off, char *));
        break;
    case F_STRV: {
        char *const *s = *(char **const *)CPTR(src, f->off, char);
        char **v = s ? gf_calloc(n + 1, sizeof(char *)) : NULL;
        for (size_t i = 0; s && i < n; i++)
            v[i] = gf_strdup(s[i]);
        *PTR(dst, f->off, char **) = v;
        break;
    }
    case F_STATS: {
        const gf_stat *s = *CPTR(src, f->off, gf_stat *);
        gf_stat *v = s ? gf_calloc(n, sizeof(gf_stat)) : NULL;
        for (size_t i = 0; s && i < n; i++) {
            v[i] = s[i];
            v[i].key = gf_strdup(s[i].key);
        }
        *PTR(dst, f->off, gf_stat *) = v;
        break;
    }
    case F_U64V: case F_I32V: case F_U32V: case F_BIN: {
        size_t es = f->type == F_U64V ? 8 : f->type == F_BIN ? 1 : 4;
        const void *s = *CPTR(src, f->off, void *);
        void *v = NULL;
        if (s) {
            v = gf_malloc(n * es);
            memcpy(v, s, n * es);
        }
        *PTR(dst, f->off, void *) = v;
        break;
    }
    case F_STRUCT:
        copy_record(f->sub, PTR(dst, f->off, char), CPTR(src, f->off, char));
        break;
    case F_OPTREC: {
        const void *s = *CPTR(src, f->off, void *);
        void *v = s ? gf_calloc(1, f->elem_size) : NULL;
        if (s)
            copy_record(f->sub, v, s);
        *PTR(dst, f->off, void *) = v;
        break;
    }
    case F_STRUCTV: {
        const char *s = *CPTR(src, f->off, char *);
        char *v = s ? gf_calloc(n, f->elem_size) : NULL;
        for (size_t i = 0; s && i < n; i++)
            copy_record(f->sub, v + i * f->elem_size, s + i * f->elem_size);
        *PTR(dst, f->off, char *) = v;
        break;
    }
    default:
        memcpy(PTR(dst, f->off, char), CPTR(src, f->off, char), inline_size(f));
        break;
    }
}

/* Every field the table names, into a dst that starts zeroed: the tables
 * name every field of the records they describe, so this is the whole
 * record, and what dst owns is its own. */
static void copy_record(const field *fs, void *dst, const void *src)
{
    for (const field *f = fs; f->key; f++)
        copy_field(f, dst, src);
}

void gf_job_spec_copy(gf_job_spec *dst, const gf_job_spec *src)
{
    memset(dst, 0, sizeof(*dst));
    copy_record(spec_fields, dst, src);
}

void gf_job_copy(gf_job *dst, const gf_job *src)
{
    memset(dst, 0, sizeof(*dst));
    copy_record(job_fields, dst, src);
}

void gf_msg_copy(gf_msg *dst, const gf_msg *src)
{
    memset(dst, 0, sizeof(*dst));
    dst->op = src->op;
    if ((int)src->op > GF_OP_NONE && src->op < GF_OP_COUNT_)
        copy_record(ops[src->op].fields, dst, src);
}

const char *gf_job_state_name(gf_job_state s)
{
    if ((int)s < 0 || (size_t)s >= enum_count(state_names))
        return "?";
    return state_names[s];
}

int gf_job_state_parse(const char *name, gf_job_state *out)
{
    for (int i = 0; state_names[i]; i++)
        if (strcmp(state_names[i], name) == 0) {
            *out = (gf_job_state)i;
            return 0;
        }
    return GF_EINVAL;
}

/* ---------------------------------------------------------------- encode */

typedef struct {
    msgpack_packer pk;
    int rc;
    char what[160];   /* the field that broke a limit (logged by the caller) */
} enc;

static void enc_fail(enc *e, int rc, const char *key, const char *why)
{
    if (e->rc == 0) {
        e->rc = rc;
        snprintf(e->what, sizeof(e->what), "key '%s': %s", key, why);
    }
}

static void pack_cstr(enc *e, const char *s, size_t len)
{
    msgpack_pack_str(&e->pk, len);
    msgpack_pack_str_body(&e->pk, s, len);
}

static void pack_string(enc *e, const field *f, const char *s, size_t limit, bool nil_ok)
{
    if (!s) {
        if (!nil_ok)
            enc_fail(e, GF_EINVAL, f->key, "required string is NULL");
        msgpack_pack_nil(&e->pk);
        return;
    }
    size_t n = strlen(s);
    if (n > limit)
        enc_fail(e, GF_ETOOBIG, f->key, "string over the limit");
    pack_cstr(e, s, n);
}

static void pack_record(enc *e, const field *fs, const void *base);

static void pack_field(enc *e, const field *f, const void *base)
{
    size_t n = f->count_off ? *CPTR(base, f->count_off, size_t) : 0;
    if (f->count_off && f->type != F_BIN && n > f->limit) {
        enc_fail(e, GF_ETOOBIG, f->key, "array over the limit");
        n = 0;
    }
    switch (f->type) {
    case F_STR:
        pack_string(e, f, *CPTR(base, f->off, char *), f->limit, !f->required);
        break;
    case F_CHARS: {
        const char *s = CPTR(base, f->off, char);
        pack_cstr(e, s, strnlen(s, f->limit));
        break;
    }
    case F_BOOL:
        if (*CPTR(base, f->off, bool))
            msgpack_pack_true(&e->pk);
        else
            msgpack_pack_false(&e->pk);
        break;
    case F_I32: msgpack_pack_int64(&e->pk, *CPTR(base, f->off, int32_t)); break;
    case F_I64: msgpack_pack_int64(&e->pk, *CPTR(base, f->off, int64_t)); break;
    case F_U32: msgpack_pack_uint64(&e->pk, *CPTR(base, f->off, uint32_t)); break;
    case F_U64: msgpack_pack_uint64(&e->pk, *CPTR(base, f->off, uint64_t)); break;
    case F_SIZE: msgpack_pack_uint64(&e->pk, *CPTR(base, f->off, size_t)); break;
    case F_ENUM: {
        int v = *CPTR(base, f->off, int);
        if (v < 0 || (size_t)v >= enum_count(f->names)) {
            enc_fail(e, GF_EINVAL, f->key, "enum value out of range");
            v = 0;
        }
        pack_cstr(e, f->names[v], strlen(f->names[v]));
        break;
    }
    case F_STRV: {
        char *const *v = *(char **const *)CPTR(base, f->off, char);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            pack_string(e, f, v[i], f->slimit, false);
        break;
    }
    case F_U64V: {
        const uint64_t *v = *CPTR(base, f->off, uint64_t *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            msgpack_pack_uint64(&e->pk, v[i]);
        break;
    }
    case F_I32V: {
        const int32_t *v = *CPTR(base, f->off, int32_t *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            msgpack_pack_int64(&e->pk, v[i]);
        break;
    }
    case F_U32V: {
        const uint32_t *v = *CPTR(base, f->off, uint32_t *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            msgpack_pack_uint64(&e->pk, v[i]);
        break;
    }
    case F_BIN: {
        const uint8_t *v = *CPTR(base, f->off, uint8_t *);
        if (n > f->limit) {
            enc_fail(e, GF_ETOOBIG, f->key, "bytes over the limit");
            n = 0;
        }
        if (!v)
            n = 0;
        msgpack_pack_bin(&e->pk, n);
        msgpack_pack_bin_body(&e->pk, v, n);
        break;
    }
    case F_STRUCT:
        pack_record(e, f->sub, CPTR(base, f->off, char));
        break;
    case F_OPTREC:
        /* only reached when present (field_present) */
        pack_record(e, f->sub, *CPTR(base, f->off, void *));
        break;
    case F_STRUCTV: {
        const char *v = *CPTR(base, f->off, char *);
        if (!v)
            n = 0;
        msgpack_pack_array(&e->pk, n);
        for (size_t i = 0; i < n; i++)
            pack_record(e, f->sub, v + i * f->elem_size);
        break;
    }
    case F_STATS: {
        const gf_stat *v = *CPTR(base, f->off, gf_stat *);
        if (!v)
            n = 0;
        msgpack_pack_map(&e->pk, n);
        for (size_t i = 0; i < n; i++) {
            pack_string(e, f, v[i].key, GF_PROTO_MAX_NAME, false);
            if (v[i].is_float)
                msgpack_pack_double(&e->pk, v[i].f);
            else
                msgpack_pack_int64(&e->pk, v[i].i);
        }
        break;
    }
    }
}

/* Is the key written? Every key is, except an omittable one at its default. */
static bool field_present(const field *f, const void *base)
{
    if (f->type == F_OPTREC)
        return *CPTR(base, f->off, void *) != NULL;
    if (!f->omit)
        return true;
    switch (f->type) {
    case F_BOOL: return *CPTR(base, f->off, bool);
    case F_I32: return *CPTR(base, f->off, int32_t) != (int32_t)f->def;
    case F_I64: return *CPTR(base, f->off, int64_t) != f->def;
    case F_U32: return *CPTR(base, f->off, uint32_t) != 0;
    case F_STR: return *CPTR(base, f->off, char *) != NULL;
    case F_ENUM: return *CPTR(base, f->off, int) != 0;
    case F_STATS: return *CPTR(base, f->count_off, size_t) != 0;
    default: return true;
    }
}

static size_t count_present(const field *fs, const void *base)
{
    size_t n = 0;
    for (const field *f = fs; f->key; f++)
        n += field_present(f, base);
    return n;
}

static void pack_record(enc *e, const field *fs, const void *base)
{
    msgpack_pack_map(&e->pk, count_present(fs, base));
    for (const field *f = fs; f->key; f++) {
        if (!field_present(f, base))
            continue;
        pack_cstr(e, f->key, strlen(f->key));
        pack_field(e, f, base);
    }
}

int gf_proto_encode(const gf_msg *msg, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    const char *name = gf_proto_op_name(msg->op);
    if (!name)
        return GF_EINVAL;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    enc e = { .rc = 0 };
    msgpack_packer_init(&e.pk, &sb, msgpack_sbuffer_write);
    const field *fs = ops[msg->op].fields;
    msgpack_pack_map(&e.pk, 2 + count_present(fs, msg));
    pack_cstr(&e, "v", 1);
    msgpack_pack_uint64(&e.pk, GF_PROTO_VERSION);
    pack_cstr(&e, "op", 2);
    pack_cstr(&e, name, strlen(name));
    for (const field *f = fs; f->key; f++) {
        if (!field_present(f, msg))
            continue;
        pack_cstr(&e, f->key, strlen(f->key));
        pack_field(&e, f, msg);
    }
    if (e.rc == 0 && sb.size > GF_PROTO_MAX_FRAME)
        enc_fail(&e, GF_ETOOBIG, name, "message over the frame limit");
    if (e.rc != 0) {
        msgpack_sbuffer_destroy(&sb);
        return e.rc;
    }
    *len = sb.size;
    *buf = (uint8_t *)msgpack_sbuffer_release(&sb);
    if (!*buf)            /* an empty buffer never happens: the map header is there */
        return GF_EINVAL;
    return 0;
}

/* ---------------------------------------------------------------- decode */

/* A bounds-checked cursor over the frame, with the key path for messages. */
typedef struct {
    const uint8_t *p;
    size_t len;
    size_t pos;
    char path[192];       /* "spec.argv", for error messages */
    char *err;
    size_t errlen;
} rd;

static int rd_fail(rd *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The message is valid UTF-8 whatever it quotes (quoted() escapes outside
 * bytes) and however errlen cuts it: peers with strict decoders get it in
 * an error reply. */
static int rd_fail(rd *r, int rc, const char *fmt, ...)
{
    if (r->errlen == 0)
        return rc;
    char what[256], text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    int n = r->path[0] ? snprintf(text, sizeof(text), "key '%s': %s", r->path, what)
                       : snprintf(text, sizeof(text), "%s", what);
    gf_utf8_escape(r->err, r->errlen, text, n < (int)sizeof(text) ? (size_t)n : sizeof(text) - 1);
    return rc;
}

/* Bytes of the message for rd_fail to quote: invalid UTF-8 as \xNN, at most
 * about 40 characters, cut between characters. */
static const char *quoted(char *buf, size_t cap, const char *s, size_t n)
{
    gf_utf8_escape(buf, cap, s, n);
    return buf;
}

#define QUOTE_CAP 48

static int need(rd *r, size_t n)
{
    if (r->len - r->pos < n)
        return rd_fail(r, GF_EPROTO, "truncated message (needs %zu more bytes at offset %zu)",
                       n - (r->len - r->pos), r->pos);
    return 0;
}

static uint64_t be(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

/* Read n big-endian bytes as an unsigned value. */
static int rd_be(rd *r, size_t n, uint64_t *v)
{
    int rc = need(r, n);
    if (rc)
        return rc;
    *v = be(r->p + r->pos, n);
    r->pos += n;
    return 0;
}

static const char *type_name(uint8_t b)
{
    if (b <= 0x7f || (b >= 0xcc && b <= 0xd3) || b >= 0xe0) return "an integer";
    if (b <= 0x8f || b == 0xde || b == 0xdf) return "a map";
    if (b <= 0x9f || b == 0xdc || b == 0xdd) return "an array";
    if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) return "a string";
    switch (b) {
    case 0xc0: return "nil";
    case 0xc2: case 0xc3: return "a boolean";
    case 0xc4: case 0xc5: case 0xc6: return "binary data";
    case 0xca: case 0xcb: return "a float";
    default: return "an extension or invalid byte";
    }
}

static int wrong_type(rd *r, const char *want)
{
    return rd_fail(r, GF_EPROTO, "expected %s, found %s", want, type_name(r->p[r->pos]));
}

static bool rd_peek_nil(rd *r)
{
    return r->pos < r->len && r->p[r->pos] == 0xc0;
}

/* Any msgpack integer as a sign flag plus magnitude. */
static int rd_int(rd *r, bool *neg, uint64_t *mag)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t v;
    *neg = false;
    if (b <= 0x7f) {
        r->pos++;
        *mag = b;
        return 0;
    }
    if (b >= 0xe0) {
        r->pos++;
        *neg = true;
        *mag = (uint64_t)(256 - b);
        return 0;
    }
    if (b >= 0xcc && b <= 0xcf) {
        r->pos++;
        rc = rd_be(r, (size_t)1 << (b - 0xcc), &v);
        *mag = v;
        return rc;
    }
    if (b >= 0xd0 && b <= 0xd3) {
        size_t n = (size_t)1 << (b - 0xd0);
        r->pos++;
        rc = rd_be(r, n, &v);
        if (rc)
            return rc;
        /* sign-extend an n-byte two's complement value */
        int shift = (int)(64 - 8 * n);
        int64_t sv = (int64_t)(v << shift) >> shift;
        if (sv < 0) {
            *neg = true;
            *mag = (uint64_t)(-(sv + 1)) + 1;
        } else {
            *mag = (uint64_t)sv;
        }
        return 0;
    }
    return wrong_type(r, "an integer");
}

static int rd_signed(rd *r, int64_t lo, int64_t hi, int64_t *out)
{
    bool neg;
    uint64_t mag;
    int rc = rd_int(r, &neg, &mag);
    if (rc)
        return rc;
    if (neg) {
        if (mag > (uint64_t)INT64_MAX + 1 || (mag > 0 && -(int64_t)(mag - 1) - 1 < lo))
            return rd_fail(r, GF_EPROTO, "integer -%llu out of range", (unsigned long long)mag);
        *out = -(int64_t)(mag - 1) - 1;
    } else {
        if (mag > (uint64_t)hi)
            return rd_fail(r, GF_EPROTO, "integer %llu out of range", (unsigned long long)mag);
        *out = (int64_t)mag;
    }
    return 0;
}

static int rd_unsigned(rd *r, uint64_t hi, uint64_t *out)
{
    bool neg;
    uint64_t mag;
    int rc = rd_int(r, &neg, &mag);
    if (rc)
        return rc;
    if ((neg && mag) || mag > hi)
        return rd_fail(r, GF_EPROTO, "integer %s%llu out of range", neg ? "-" : "",
                       (unsigned long long)mag);
    *out = mag;
    return 0;
}

static int rd_bool(rd *r, bool *out)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    if (b != 0xc2 && b != 0xc3)
        return wrong_type(r, "a boolean");
    r->pos++;
    *out = b == 0xc3;
    return 0;
}

static int rd_double(rd *r, double *out)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t v;
    if (b == 0xca) {
        r->pos++;
        if ((rc = rd_be(r, 4, &v)))
            return rc;
        uint32_t u = (uint32_t)v;
        float fl;
        memcpy(&fl, &u, 4);
        *out = fl;
        return 0;
    }
    if (b == 0xcb) {
        r->pos++;
        if ((rc = rd_be(r, 8, &v)))
            return rc;
        memcpy(out, &v, 8);
        return 0;
    }
    return wrong_type(r, "a float");
}

/* A string in place (not NUL-terminated), at most limit bytes, no NUL. */
static int rd_strref(rd *r, size_t limit, const char **s, size_t *n)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t len;
    if (b >= 0xa0 && b <= 0xbf) {
        r->pos++;
        len = b & 0x1f;
    } else if (b >= 0xd9 && b <= 0xdb) {
        r->pos++;
        if ((rc = rd_be(r, (size_t)1 << (b - 0xd9), &len)))
            return rc;
    } else {
        return wrong_type(r, "a string");
    }
    if (len > limit)
        return rd_fail(r, GF_ETOOBIG, "string of %llu bytes over the limit of %zu",
                       (unsigned long long)len, limit);
    if ((rc = need(r, (size_t)len)))
        return rc;
    *s = (const char *)r->p + r->pos;
    *n = (size_t)len;
    if (memchr(*s, 0, *n))
        return rd_fail(r, GF_EPROTO, "string holds a NUL byte");
    r->pos += (size_t)len;
    return 0;
}

static int rd_str(rd *r, size_t limit, char **out)
{
    const char *s;
    size_t n;
    int rc = rd_strref(r, limit, &s, &n);
    if (rc)
        return rc;
    char *c = gf_malloc(n + 1);
    memcpy(c, s, n);
    c[n] = 0;
    *out = c;
    return 0;
}

/* A container header: array (is_map false) or map; count checked against
 * the limit and against the bytes left (each element takes >= 1 byte). */
static int rd_container(rd *r, bool is_map, size_t limit, size_t *count)
{
    int rc = need(r, 1);
    if (rc)
        return rc;
    uint8_t b = r->p[r->pos];
    uint64_t n;
    uint8_t fix = is_map ? 0x80 : 0x90;
    uint8_t b16 = is_map ? 0xde : 0xdc;
    if ((b & 0xf0) == fix) {
        r->pos++;
        n = b & 0x0f;
    } else if (b == b16 || b == b16 + 1) {
        r->pos++;
        if ((rc = rd_be(r, b == b16 ? 2 : 4, &n)))
            return rc;
    } else {
        return wrong_type(r, is_map ? "a map" : "an array");
    }
    if (n > limit)
        return rd_fail(r, GF_ETOOBIG, "%s of %llu entries over the limit of %zu",
                       is_map ? "map" : "array", (unsigned long long)n, limit);
    if (n * (is_map ? 2 : 1) > r->len - r->pos)
        return rd_fail(r, GF_EPROTO, "truncated message (%s claims %llu entries)",
                       is_map ? "map" : "array", (unsigned long long)n);
    *count = (size_t)n;
    return 0;
}

/* Grow-as-you-go array storage: capacity doubles as elements decode. */
static void *grow(void *v, size_t have, size_t *cap, size_t es)
{
    if (have < *cap)
        return v;
    size_t nc = *cap ? *cap * 2 : 8;
    char *nv = gf_realloc(v, nc * es);
    memset(nv + *cap * es, 0, (nc - *cap) * es);
    *cap = nc;
    return nv;
}

static int rd_record(rd *r, const field *fs, void *base);

static void path_push(rd *r, const char *key, size_t *saved)
{
    *saved = strlen(r->path);
    if (*saved)
        snprintf(r->path + *saved, sizeof(r->path) - *saved, ".%s", key);
    else
        snprintf(r->path, sizeof(r->path), "%s", key);
}

static void path_pop(rd *r, size_t saved)
{
    r->path[saved] = 0;
}

static int rd_field(rd *r, const field *f, void *base)
{
    int rc = 0;
    int64_t sv;
    uint64_t uv;
    size_t n, cap = 0;
    switch (f->type) {
    case F_STR:
        if (!f->required && rd_peek_nil(r)) {
            r->pos++;
            return 0;
        }
        return rd_str(r, f->limit, PTR(base, f->off, char *));
    case F_CHARS: {
        const char *s;
        if ((rc = rd_strref(r, f->limit, &s, &n)))
            return rc;
        char *dst = PTR(base, f->off, char);
        memcpy(dst, s, n);
        dst[n] = 0;
        return 0;
    }
    case F_BOOL:
        return rd_bool(r, PTR(base, f->off, bool));
    case F_I32:
        if ((rc = rd_signed(r, INT32_MIN, INT32_MAX, &sv)))
            return rc;
        *PTR(base, f->off, int32_t) = (int32_t)sv;
        return 0;
    case F_I64:
        return rd_signed(r, INT64_MIN, INT64_MAX, PTR(base, f->off, int64_t));
    case F_U32:
        if ((rc = rd_unsigned(r, UINT32_MAX, &uv)))
            return rc;
        *PTR(base, f->off, uint32_t) = (uint32_t)uv;
        return 0;
    case F_U64:
        return rd_unsigned(r, UINT64_MAX, PTR(base, f->off, uint64_t));
    case F_SIZE:
        if ((rc = rd_unsigned(r, SIZE_MAX, &uv)))
            return rc;
        *PTR(base, f->off, size_t) = (size_t)uv;
        return 0;
    case F_ENUM: {
        const char *s;
        if ((rc = rd_strref(r, GF_PROTO_MAX_NAME, &s, &n)))
            return rc;
        for (int i = 0; f->names[i]; i++)
            if (strlen(f->names[i]) == n && memcmp(f->names[i], s, n) == 0) {
                *PTR(base, f->off, int) = i;
                return 0;
            }
        char q[QUOTE_CAP];
        return rd_fail(r, GF_EPROTO, "unknown value '%s'", quoted(q, sizeof(q), s, n));
    }
    case F_STRV: {
        if ((rc = rd_container(r, false, f->limit, &n)))
            return rc;
        /* one extra slot keeps argv-style vectors NULL-terminated */
        char **v = NULL;
        size_t *cnt = PTR(base, f->count_off, size_t);
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i + 1, &cap, sizeof(char *));
            *PTR(base, f->off, char **) = v;
            if ((rc = rd_str(r, f->slimit, &v[i])))
                return rc;
            *cnt = i + 1;
        }
        if (!v)
            v = gf_calloc(1, sizeof(char *));
        *PTR(base, f->off, char **) = v;
        return 0;
    }
    case F_U64V: case F_I32V: case F_U32V: {
        size_t es = f->type == F_U64V ? 8 : 4;
        if ((rc = rd_container(r, false, f->limit, &n)))
            return rc;
        char *v = NULL;
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i, &cap, es);
            *PTR(base, f->off, char *) = v;
            if (f->type == F_U64V) {
                rc = rd_unsigned(r, UINT64_MAX, &uv);
                memcpy(v + i * es, &uv, 8);
            } else if (f->type == F_U32V) {
                rc = rd_unsigned(r, UINT32_MAX, &uv);
                uint32_t u = (uint32_t)uv;
                memcpy(v + i * es, &u, 4);
            } else {
                rc = rd_signed(r, INT32_MIN, INT32_MAX, &sv);
                int32_t s32 = (int32_t)sv;
                memcpy(v + i * es, &s32, 4);
            }
            if (rc)
                return rc;
            *PTR(base, f->count_off, size_t) = i + 1;
        }
        return 0;
    }
    case F_BIN: {
        if ((rc = need(r, 1)))
            return rc;
        uint8_t b = r->p[r->pos];
        if (b < 0xc4 || b > 0xc6)
            return wrong_type(r, "binary data");
        r->pos++;
        if ((rc = rd_be(r, (size_t)1 << (b - 0xc4), &uv)))
            return rc;
        if (uv > f->limit)
            return rd_fail(r, GF_ETOOBIG, "%llu bytes over the limit of %zu",
                           (unsigned long long)uv, f->limit);
        if ((rc = need(r, (size_t)uv)))
            return rc;
        uint8_t *v = gf_malloc((size_t)uv);
        memcpy(v, r->p + r->pos, (size_t)uv);
        r->pos += (size_t)uv;
        *PTR(base, f->off, uint8_t *) = v;
        *PTR(base, f->count_off, size_t) = (size_t)uv;
        return 0;
    }
    case F_STRUCT:
        return rd_record(r, f->sub, PTR(base, f->off, char));
    case F_OPTREC: {
        /* attached before it decodes, so a failing one is freed with the rest */
        void *v = gf_calloc(1, f->elem_size);
        *PTR(base, f->off, void *) = v;
        return rd_record(r, f->sub, v);
    }
    case F_STRUCTV: {
        if ((rc = rd_container(r, false, f->limit, &n)))
            return rc;
        char *v = NULL;
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i, &cap, f->elem_size);
            *PTR(base, f->off, char *) = v;
            /* count first, so a failing element is freed with the rest */
            *PTR(base, f->count_off, size_t) = i + 1;
            if ((rc = rd_record(r, f->sub, v + i * f->elem_size)))
                return rc;
        }
        return 0;
    }
    case F_STATS: {
        if ((rc = rd_container(r, true, f->limit, &n)))
            return rc;
        gf_stat *v = NULL;
        for (size_t i = 0; i < n; i++) {
            v = grow(v, i, &cap, sizeof(gf_stat));
            *PTR(base, f->off, gf_stat *) = v;
            *PTR(base, f->count_off, size_t) = i + 1;
            if ((rc = rd_str(r, GF_PROTO_MAX_NAME, &v[i].key)))
                return rc;
            if ((rc = need(r, 1)))
                return rc;
            uint8_t b = r->p[r->pos];
            if (b == 0xca || b == 0xcb) {
                v[i].is_float = true;
                rc = rd_double(r, &v[i].f);
            } else {
                rc = rd_signed(r, INT64_MIN, INT64_MAX, &v[i].i);
            }
            if (rc)
                return rc;
        }
        return 0;
    }
    }
    return rd_fail(r, GF_EPROTO, "internal: unknown field type");
}

/* The n entries of one record, after its map header. Keys may come in
 * any order; each at most once; required keys must be there. */
static int rd_entries(rd *r, const field *fs, void *base, size_t n)
{
    uint64_t seen = 0;
    int rc;
    set_defaults(fs, base);
    for (size_t i = 0; i < n; i++) {
        const char *k;
        size_t kn;
        if ((rc = rd_strref(r, GF_PROTO_MAX_NAME, &k, &kn)))
            return rc;
        const field *f = NULL;
        int idx = 0;
        for (const field *g = fs; g->key; g++, idx++)
            if (strlen(g->key) == kn && memcmp(g->key, k, kn) == 0) {
                f = g;
                break;
            }
        if (!f) {
            char q[QUOTE_CAP];
            return rd_fail(r, GF_EPROTO, "unknown key '%s'", quoted(q, sizeof(q), k, kn));
        }
        if (seen & (1ull << idx))
            return rd_fail(r, GF_EPROTO, "duplicate key '%s'", f->key);
        seen |= 1ull << idx;
        size_t saved;
        path_push(r, f->key, &saved);
        rc = rd_field(r, f, base);
        if (rc)
            return rc;
        path_pop(r, saved);
    }
    int idx = 0;
    for (const field *f = fs; f->key; f++, idx++)
        if (f->required && !(seen & (1ull << idx)))
            return rd_fail(r, GF_EPROTO, "missing key '%s'", f->key);
    return 0;
}

static int rd_record(rd *r, const field *fs, void *base)
{
    size_t n;
    int rc = rd_container(r, true, 64, &n);
    if (rc)
        return rc;
    return rd_entries(r, fs, base, n);
}

int gf_proto_decode(const void *buf, size_t len, gf_msg *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    rd r = { .p = buf, .len = len, .err = err, .errlen = errlen };
    if (errlen)
        err[0] = 0;
    if (len > GF_PROTO_MAX_FRAME)
        return rd_fail(&r, GF_ETOOBIG, "message of %zu bytes over the limit of %u", len,
                       GF_PROTO_MAX_FRAME);
    if (len == 0)
        return rd_fail(&r, GF_EPROTO, "empty message");
    size_t n;
    int rc = rd_container(&r, true, 64, &n);
    if (rc)
        return rc;
    /* The header comes first, in this order (the encoder writes it so):
     * the version decides how the rest is read. */
    const char *k;
    size_t kn;
    uint64_t version;
    if (n < 2)
        return rd_fail(&r, GF_EPROTO, "message without the keys 'v' and 'op'");
    if ((rc = rd_strref(&r, GF_PROTO_MAX_NAME, &k, &kn)))
        return rc;
    if (kn != 1 || k[0] != 'v')
        return rd_fail(&r, GF_EPROTO, "first key is not 'v' (the protocol version)");
    if (rd_unsigned(&r, UINT64_MAX, &version))
        return rd_fail(&r, GF_EPROTO, "key 'v': not a version number");
    if (version != GF_PROTO_VERSION)
        return rd_fail(&r, GF_EPROTO, "unsupported protocol version %llu (this side speaks %d)",
                       (unsigned long long)version, GF_PROTO_VERSION);
    if ((rc = rd_strref(&r, GF_PROTO_MAX_NAME, &k, &kn)))
        return rc;
    if (kn != 2 || memcmp(k, "op", 2) != 0)
        return rd_fail(&r, GF_EPROTO, "second key is not 'op' (the operation)");
    const char *opname;
    size_t opn;
    if (rd_strref(&r, GF_PROTO_MAX_NAME, &opname, &opn))
        return rd_fail(&r, GF_EPROTO, "key 'op': not an operation name");
    gf_op op = GF_OP_NONE;
    for (int i = 1; i < GF_OP_COUNT_; i++)
        if (strlen(ops[i].name) == opn && memcmp(ops[i].name, opname, opn) == 0) {
            op = (gf_op)i;
            break;
        }
    if (op == GF_OP_NONE) {
        char q[QUOTE_CAP];
        return rd_fail(&r, GF_EPROTO, "unknown operation '%s'", quoted(q, sizeof(q), opname, opn));
    }
    rc = rd_entries(&r, ops[op].fields, out, n - 2);
    if (rc == 0 && r.pos != r.len)
        rc = rd_fail(&r, GF_EPROTO, "%zu bytes of trailing data after the message",
                     r.len - r.pos);
    if (rc) {
        gf_msg_clear(out);
        return rc;
    }
    out->op = op;
    return 0;
}

void gf_msg_errorv(gf_msg *msg, int code, const char *fmt, va_list ap)
{
    memset(msg, 0, sizeof(*msg));
    msg->op = GF_OP_ERROR;
    msg->code = code;
    char text[1024];
    vsnprintf(text, sizeof(text), fmt, ap);
    /* it may quote what a peer sent: valid UTF-8 for strict decoders */
    msg->message = gf_utf8_escape_dup(text);
}
