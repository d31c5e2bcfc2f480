/* test_proto.c — the wire codec: every message round-trips, and malformed
 * frames (truncated, wrong types, missing or unknown keys, oversize, wrong
 * version, unknown op, trailing bytes, random corruption) are refused with a
 * message, never a crash. */
#include "common/error.h"
#include "net/proto.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **strv(int n, ...)
{
    va_list ap;
    va_start(ap, n);
    char **v = gf_calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++)
        v[i] = gf_strdup(va_arg(ap, const char *));
    va_end(ap);
    return v;
}

static void fill_spec(gf_job_spec *s)
{
    gf_job_spec_init(s);
    s->argv = strv(3, "python3", "-c", "print('héllo')");
    s->argc = 3;
    s->cwd = gf_strdup("/home/ana/proj");
    s->env = strv(2, "PATH=/usr/bin:/bin", "LANG=C.UTF-8");
    s->n_env = 2;
    s->req = GF_REQ_GPUS;
    s->gpu = 3;
    s->gpus = 2;
    s->mode = GF_MODE_SHARED;
    s->proof = true;
    s->priority = -7;
    s->time_limit_s = 3600;
    s->after = gf_calloc(2, sizeof(uint64_t));
    s->after[0] = 41;
    s->after[1] = 1ull << 40;
    s->n_after = 2;
    s->name = gf_strdup("train-run");
    s->no_requeue = true;
    s->array_index = 12;
    s->yield_sig = 10;
    s->yield_grace_s = 45;
    s->hold = true;
    s->notify = gf_strdup("mail -s \"job $GPUFLOCK_JOB_ID: $GPUFLOCK_JOB_STATE\" ana </dev/null");
}

/* A selection with every condition set. */
static gf_job_filter *make_filter(void)
{
    gf_job_filter *f = gf_calloc(1, sizeof(*f));
    f->users = gf_calloc(2, sizeof(uint32_t));
    f->users[0] = 0;             /* root: a uid 0 still travels */
    f->users[1] = 1001;
    f->n_users = 2;
    f->states = strv(2, "failed", "cancelled");
    f->n_states = 2;
    f->name = gf_strdup("train, \"v2\"");
    f->since_ms = 1764500000000LL;
    f->cards = gf_calloc(1, sizeof(int32_t));
    f->cards[0] = 0;             /* card 0 too */
    f->n_cards = 1;
    return f;
}

/* A diarize job's parameters, every field set. */
static gf_diar_spec *make_diar(void)
{
    gf_diar_spec *d = gf_calloc(1, sizeof(*d));
    d->audio = gf_strdup("/data/meet/ES2004a.wav");
    d->rttm = gf_strdup("/data/out/ES2004a.rttm");
    d->json = true;
    d->intermediates = gf_strdup("/data/inter/ES2004a");
    d->models = gf_strdup("/opt/gpuflock/models");
    d->num_speakers = 0;
    d->min_speakers = 2;
    d->max_speakers = 5;
    d->overwrite = true;
    d->threshold = 0.55;
    d->fa = 0.125;
    d->fb = 1.5;
    d->min_duration_off = 0.25;
    d->keep_overlap = true;
    return d;
}

static void fill_card(gf_card_identity *c, int index)
{
    memset(c, 0, sizeof(*c));
    c->index = index;
    c->kind = GF_DEVICE_CUDA;
    snprintf(c->name, sizeof(c->name), "NVIDIA H200");
    snprintf(c->uuid, sizeof(c->uuid), "GPU-0123abcd-0000-1111-2222-33334444555%d", index);
    c->cc_major = 9;
    c->cc_minor = 0;
    c->sm_count = 132;
    c->total_mem = (size_t)150 << 30;
    c->l2_bytes = 50 << 20;
    c->smem_optin = 232448;
    c->driver_version = 13000;
}

static void fill_stats(gf_stat **st, size_t *n)
{
    *st = gf_calloc(3, sizeof(gf_stat));
    (*st)[0].key = gf_strdup("segmentation.device_ns.total");
    (*st)[0].i = 123456789012LL;
    (*st)[1].key = gf_strdup("embedding.count");
    (*st)[1].i = -3;
    (*st)[2].key = gf_strdup("speedup");
    (*st)[2].is_float = true;
    (*st)[2].f = 1.375;
    *n = 3;
}

static void fill_job(gf_job *j, uint64_t id)
{
    gf_job_init(j);
    j->id = id;
    fill_spec(&j->spec);
    j->state = GF_STATE_FAILED;
    j->uid = 1001;
    j->gid = 1002;
    j->user = gf_strdup("ana");
    j->attempts = 2;
    j->submitted_ms = 1764500000000LL;
    j->started_ms = 1764500000100LL;
    j->ended_ms = 1764500009100LL;
    j->cards = gf_calloc(2, sizeof(int32_t));
    j->cards[0] = 0;
    j->cards[1] = 1;
    j->n_cards = 2;
    j->exit_status = 3;
    j->term_signal = 0;
    j->cpu_user_ms = 8000;
    j->cpu_sys_ms = 120;
    j->maxrss_kb = 204800;
    j->reason = gf_strdup("exit status 3");
    j->out_path = gf_strdup("/var/lib/gpuflock/spool/7.out");
    j->err_path = gf_strdup("/var/lib/gpuflock/spool/7.err");
    fill_stats(&j->stats, &j->n_stats);
    j->held = true;
    j->held_by = 1001;
    j->yields = 2;
}

