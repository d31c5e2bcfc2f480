/* evidence.c — reading and validating the evidence tables (see evidence.h).
 *
 * The validator is the gate between measurements and routes: the planner
 * only ever sees an evidence set in which every binding is well formed, every
 * record it names exists, hashes to its name and agrees with the binding
 * (tuple, module, configuration, card), and no two bindings contradict each
 * other. It runs in the build (make all), in `gpuflock evidence check` and at
 * worker start-up. It never stops at the first problem: every problem is
 * collected, each naming the file, line and binding. */
#include "route/evidence.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "common/ydoc.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

/* Nesting deeper than this in a table is refused (common/ydoc.c says why):
 * a binding nests five levels. */
#define MAX_DEPTH 64

struct gf_evidence {
    char *dir;                 /* the directory read, without trailing slashes */
    char **problems;           /* one line per problem found */
    size_t n_problems;
    gf_binding *bindings;      /* well-formed bindings, in file order */
    size_t n_bindings;
    char **precedence;         /* areas, first wins */
    size_t n_precedence;
    bool loaded;               /* gf_evidence_load ran */
};

/* Parsing state for one binding (or one file, with id NULL). */
typedef struct {
    gf_evidence *ev;
    yaml_document_t *doc;
    const char *file;          /* as shown in messages */
    const char *id;            /* binding id, "#N" before it is known, NULL for file-level */
    bool bad;                  /* a problem was found in this binding */
} pctx;

/* ---- problems ---------------------------------------------------------- */

static void add_problem(gf_evidence *ev, char *line)
{
    ev->problems = gf_realloc(ev->problems, (ev->n_problems + 1) * sizeof *ev->problems);
    ev->problems[ev->n_problems++] = line;
}

