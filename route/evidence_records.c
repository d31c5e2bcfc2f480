/* evidence_records.c — the records a proof names (see evidence_parts.h).
 *
 * A record is a JSON object named by the SHA-256 of its bytes
 * (records/<sha256>.json). A proof stands on it only if it is there, hashes
 * to its name, is of the kind expected, is about the proof's tuple, module
 * and pinned configuration, was measured on a card of the binding's scope,
 * and shows what its kind must show: no mismatch (accuracy), a speedup
 * (speed), a pipeline not slower in every run (end-to-end). */
#include "route/evidence.h"
#include "route/evidence_parts.h"
#include "common/card.h"
#include "common/sha256.h"
#include "common/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *gf_evidence_read_file(const char *path, size_t *len)
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

/* Load records/<sha>.json: present, hashing to its name, JSON, of 'kind'.
 * The caller puts the result. */
static json_object *load_record(pctx *c, int line, const char *sha, const char *kind,
                                const char *role)
{
    char *path = gf_strfmt("%s/records/%s.json", c->ev->dir, sha);
    size_t len = 0;
    char *text = gf_evidence_read_file(path, &len);
    json_object *o = NULL;
    if (!text) {
        bad(c, line, "%s record %.12s: %s: %s", role, sha, path, strerror(errno));
        goto out_free;
    }
    char hex[GF_SHA256_HEX_LEN];
    gf_sha256_hex(text, len, hex);
    if (strcmp(hex, sha) != 0) {
        bad(c, line, "%s record: %s hashes to %s, not to its name", role, path, hex);
        goto out_free;
    }
    enum json_tokener_error jerr;
    o = json_tokener_parse_verbose(text, &jerr);
    if (!o || !json_object_is_type(o, json_type_object)) {
        bad(c, line, "%s record: %s is not a JSON object (%s)", role, path,
            o ? "wrong type" : json_tokener_error_desc(jerr));
        json_object_put(o);
        o = NULL;
        goto out_free;
    }
    json_object *f, *k;
    if (!json_object_object_get_ex(o, "format", &f) || json_object_get_int(f) != 1 ||
        !json_object_object_get_ex(o, "kind", &k) ||
        strcmp(json_object_get_string(k), kind) != 0) {
        bad(c, line, "%s record: %s is not a format-1 '%s' record", role, path, kind);
        json_object_put(o);
        o = NULL;
    }
out_free:
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
        gf_evidence_parse_arch(tier) != b->module.tier ||
        strcmp(art, cubin ? "cubin" : "ptx-jit") != 0 ||
        strcmp(sha, b->module.sha256) != 0 ||
        (cubin && gf_evidence_parse_arch(jstr(m, "arch")) != b->module.cubin_arch)) {
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

void gf_evidence_check_records(pctx *c, const gf_binding *b, const gf_proof *p)
{
    check_accuracy(c, b, p);
    if (p->measured)
        check_speed(c, b, p);
}