/* A message of this op with every field it has set to something non-zero. */
static void fill_msg(gf_msg *m, gf_op op)
{
    memset(m, 0, sizeof(*m));
    m->op = op;
    switch (op) {
    case GF_OP_SUBMIT:
        fill_spec(&m->spec);
        m->array = 5;
        m->commands = strv(2, "echo a", "echo b > out.txt");
        m->n_commands = 2;
        break;
    case GF_OP_QUEUE:
        m->all = true;
        m->filter = make_filter();
        break;
    case GF_OP_PURGE:
        m->before_ms = 1764500000000LL;
        break;
    case GF_OP_SHOW:
        m->id = 77;
        break;
    case GF_OP_WAIT: case GF_OP_CANCEL: case GF_OP_IDS: case GF_OP_HOLD: case GF_OP_RELEASE:
    case GF_OP_REQUEUE:
        m->ids = gf_calloc(3, sizeof(uint64_t));
        m->ids[0] = 1;
        m->ids[1] = 2;
        m->ids[2] = UINT64_MAX;
        m->n_ids = 3;
        m->timeout_ms = op == GF_OP_WAIT ? 2500 : 0;
        if (op == GF_OP_CANCEL) {
            m->checkpoint = true;
            m->filter = make_filter();
        }
        break;
    case GF_OP_LOGS:
        m->id = 9;
        m->stream = GF_STREAM_ERR;
        m->offset = 4096;
        break;
    case GF_OP_WORKERS: case GF_OP_HEARTBEAT:
        break;
    case GF_OP_DRAIN: case GF_OP_RESUME:
        m->device = 3;
        m->message = gf_strdup("fan replaced");
        break;
    case GF_OP_JOBS:
        m->jobs = gf_calloc(2, sizeof(gf_job));
        fill_job(&m->jobs[0], 7);
        fill_job(&m->jobs[1], 8);
        m->n_jobs = 2;
        break;
    case GF_OP_CODES:
        m->codes = gf_calloc(2, sizeof(int32_t));
        m->codes[0] = 0;
        m->codes[1] = GF_EPERM;
        m->n_codes = 2;
        m->message = gf_strdup("job 8: not yours");
        m->ids = gf_calloc(2, sizeof(uint64_t));
        m->ids[0] = 7;
        m->ids[1] = 8;
        m->n_ids = 2;
        break;
    case GF_OP_LOG:
        m->data = gf_malloc(5);
        memcpy(m->data, "a\0b\nc", 5);
        m->data_len = 5;
        m->offset = 5;
        m->eof = true;
        break;
    case GF_OP_WORKERS_LIST:
        m->workers = gf_calloc(2, sizeof(gf_worker_info));
        for (int i = 0; i < 2; i++) {
            m->workers[i].device = i;
            fill_card(&m->workers[i].card, i);
            m->workers[i].state = gf_strdup(i ? "busy" : "idle");
            m->workers[i].pid = 4000 + i;
            m->workers[i].jobs = gf_calloc(1, sizeof(uint64_t));
            m->workers[i].jobs[0] = 100 + (uint64_t)i;
            m->workers[i].n_jobs = 1;
            m->workers[i].plan = gf_strdup("lstm.stack: library");
            m->workers[i].supervision =
                gf_strdup(i ? "process group: a process that calls setsid escapes"
                            : "cgroup /sys/fs/cgroup/gpuflock-worker-4000");
            m->workers[i].last_seen_ms = 1764500000000LL + i;
            m->workers[i].drain = gf_strdup(i ? "draining" : "drained");
            m->workers[i].drain_reason = gf_strdup("fan replaced");
            fill_stats(&m->workers[i].stats, &m->workers[i].n_stats);
        }
        m->n_workers = 2;
        break;
    case GF_OP_ERROR:
        m->code = GF_EPROTO;
        m->message = gf_strdup("unknown operation 'frobnicate'");
        break;
    case GF_OP_READY:
        m->device = 1;
        m->pid = 4242;
        fill_card(&m->card, 1);
        m->plan = gf_strdup("fbank.dft@32/fp32: own v2 (evidence 9f2c...)");
        m->supervision = gf_strdup("cgroup /sys/fs/cgroup/unified/gpuflock-worker-4242");
        m->running = gf_calloc(1, sizeof(gf_running));
        m->running[0] = (gf_running){ .id = 31, .attempt = 2, .pid = 5000, .started_ms = 17,
                                      .done = true };
        m->n_running = 1;
        break;
    case GF_OP_JOB:
        m->id = 31;
        m->attempt = 2;
        fill_spec(&m->spec);
        m->uid = 1001;
        m->gid = 1002;
        m->groups = gf_calloc(2, sizeof(uint32_t));
        m->groups[0] = 27;
        m->groups[1] = 44;
        m->n_groups = 2;
        m->out_path = gf_strdup("/s/31.out");
        m->err_path = gf_strdup("/s/31.err");
        m->locks = strv(2, "/run/lock/gpuflock/gpu0.lock", "/run/lock/gpuflock/gpu1.lock");
        m->n_locks = 2;
        m->cards = gf_calloc(2, sizeof(int32_t));
        m->cards[0] = 0;
        m->cards[1] = 1;
        m->n_cards = 2;
        m->visible = gf_strdup("GPU-a,GPU-b");
        m->spec.kind = GF_JOB_DIARIZE;
        m->spec.diar = make_diar();
        break;
    case GF_OP_PROGRESS:
        m->id = 31;
        m->attempt = 2;
        m->pid = 5000;
        m->started_ms = 1764500000100LL;
        m->message = gf_strdup("chunk 4/10");
        m->done = 4;
        m->total = 10;
        break;
    case GF_OP_RESULT:
        m->id = 31;
        m->attempt = 2;
        m->exit_status = -1;
        m->term_signal = 9;
        m->started_ms = 1764500000100LL;
        m->ended_ms = 1764500001100LL;
        m->cpu_user_ms = 900;
        m->cpu_sys_ms = 40;
        m->maxrss_kb = 10240;
        fill_stats(&m->stats, &m->n_stats);
        m->message = gf_strdup("killed by signal 9");
        m->outcome = GF_OUTCOME_YIELDED;
        break;
    case GF_OP_KILL:
        m->id = 31;
        m->attempt = 2;
        m->grace_s = 10;
        m->message = gf_strdup("time limit");
        m->kill_mode = GF_KILL_REQUEUE;
        break;
    case GF_OP_DISCONNECT:
        m->message = gf_strdup("shutting down");
        break;
    default:
        fail();
    }
}