static void bad(pctx *c, size_t line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bad(pctx *c, size_t line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->bad = true;
    if (line == 0)
        add_problem(c->ev, gf_strfmt("%s: %s", c->file, msg));
    else if (c->id)
        add_problem(c->ev, gf_strfmt("%s:%zu: binding '%s': %s", c->file, line, c->id, msg));
    else
        add_problem(c->ev, gf_strfmt("%s:%zu: %s", c->file, line, msg));
}

/* ---- YAML helpers ------------------------------------------------------ */

/* The tables are read with the reader the configuration uses
 * (common/ydoc.h); these bind it to the document being parsed and keep the
 * rules below short. */

static yaml_node_t *ynode(pctx *c, int i)
{
    return gf_ydoc_node(c->doc, i);
}

static size_t yline(const yaml_node_t *n)
{
    return gf_ydoc_line(n);
}

static const char *ystr(const yaml_node_t *n)
{
    return gf_ydoc_scalar(n);
}

static yaml_node_t *yget(pctx *c, yaml_node_t *map, const char *key)
{
    return gf_ydoc_get(c->doc, map, key);
}

static size_t ymap_len(const yaml_node_t *map)
{
    return gf_ydoc_len(map);
}

/* One key of a mapping checked against its table (ymap_check). */
typedef struct {
    pctx *c;
    const char *what;          /* the mapping, for messages */
    bool ok;                   /* no key was wrong */
} key_check;

static int check_key(void *arg, const gf_ydoc_pair *p)
{
    key_check *k = arg;
    if (!p->name) {
        bad(k->c, yline(p->key), "%s: keys must be plain names", k->what);
        k->ok = false;
        return 0;
    }
    if (p->field < 0) {
        bad(k->c, yline(p->key), "%s: unknown key '%s'", k->what, p->name);
        k->ok = false;
    }
    if (p->first_line) {
        bad(k->c, yline(p->key), "%s: key '%s' given twice", k->what, p->name);
        k->ok = false;
    }
    return 0;
}

/* A mapping whose keys are all in 'allowed', each once (the walk goes on
 * past a wrong key: every one is reported). */
static bool ymap_check(pctx *c, yaml_node_t *map, const char *what, const char *const *allowed)
{
    if (!map || map->type != YAML_MAPPING_NODE) {
        bad(c, yline(map), "%s must be a mapping", what);
        return false;
    }
    key_check k = { c, what, true };
    gf_ydoc_walk(c->doc, map, allowed, sizeof *allowed, check_key, &k);
    return k.ok;
}

static yaml_node_t *yreq(pctx *c, yaml_node_t *map, const char *key, const char *what)
{
    yaml_node_t *n = yget(c, map, key);
    if (!n)
        bad(c, yline(map), "%s: '%s' missing", what, key);
    return n;
}

static const char *yreq_str(pctx *c, yaml_node_t *map, const char *key, const char *what)
{
    yaml_node_t *n = yreq(c, map, key, what);
    if (!n)
        return NULL;
    const char *s = ystr(n);
    if (!s || !*s) {
        bad(c, yline(n), "%s: '%s' must be a non-empty scalar", what, key);
        return NULL;
    }
    return s;
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_cc(const char *s, int *major, int *minor)
{
    if (!s)
        return false;
    char buf[16];
    snprintf(buf, sizeof buf, "%s", s);
    char *dot = strchr(buf, '.');
    if (!dot)
        return false;
    *dot = '\0';
    return parse_int(buf, 1, 99, major) && parse_int(dot + 1, 0, 9, minor);
}

/* "sm90" -> 90, "sm120" -> 120; -1 otherwise. */
static int parse_arch(const char *s)
{
    int v;
    if (!s || strncmp(s, "sm", 2) != 0 || !parse_int(s + 2, 10, 999, &v))
        return -1;
    return v;
}

static bool is_sha(const char *s)
{
    if (!s || strlen(s) != 64)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static bool parse_sha(pctx *c, yaml_node_t *n, const char *what, char out[GF_SHA256_HEX_LEN])
{
    const char *s = ystr(n);
    if (!is_sha(s)) {
        bad(c, yline(n), "%s must be a SHA-256 (64 lower-case hex digits)", what);
        return false;
    }
    memcpy(out, s, GF_SHA256_HEX_LEN);
    return true;
}

/* ---- scopes and modules ------------------------------------------------ */

static void scope_free(gf_scope *s)
{
    free(s->name);
    free(s->speedups);
    memset(s, 0, sizeof *s);
}

static int scope_arch(const gf_scope *s)
{
    return s->cc_major * 10 + s->cc_minor;
}

static bool scope_equal(const gf_scope *a, const gf_scope *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case GF_SCOPE_POINT:
        return a->cc_major == b->cc_major && a->cc_minor == b->cc_minor && a->sms == b->sms &&
               strcmp(a->name, b->name) == 0;
    case GF_SCOPE_CAPABILITY:
        return a->cc_major == b->cc_major && a->cc_minor == b->cc_minor;
    case GF_SCOPE_ALL_DEVICES:
        if (a->n_speedups != b->n_speedups)
            return false;
        for (size_t i = 0; i < a->n_speedups; i++) {
            bool found = false;
            for (size_t j = 0; j < b->n_speedups; j++)
                if (a->speedups[i].arch == b->speedups[j].arch &&
                    a->speedups[i].min_speedup == b->speedups[j].min_speedup)
                    found = true;
            if (!found)
                return false;
        }
        return true;
    }
    return false;
}

static bool scopes_overlap(const gf_scope *a, const gf_scope *b)
{
    if (a->kind == GF_SCOPE_ALL_DEVICES || b->kind == GF_SCOPE_ALL_DEVICES)
        return true;
    if (a->cc_major != b->cc_major || a->cc_minor != b->cc_minor)
        return false;
    if (a->kind == GF_SCOPE_POINT && b->kind == GF_SCOPE_POINT)
        return a->sms == b->sms && strcmp(a->name, b->name) == 0;
    return true;
}

bool gf_scope_contains(const gf_scope *scope, const gf_card_identity *card)
{
    if (card->kind != GF_DEVICE_CUDA)
        return false;
    switch (scope->kind) {
    case GF_SCOPE_POINT:
        return card->cc_major == scope->cc_major && card->cc_minor == scope->cc_minor &&
               card->sm_count == scope->sms && strcmp(card->name, scope->name) == 0;
    case GF_SCOPE_CAPABILITY:
        return card->cc_major == scope->cc_major && card->cc_minor == scope->cc_minor;
    case GF_SCOPE_ALL_DEVICES:
        return true;
    }
    return false;
}

void gf_scope_describe(const gf_scope *s, char *buf, size_t len)
{
    switch (s->kind) {
    case GF_SCOPE_POINT:
        snprintf(buf, len, "point %s cc %d.%d %d SMs", s->name, s->cc_major, s->cc_minor, s->sms);
        return;
    case GF_SCOPE_CAPABILITY:
        snprintf(buf, len, "capability cc %d.%d", s->cc_major, s->cc_minor);
        return;
    case GF_SCOPE_ALL_DEVICES: {
        size_t n = (size_t)snprintf(buf, len, "all-devices");
        for (size_t i = 0; i < s->n_speedups && n < len; i++)
            n += (size_t)snprintf(buf + n, len - n, "%ssm%d>=%.2fx", i ? "," : " ",
                                  s->speedups[i].arch, s->speedups[i].min_speedup);
        return;
    }
    }
}

void gf_module_describe(const gf_module_id *m, char *buf, size_t len)
{
    if (m->artifact == GF_ARTIFACT_CUBIN)
        snprintf(buf, len, "%s sm%d cubin sm%d %.12s", m->area, m->tier, m->cubin_arch, m->sha256);
    else
        snprintf(buf, len, "%s sm%d ptx-jit %.12s", m->area, m->tier, m->sha256);
}

bool gf_module_equal(const gf_module_id *a, const gf_module_id *b)
{
    return strcmp(a->area, b->area) == 0 && a->tier == b->tier && a->artifact == b->artifact &&
           a->cubin_arch == b->cubin_arch && strcmp(a->sha256, b->sha256) == 0;
}

static bool parse_scope(pctx *c, yaml_node_t *n, const char *what, gf_scope *out)
{
    static const char *const keys[] = { "kind", "cc", "sms", "name", "speedups", NULL };
    memset(out, 0, sizeof *out);
    if (!ymap_check(c, n, what, keys))
        return false;
    const char *kind = yreq_str(c, n, "kind", what);
    if (!kind)
        return false;
    yaml_node_t *cc = yget(c, n, "cc"), *sms = yget(c, n, "sms"), *name = yget(c, n, "name");
    yaml_node_t *sp = yget(c, n, "speedups");
    if (strcmp(kind, "point") == 0 || strcmp(kind, "capability") == 0) {
        bool point = kind[0] == 'p';
        out->kind = point ? GF_SCOPE_POINT : GF_SCOPE_CAPABILITY;
        if (!cc || !parse_cc(ystr(cc), &out->cc_major, &out->cc_minor)) {
            bad(c, yline(cc ? cc : n), "%s: 'cc' must be a compute capability like \"9.0\"", what);
            return false;
        }
        if (sp) {
            bad(c, yline(sp), "%s: a %s scope has no 'speedups'", what, kind);
            return false;
        }
        if (!point) {
            if (sms || name) {
                bad(c, yline(sms ? sms : name),
                    "%s: a capability scope names no card ('sms', 'name' belong to a point scope)",
                    what);
                return false;
            }
            return true;
        }
        if (!sms || !parse_int(ystr(sms), 1, 100000, &out->sms)) {
            bad(c, yline(sms ? sms : n), "%s: 'sms' must be a positive multiprocessor count", what);
            return false;
        }
        const char *nm = ystr(name);
        if (!nm || !*nm) {
            bad(c, yline(name ? name : n), "%s: 'name' must be the exact device name", what);
            return false;
        }
        out->name = gf_strdup(nm);
        return true;
    }
    if (strcmp(kind, "all-devices") != 0) {
        bad(c, yline(n), "%s: kind '%s' unknown (point, capability, all-devices)", what, kind);
        return false;
    }
    out->kind = GF_SCOPE_ALL_DEVICES;
    if (cc || sms || name) {
        bad(c, yline(n), "%s: an all-devices scope names no card or capability", what);
        return false;
    }
    if (!sp || sp->type != YAML_MAPPING_NODE) {
        bad(c, yline(sp ? sp : n),
            "%s: an all-devices scope needs 'speedups', a mapping of architecture to minimum "
            "speedup (e.g. sm80: 1.12)", what);
        return false;
    }
    size_t k = ymap_len(sp);
    out->speedups = gf_calloc(k ? k : 1, sizeof *out->speedups);
    for (yaml_node_pair_t *p = sp->data.mapping.pairs.start; p < sp->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = ynode(c, p->key), *vn = ynode(c, p->value);
        int arch = parse_arch(ystr(kn));
        double v;
        if (arch < 0 || !parse_double(ystr(vn), &v) || v <= 0) {
            bad(c, yline(kn), "%s: speedups: '%s' must map an architecture (sm80) to a positive "
                "number", what, ystr(kn) ? ystr(kn) : "?");
            return false;
        }
        for (size_t i = 0; i < out->n_speedups; i++)
            if (out->speedups[i].arch == arch) {
                bad(c, yline(kn), "%s: speedups: sm%d given twice", what, arch);
                return false;
            }
        out->speedups[out->n_speedups].arch = arch;
        out->speedups[out->n_speedups].min_speedup = v;
        out->n_speedups++;
    }
    return true;
}

static bool parse_module(pctx *c, yaml_node_t *n, gf_module_id *out)
{
    static const char *const keys[] = { "area", "tier", "artifact", NULL };
    static const char *const akeys[] = { "kind", "sha256", "arch", NULL };
    memset(out, 0, sizeof *out);
    if (!ymap_check(c, n, "module", keys))
        return false;
    const char *area = yreq_str(c, n, "area", "module");
    const char *tier = yreq_str(c, n, "tier", "module");
    yaml_node_t *art = yreq(c, n, "artifact", "module");
    if (!area || !tier || !art)
        return false;
    if (!gf_area_known(area)) {
        bad(c, yline(n), "module: area '%s' unknown", area);
        return false;
    }
    snprintf(out->area, sizeof out->area, "%s", area);
    if ((out->tier = parse_arch(tier)) < 0) {
        bad(c, yline(yget(c, n, "tier")), "module: tier '%s' must be a PTX tier like sm80", tier);
        return false;
    }
    if (!ymap_check(c, art, "module artifact", akeys))
        return false;
    const char *kind = yreq_str(c, art, "kind", "module artifact");
    yaml_node_t *sha = yreq(c, art, "sha256", "module artifact");
    if (!kind || !sha || !parse_sha(c, sha, "module artifact sha256", out->sha256))
        return false;
    yaml_node_t *arch = yget(c, art, "arch");
    if (strcmp(kind, "ptx-jit") == 0) {
        out->artifact = GF_ARTIFACT_PTX_JIT;
        if (arch) {
            bad(c, yline(arch), "module artifact: a ptx-jit artifact has no 'arch' (its tier says "
                "where it loads)");
            return false;
        }
        return true;
    }
    if (strcmp(kind, "cubin") != 0) {
        bad(c, yline(art), "module artifact: kind '%s' unknown (ptx-jit, cubin)", kind);
        return false;
    }
    out->artifact = GF_ARTIFACT_CUBIN;
    if (!arch || (out->cubin_arch = parse_arch(ystr(arch))) < 0) {
        bad(c, yline(arch ? arch : art), "module artifact: a cubin needs 'arch' like sm90");
        return false;
    }
    return true;
}

/* ---- proofs ------------------------------------------------------------ */

static void proof_free(gf_proof *p)
{
    free(p->boundary);
    for (size_t i = 0; i < p->n_config; i++) {
        free(p->config[i].key);
        free(p->config[i].value);
    }
    free(p->config);
    scope_free(&p->speed_scope);
    free(p->speed);
    memset(p, 0, sizeof *p);
}

static void binding_free(gf_binding *b)
{
    free(b->file);
    free(b->id);
    scope_free(&b->scope);
    for (size_t i = 0; i < b->n_proofs; i++)
        proof_free(&b->proofs[i]);
    free(b->proofs);
    memset(b, 0, sizeof *b);
}

static bool parse_speed(pctx *c, yaml_node_t *n, gf_proof *p)
{
    static const char *const keys[] = { "kind", "scope", "record", "records", "end_to_end", NULL };
    const char *s = ystr(n);
    if (s) {
        if (strcmp(s, "unmeasured") == 0) {
            p->measured = false;
            return true;
        }
        bad(c, yline(n), "proof speed: '%s' is neither 'unmeasured' nor a measured mapping", s);
        return false;
    }
    if (!ymap_check(c, n, "proof speed", keys))
        return false;
    const char *kind = yreq_str(c, n, "kind", "proof speed");
    if (!kind)
        return false;
    if (strcmp(kind, "unmeasured") == 0 && ymap_len(n) == 1) {
        p->measured = false;
        return true;
    }
    if (strcmp(kind, "measured") != 0) {
        bad(c, yline(n), "proof speed: kind '%s' unknown (measured, unmeasured)", kind);
        return false;
    }
    p->measured = true;
    yaml_node_t *scope = yreq(c, n, "scope", "proof speed");
    yaml_node_t *e2e = yreq(c, n, "end_to_end", "proof speed");
    yaml_node_t *rec = yget(c, n, "record"), *recs = yget(c, n, "records");
    if (!scope || !e2e)
        return false;
    if (!parse_scope(c, scope, "proof speed scope", &p->speed_scope))
        return false;
    if (!parse_sha(c, e2e, "proof speed end_to_end", p->end_to_end))
        return false;
    if ((rec != NULL) == (recs != NULL)) {
        bad(c, yline(n), "proof speed: give 'record' (one speed record) or 'records' (one per "
            "architecture), not %s", rec ? "both" : "neither");
        return false;
    }
    if (rec) {
        p->speed = gf_calloc(1, sizeof *p->speed);
        p->n_speed = 1;
        return parse_sha(c, rec, "proof speed record", p->speed[0]);
    }
    if (recs->type != YAML_SEQUENCE_NODE || recs->data.sequence.items.top == recs->data.sequence.items.start) {
        bad(c, yline(recs), "proof speed: 'records' must be a non-empty list of SHA-256");
        return false;
    }
    size_t k = (size_t)(recs->data.sequence.items.top - recs->data.sequence.items.start);
    p->speed = gf_calloc(k, sizeof *p->speed);
    for (yaml_node_item_t *it = recs->data.sequence.items.start; it < recs->data.sequence.items.top; it++)
        if (!parse_sha(c, ynode(c, *it), "proof speed records entry", p->speed[p->n_speed++]))
            return false;
    return true;
}

static bool parse_proof(pctx *c, yaml_node_t *n, const char *area, gf_proof *p)
{
    static const char *const keys[] = { "boundary", "batch", "math", "config", "accuracy", "speed", NULL };
    memset(p, 0, sizeof *p);
    p->line = yline(n);
    if (n && n->type == YAML_MAPPING_NODE && ymap_len(n) == 0) {
        bad(c, yline(n), "proof has no entries");
        return false;
    }
    if (!ymap_check(c, n, "proof", keys))
        return false;
    const char *boundary = yreq_str(c, n, "boundary", "proof");
    const char *batch = yreq_str(c, n, "batch", "proof");
    const char *math = yreq_str(c, n, "math", "proof");
    yaml_node_t *config = yreq(c, n, "config", "proof");
    yaml_node_t *acc = yreq(c, n, "accuracy", "proof");
    yaml_node_t *speed = yreq(c, n, "speed", "proof");
    if (!boundary || !batch || !math || !config || !acc || !speed)
        return false;
    bool ok = true;
    p->boundary = gf_strdup(boundary);
    const gf_boundary *b = gf_boundary_find(boundary);
    if (!b) {
        bad(c, p->line, "proof: boundary '%s' unknown", boundary);
        ok = false;
    } else if (!gf_area_runs(area, boundary)) {
        bad(c, p->line, "proof: boundary '%s' belongs to area %s; a module of area %s cannot run it",
            boundary, b->area, area);
        ok = false;
    }
    if (!parse_int(batch, 1, 1 << 20, &p->batch) || !gf_batch_is_production(p->batch)) {
        bad(c, yline(yget(c, n, "batch")),
            "proof: batch %s is outside the production batches (1, 8, 32)", batch);
        ok = false;
    }
    if (gf_math_parse(math, &p->math) != 0) {
        bad(c, yline(yget(c, n, "math")), "proof: math '%s' unknown (fp32, tf32)", math);
        ok = false;
    }
    if (config->type != YAML_MAPPING_NODE || ymap_len(config) == 0) {
        bad(c, yline(config), "proof: 'config' must be a non-empty mapping (the pinned kernel "
            "configuration)");
        ok = false;
    } else {
        p->config = gf_calloc(ymap_len(config), sizeof *p->config);
        for (yaml_node_pair_t *q = config->data.mapping.pairs.start;
             q < config->data.mapping.pairs.top; q++) {
            yaml_node_t *kn = ynode(c, q->key), *vn = ynode(c, q->value);
            const char *k = ystr(kn), *v = ystr(vn);
            if (!k || !v || !*v) {
                bad(c, yline(kn), "proof config: entries must be scalar key: value");
                ok = false;
                continue;
            }
            for (size_t i = 0; i < p->n_config; i++)
                if (strcmp(p->config[i].key, k) == 0) {
                    bad(c, yline(kn), "proof config: key '%s' given twice", k);
                    ok = false;
                }
            if (!gf_area_config_key(area, k)) {
                const char *owner = gf_area_key_owner(k);
                if (owner)
                    bad(c, yline(kn), "proof config: '%s' belongs to area %s, not to this "
                        "module's area %s", k, owner, area);
                else
                    bad(c, yline(kn), "proof config: key '%s' is no configuration of any area", k);
                ok = false;
            }
            p->config[p->n_config].key = gf_strdup(k);
            p->config[p->n_config].value = gf_strdup(v);
            p->n_config++;
        }
    }
    if (!parse_sha(c, acc, "proof accuracy", p->accuracy))
        ok = false;
    if (!parse_speed(c, speed, p))
        ok = false;
    return ok;
}

/* ---- records ----------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = gf_malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0)
            buf = gf_realloc(buf, cap *= 2);
    }
    bool err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Load records/<sha>.json: present, hashing to its name, JSON, of 'kind'.
 * The caller puts the result. */
static json_object *load_record(pctx *c, int line, const char *sha, const char *kind,
                                const char *role)
{
    char *path = gf_strfmt("%s/records/%s.json", c->ev->dir, sha);
    size_t len = 0;
    char *text = read_file(path, &len);
    json_object *o = NULL;
    if (!text) {
        bad(c, line, "%s record %.12s: %s: %s", role, sha, path, strerror(errno));
        goto out;
    }
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex(text, len, hex);
    if (strcmp(hex, sha) != 0) {
        bad(c, line, "%s record: %s hashes to %s, not to its name", role, path, hex);
        goto out;
    }
    enum json_tokener_error jerr;
    o = json_tokener_parse_verbose(text, &jerr);
    if (!o || !json_object_is_type(o, json_type_object)) {
        bad(c, line, "%s record: %s is not a JSON object (%s)", role, path,
            o ? "wrong type" : json_tokener_error_desc(jerr));
        json_object_put(o);
        o = NULL;
        goto out;
    }
    json_object *f, *k;
    if (!json_object_object_get_ex(o, "format", &f) || json_object_get_int(f) != 1 ||
        !json_object_object_get_ex(o, "kind", &k) ||
        strcmp(json_object_get_string(k), kind) != 0) {
        bad(c, line, "%s record: %s is not a format-1 '%s' record", role, path, kind);
        json_object_put(o);
        o = NULL;
    }
out:
    free(text);
    free(path);
    return o;
}

static const char *jstr(json_object *o, const char *key)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static bool jnum(json_object *o, const char *key, double *out)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) ||
        !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
        return false;
    *out = json_object_get_double(v);
    return isfinite(*out);
}

