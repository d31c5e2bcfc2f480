/* config_read.c — the configuration's table-driven reader (see
 * config_impl.h).
 *
 * The loaded YAML document (common/config.c) is walked against tables of
 * the keys each section allows: each table entry names the key, how its
 * value is read and where it goes. Every value starts from its built-in
 * default; a key in the file replaces it. Anything the tables do not know,
 * any value of the wrong type and any duplicate (key, device index, lock
 * path) stops the load with one message "FILE:LINE: key 'K': problem". */
#include "common/config_impl.h"

#include "common/error.h"
#include "common/listenaddr.h"
#include "common/log.h"
#include "common/util.h"
#include "common/ydoc.h"

#include <errno.h>
#include <math.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* How a value is read and where it goes. */
typedef enum {
    F_STR,      /* non-empty string */
    F_OPTSTR,   /* string, or null for "not set" */
    F_INT,      /* integer within [min, max] */
    F_BOOL,     /* true | false */
    F_MODE,     /* file mode, octal as chmod takes it */
    F_LEVEL,    /* log level name */
    F_MATH,     /* math mode name: fp32 | tf32 */
    F_KIND,     /* cpu | cuda */
    F_BYTES,    /* a size in bytes: 1048576, 64K, 64M, 1G (powers of 1024) */
    F_REAL,     /* a finite number within [min, max] millionths */
    F_POSREAL,  /* a finite number above 0, at most max millionths */
    F_LOCKPATH, /* a lock file: absolute and canonical */
    F_SECTION,  /* a nested mapping or sequence with its own parser */
} field_type;

typedef int (*section_fn)(parse_ctx *ctx, yaml_node_t *node, const char *key);

typedef struct {
    const char *name;     /* key as written in YAML */
    field_type type;      /* how to read the value */
    size_t offset;        /* where it goes in the target struct */
    long min, max;        /* F_INT bounds */
    section_fn section;   /* F_SECTION parser */
} field;

/* ---- messages ---------------------------------------------------------- */

static int vfail_at(parse_ctx *ctx, size_t line, const char *key, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static int vfail_at(parse_ctx *ctx, size_t line, const char *key, const char *fmt, va_list ap)
{
    char problem[512];
    vsnprintf(problem, sizeof problem, fmt, ap);
    if (line)
        GF_ERROR("%s:%zu: key '%s': %s", ctx->file, line, key, problem);
    else
        GF_ERROR("%s: key '%s' (default): %s", ctx->file, key, problem);
    return GF_ECONFIG;
}

static int fail(parse_ctx *ctx, const yaml_node_t *node, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(parse_ctx *ctx, const yaml_node_t *node, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(ctx, gf_ydoc_line(node), key, fmt, ap);
    va_end(ap);
    return rc;
}

int gf_config_fail_at(parse_ctx *ctx, size_t line, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(ctx, line, key, fmt, ap);
    va_end(ap);
    return rc;
}
/* ---- scalars ----------------------------------------------------------- */

static const char *scalar(const yaml_node_t *node)
{
    return (const char *)node->data.scalar.value;
}

static bool is_plain(const yaml_node_t *node)
{
    return node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int want_scalar(parse_ctx *ctx, yaml_node_t *node, const char *key, const char *what)
{
    if (node->type == YAML_SCALAR_NODE)
        return 0;
    return fail(ctx, node, key, "expected %s, found %s", what, gf_ydoc_type_name(node));
}

static int read_string(parse_ctx *ctx, yaml_node_t *node, const char *key, bool optional,
                       char **dst)
{
    int rc = want_scalar(ctx, node, key, "a string");
    if (rc)
        return rc;
    if (gf_ydoc_is_null(node)) {
        if (!optional)
            return fail(ctx, node, key, "expected a non-empty string, found null");
        free(*dst);
        *dst = NULL;
        return 0;
    }
    free(*dst);
    *dst = gf_strdup(scalar(node));
    return 0;
}

static int read_int(parse_ctx *ctx, yaml_node_t *node, const char *key, long min, long max,
                    int *dst)
{
    int rc = want_scalar(ctx, node, key, "an integer");
    if (rc)
        return rc;
    const char *s = scalar(node);
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!is_plain(node) || !*s || *end || errno)
        return fail(ctx, node, key, "expected an integer, found '%s'", s);
    if (v < min || v > max)
        return fail(ctx, node, key, "%ld is out of range [%ld, %ld]", v, min, max);
    *dst = (int)v;
    return 0;
}

static int read_bool(parse_ctx *ctx, yaml_node_t *node, const char *key, bool *dst)
{
    int rc = want_scalar(ctx, node, key, "true or false");
    if (rc)
        return rc;
    const char *s = scalar(node);
    if (is_plain(node) && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))) {
        *dst = true;
        return 0;
    }
    if (is_plain(node) && (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))) {
        *dst = false;
        return 0;
    }
    return fail(ctx, node, key, "expected true or false, found '%s'", s);
}