static void encode_ok(const gf_msg *m, uint8_t **buf, size_t *len)
{
    int rc = gf_proto_encode(m, buf, len);
    assert_int_equal(rc, 0);
    assert_non_null(*buf);
    assert_true(*len > 4);
}

/* With GF_PROTO_SEED_DIR set, write each valid frame there: the seed corpus
 * of tests/fuzz/corpus/proto comes from this. */
static void dump_seed(const char *name, const uint8_t *buf, size_t len)
{
    const char *dir = getenv("GF_PROTO_SEED_DIR");
    if (!dir)
        return;
    char *path = gf_strfmt("%s/%s.msgpack", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(path);
}

static void test_round_trip_every_op(void **state)
{
    (void)state;
    for (int op = 1; op < GF_OP_COUNT_; op++) {
        gf_msg m, d;
        fill_msg(&m, (gf_op)op);
        uint8_t *a, *b;
        size_t alen, blen;
        encode_ok(&m, &a, &alen);
        char err[256];
        int rc = gf_proto_decode(a, alen, &d, err, sizeof(err));
        if (rc)
            fail_msg("op %s: %s", gf_proto_op_name((gf_op)op), err);
        assert_int_equal(d.op, op);
        dump_seed(gf_proto_op_name((gf_op)op), a, alen);
        /* The encoder is deterministic: equal bytes mean equal fields. */
        encode_ok(&d, &b, &blen);
        assert_int_equal(alen, blen);
        assert_memory_equal(a, b, alen);
        free(a);
        free(b);
        gf_msg_clear(&m);
        gf_msg_clear(&d);
        gf_msg_clear(&d);   /* safe twice */
    }
}

static void test_fields_survive(void **state)
{
    (void)state;
    gf_msg m, d;
    fill_msg(&m, GF_OP_JOBS);
    uint8_t *a;
    size_t alen;
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    const gf_job *j = &d.jobs[1];
    assert_int_equal(d.n_jobs, 2);
    assert_int_equal(j->id, 8);
    assert_int_equal(j->spec.argc, 3);
    assert_string_equal(j->spec.argv[2], "print('héllo')");
    assert_null(j->spec.argv[3]);        /* argv stays NULL-terminated */
    assert_int_equal(j->spec.req, GF_REQ_GPUS);
    assert_int_equal(j->spec.mode, GF_MODE_SHARED);
    assert_int_equal(j->spec.priority, -7);
    assert_int_equal(j->spec.after[1], 1ull << 40);
    assert_int_equal(j->spec.array_index, 12);
    assert_int_equal(j->state, GF_STATE_FAILED);
    assert_int_equal(j->stats[1].i, -3);
    assert_true(j->stats[2].is_float);
    assert_true(j->stats[2].f == 1.375);
    assert_int_equal(j->cards[1], 1);
    assert_string_equal(j->reason, "exit status 3");
    free(a);
    gf_msg_clear(&m);
    gf_msg_clear(&d);

    fill_msg(&m, GF_OP_READY);
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_string_equal(d.card.name, "NVIDIA H200");
    assert_int_equal(d.card.total_mem, (size_t)150 << 30);
    assert_int_equal(d.running[0].pid, 5000);
    assert_true(d.running[0].done);
    assert_string_equal(d.supervision, "cgroup /sys/fs/cgroup/unified/gpuflock-worker-4242");
    free(a);
    gf_msg_clear(&m);
    gf_msg_clear(&d);
}

/* Does the frame hold this key (its msgpack string)? */
static bool has_key(const uint8_t *a, size_t alen, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i + n + 1 <= alen; i++)
        if (a[i] == (uint8_t)(0xa0 | n) && memcmp(a + i + 1, key, n) == 0)
            return true;
    return false;
}

/* The history keys (a selection, a notify command, purge, a codes reply's
 * ids) come back as sent, and stay out of the frame when unset: a queue,
 * cancel, spec or codes without them is the version-1 message it was. */