static json_object *jobj(json_object *o, const char *key)
{
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
        return NULL;
    return v;
}

/* The record is about this proof: tuple, module, pinned configuration. */
static bool record_matches(pctx *c, int line, json_object *r, const gf_binding *b,
                           const gf_proof *p, const char *role)
{
    json_object *t = jobj(r, "tuple"), *m = jobj(r, "module"), *cfg = jobj(r, "config");
    double batch;
    const char *bn = jstr(t, "boundary"), *math = jstr(t, "math");
    if (!bn || !math || !jnum(t, "batch", &batch) || strcmp(bn, p->boundary) != 0 ||
        (int)batch != p->batch || strcmp(math, gf_math_name(p->math)) != 0) {
        bad(c, line, "%s record: its tuple is not (%s, %d, %s)", role, p->boundary, p->batch,
            gf_math_name(p->math));
        return false;
    }
    const char *area = jstr(m, "area"), *tier = jstr(m, "tier"), *art = jstr(m, "artifact"),
               *sha = jstr(m, "sha256");
    bool cubin = b->module.artifact == GF_ARTIFACT_CUBIN;
    if (!area || !tier || !art || !sha || strcmp(area, b->module.area) != 0 ||
        parse_arch(tier) != b->module.tier || strcmp(art, cubin ? "cubin" : "ptx-jit") != 0 ||
        strcmp(sha, b->module.sha256) != 0 ||
        (cubin && parse_arch(jstr(m, "arch")) != b->module.cubin_arch)) {
        char desc[160];
        gf_module_describe(&b->module, desc, sizeof desc);
        bad(c, line, "%s record: measured another module than the binding's (%s)", role, desc);
        return false;
    }
    if (!cfg || (size_t)json_object_object_length(cfg) != p->n_config) {
        bad(c, line, "%s record: its configuration is not the proof's pinned configuration", role);
        return false;
    }
    for (size_t i = 0; i < p->n_config; i++) {
        json_object *v;
        if (!json_object_object_get_ex(cfg, p->config[i].key, &v) ||
            strcmp(json_object_get_string(v), p->config[i].value) != 0) {
            bad(c, line, "%s record: configuration '%s' is not the pinned %s", role,
                p->config[i].key, p->config[i].value);
            return false;
        }
    }
    return true;
}

