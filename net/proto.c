/* proto.c — the msgpack codec of gpuflock's message set (see proto.h).
 *
 * Each operation is described once, by a table of fields (key, type,
 * where it lives in gf_msg, limits, required or not); nested records
 * (job spec, job, card identity, worker, running job) have tables of their
 * own. One table drives the encoder (msgpack-c's packer), the decoder and
 * the destructor, so the three cannot disagree. This file holds the tables
 * (their types in proto_table.h) and the records' defaults, copies and
 * destruction; proto_encode.c and proto_decode.c the two directions.
 *
 * The decoder reads the msgpack bytes with its own bounds-checked cursor
 * rather than msgpack_unpack: msgpack-c allocates a container's elements
 * from the count in its header before reading them, so a 5-byte header can
 * ask for gigabytes. Here every container count is checked against the
 * bytes that remain and against the field's limit, arrays grow only as their
 * elements actually decode, and the reader descends only where a table
 * says a nested record is, so hostile nesting cannot recurse. */
#include "net/proto_table.h"

#include "common/error.h"
#include "common/utf8.h"
#include "common/util.h"

#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tables */

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
    /* added after version 1: written only when set */
    { .key = "overwrite", .type = F_BOOL, .off = AT(gf_diar_spec, overwrite), .omit = true },
    { .key = "threshold", .type = F_F64, .off = AT(gf_diar_spec, threshold), .omit = true },
    { .key = "fa", .type = F_F64, .off = AT(gf_diar_spec, fa), .omit = true },
    { .key = "fb", .type = F_F64, .off = AT(gf_diar_spec, fb), .omit = true },
    { .key = "min_duration_off", .type = F_F64, .off = AT(gf_diar_spec, min_duration_off),
      .omit = true },
    { .key = "keep_overlap", .type = F_BOOL, .off = AT(gf_diar_spec, keep_overlap), .omit = true },
    { .key = "segmentation_step", .type = F_F64, .off = AT(gf_diar_spec, segmentation_step),
      .omit = true },
    { .key = "exclusive", .type = F_BOOL, .off = AT(gf_diar_spec, exclusive), .omit = true },
    { .key = "speakers", .type = F_BOOL, .off = AT(gf_diar_spec, speakers), .omit = true },
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
    { .key = "notify", .type = F_STR, .off = AT(gf_job_spec, notify), .omit = true,
      .limit = GF_PROTO_MAX_PATH },
    END,
};

/* A queue's or cancel's selection (added after version 1: every key written
 * only when set, the record only when there is one). */
static const field filter_fields[] = {
    { .key = "users", .type = F_U32V, .off = AT(gf_job_filter, users),
      .count_off = AT(gf_job_filter, n_users), .limit = GF_PROTO_MAX_IDS, .omit = true },
    { .key = "states", .type = F_STRV, .off = AT(gf_job_filter, states),
      .count_off = AT(gf_job_filter, n_states), .limit = 16, .slimit = GF_PROTO_MAX_NAME,
      .omit = true },
    { .key = "name", .type = F_STR, .off = AT(gf_job_filter, name), .limit = GF_PROTO_MAX_NAME,
      .omit = true },
    { .key = "since", .type = F_I64, .off = AT(gf_job_filter, since_ms), .omit = true },
    { .key = "cards", .type = F_I32V, .off = AT(gf_job_filter, cards),
      .count_off = AT(gf_job_filter, n_cards), .limit = GF_PROTO_MAX_CARDS, .omit = true },
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
#define MF_FILTER     { .key = "filter", .type = F_OPTREC, .off = M(filter), .omit = true, \
                        .elem_size = sizeof(gf_job_filter), .sub = filter_fields }

static const field submit_fields[] = {
    MF_SPEC(true),
    { .key = "array", .type = F_U32, .off = M(array) },
    { .key = "commands", .type = F_STRV, .off = M(commands), .count_off = M(n_commands),
      .limit = GF_PROTO_MAX_BATCH, .slimit = GF_PROTO_MAX_STR },
    END,
};
static const field queue_fields[] = {
    { .key = "all", .type = F_BOOL, .off = M(all) },
    MF_FILTER,
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
    MF_FILTER,
    END,
};
static const field purge_fields[] = {
    MF_I64("before", before_ms),
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
    /* a cancel by filter: the jobs the codes are for (written only when set) */
    { .key = "ids", .type = F_U64V, .off = M(ids), .count_off = M(n_ids),
      .limit = GF_PROTO_MAX_IDS, .omit = true },
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


const op_desc gf_proto_ops[GF_OP_COUNT_] = {
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
    [GF_OP_PURGE]        = { "purge", purge_fields },
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
    return gf_proto_ops[op].name;
}


size_t gf_proto_enum_count(const char *const *names)
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
        free_record(gf_proto_ops[op].fields, msg);
    memset(msg, 0, sizeof(*msg));
}

/* ------------------------------------------------------------- defaults */

void gf_proto_set_defaults(const field *fs, void *base)
{
    for (const field *f = fs; f->key; f++) {
        switch (f->type) {
        case F_I32: *PTR(base, f->off, int32_t) = (int32_t)f->def; break;
        case F_I64: *PTR(base, f->off, int64_t) = f->def; break;
        case F_STRUCT: gf_proto_set_defaults(f->sub, PTR(base, f->off, char)); break;
        default: break;
        }
    }
}

void gf_job_spec_init(gf_job_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    gf_proto_set_defaults(spec_fields, spec);
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
    gf_proto_set_defaults(job_fields, job);
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
    case F_F64: return sizeof(double);
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
        copy_record(gf_proto_ops[src->op].fields, dst, src);
}

const char *gf_job_state_name(gf_job_state s)
{
    if ((int)s < 0 || (size_t)s >= gf_proto_enum_count(state_names))
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