static void test_history_keys(void **state)
{
    (void)state;
    gf_msg m, d;
    uint8_t *a;
    size_t alen;
    fill_msg(&m, GF_OP_QUEUE);
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_true(d.all);
    assert_non_null(d.filter);
    assert_int_equal(d.filter->n_users, 2);
    assert_int_equal(d.filter->users[0], 0);
    assert_int_equal(d.filter->users[1], 1001);
    assert_int_equal(d.filter->n_states, 2);
    assert_string_equal(d.filter->states[1], "cancelled");
    assert_string_equal(d.filter->name, "train, \"v2\"");
    assert_int_equal(d.filter->since_ms, 1764500000000LL);
    assert_int_equal(d.filter->n_cards, 1);
    assert_int_equal(d.filter->cards[0], 0);
    free(a);
    gf_msg_clear(&d);
    /* only a name: the other conditions stay out */
    gf_msg_clear(&m);
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_QUEUE;
    m.filter = gf_calloc(1, sizeof(gf_job_filter));
    m.filter->name = gf_strdup("eval");
    encode_ok(&m, &a, &alen);
    assert_true(has_key(a, alen, "filter") && has_key(a, alen, "name"));
    assert_false(has_key(a, alen, "users") || has_key(a, alen, "states") ||
                 has_key(a, alen, "since") || has_key(a, alen, "cards"));
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_string_equal(d.filter->name, "eval");
    assert_int_equal(d.filter->n_users, 0);
    assert_null(d.filter->users);
    assert_int_equal(d.filter->since_ms, 0);
    free(a);
    gf_msg_clear(&d);
    gf_msg_clear(&m);
    /* no filter, no notify, no ids: none of the keys */
    const gf_op plain[] = { GF_OP_QUEUE, GF_OP_CANCEL, GF_OP_CODES, GF_OP_SUBMIT };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        fill_msg(&m, plain[i]);
        free(m.spec.notify);
        m.spec.notify = NULL;
        if (plain[i] == GF_OP_CODES) {
            free(m.ids);
            m.ids = NULL;
            m.n_ids = 0;
        }
        gf_job_filter *f = m.filter;
        m.filter = NULL;
        if (f) {
            gf_msg tmp;
            memset(&tmp, 0, sizeof(tmp));
            tmp.op = GF_OP_QUEUE;
            tmp.filter = f;
            gf_msg_clear(&tmp);
        }
        encode_ok(&m, &a, &alen);
        assert_false(has_key(a, alen, "filter") || has_key(a, alen, "notify"));
        if (plain[i] == GF_OP_CODES)
            assert_false(has_key(a, alen, "ids"));
        assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
        assert_null(d.filter);
        assert_null(d.spec.notify);
        free(a);
        gf_msg_clear(&d);
        gf_msg_clear(&m);
    }
    /* a submit's notify and a purge's date */
    fill_msg(&m, GF_OP_SUBMIT);
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_string_equal(d.spec.notify, m.spec.notify);
    free(a);
    gf_msg_clear(&d);
    gf_msg_clear(&m);
    fill_msg(&m, GF_OP_PURGE);
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_int_equal(d.op, GF_OP_PURGE);
    assert_int_equal(d.before_ms, 1764500000000LL);
    free(a);
    gf_msg_clear(&d);
    gf_msg_clear(&m);
    /* an unknown key inside the selection is refused, naming its path */
    static const uint8_t bad[] = { 0x83, 0xa1, 'v', 0x01, 0xa2, 'o', 'p', 0xa5, 'q', 'u', 'e', 'u',
                                   'e', 0xa6, 'f', 'i', 'l', 't', 'e', 'r', 0x81, 0xa3, 'u', 'i',
                                   'd', 0x00 };
    char err[256];
    assert_int_equal(gf_proto_decode(bad, sizeof bad, &d, err, sizeof err), GF_EPROTO);
    assert_non_null(strstr(err, "filter"));
    assert_non_null(strstr(err, "uid"));
}

/* Optional fields may be absent and get their defaults; nil strings stay NULL. */
static void test_defaults(void **state)
{
    (void)state;
    gf_msg m, d;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_SUBMIT;
    gf_job_spec_init(&m.spec);
    m.spec.argv = strv(1, "true");
    m.spec.argc = 1;
    uint8_t *a;
    size_t alen;
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_null(d.spec.cwd);
    assert_null(d.spec.name);
    assert_int_equal(d.spec.array_index, -1);
    assert_int_equal(d.spec.n_env, 0);
    free(a);
    gf_msg_clear(&m);
    gf_msg_clear(&d);

    /* A hand-made minimal submit: only argv in the spec. */
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "v", 1);
    msgpack_pack_int(&pk, GF_PROTO_VERSION);
    msgpack_pack_str_with_body(&pk, "op", 2);
    msgpack_pack_str_with_body(&pk, "submit", 6);
    msgpack_pack_str_with_body(&pk, "spec", 4);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "argv", 4);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_str_with_body(&pk, "true", 4);
    assert_int_equal(gf_proto_decode(sb.data, sb.size, &d, NULL, 0), 0);
    assert_int_equal(d.spec.array_index, -1);
    assert_int_equal(d.spec.mode, GF_MODE_EXCLUSIVE);
    assert_int_equal(d.spec.req, GF_REQ_ANY);
    gf_msg_clear(&d);
    msgpack_sbuffer_destroy(&sb);
}

/* Build a frame by hand: header (version, op) then `extra` packed by fn. */
typedef void (*packfn)(msgpack_packer *pk);

static int decode_built(uint64_t version, const char *op, int n_extra, packfn fn, char *err,
                        size_t errlen)
{
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2 + (size_t)n_extra);
    msgpack_pack_str_with_body(&pk, "v", 1);
    msgpack_pack_uint64(&pk, version);
    msgpack_pack_str_with_body(&pk, "op", 2);
    msgpack_pack_str_with_body(&pk, op, strlen(op));
    if (fn)
        fn(&pk);
    gf_msg d;
    int rc = gf_proto_decode(sb.data, sb.size, &d, err, errlen);
    if (rc == 0)
        gf_msg_clear(&d);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static void pk_show_id_str(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_str_with_body(pk, "7", 1);
}
static void pk_show_id_neg(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_int(pk, -7);
}
static void pk_unknown_key(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_int(pk, 7);
    msgpack_pack_str_with_body(pk, "colour", 6);
    msgpack_pack_true(pk);
}
static void pk_dup_key(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_int(pk, 7);
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_int(pk, 8);
}
static void pk_big_name(msgpack_packer *pk)
{
    size_t n = GF_PROTO_MAX_NAME + 1;
    char *s = gf_malloc(n);
    memset(s, 'n', n);
    msgpack_pack_str_with_body(pk, "spec", 4);
    msgpack_pack_map(pk, 2);
    msgpack_pack_str_with_body(pk, "argv", 4);
    msgpack_pack_array(pk, 1);
    msgpack_pack_str_with_body(pk, "x", 1);
    msgpack_pack_str_with_body(pk, "name", 4);
    msgpack_pack_str_with_body(pk, s, n);
    free(s);
}
static void pk_nul_in_argv(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "spec", 4);
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "argv", 4);
    msgpack_pack_array(pk, 1);
    msgpack_pack_str_with_body(pk, "a\0b", 3);
}
static void pk_bad_mode(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "spec", 4);
    msgpack_pack_map(pk, 2);
    msgpack_pack_str_with_body(pk, "argv", 4);
    msgpack_pack_array(pk, 1);
    msgpack_pack_str_with_body(pk, "x", 1);
    msgpack_pack_str_with_body(pk, "mode", 4);
    msgpack_pack_str_with_body(pk, "both", 4);
}
static void pk_spec_no_argv(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "spec", 4);
    msgpack_pack_map(pk, 1);
    msgpack_pack_str_with_body(pk, "cwd", 3);
    msgpack_pack_str_with_body(pk, "/", 1);
}
static void pk_i32_overflow(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "code", 4);
    msgpack_pack_int64(pk, 1LL << 33);
    msgpack_pack_str_with_body(pk, "message", 7);
    msgpack_pack_str_with_body(pk, "m", 1);
}
static void pk_ids_too_many(msgpack_packer *pk)
{
    /* a header claiming more entries than the limit, with no bytes behind */
    msgpack_pack_str_with_body(pk, "ids", 3);
    msgpack_pack_array(pk, GF_PROTO_MAX_IDS + 1);
}
static void pk_ids_lying(msgpack_packer *pk)
{
    /* within the limit, but more entries than there are bytes */
    msgpack_pack_str_with_body(pk, "ids", 3);
    msgpack_pack_array(pk, 1000);
    msgpack_pack_int(pk, 1);
}