/* The record's card, which must lie in the binding's scope. */
static bool record_card(pctx *c, int line, json_object *r, const gf_scope *scope,
                        const char *role, gf_card_identity *card)
{
    char why[160];
    if (gf_card_from_json(jobj(r, "card"), card, why, sizeof why) != 0) {
        bad(c, line, "%s record: %s", role, why);
        return false;
    }
    bool in = gf_scope_contains(scope, card);
    if (in && scope->kind == GF_SCOPE_ALL_DEVICES) {
        in = false;
        for (size_t i = 0; i < scope->n_speedups; i++)
            if (scope->speedups[i].arch == gf_card_arch(card))
                in = true;
    }
    if (!in) {
        char sd[200];
        gf_scope_describe(scope, sd, sizeof sd);
        bad(c, line, "%s record names card %s cc %d.%d %d SMs, which is not in the binding's "
            "scope (%s)", role, card->name, card->cc_major, card->cc_minor, card->sm_count, sd);
        return false;
    }
    return true;
}

/* Median candidate and library times; 0 when the record is malformed. */
static bool record_medians(pctx *c, int line, json_object *r, const char *role, double *cand,
                           double *lib)
{
    json_object *a = jobj(r, "candidate"), *l = jobj(r, "library");
    double na = 0, nl = 0, sa, sl;
    if (!jnum(a, "median", cand) || !jnum(l, "median", lib) || !jnum(a, "spread", &sa) ||
        !jnum(l, "spread", &sl) || !jnum(a, "runs", &na) || !jnum(l, "runs", &nl) ||
        *cand <= 0 || *lib <= 0 || sa < 0 || sl < 0) {
        bad(c, line, "%s record: 'candidate' and 'library' need a positive median, a spread and "
            "a run count", role);
        return false;
    }
    if (na < 2 || nl < 2) {
        bad(c, line, "%s record: fewer than two A/B rounds (candidate %g, library %g runs)", role,
            na, nl);
        return false;
    }
    return true;
}