/* Modes are octal whether written 0660, 660, "0660" or 0o660, as chmod reads them. */
static int read_mode(parse_ctx *ctx, yaml_node_t *node, const char *key, mode_t *dst)
{
    int rc = want_scalar(ctx, node, key, "an octal file mode");
    if (rc)
        return rc;
    const char *s = scalar(node);
    const char *digits = strncmp(s, "0o", 2) == 0 ? s + 2 : s;
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(digits, &end, 8);
    if (!*digits || *end || errno || digits[0] == '-' || digits[0] == '+')
        return fail(ctx, node, key, "expected an octal file mode such as 0660, found '%s'", s);
    if (v > 07777)
        return fail(ctx, node, key, "mode %s is larger than 07777", s);
    *dst = (mode_t)v;
    return 0;
}

static int read_level(parse_ctx *ctx, yaml_node_t *node, const char *key, char **dst)
{
    int rc = want_scalar(ctx, node, key, "a log level");
    if (rc)
        return rc;
    gf_log_level lv;
    if (gf_log_level_parse(scalar(node), &lv) != 0)
        return fail(ctx, node, key, "expected debug, info, warn, error or off, found '%s'",
                    scalar(node));
    free(*dst);
    *dst = gf_strdup(scalar(node));
    return 0;
}

static int read_math(parse_ctx *ctx, yaml_node_t *node, const char *key, bool *dst)
{
    int rc = want_scalar(ctx, node, key, "fp32 or tf32");
    if (rc)
        return rc;
    if (!strcmp(scalar(node), "fp32"))
        *dst = false;
    else if (!strcmp(scalar(node), "tf32"))
        *dst = true;
    else
        return fail(ctx, node, key, "expected fp32 or tf32, found '%s'", scalar(node));
    return 0;
}

static int read_kind(parse_ctx *ctx, yaml_node_t *node, const char *key, gf_device_kind *dst)
{
    int rc = want_scalar(ctx, node, key, "cpu or cuda");
    if (rc)
        return rc;
    if (!strcmp(scalar(node), "cpu"))
        *dst = GF_DEVICE_CPU;
    else if (!strcmp(scalar(node), "cuda"))
        *dst = GF_DEVICE_CUDA;
    else
        return fail(ctx, node, key, "expected cpu or cuda, found '%s'", scalar(node));
    return 0;
}

static int read_real(parse_ctx *ctx, yaml_node_t *node, const char *key, const field *f,
                     double *dst)
{
    bool open = f->type == F_POSREAL;
    double lo = open ? 0.0 : (double)f->min * 1e-6, hi = (double)f->max * 1e-6;
    int rc = want_scalar(ctx, node, key, "a number");
    if (rc)
        return rc;
    const char *s = scalar(node);
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (!is_plain(node) || !*s || *end || errno || !isfinite(v))
        return fail(ctx, node, key, "expected a number, found '%s'", s);
    if (v < lo || v > hi || (open && v == lo))
        return fail(ctx, node, key, "%g is out of range %c%g, %g]", v, open ? '(' : '[', lo, hi);
    *dst = v;
    return 0;
}