static void test_malformed_fields(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(decode_built(GF_PROTO_VERSION, "show", 0, NULL, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "missing key 'id'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "show", 1, pk_show_id_str, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "key 'id': expected an integer, found a string"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "show", 1, pk_show_id_neg, err, sizeof(err)),
                     GF_EPROTO);
    assert_int_equal(decode_built(GF_PROTO_VERSION, "show", 2, pk_unknown_key, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "unknown key 'colour'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "show", 2, pk_dup_key, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "duplicate key 'id'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "submit", 1, pk_big_name, err, sizeof(err)),
                     GF_ETOOBIG);
    assert_non_null(strstr(err, "key 'spec.name'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "submit", 1, pk_nul_in_argv, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "NUL"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "submit", 1, pk_bad_mode, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.mode': unknown value 'both'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "submit", 1, pk_spec_no_argv, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "missing key 'argv'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "error", 2, pk_i32_overflow, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "out of range"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "cancel", 1, pk_ids_too_many, err, sizeof(err)),
                     GF_ETOOBIG);
    assert_int_equal(decode_built(GF_PROTO_VERSION, "cancel", 1, pk_ids_lying, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "truncated"));
}

/* Diarize jobs: the "diar" record and the progress keys travel; command
 * jobs carry none of them (their bytes are those of version 1), and a
 * deep copy owns its own record. */
static void test_diarize_fields(void **state)
{
    (void)state;
    gf_msg m, d;
    fill_msg(&m, GF_OP_JOB);
    uint8_t *a;
    size_t alen;
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_int_equal(d.spec.kind, GF_JOB_DIARIZE);
    assert_non_null(d.spec.diar);
    assert_string_equal(d.spec.diar->audio, "/data/meet/ES2004a.wav");
    assert_string_equal(d.spec.diar->rttm, "/data/out/ES2004a.rttm");
    assert_true(d.spec.diar->json);
    assert_string_equal(d.spec.diar->intermediates, "/data/inter/ES2004a");
    assert_string_equal(d.spec.diar->models, "/opt/gpuflock/models");
    assert_int_equal(d.spec.diar->num_speakers, 0);
    assert_int_equal(d.spec.diar->min_speakers, 2);
    assert_int_equal(d.spec.diar->max_speakers, 5);
    assert_true(d.spec.diar->overwrite);
    assert_true(d.spec.diar->threshold == 0.55);
    assert_true(d.spec.diar->fa == 0.125);
    assert_true(d.spec.diar->fb == 1.5);
    assert_true(d.spec.diar->min_duration_off == 0.25);
    assert_true(d.spec.diar->keep_overlap);
    gf_job_spec cp;
    gf_job_spec_copy(&cp, &d.spec);
    assert_ptr_not_equal(cp.diar, d.spec.diar);
    assert_ptr_not_equal(cp.diar->audio, d.spec.diar->audio);
    assert_string_equal(cp.diar->models, "/opt/gpuflock/models");
    gf_job_spec_clear(&cp);
    assert_null(cp.diar);
    free(a);
    gf_msg_clear(&d);

    /* only the mandatory paths: the rest takes defaults */
    free(m.spec.diar->intermediates);
    free(m.spec.diar->models);
    m.spec.diar->intermediates = m.spec.diar->models = NULL;
    m.spec.diar->json = false;
    m.spec.diar->min_speakers = m.spec.diar->max_speakers = 0;
    m.spec.diar->overwrite = m.spec.diar->keep_overlap = false;
    m.spec.diar->threshold = m.spec.diar->fa = m.spec.diar->fb = 0;
    m.spec.diar->min_duration_off = 0;
    encode_ok(&m, &a, &alen);
    /* keys added after version 1 stay out at their defaults */
    for (size_t i = 0; i + 9 <= alen; i++)
        assert_false(memcmp(a + i, "threshold", 9) == 0 || memcmp(a + i, "overwrite", 9) == 0);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_true(d.spec.diar->threshold == 0 && d.spec.diar->min_duration_off == 0);
    assert_false(d.spec.diar->overwrite);
    assert_null(d.spec.diar->intermediates);
    assert_null(d.spec.diar->models);
    assert_false(d.spec.diar->json);
    free(a);
    gf_msg_clear(&d);
    gf_msg_clear(&m);

    /* a command job, a job record and a progress without them: no new key */
    gf_job j;
    fill_job(&j, 9);
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = &j;
    m.n_jobs = 1;
    encode_ok(&m, &a, &alen);
    assert_null(memmem(a, alen, "diar", 4));
    assert_null(memmem(a, alen, "progress_", 9));
    free(a);
    j.progress_done = 12;
    j.progress_total = 40;
    encode_ok(&m, &a, &alen);
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_int_equal(d.jobs[0].progress_done, 12);
    assert_int_equal(d.jobs[0].progress_total, 40);
    free(a);
    gf_msg_clear(&d);
    gf_job_clear(&j);
    fill_msg(&m, GF_OP_PROGRESS);
    m.done = m.total = 0;
    encode_ok(&m, &a, &alen);
    assert_null(memmem(a, alen, "total", 5));
    assert_int_equal(gf_proto_decode(a, alen, &d, NULL, 0), 0);
    assert_int_equal(d.total, 0);
    free(a);
    gf_msg_clear(&d);
    gf_msg_clear(&m);
}

/* A submit whose spec holds "diar" = the map packed by fn (n entries). */
static int diar_n;
static packfn diar_fn;
static void pk_spec_with_diar(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "spec", 4);
    msgpack_pack_map(pk, 3);
    msgpack_pack_str_with_body(pk, "argv", 4);
    msgpack_pack_array(pk, 1);
    msgpack_pack_str_with_body(pk, "diarize", 7);
    msgpack_pack_str_with_body(pk, "kind", 4);
    msgpack_pack_str_with_body(pk, "diarize", 7);
    msgpack_pack_str_with_body(pk, "diar", 4);
    if (diar_n < 0)
        msgpack_pack_nil(pk);
    else
        msgpack_pack_map(pk, (size_t)diar_n);
    if (diar_fn)
        diar_fn(pk);
}
static void pk_diar_paths(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "audio", 5);
    msgpack_pack_str_with_body(pk, "/a.wav", 6);
    msgpack_pack_str_with_body(pk, "rttm", 4);
    msgpack_pack_str_with_body(pk, "/a.rttm", 7);
}
static void pk_diar_no_rttm(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "audio", 5);
    msgpack_pack_str_with_body(pk, "/a.wav", 6);
}
static void pk_diar_unknown(msgpack_packer *pk)
{
    pk_diar_paths(pk);
    msgpack_pack_str_with_body(pk, "speed", 5);
    msgpack_pack_int(pk, 2);
}
static void pk_diar_bad_speakers(msgpack_packer *pk)
{
    pk_diar_paths(pk);
    msgpack_pack_str_with_body(pk, "num_speakers", 12);
    msgpack_pack_str_with_body(pk, "2", 1);
}
static void pk_diar_big_speakers(msgpack_packer *pk)
{
    pk_diar_paths(pk);
    msgpack_pack_str_with_body(pk, "max_speakers", 12);
    msgpack_pack_int64(pk, 1LL << 40);
}
static void pk_diar_nil_audio(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "audio", 5);
    msgpack_pack_nil(pk);
    msgpack_pack_str_with_body(pk, "rttm", 4);
    msgpack_pack_str_with_body(pk, "/a.rttm", 7);
}
static void pk_diar_nul_path(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "audio", 5);
    msgpack_pack_str_with_body(pk, "/a\0.wav", 7);
    msgpack_pack_str_with_body(pk, "rttm", 4);
    msgpack_pack_str_with_body(pk, "/a.rttm", 7);
}
static void pk_diar_json_int(msgpack_packer *pk)
{
    pk_diar_paths(pk);
    msgpack_pack_str_with_body(pk, "json", 4);
    msgpack_pack_int(pk, 1);
}
static void pk_progress_done_str(msgpack_packer *pk)
{
    msgpack_pack_str_with_body(pk, "id", 2);
    msgpack_pack_int(pk, 3);
    msgpack_pack_str_with_body(pk, "attempt", 7);
    msgpack_pack_int(pk, 1);
    msgpack_pack_str_with_body(pk, "done", 4);
    msgpack_pack_str_with_body(pk, "4", 1);
}