static void check_accuracy(pctx *c, const gf_binding *b, const gf_proof *p)
{
    json_object *r = load_record(c, p->line, p->accuracy, "accuracy", "accuracy");
    if (!r)
        return;
    gf_card_identity card;
    double elems, mism, seed, maxabs, maxrel, atol, rtol;
    if (record_matches(c, p->line, r, b, p, "accuracy") &&
        record_card(c, p->line, r, &b->scope, "accuracy", &card)) {
        if (!jnum(r, "seed", &seed) || !jnum(r, "elements", &elems) ||
            !jnum(r, "mismatches", &mism) || !jnum(r, "max_abs_err", &maxabs) ||
            !jnum(r, "max_rel_err", &maxrel) || !jnum(r, "atol", &atol) || !jnum(r, "rtol", &rtol))
            bad(c, p->line, "accuracy record: needs seed, elements, mismatches, max_abs_err, "
                "max_rel_err, atol, rtol");
        else if (elems < 1 || mism != 0)
            bad(c, p->line, "accuracy record: %g of %g elements outside |a-b| <= %g + %g*|ref| "
                "(max abs %g, max rel %g): not a pass", mism, elems, atol, rtol, maxabs, maxrel);
    }
    json_object_put(r);
}

static void check_speed(pctx *c, const gf_binding *b, const gf_proof *p)
{
    const gf_scope *bs = &b->scope, *ss = &p->speed_scope;
    if (!scope_equal(bs, ss)) {
        char a[200], d[200];
        gf_scope_describe(bs, a, sizeof a);
        gf_scope_describe(ss, d, sizeof d);
        if (bs->kind == GF_SCOPE_POINT && ss->kind == GF_SCOPE_CAPABILITY)
            bad(c, p->line, "point binding (%s) backed only by capability-wide evidence (%s)", a, d);
        else
            bad(c, p->line, "speed evidence scope (%s) is not the binding's scope (%s)", d, a);
        return;
    }
    bool broad = bs->kind == GF_SCOPE_ALL_DEVICES;
    if (!broad && p->n_speed != 1) {
        bad(c, p->line, "a %s binding's proof names one speed 'record', not %zu",
            bs->kind == GF_SCOPE_POINT ? "point" : "capability", p->n_speed);
        return;
    }
    int covered[16];
    size_t n_covered = 0;
    for (size_t i = 0; i < p->n_speed; i++) {
        json_object *r = load_record(c, p->line, p->speed[i], "speed", "speed");
        if (!r)
            continue;
        gf_card_identity card;
        double cand, lib;
        if (record_matches(c, p->line, r, b, p, "speed") &&
            record_card(c, p->line, r, bs, "speed", &card) &&
            record_medians(c, p->line, r, "speed", &cand, &lib)) {
            double speedup = lib / cand;
            if (!broad && speedup <= 1.0)
                bad(c, p->line, "speed record %.12s shows no speedup over the library (%.3fx)",
                    p->speed[i], speedup);
            for (size_t k = 0; broad && k < bs->n_speedups; k++) {
                if (bs->speedups[k].arch != gf_card_arch(&card))
                    continue;
                if (speedup < bs->speedups[k].min_speedup)
                    bad(c, p->line, "scope claims %.2fx on sm%d but speed record %.12s shows %.3fx",
                        bs->speedups[k].min_speedup, bs->speedups[k].arch, p->speed[i], speedup);
                if (n_covered < GF_ARRAY_LEN(covered))
                    covered[n_covered++] = bs->speedups[k].arch;
            }
        }
        json_object_put(r);
    }
    for (size_t k = 0; broad && k < bs->n_speedups; k++) {
        bool found = false;
        for (size_t i = 0; i < n_covered; i++)
            if (covered[i] == bs->speedups[k].arch)
                found = true;
        if (!found)
            bad(c, p->line, "scope claims a speedup on sm%d but no speed record of this proof "
                "was measured there", bs->speedups[k].arch);
    }
    json_object *r = load_record(c, p->line, p->end_to_end, "end-to-end", "end-to-end");
    if (!r)
        return;
    /* Slower only outside the noise: the fastest run with the kernel slower
     * than the slowest without it (the pipeline dwarfs most kernels, so its
     * medians alone would decide by chance). */
    gf_card_identity card;
    double cand, lib, cand_min, lib_max;
    if (record_matches(c, p->line, r, b, p, "end-to-end") &&
        record_card(c, p->line, r, bs, "end-to-end", &card) &&
        record_medians(c, p->line, r, "end-to-end", &cand, &lib)) {
        if (!jnum(jobj(r, "candidate"), "min", &cand_min) || !jnum(jobj(r, "library"), "max", &lib_max))
            bad(c, p->line, "end-to-end record %.12s: needs the candidate's 'min' and the "
                "library's 'max'", p->end_to_end);
        else if (cand_min > lib_max)
            bad(c, p->line, "end-to-end record %.12s: the pipeline is slower with this kernel "
                "(every run: %.4g at best vs library %.4g at worst)", p->end_to_end, cand_min,
                lib_max);
    }
    json_object_put(r);
}