/* Sizes are whole bytes, or a number with K, M, G or T (powers of 1024). */
static int read_bytes(parse_ctx *ctx, yaml_node_t *node, const char *key, long long *dst)
{
    int rc = want_scalar(ctx, node, key, "a size in bytes");
    if (rc)
        return rc;
    const char *s = scalar(node);
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    int shift = 0;
    if (end && *end) {
        const char *units = "KMGT", *u = strchr(units, *end);
        if (u && *u && end[1] == '\0')
            shift = 10 * (int)(u - units + 1);
        else
            end = NULL;
    }
    if (!is_plain(node) || !*s || !end || errno || v < 0 || s[0] == '+')
        return fail(ctx, node, key, "expected a size in bytes such as 1048576 or 64M, found '%s'",
                    s);
    if (v > (LLONG_MAX >> shift))
        return fail(ctx, node, key, "%s is too large", s);
    *dst = v << shift;
    return 0;
}


static int read_lock_path(parse_ctx *ctx, yaml_node_t *node, const char *key, char **dst)
{
    int rc = read_string(ctx, node, key, false, dst);
    if (rc)
        return rc;
    const char *why = gf_config_lock_path_problem(*dst);
    if (why)
        return fail(ctx, node, key, "lock file '%s' %s", *dst, why);
    return 0;
}

static int read_field(parse_ctx *ctx, const field *f, yaml_node_t *node, const char *key,
                      void *base)
{
    void *dst = (char *)base + f->offset;
    switch (f->type) {
    case F_STR:     return read_string(ctx, node, key, false, dst);
    case F_OPTSTR:  return read_string(ctx, node, key, true, dst);
    case F_INT:     return read_int(ctx, node, key, f->min, f->max, dst);
    case F_BOOL:    return read_bool(ctx, node, key, dst);
    case F_MODE:    return read_mode(ctx, node, key, dst);
    case F_LEVEL:   return read_level(ctx, node, key, dst);
    case F_MATH:    return read_math(ctx, node, key, dst);
    case F_KIND:    return read_kind(ctx, node, key, dst);
    case F_BYTES:   return read_bytes(ctx, node, key, dst);
    case F_REAL:
    case F_POSREAL: return read_real(ctx, node, key, f, dst);
    case F_LOCKPATH: return read_lock_path(ctx, node, key, dst);
    case F_SECTION: return f->section(ctx, node, key);
    }
    return GF_EINVAL;
}
/* ---- mappings ---------------------------------------------------------- */

/* A mapping being read against its table of fields. */
typedef struct {
    parse_ctx *ctx;
    const char *prefix;        /* the mapping's own key ("" at the top) */
    const field *fields;
    void *base;                /* the struct the fields go into */
} mapping_walk;

static int read_pair(void *arg, const gf_ydoc_pair *p)
{
    mapping_walk *w = arg;
    if (!p->name)
        return fail(w->ctx, p->key, w->prefix, "a key must be a plain name, found %s",
                    gf_ydoc_type_name(p->key));
    char key[160];
    snprintf(key, sizeof key, "%s%s%s", w->prefix, *w->prefix ? "." : "", p->name);
    if (p->first_line)
        return fail(w->ctx, p->key, key, "duplicate key (first at line %zu)", p->first_line);
    if (p->field < 0)
        return fail(w->ctx, p->key, key, "unknown key");
    return read_field(w->ctx, &w->fields[p->field], p->value, key, w->base);
}

/* Walk a mapping: each key must be in 'fields' (NULL-terminated), once. */
static int read_mapping(parse_ctx *ctx, yaml_node_t *map, const char *prefix,
                        const field *fields, void *base)
{
    if (map->type != YAML_MAPPING_NODE)
        return fail(ctx, map, *prefix ? prefix : "(top level)", "expected a mapping, found %s",
                    gf_ydoc_type_name(map));
    mapping_walk w = { ctx, prefix, fields, base };
    return gf_ydoc_walk(ctx->doc, map, fields, sizeof *fields, read_pair, &w);
}
/* ---- sections ---------------------------------------------------------- */