static int decode_diar(int n, packfn fn, char *err, size_t len)
{
    diar_n = n;
    diar_fn = fn;
    return decode_built(GF_PROTO_VERSION, "submit", 1, pk_spec_with_diar, err, len);
}

/* The diarize record is decoded as strictly as the rest. */
static void test_diarize_malformed(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(decode_diar(2, pk_diar_paths, err, sizeof(err)), 0);
    assert_int_equal(decode_diar(-1, NULL, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.diar': expected a map, found nil"));
    assert_int_equal(decode_diar(1, pk_diar_no_rttm, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "missing key 'rttm'"));
    assert_int_equal(decode_diar(3, pk_diar_unknown, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.diar': unknown key 'speed'"));
    assert_int_equal(decode_diar(3, pk_diar_bad_speakers, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.diar.num_speakers': expected an integer, found a string"));
    assert_int_equal(decode_diar(3, pk_diar_big_speakers, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.diar.max_speakers': integer"));
    assert_int_equal(decode_diar(2, pk_diar_nil_audio, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.diar.audio': expected a string, found nil"));
    assert_int_equal(decode_diar(2, pk_diar_nul_path, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "NUL"));
    assert_int_equal(decode_diar(3, pk_diar_json_int, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'spec.diar.json': expected a boolean"));
    /* a map header claiming entries that are not there */
    assert_int_equal(decode_diar(5, pk_diar_paths, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "truncated"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "progress", 3, pk_progress_done_str, err,
                                  sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "key 'done': expected an integer"));
}

static void test_header(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(decode_built(GF_PROTO_VERSION + 1, "queue", 0, NULL, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "unsupported protocol version"));
    assert_int_equal(decode_built(0, "queue", 0, NULL, err, sizeof(err)), GF_EPROTO);
    assert_int_equal(decode_built(GF_PROTO_VERSION, "frobnicate", 0, NULL, err, sizeof(err)),
                     GF_EPROTO);
    assert_non_null(strstr(err, "unknown operation 'frobnicate'"));
    assert_int_equal(decode_built(GF_PROTO_VERSION, "queue", 0, NULL, err, sizeof(err)), 0);

    gf_msg d;
    /* not a map; empty; a map without the header; header in the wrong order */
    const uint8_t arr[] = { 0x91, 0x01 };
    assert_int_equal(gf_proto_decode(arr, sizeof(arr), &d, err, sizeof(err)), GF_EPROTO);
    assert_non_null(strstr(err, "expected a map, found an array"));
    assert_int_equal(gf_proto_decode(arr, 0, &d, err, sizeof(err)), GF_EPROTO);
    const uint8_t empty_map[] = { 0x80 };
    assert_int_equal(gf_proto_decode(empty_map, 1, &d, err, sizeof(err)), GF_EPROTO);
    const uint8_t swapped[] = { 0x82, 0xa2, 'o', 'p', 0xa5, 'q', 'u', 'e', 'u', 'e', 0xa1, 'v', 0x01 };
    assert_int_equal(gf_proto_decode(swapped, sizeof(swapped), &d, err, sizeof(err)), GF_EPROTO);
    /* a string version */
    const uint8_t strv_[] = { 0x82, 0xa1, 'v', 0xa1, '1', 0xa2, 'o', 'p', 0xa5, 'q', 'u', 'e', 'u',
                              'e' };
    assert_int_equal(gf_proto_decode(strv_, sizeof(strv_), &d, err, sizeof(err)), GF_EPROTO);
    /* an extension type where a value should be */
    const uint8_t ext[] = { 0x83, 0xa1, 'v', 0x01, 0xa2, 'o', 'p', 0xa4, 's', 'h', 'o', 'w', 0xa2,
                            'i', 'd', 0xd4, 0x01, 0x00 };
    assert_int_equal(gf_proto_decode(ext, sizeof(ext), &d, err, sizeof(err)), GF_EPROTO);
    /* a frame over the limit is refused before it is read */
    assert_int_equal(gf_proto_decode(ext, (size_t)GF_PROTO_MAX_FRAME + 1, &d, err, sizeof(err)),
                     GF_ETOOBIG);
}

/* Every proper prefix of every valid message is refused; so is any frame
 * with bytes after the message. */
static void test_truncation_and_trailing(void **state)
{
    (void)state;
    for (int op = 1; op < GF_OP_COUNT_; op++) {
        gf_msg m, d;
        fill_msg(&m, (gf_op)op);
        uint8_t *a;
        size_t alen;
        encode_ok(&m, &a, &alen);
        char err[256];
        for (size_t n = 0; n < alen; n++) {
            int rc = gf_proto_decode(a, n, &d, err, sizeof(err));
            if (rc == 0)
                fail_msg("op %s: prefix of %zu/%zu bytes accepted", gf_proto_op_name((gf_op)op),
                         n, alen);
            assert_true(err[0] != 0);
        }
        uint8_t *b = gf_malloc(alen + 1);
        memcpy(b, a, alen);
        b[alen] = 0xc0;
        assert_int_equal(gf_proto_decode(b, alen + 1, &d, err, sizeof(err)), GF_EPROTO);
        assert_non_null(strstr(err, "trailing"));
        free(b);
        free(a);
        gf_msg_clear(&m);
    }
}

/* Random corruption of valid frames: decode either succeeds (and then
 * re-encodes) or fails with a message; never crashes or leaks (ASan). */
static void test_random_corruption(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int accepted = 0, refused = 0;
    for (int round = 0; round < 4000; round++) {
        gf_op op = (gf_op)(1 + round % (GF_OP_COUNT_ - 1));
        gf_msg m, d;
        fill_msg(&m, op);
        uint8_t *a;
        size_t alen;
        encode_ok(&m, &a, &alen);
        int flips = 1 + round % 4;
        for (int i = 0; i < flips; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            a[x % alen] ^= (uint8_t)(1u << ((x >> 32) % 8));
        }
        char err[256];
        int rc = gf_proto_decode(a, alen, &d, err, sizeof(err));
        if (rc == 0) {
            uint8_t *b;
            size_t blen;
            assert_int_equal(gf_proto_encode(&d, &b, &blen), 0);
            free(b);
            gf_msg_clear(&d);
            accepted++;
        } else {
            assert_true(rc == GF_EPROTO || rc == GF_ETOOBIG);
            assert_true(err[0] != 0);
            refused++;
        }
        free(a);
        gf_msg_clear(&m);
    }
    assert_true(refused > 0);
    (void)accepted;
}

static void test_encode_limits(void **state)
{
    (void)state;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_SUBMIT;
    gf_job_spec_init(&m.spec);
    char *big = gf_malloc(GF_PROTO_MAX_NAME + 2);
    memset(big, 'x', GF_PROTO_MAX_NAME + 1);
    big[GF_PROTO_MAX_NAME + 1] = 0;
    m.spec.argv = strv(1, "true");
    m.spec.argc = 1;
    m.spec.name = big;
    uint8_t *a;
    size_t alen;
    assert_int_equal(gf_proto_encode(&m, &a, &alen), GF_ETOOBIG);
    assert_null(a);
    gf_msg_clear(&m);

    memset(&m, 0, sizeof(m));
    m.op = GF_OP_COUNT_;
    assert_int_equal(gf_proto_encode(&m, &a, &alen), GF_EINVAL);
    m.op = GF_OP_ERROR;     /* required message missing */
    assert_int_equal(gf_proto_encode(&m, &a, &alen), GF_EINVAL);
}

static void test_copy(void **state)
{
    (void)state;
    gf_job a, b;
    fill_job(&a, 5);
    gf_job_copy(&b, &a);
    gf_job_clear(&a);
    assert_string_equal(b.spec.argv[0], "python3");
    assert_string_equal(b.stats[0].key, "segmentation.device_ns.total");
    assert_int_equal(b.spec.after[0], 41);
    gf_job_clear(&b);
    gf_job_clear(&b);
    gf_job_state st;
    assert_int_equal(gf_job_state_parse("cancelled", &st), 0);
    assert_int_equal(st, GF_STATE_CANCELLED);
    assert_string_equal(gf_job_state_name(GF_STATE_RUNNING), "running");
    assert_int_equal(gf_job_state_parse("zombie", &st), GF_EINVAL);
}

/* A message's deep copy: for every op, the same bytes on the wire (every
 * field equal) from a copy that outlives its original. */
static void test_msg_copy_every_op(void **state)
{
    (void)state;
    for (int op = 1; op < GF_OP_COUNT_; op++) {
        gf_msg m, c;
        fill_msg(&m, (gf_op)op);
        gf_msg_copy(&c, &m);
        assert_int_equal(c.op, op);
        uint8_t *a, *b;
        size_t alen, blen;
        encode_ok(&m, &a, &alen);
        gf_msg_clear(&m);            /* the copy holds nothing of it */
        encode_ok(&c, &b, &blen);
        if (alen != blen || memcmp(a, b, alen) != 0)
            fail_msg("op %s: the copy encodes differently", gf_proto_op_name((gf_op)op));
        free(a);
        free(b);
        gf_msg_clear(&c);
    }
}

/* The "job" message the workers copy: field for field equal, and no
 * pointer of the copy is one of the original's. What the op does not
 * carry is left out, as a decode would. */
static void test_msg_copy_job(void **state)
{
    (void)state;
    gf_msg m, c;
    fill_msg(&m, GF_OP_JOB);
    m.message = gf_strdup("not a field of a job message");
    gf_msg_copy(&c, &m);
    assert_int_equal(c.op, GF_OP_JOB);
    assert_int_equal(c.id, m.id);
    assert_int_equal(c.attempt, m.attempt);
    assert_int_equal(c.uid, m.uid);
    assert_int_equal(c.gid, m.gid);
    assert_null(c.message);

    const gf_job_spec *s = &m.spec, *t = &c.spec;
    assert_int_equal(t->kind, s->kind);
    assert_int_equal(t->req, s->req);
    assert_int_equal(t->gpu, s->gpu);
    assert_int_equal(t->gpus, s->gpus);
    assert_int_equal(t->mode, s->mode);
    assert_int_equal(t->proof, s->proof);
    assert_int_equal(t->priority, s->priority);
    assert_int_equal(t->time_limit_s, s->time_limit_s);
    assert_int_equal(t->no_requeue, s->no_requeue);
    assert_int_equal(t->array_index, s->array_index);
    assert_int_equal(t->yield_sig, s->yield_sig);
    assert_int_equal(t->yield_grace_s, s->yield_grace_s);
    assert_int_equal(t->hold, s->hold);
    assert_int_equal(t->argc, s->argc);
    assert_ptr_not_equal(t->argv, s->argv);
    for (size_t i = 0; i < s->argc; i++) {
        assert_ptr_not_equal(t->argv[i], s->argv[i]);
        assert_string_equal(t->argv[i], s->argv[i]);
    }
    assert_null(t->argv[t->argc]);
    assert_int_equal(t->n_env, s->n_env);
    assert_ptr_not_equal(t->env, s->env);
    for (size_t i = 0; i < s->n_env; i++) {
        assert_ptr_not_equal(t->env[i], s->env[i]);
        assert_string_equal(t->env[i], s->env[i]);
    }
    assert_ptr_not_equal(t->cwd, s->cwd);
    assert_string_equal(t->cwd, s->cwd);
    assert_ptr_not_equal(t->name, s->name);
    assert_string_equal(t->name, s->name);
    assert_int_equal(t->n_after, s->n_after);
    assert_ptr_not_equal(t->after, s->after);
    assert_memory_equal(t->after, s->after, s->n_after * sizeof(uint64_t));

    const gf_diar_spec *sd = s->diar, *td = t->diar;
    assert_ptr_not_equal(td, sd);
    const char *const sds[] = { sd->audio, sd->rttm, sd->intermediates, sd->models };
    const char *const tds[] = { td->audio, td->rttm, td->intermediates, td->models };
    for (size_t i = 0; i < 4; i++) {
        assert_ptr_not_equal(tds[i], sds[i]);
        assert_string_equal(tds[i], sds[i]);
    }
    assert_int_equal(td->json, sd->json);
    assert_int_equal(td->num_speakers, sd->num_speakers);
    assert_int_equal(td->min_speakers, sd->min_speakers);
    assert_int_equal(td->max_speakers, sd->max_speakers);

    assert_int_equal(c.n_groups, m.n_groups);
    assert_ptr_not_equal(c.groups, m.groups);
    assert_memory_equal(c.groups, m.groups, m.n_groups * sizeof(uint32_t));
    assert_ptr_not_equal(c.out_path, m.out_path);
    assert_string_equal(c.out_path, m.out_path);
    assert_ptr_not_equal(c.err_path, m.err_path);
    assert_string_equal(c.err_path, m.err_path);
    assert_int_equal(c.n_locks, m.n_locks);
    assert_ptr_not_equal(c.locks, m.locks);
    for (size_t i = 0; i < m.n_locks; i++) {
        assert_ptr_not_equal(c.locks[i], m.locks[i]);
        assert_string_equal(c.locks[i], m.locks[i]);
    }
    assert_int_equal(c.n_cards, m.n_cards);
    assert_ptr_not_equal(c.cards, m.cards);
    assert_memory_equal(c.cards, m.cards, m.n_cards * sizeof(int32_t));
    assert_ptr_not_equal(c.visible, m.visible);
    assert_string_equal(c.visible, m.visible);

    gf_msg_clear(&m);
    assert_string_equal(c.spec.diar->audio, "/data/meet/ES2004a.wav");
    assert_string_equal(c.locks[1], "/run/lock/gpuflock/gpu1.lock");
    gf_msg_clear(&c);
    gf_msg_clear(&c);    /* safe twice */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_op),
        cmocka_unit_test(test_fields_survive),
        cmocka_unit_test(test_history_keys),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_malformed_fields),
        cmocka_unit_test(test_diarize_fields),
        cmocka_unit_test(test_diarize_malformed),
        cmocka_unit_test(test_header),
        cmocka_unit_test(test_truncation_and_trailing),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_encode_limits),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_msg_copy_every_op),
        cmocka_unit_test(test_msg_copy_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