/* ---- bindings ---------------------------------------------------------- */

static void check_binding(pctx *c, const gf_binding *b)
{
    const gf_scope *s = &b->scope;
    const gf_module_id *m = &b->module;
    if (gf_evidence_precedence(c->ev, m->area) < 0)
        bad(c, b->line, "area %s is missing from the route precedence list (precedence.yaml)",
            m->area);
    if (s->kind == GF_SCOPE_ALL_DEVICES) {
        if (s->n_speedups < 2)
            bad(c, b->line, "all-devices scope backed by a single architecture: broad evidence "
                "needs at least two");
        int lowest = 0;
        for (size_t i = 0; i < s->n_speedups; i++) {
            if (s->speedups[i].min_speedup < GF_EVIDENCE_MIN_BROAD_SPEEDUP)
                bad(c, b->line, "all-devices scope: weak evidence on sm%d (%.3fx < %.2fx)",
                    s->speedups[i].arch, s->speedups[i].min_speedup, GF_EVIDENCE_MIN_BROAD_SPEEDUP);
            if (!lowest || s->speedups[i].arch < lowest)
                lowest = s->speedups[i].arch;
        }
        if (m->artifact == GF_ARTIFACT_CUBIN)
            bad(c, b->line, "all-devices scope with a cubin (sm%d): a broad scope needs portable "
                "PTX (ptx-jit)", m->cubin_arch);
        if (lowest && m->tier > lowest)
            bad(c, b->line, "module tier sm%d cannot load on sm%d, which the scope claims", m->tier,
                lowest);
    } else {
        if (m->artifact == GF_ARTIFACT_CUBIN && m->cubin_arch != scope_arch(s))
            bad(c, b->line, "cubin for sm%d, but the scope is cc %d.%d (sm%d)", m->cubin_arch,
                s->cc_major, s->cc_minor, scope_arch(s));
        if (m->tier > scope_arch(s))
            bad(c, b->line, "module tier sm%d cannot load on cc %d.%d", m->tier, s->cc_major,
                s->cc_minor);
    }
    if (b->n_proofs == 0)
        bad(c, b->line, "proofs: no entries (a binding needs at least one proof)");
    for (size_t i = 0; i < b->n_proofs; i++) {
        const gf_proof *p = &b->proofs[i];
        for (size_t j = 0; j < i; j++) {
            const gf_proof *q = &b->proofs[j];
            if (strcmp(p->boundary, q->boundary) == 0 && p->batch == q->batch &&
                p->math == q->math)
                bad(c, p->line, "duplicated proof of (%s, %d, %s), first at line %d", p->boundary,
                    p->batch, gf_math_name(p->math), q->line);
        }
        check_accuracy(c, b, p);
        if (p->measured)
            check_speed(c, b, p);
    }
}

