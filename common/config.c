/* config.c — the configuration loader (see config.h).
 *
 * The YAML text is loaded as a libyaml document (a tree of nodes, each with
 * its line; common/ydoc.c, the reader the evidence tables use too), bounded
 * in size and depth before libyaml builds it, then read
 * against the tables of common/config_read.c; the lock files it names are
 * checked on disk by common/config_locks.c. Values derived from others
 * (endpoints from run_dir, models_dir from state_dir, devices from the
 * CUDA driver) are filled in last, so they follow what the file said. */
#include "common/config_impl.h"

#include "common/card.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "common/ydoc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define DEFAULT_SPOOL_MAX_BYTES (64LL << 20)
/* Ended jobs kept: a month, and at most this many (docs/config.md) */
#define DEFAULT_KEEP_DAYS 30
#define DEFAULT_KEEP_JOBS 100000

void gf_config_free_strings(char ***list, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*list)[i]);
    free(*list);
    *list = NULL;
    *n = 0;
}

void gf_config_free_devices(gf_config *cfg)
{
    for (size_t i = 0; i < cfg->n_devices; i++)
        free(cfg->devices[i].lock);
    free(cfg->devices);
    cfg->devices = NULL;
    cfg->n_devices = 0;
}

/* ---- defaults and derived values --------------------------------------- */

static gf_config *base_defaults(void)
{
    static const char *scrub[] = { "GPUFLOCK_FORCE_LIBRARY", "CUDA_LAUNCH_BLOCKING" };
    gf_config *c = gf_calloc(1, sizeof *c);
    c->run_dir = gf_strdup("/run/gpuflock");
    c->state_dir = gf_strdup("/var/lib/gpuflock");
    c->bench_lock = gf_strdup(DEFAULT_LOCK_DIR "/bench.lock");
    c->log_level = gf_strdup("info");
    c->lock_owner_uid = GF_CONFIG_NO_OWNER;
    c->spool_max_bytes = DEFAULT_SPOOL_MAX_BYTES;
    c->cgroups = true;
    c->checkpoint_s = 30;
    c->yield_after_s = 5;
    c->metrics_textfile_interval_s = 5;
    c->history_keep_days = DEFAULT_KEEP_DAYS;
    c->history_keep_jobs = DEFAULT_KEEP_JOBS;
    c->n_scrub_env = GF_ARRAY_LEN(scrub);
    c->scrub_env = gf_calloc(c->n_scrub_env, sizeof *c->scrub_env);
    for (size_t i = 0; i < c->n_scrub_env; i++)
        c->scrub_env[i] = gf_strdup(scrub[i]);
    c->socket_mode = 0666;
    c->heartbeat_interval_ms = 1000;
    c->heartbeat_liveness = 3;
    c->max_attempts = 3;
    c->shutdown_deadline_s = 30;
    c->kill_grace_s = 10;
    c->spawn_workers = true;
    c->sync_acks = true;
    c->overlap = true;
    c->batch_jobs = true;
    c->model_sets = 2;
    c->batch_size = 32;
    c->cpu_threads = 0;
    c->diar_threshold = 0.6;
    c->diar_fa = 0.07;
    c->diar_fb = 0.8;
    c->diar_min_duration_off = 0.0;
    c->diar_segmentation_step = 0.1;
    c->diar_exclude_overlap = true;
    return c;
}

/* No devices declared: one per CUDA card the driver sees. */
static void discover_devices(gf_config *c)
{
    int n = 0;
    gf_card_cuda_count(&n);
    if (n > MAX_DEVICES)
        n = MAX_DEVICES;
    c->devices = gf_calloc((size_t)n, sizeof *c->devices);
    c->n_devices = (size_t)n;
    for (int i = 0; i < n; i++) {
        c->devices[i].index = i;
        c->devices[i].kind = GF_DEVICE_CUDA;
        c->devices[i].lock = gf_strfmt(DEFAULT_LOCK_DIR "/gpu%d.lock", i);
        c->devices[i].shared_slots = DEFAULT_SHARED_SLOTS;
    }
}

