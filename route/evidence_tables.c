/* evidence_tables.c — the evidence tables read into bindings (see
 * evidence_parts.h).
 *
 * precedence.yaml and each table of bindings/ are loaded as one YAML document
 * with the reader the configuration uses (common/ydoc.h) and walked against
 * tables of the keys each mapping allows. Every problem is reported with its
 * file and line, and the walk goes on: a binding with a problem is dropped,
 * the others are kept, so one check shows all that is wrong. The rules that
 * need more than one field's reading (records, scopes of other bindings)
 * are in evidence_records.c and evidence_rules.c. */
#include "route/evidence.h"
#include "route/evidence_parts.h"
#include "common/error.h"
#include "common/util.h"
#include "common/ydoc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Nesting deeper than this in a table is refused (common/ydoc.c says why):
 * a binding nests five levels. */
#define MAX_DEPTH 64

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

int gf_evidence_parse_arch(const char *s)
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

/* ---- scopes and modules ------------------------------------------------ */

static void scope_free(gf_scope *s)
{
    free(s->name);
    free(s->speedups);
    memset(s, 0, sizeof *s);
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
        int arch = gf_evidence_parse_arch(ystr(kn));
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
    if ((out->tier = gf_evidence_parse_arch(tier)) < 0) {
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
    if (!arch || (out->cubin_arch = gf_evidence_parse_arch(ystr(arch))) < 0) {
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

void gf_evidence_binding_free(gf_binding *b)
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

/* ---- bindings ---------------------------------------------------------- */

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

void gf_evidence_read_table(gf_evidence *ev, const char *path)
{
    pctx c = { .ev = ev, .file = path };
    size_t len = 0;
    char *text = gf_evidence_read_file(path, &len);
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
                    gf_evidence_binding_free(&b);
                }
            }
        }
    }
    yaml_document_delete(&doc);
    free(text);
}

void gf_evidence_read_precedence(gf_evidence *ev)
{
    char *path = gf_strfmt("%s/precedence.yaml", ev->dir);
    pctx c = { .ev = ev, .file = path };
    size_t len = 0;
    char *text = gf_evidence_read_file(path, &len);
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