static bool parse_binding(pctx *c, yaml_node_t *n, gf_binding *b)
{
    static const char *const keys[] = { "id", "scope", "module", "proofs", NULL };
    memset(b, 0, sizeof *b);
    b->line = yline(n);
    const char *id = ystr(yget(c, n, "id"));
    if (id && *id)
        c->id = id;
    if (!ymap_check(c, n, "binding", keys))
        return false;
    if (!yreq_str(c, n, "id", "binding"))
        return false;
    yaml_node_t *scope = yreq(c, n, "scope", "binding");
    yaml_node_t *module = yreq(c, n, "module", "binding");
    yaml_node_t *proofs = yreq(c, n, "proofs", "binding");
    if (!scope || !module || !proofs)
        return false;
    b->id = gf_strdup(id);
    b->file = gf_strdup(c->file);
    bool ok = parse_scope(c, scope, "scope", &b->scope);
    ok = parse_module(c, module, &b->module) && ok;
    if (proofs->type != YAML_SEQUENCE_NODE) {
        bad(c, yline(proofs), "proofs must be a list");
        return false;
    }
    if (!ok)
        return false;
    size_t k = (size_t)(proofs->data.sequence.items.top - proofs->data.sequence.items.start);
    b->proofs = gf_calloc(k ? k : 1, sizeof *b->proofs);
    for (yaml_node_item_t *it = proofs->data.sequence.items.start;
         it < proofs->data.sequence.items.top; it++) {
        if (!parse_proof(c, ynode(c, *it), b->module.area, &b->proofs[b->n_proofs++]))
            ok = false;
    }
    return ok;
}

/* Load a table's text as one YAML document, reporting what stops it. */
static bool load_yaml(pctx *c, const char *text, size_t len, yaml_document_t *doc)
{
    gf_ydoc_error err;
    if (gf_ydoc_load(text, len, 0, MAX_DEPTH, doc, &err) == 0)
        return true;
    switch (err.status) {
    case GF_YDOC_SYNTAX:
        bad(c, err.line, "YAML: %s", err.problem);
        break;
    case GF_YDOC_TOO_DEEP:
        bad(c, err.line, "YAML: nesting deeper than %d levels", MAX_DEPTH);
        break;
    case GF_YDOC_SECOND_DOC:
        bad(c, err.line, "YAML: more than one document");
        break;
    case GF_YDOC_TOO_BIG:
    case GF_YDOC_NO_PARSER:
    case GF_YDOC_OK:
        bad(c, 0, "YAML: cannot start the parser");
        break;
    }
    return false;
}

static void load_bindings_file(gf_evidence *ev, const char *path)
{
    pctx c = { .ev = ev, .file = path };
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) {
        bad(&c, 0, "cannot read: %s", strerror(errno));
        return;
    }
    yaml_document_t doc;
    if (!load_yaml(&c, text, len, &doc)) {
        free(text);
        return;
    }
    c.doc = &doc;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    static const char *const keys[] = { "bindings", NULL };
    if (root && ymap_check(&c, root, "bindings file", keys)) {
        yaml_node_t *list = yget(&c, root, "bindings");
        if (!list || (list->type != YAML_SEQUENCE_NODE && !(ystr(list) && !*ystr(list)))) {
            bad(&c, yline(list ? list : root), "'bindings' must be a list");
        } else if (list->type == YAML_SEQUENCE_NODE) {
            int nth = 0;
            for (yaml_node_item_t *it = list->data.sequence.items.start;
                 it < list->data.sequence.items.top; it++) {
                char anon[32];
                snprintf(anon, sizeof anon, "#%d", ++nth);
                c.id = anon;
                gf_binding b;
                if (parse_binding(&c, ynode(&c, *it), &b)) {
                    ev->bindings = gf_realloc(ev->bindings, (ev->n_bindings + 1) * sizeof *ev->bindings);
                    ev->bindings[ev->n_bindings++] = b;
                } else {
                    binding_free(&b);
                }
            }
        }
    }
    yaml_document_delete(&doc);
    free(text);
}

static void load_precedence(gf_evidence *ev)
{
    char *path = gf_strfmt("%s/precedence.yaml", ev->dir);
    pctx c = { .ev = ev, .file = path };
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) {
        bad(&c, 0, "the route precedence list is missing (%s)", strerror(errno));
        free(path);
        return;
    }
    yaml_document_t doc;
    if (!load_yaml(&c, text, len, &doc))
        goto out_text;
    c.doc = &doc;
    static const char *const keys[] = { "precedence", NULL };
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || !ymap_check(&c, root, "precedence file", keys))
        goto out_doc;
    yaml_node_t *list = yget(&c, root, "precedence");
    if (!list || list->type != YAML_SEQUENCE_NODE) {
        bad(&c, yline(list ? list : root), "'precedence' must be a list of areas");
        goto out_doc;
    }
    for (yaml_node_item_t *it = list->data.sequence.items.start;
         it < list->data.sequence.items.top; it++) {
        yaml_node_t *n = ynode(&c, *it);
        const char *a = ystr(n);
        if (!a || !gf_area_known(a)) {
            bad(&c, yline(n), "precedence: '%s' is not an area", a ? a : "?");
            continue;
        }
        if (gf_evidence_precedence(ev, a) >= 0) {
            bad(&c, yline(n), "precedence: area %s listed twice", a);
            continue;
        }
        ev->precedence = gf_realloc(ev->precedence, (ev->n_precedence + 1) * sizeof *ev->precedence);
        ev->precedence[ev->n_precedence++] = gf_strdup(a);
    }