static int by_index(const void *a, const void *b)
{
    const gf_device_conf *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* discover: where no devices are declared, one per CUDA card the driver
 * sees; false leaves the list empty (gf_config_load_no_devices). */
static void finish(gf_config *c, bool discover)
{
    if (!c->client_endpoint)
        c->client_endpoint = gf_strfmt("ipc://%s/client.sock", c->run_dir);
    if (!c->worker_endpoint)
        c->worker_endpoint = gf_strfmt("ipc://%s/worker.sock", c->run_dir);
    if (!c->models_dir)
        c->models_dir = gf_strfmt("%s/models", c->state_dir);
    if (!c->spool_dir)
        c->spool_dir = gf_strfmt("%s/spool", c->state_dir);
    if (!c->devices_declared && discover)
        discover_devices(c);
    if (c->n_devices > 1)
        qsort(c->devices, c->n_devices, sizeof *c->devices, by_index);
}

static gf_config *defaults(bool discover)
{
    gf_config *c = base_defaults();
    finish(c, discover);
    return c;
}

gf_config *gf_config_defaults(void)
{
    return defaults(true);
}

/* ---- parsing ------------------------------------------------------------ */

/* Load the document within the bounds of a configuration (GF_CONFIG_MAX_BYTES,
 * GF_CONFIG_MAX_DEPTH: common/ydoc.c says why the depth), logging what
 * stopped it. */
static int load_document(const char *name, const char *text, size_t len, yaml_document_t *doc)
{
    gf_ydoc_error err;
    if (gf_ydoc_load(text, len, GF_CONFIG_MAX_BYTES, GF_CONFIG_MAX_DEPTH, doc, &err) == 0)
        return 0;
    switch (err.status) {
    case GF_YDOC_TOO_BIG:
        GF_ERROR("%s: %zu bytes, larger than a configuration may be (%d)", name, len,
                 GF_CONFIG_MAX_BYTES);
        break;
    case GF_YDOC_TOO_DEEP:
        GF_ERROR("%s:%zu: YAML nesting deeper than %d levels", name, err.line,
                 GF_CONFIG_MAX_DEPTH);
        break;
    case GF_YDOC_SYNTAX:
        GF_ERROR("%s:%zu: YAML syntax: %s%s%s", name, err.line, err.problem,
                 err.context[0] ? " " : "", err.context);
        break;
    case GF_YDOC_SECOND_DOC:
        GF_ERROR("%s:%zu: more than one YAML document", name, err.line);
        break;
    case GF_YDOC_NO_PARSER:
    case GF_YDOC_OK:
        GF_ERROR("%s: cannot start the YAML parser", name);
        break;
    }
    return GF_ECONFIG;
}

static int parse(const char *name, const char *text, size_t len, bool discover, gf_config **out)
{
    *out = NULL;
    yaml_document_t doc;
    int rc = load_document(name, text, len, &doc);
    if (rc)
        return rc;
    gf_config *cfg = base_defaults();
    cfg->path = gf_strdup(name);
    parse_ctx ctx = { .file = name, .doc = &doc, .cfg = cfg, .device_line = NULL };
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    rc = gf_config_read_root(&ctx, root);
    /* the lock files on disk matter to those that take locks; the job
     * commands (discover false) only talk to the broker, which checked them */
    if (!rc && cfg->devices_declared && discover)
        rc = gf_config_check_lock_files(&ctx);
    free(ctx.device_line);
    yaml_document_delete(&doc);
    if (rc) {
        gf_config_destroy(&cfg);
        return rc;
    }
    finish(cfg, discover);
    *out = cfg;
    return 0;
}

int gf_config_parse(const char *name, const char *text, size_t len, gf_config **out)
{
    return parse(name, text, len, true, out);
}

/* ---- files -------------------------------------------------------------- */

/* Read at most GF_CONFIG_MAX_BYTES + 1 bytes (one more says "too large"
 * without reading /dev/zero to the end). */
static int read_stream(FILE *f, char **text, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = gf_malloc(cap);
    size_t got;
    while (n <= GF_CONFIG_MAX_BYTES && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = gf_realloc(buf, cap *= 2);
    }
    if (ferror(f)) {
        free(buf);
        return -1;
    }
    *text = buf;
    *len = n;
    return 0;
}

/* Read and parse one file; missing_ok: a missing file gives the defaults. */
static int load_file(const char *path, bool missing_ok, bool discover, gf_config **out)
{
    bool is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "r");
    if (!f) {
        if (missing_ok && errno == ENOENT) {
            *out = defaults(discover);
            return 0;
        }
        GF_ERROR("%s: cannot open the configuration: %s", path, strerror(errno));
        return GF_ECONFIG;
    }
    char *text = NULL;
    size_t len = 0;
    int err = read_stream(f, &text, &len);
    int saved = errno;
    if (!is_stdin)
        fclose(f);
    if (err) {
        GF_ERROR("%s: cannot read the configuration: %s", path, strerror(saved));
        return GF_ECONFIG;
    }
    int rc = parse(is_stdin ? "<stdin>" : path, text, len, discover, out);
    free(text);
    return rc;
}

static int load(const char *explicit_path, bool discover, gf_config **out)
{
    *out = NULL;
    if (explicit_path && *explicit_path)
        return load_file(explicit_path, false, discover, out);
    const char *env = getenv("GPUFLOCK_CONFIG");
    if (env && *env)
        return load_file(env, false, discover, out);
    return load_file(GF_CONFIG_DEFAULT_PATH, true, discover, out);
}

int gf_config_load(const char *explicit_path, gf_config **out)
{
    return load(explicit_path, true, out);
}

int gf_config_load_no_devices(const char *explicit_path, gf_config **out)
{
    return load(explicit_path, false, out);
}

const gf_device_conf *gf_config_device(const gf_config *cfg, int index)
{
    for (size_t i = 0; i < cfg->n_devices; i++)
        if (cfg->devices[i].index == index)
            return &cfg->devices[i];
    return NULL;
}

void gf_config_destroy(gf_config **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_config *c = *self_p;
    free(c->path);
    free(c->run_dir);
    free(c->state_dir);
    free(c->spool_dir);
    free(c->bench_lock);
    free(c->lock_owner);
    free(c->models_dir);
    free(c->log_level);
    free(c->log_file);
    free(c->metrics_listen);
    free(c->metrics_textfile);
    gf_config_free_strings(&c->scrub_env, &c->n_scrub_env);
    gf_config_free_devices(c);
    free(c->client_endpoint);
    free(c->worker_endpoint);
    free(c->socket_owner);
    free(c->socket_group);
    free(c->curve_public_key);
    free(c->curve_secret_key);
    free(c->worker_program);
    free(c);
    *self_p = NULL;
}

const char *gf_config_ipc_path(const char *endpoint)
{
    if (endpoint && strncmp(endpoint, "ipc://", 6) == 0)
        return endpoint + 6;
    return NULL;
}