static bool valid_env_name(const char *s)
{
    if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

static int parse_scrub_env(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return fail(ctx, node, key, "expected a list of variable names, found %s",
                    gf_ydoc_type_name(node));
    gf_config *cfg = ctx->cfg;
    gf_config_free_strings(&cfg->scrub_env, &cfg->n_scrub_env);
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    cfg->scrub_env = gf_calloc(n, sizeof *cfg->scrub_env);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yaml_document_get_node(ctx->doc, node->data.sequence.items.start[i]);
        char ikey[160];
        snprintf(ikey, sizeof ikey, "%s[%zu]", key, i);
        if (item->type != YAML_SCALAR_NODE || !valid_env_name(scalar(item)))
            return fail(ctx, item, ikey, "expected an environment variable name, found %s",
                        item->type == YAML_SCALAR_NODE ? scalar(item) : gf_ydoc_type_name(item));
        cfg->scrub_env[cfg->n_scrub_env++] = gf_strdup(scalar(item));
    }
    return 0;
}

static const field proof_fields[] = {
    { "scrub_env", F_SECTION, 0, 0, 0, parse_scrub_env },
    { NULL, 0, 0, 0, 0, NULL },
};

static int parse_proof(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, proof_fields, ctx->cfg);
}

#define DEV(f) offsetof(gf_device_conf, f)
static const field device_fields[] = {
    { "index",        F_INT,  DEV(index), 0, MAX_DEVICES - 1, NULL },
    { "kind",         F_KIND, DEV(kind), 0, 0, NULL },
    { "lock",         F_LOCKPATH, DEV(lock), 0, 0, NULL },
    { "shared_slots", F_INT,  DEV(shared_slots), 1, 1024, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};
#undef DEV

/* The index or lock of device i already used by an earlier one: an error. */
static int check_device_unique(parse_ctx *ctx, yaml_node_t *item, size_t i, const char *key)
{
    const gf_device_conf *d = &ctx->cfg->devices[i];
    for (size_t j = 0; j < i; j++) {
        const gf_device_conf *e = &ctx->cfg->devices[j];
        char dkey[160];
        if (e->index == d->index) {
            snprintf(dkey, sizeof dkey, "%s[%zu].index", key, i);
            return fail(ctx, item, dkey, "duplicate device index %d (also at line %zu)",
                        d->index, ctx->device_line[j]);
        }
        if (!strcmp(e->lock, d->lock)) {
            snprintf(dkey, sizeof dkey, "%s[%zu].lock", key, i);
            return fail(ctx, item, dkey, "duplicate lock file %s (also at line %zu)", d->lock,
                        ctx->device_line[j]);
        }
    }
    return 0;
}

static int parse_device(parse_ctx *ctx, yaml_node_t *item, size_t i, const char *key)
{
    gf_device_conf *d = &ctx->cfg->devices[i];
    d->index = -1;
    d->kind = GF_DEVICE_CUDA;
    d->shared_slots = DEFAULT_SHARED_SLOTS;
    char ikey[160];
    snprintf(ikey, sizeof ikey, "%s[%zu]", key, i);
    int rc = read_mapping(ctx, item, ikey, device_fields, d);
    if (rc)
        return rc;
    if (d->index < 0) {
        char dkey[sizeof ikey + 8];
        snprintf(dkey, sizeof dkey, "%s.index", ikey);
        return fail(ctx, item, dkey, "required key missing");
    }
    if (!d->lock)
        d->lock = gf_strfmt(DEFAULT_LOCK_DIR "/gpu%d.lock", d->index);
    ctx->device_line[i] = gf_ydoc_line(item);
    return check_device_unique(ctx, item, i, key);
}

static int parse_devices(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return fail(ctx, node, key, "expected a list of devices, found %s", gf_ydoc_type_name(node));
    gf_config *cfg = ctx->cfg;
    size_t n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
    if (n > MAX_DEVICES)
        return fail(ctx, node, key, "%zu devices, more than %d", n, MAX_DEVICES);
    gf_config_free_devices(cfg);
    cfg->devices = gf_calloc(n, sizeof *cfg->devices);
    free(ctx->device_line);
    ctx->device_line = gf_calloc(n, sizeof *ctx->device_line);
    cfg->devices_declared = true;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yaml_document_get_node(ctx->doc, node->data.sequence.items.start[i]);
        cfg->n_devices = i + 1;
        int rc = parse_device(ctx, item, i, key);
        if (rc)
            return rc;
    }
    return 0;
}