out_doc:
    yaml_document_delete(&doc);
out_text:
    free(text);
    free(path);
}

static int visible_filter(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

static bool is_yaml_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".yaml") == 0;
}

/* ---- the evidence set -------------------------------------------------- */

gf_evidence *gf_evidence_new(void)
{
    return gf_calloc(1, sizeof(gf_evidence));
}

void gf_evidence_destroy(gf_evidence **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_evidence *ev = *self_p;
    for (size_t i = 0; i < ev->n_problems; i++)
        free(ev->problems[i]);
    free(ev->problems);
    for (size_t i = 0; i < ev->n_bindings; i++)
        binding_free(&ev->bindings[i]);
    free(ev->bindings);
    for (size_t i = 0; i < ev->n_precedence; i++)
        free(ev->precedence[i]);
    free(ev->precedence);
    free(ev->dir);
    free(ev);
    *self_p = NULL;
}

int gf_evidence_load(gf_evidence *ev, const char *dir)
{
    assert(!ev->loaded);
    ev->loaded = true;
    ev->dir = gf_strdup(dir);
    size_t n = strlen(ev->dir);
    while (n > 1 && ev->dir[n - 1] == '/')
        ev->dir[--n] = '\0';
    struct stat st;
    if (stat(ev->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        add_problem(ev, gf_strfmt("%s: not an evidence directory (%s)", ev->dir,
                                  stat(ev->dir, &st) != 0 ? strerror(errno) : "not a directory"));
        return GF_ENOENT;
    }
    load_precedence(ev);

    char *bdir = gf_strfmt("%s/bindings", ev->dir);
    struct dirent **names = NULL;
    int k = scandir(bdir, &names, visible_filter, alphasort);
    if (k < 0 && errno != ENOENT)
        add_problem(ev, gf_strfmt("%s: cannot list (%s)", bdir, strerror(errno)));
    for (int i = 0; i < k; i++) {
        char *path = gf_strfmt("%s/%s", bdir, names[i]->d_name);
        /* A table the validator would skip must not pass silently. */
        if (is_yaml_name(names[i]->d_name))
            load_bindings_file(ev, path);
        else
            add_problem(ev, gf_strfmt("%s: not a binding table (tables are named *.yaml)", path));
        free(path);
        free(names[i]);
    }
    free(names);
    free(bdir);

    /* Each binding on its own, then against the others. */
    for (size_t i = 0; i < ev->n_bindings; i++) {
        const gf_binding *b = &ev->bindings[i];
        pctx c = { .ev = ev, .file = b->file, .id = b->id };
        check_binding(&c, b);
        for (size_t j = 0; j < i; j++) {
            const gf_binding *a = &ev->bindings[j];
            if (strcmp(a->id, b->id) == 0)
                bad(&c, b->line, "binding id given twice (first at %s:%d)", a->file, a->line);
            if (strcmp(a->module.area, b->module.area) == 0 && scopes_overlap(&a->scope, &b->scope) &&
                !gf_module_equal(&a->module, &b->module)) {
                char ma[160], mb[160];
                gf_module_describe(&a->module, ma, sizeof ma);
                gf_module_describe(&b->module, mb, sizeof mb);
                bad(&c, b->line, "two different modules for area %s on overlapping scopes: %s "
                    "here, %s in binding '%s' (%s:%d)", b->module.area, mb, ma, a->id, a->file,
                    a->line);
            }
        }
    }
    return ev->n_problems ? GF_EINVAL : 0;
}

size_t gf_evidence_problem_count(const gf_evidence *self)
{
    return self->n_problems;
}

const char *gf_evidence_problem(const gf_evidence *self, size_t i)
{
    return i < self->n_problems ? self->problems[i] : NULL;
}

size_t gf_evidence_binding_count(const gf_evidence *self)
{
    return self->n_bindings;
}

const gf_binding *gf_evidence_binding(const gf_evidence *self, size_t i)
{
    return i < self->n_bindings ? &self->bindings[i] : NULL;
}

const char *gf_evidence_dir(const gf_evidence *self)
{
    return self->dir;
}

int gf_evidence_precedence(const gf_evidence *self, const char *area)
{
    for (size_t i = 0; i < self->n_precedence; i++)
        if (strcmp(self->precedence[i], area) == 0)
            return (int)i;
    return -1;
}

int gf_evidence_open(const char *dir, gf_evidence **out)
{
    *out = NULL;
    gf_evidence *ev = gf_evidence_new();
    int rc = gf_evidence_load(ev, dir);
    if (rc != 0) {
        for (size_t i = 0; i < ev->n_problems; i++)
            GF_ERROR("evidence: %s", ev->problems[i]);
        GF_ERROR("evidence: %s rejected (%zu problem%s)", dir, ev->n_problems,
                 ev->n_problems == 1 ? "" : "s");
        gf_evidence_destroy(&ev);
        return rc;
    }
    *out = ev;
    return 0;
}

#ifndef GF_EVIDENCE_DIR
#define GF_EVIDENCE_DIR "evidence"
#endif

const char *gf_evidence_default_dir(void)
{
    const char *env = getenv("GPUFLOCK_EVIDENCE");
    return env && env[0] ? env : GF_EVIDENCE_DIR;
}