#define CFG(f) offsetof(gf_config, f)
static const field broker_fields[] = {
    { "client_endpoint",       F_OPTSTR, CFG(client_endpoint), 0, 0, NULL },
    { "worker_endpoint",       F_OPTSTR, CFG(worker_endpoint), 0, 0, NULL },
    { "socket_owner",          F_OPTSTR, CFG(socket_owner), 0, 0, NULL },
    { "socket_group",          F_OPTSTR, CFG(socket_group), 0, 0, NULL },
    { "socket_mode",           F_MODE,   CFG(socket_mode), 0, 0, NULL },
    { "curve_public_key",      F_OPTSTR, CFG(curve_public_key), 0, 0, NULL },
    { "curve_secret_key",      F_OPTSTR, CFG(curve_secret_key), 0, 0, NULL },
    { "heartbeat_interval_ms", F_INT,    CFG(heartbeat_interval_ms), 10, 3600000, NULL },
    { "heartbeat_liveness",    F_INT,    CFG(heartbeat_liveness), 1, 1000, NULL },
    { "max_attempts",          F_INT,    CFG(max_attempts), 1, 1000, NULL },
    { "shutdown_deadline_s",   F_INT,    CFG(shutdown_deadline_s), 0, 86400, NULL },
    { "kill_grace_s",          F_INT,    CFG(kill_grace_s), 0, 86400, NULL },
    { "worker_program",        F_OPTSTR, CFG(worker_program), 0, 0, NULL },
    { "spawn_workers",         F_BOOL,   CFG(spawn_workers), 0, 0, NULL },
    { "sync_acks",             F_BOOL,   CFG(sync_acks), 0, 0, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

static const field worker_fields[] = {
    { "batch_size",  F_INT, CFG(batch_size), 1, 65536, NULL },
    { "cpu_threads", F_INT, CFG(cpu_threads), 0, 4096, NULL },
    { "math",        F_MATH, CFG(tf32), 0, 0, NULL },
    { "overlap",     F_BOOL, CFG(overlap), 0, 0, NULL },
    { "batch_jobs",  F_BOOL, CFG(batch_jobs), 0, 0, NULL },
    { "model_sets",  F_INT, CFG(model_sets), 1, 64, NULL },
    { "cgroups",     F_BOOL, CFG(cgroups), 0, 0, NULL },
    { "checkpoint_s", F_INT, CFG(checkpoint_s), 0, 86400, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

/* diarize: the community-1 knobs under pyannote's names (docs/config.md) */
static const field clustering_fields[] = {
    { "threshold", F_POSREAL, CFG(diar_threshold), 0, 2000000, NULL },
    { "Fa",        F_POSREAL, CFG(diar_fa), 0, 1000000000, NULL },
    { "Fb",        F_POSREAL, CFG(diar_fb), 0, 1000000000, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

static const field segmentation_fields[] = {
    { "min_duration_off", F_REAL, CFG(diar_min_duration_off), 0, 3600000000L, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

static int parse_clustering(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, clustering_fields, ctx->cfg);
}

static int parse_segmentation(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, segmentation_fields, ctx->cfg);
}

/* segmentation_step: windows this fraction of their 10 s apart, [0.01, 1] in
 * whole 10 ms (0.001 of the window; diar/pipeline.h, gf_diar_step_samples) */
static int parse_seg_step(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    static const field f = { "segmentation_step", F_POSREAL, 0, 0, 1000000, NULL };
    double v = 0.0;
    int rc = read_real(ctx, node, key, &f, &v);
    if (rc == 0 && (v > 1.0 || fabs(v * 1000.0 - floor(v * 1000.0 + 0.5)) > 1e-6 || v < 0.01))
        return fail(ctx, node, key, "%g: a fraction of the 10 s window in [0.01, 1] that is a "
                    "whole number of 10 ms (0.001 of it)", v);
    if (rc == 0)
        ctx->cfg->diar_segmentation_step = v;
    return rc;
}

static const field diarize_fields[] = {
    { "clustering",   F_SECTION, 0, 0, 0, parse_clustering },
    { "segmentation", F_SECTION, 0, 0, 0, parse_segmentation },
    { "embedding_exclude_overlap", F_BOOL, CFG(diar_exclude_overlap), 0, 0, NULL },
    { "segmentation_step", F_SECTION, 0, 0, 0, parse_seg_step },
    { NULL, 0, 0, 0, 0, NULL },
};

static int parse_diarize(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, diarize_fields, ctx->cfg);
}

static const field sched_fields[] = {
    { "yield_after_s", F_INT, CFG(yield_after_s), 0, 86400, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

static int parse_sched(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, sched_fields, ctx->cfg);
}

static const field history_fields[] = {
    { "keep_days", F_INT, CFG(history_keep_days), 0, 36500, NULL },
    { "keep_jobs", F_INT, CFG(history_keep_jobs), 0, 100000000, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

static int parse_history(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, history_fields, ctx->cfg);
}

static const field spool_fields[] = {
    { "max_bytes", F_BYTES, CFG(spool_max_bytes), 0, 0, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

static int parse_spool(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, spool_fields, ctx->cfg);
}

static int parse_bench_lock(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    ctx->bench_line = gf_ydoc_line(node);
    return read_lock_path(ctx, node, key, &ctx->cfg->bench_lock);
}

/* lock_owner: a user name or a numeric uid, resolved now. */
static int parse_lock_owner(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    gf_config *cfg = ctx->cfg;
    int rc = read_string(ctx, node, key, true, &cfg->lock_owner);
    cfg->lock_owner_uid = GF_CONFIG_NO_OWNER;
    if (rc || !cfg->lock_owner)
        return rc;
    struct passwd *pw = getpwnam(cfg->lock_owner);
    if (pw) {
        cfg->lock_owner_uid = pw->pw_uid;
        return 0;
    }
    char *end = NULL;
    errno = 0;
    unsigned long uid = strtoul(cfg->lock_owner, &end, 10);
    if (errno || !*cfg->lock_owner || *end || cfg->lock_owner[0] == '-' ||
        uid >= (unsigned long)GF_CONFIG_NO_OWNER)
        return fail(ctx, node, key, "no user '%s' (a user name or a numeric uid)",
                    cfg->lock_owner);
    cfg->lock_owner_uid = (uid_t)uid;
    return 0;
}

/* What is wrong with a file path as written (log_file, metrics.textfile),
 * or NULL: absolute, no empty, "." or ".." component, not ending in /. */
static const char *file_path_problem(const char *p)
{
    if (p[0] != '/')
        return "is relative: it must be absolute";
    for (const char *c = p + 1;; ) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if (n == 0)
            return slash ? "has an empty component (//)" : "ends with /: it names a folder";
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return "has a . or .. component";
        if (!slash)
            return NULL;
        c = slash + 1;
    }
}

static int parse_log_file(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    int rc = read_string(ctx, node, key, true, &ctx->cfg->log_file);
    const char *why = rc || !ctx->cfg->log_file ? NULL : file_path_problem(ctx->cfg->log_file);
    return why ? fail(ctx, node, key, "'%s' %s", ctx->cfg->log_file, why) : rc;
}

static int parse_listen(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    int rc = read_string(ctx, node, key, true, &ctx->cfg->metrics_listen);
    if (rc || !ctx->cfg->metrics_listen)
        return rc;
    ctx->listen_line = gf_ydoc_line(node);
    gf_listen_addr a;
    char why[256];
    if (gf_listen_addr_parse(ctx->cfg->metrics_listen, &a, why, sizeof why) != 0)
        return fail(ctx, node, key, "%s", why);
    return 0;
}

static int parse_textfile(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    char **dst = &ctx->cfg->metrics_textfile;
    int rc = read_string(ctx, node, key, true, dst);
    if (rc || !*dst)
        return rc;
    const char *why = file_path_problem(*dst);
    size_t n = strlen(*dst);
    if (!why && (n < 6 || strcmp(*dst + n - 5, ".prom") != 0 || (*dst)[n - 6] == '/'))
        why = "does not end in .prom (node_exporter's textfile collector reads only those)";
    return why ? fail(ctx, node, key, "'%s' %s", *dst, why) : 0;
}

static const field metrics_fields[] = {
    { "listen",       F_SECTION, 0, 0, 0, parse_listen },
    { "allow_remote", F_BOOL, CFG(metrics_allow_remote), 0, 0, NULL },
    { "textfile",     F_SECTION, 0, 0, 0, parse_textfile },
    { "textfile_interval_s", F_INT, CFG(metrics_textfile_interval_s), 1, 3600, NULL },
    { NULL, 0, 0, 0, 0, NULL },
};

/* Metrics name no user nor job, but say what runs where and how much: a
 * listen address off the loopback is refused unless the file says it is
 * meant (whichever order the two keys come in). */
static int parse_metrics(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    int rc = read_mapping(ctx, node, key, metrics_fields, ctx->cfg);
    if (rc || !ctx->cfg->metrics_listen)
        return rc;
    gf_listen_addr a;
    char why[256];
    if (gf_listen_addr_parse(ctx->cfg->metrics_listen, &a, why, sizeof why) == 0 && !a.loopback &&
        !ctx->cfg->metrics_allow_remote)
        return gf_config_fail_at(ctx, ctx->listen_line, "metrics.listen",
                                 "%s is not a loopback address: anyone who reaches it reads "
                                 "the box's queue and cards; set metrics.allow_remote: true "
                                 "to mean it", ctx->cfg->metrics_listen);
    return 0;
}

static int parse_broker(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, broker_fields, ctx->cfg);
}

static int parse_worker(parse_ctx *ctx, yaml_node_t *node, const char *key)
{
    return read_mapping(ctx, node, key, worker_fields, ctx->cfg);
}

static const field top_fields[] = {
    { "run_dir",    F_STR,     CFG(run_dir), 0, 0, NULL },
    { "state_dir",  F_STR,     CFG(state_dir), 0, 0, NULL },
    { "bench_lock", F_SECTION, 0, 0, 0, parse_bench_lock },
    { "lock_owner", F_SECTION, 0, 0, 0, parse_lock_owner },
    { "spool_dir",  F_OPTSTR,  CFG(spool_dir), 0, 0, NULL },
    { "spool",      F_SECTION, 0, 0, 0, parse_spool },
    { "models_dir", F_OPTSTR,  CFG(models_dir), 0, 0, NULL },
    { "log_level",  F_LEVEL,   CFG(log_level), 0, 0, NULL },
    { "log_file",   F_SECTION, 0, 0, 0, parse_log_file },
    { "metrics",    F_SECTION, 0, 0, 0, parse_metrics },
    { "proof",      F_SECTION, 0, 0, 0, parse_proof },
    { "devices",    F_SECTION, 0, 0, 0, parse_devices },
    { "broker",     F_SECTION, 0, 0, 0, parse_broker },
    { "worker",     F_SECTION, 0, 0, 0, parse_worker },
    { "sched",      F_SECTION, 0, 0, 0, parse_sched },
    { "history",    F_SECTION, 0, 0, 0, parse_history },
    { "diarize",    F_SECTION, 0, 0, 0, parse_diarize },
    { NULL, 0, 0, 0, 0, NULL },
};
#undef CFG

int gf_config_read_root(parse_ctx *ctx, yaml_node_t *root)
{
    if (!root || gf_ydoc_is_null(root))
        return 0;
    return read_mapping(ctx, root, "", top_fields, ctx->cfg);
}

