/* fixture_evidence.h — small evidence directories written by a test.
 *
 * A test describes bindings (scope, module, proofs) in a struct; the fixture
 * writes the records they name (accuracy, speed, end-to-end JSON, each under
 * records/<sha256>.json, hashed for real) and the YAML table, in a fresh
 * temporary directory. Shared by test_evidence.c and test_planner.c. */
#ifndef GF_FIXTURE_EVIDENCE_H
#define GF_FIXTURE_EVIDENCE_H

#include "common/sha256.h"
#include "common/util.h"

#include <assert.h>
#include <ftw.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FX_H200 "NVIDIA H200", "9.0", 132
#define FX_SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FX_SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

typedef struct {
    char dir[64];              /* the temporary evidence directory */
} fx_dir;

typedef struct {
    const char *boundary;      /* "lstm.stack" */
    int batch;                 /* 0: 32 */
    const char *math;          /* NULL: fp32 */
    bool unmeasured;           /* speed: unmeasured */
    const char *key, *value;   /* pinned config; NULL: the area's usual key */
    double speedup;            /* library/candidate in the speed records; 0: 1.5 */
    int mismatches;            /* accuracy record mismatches (0: a pass) */
    double e2e_ratio;          /* end to end: candidate median / library's; 0: 0.98 */
} fx_proof;

typedef struct {
    const char *id;
    const char *kind;          /* point | capability | all-devices */
    const char *name, *cc;     /* the card (point scope, and the records' card) */
    int sms;
    int archs[4];              /* all-devices: architectures measured (80, 90...) */
    size_t n_archs;
    double claim;              /* all-devices: claimed min speedup per arch; 0: 1.3 */
    const char *area, *tier;   /* module */
    const char *artifact;      /* NULL: ptx-jit */
    const char *arch;          /* cubin: "sm90" */
    const char *sha;           /* module artifact hash */
    const char *speed_scope;   /* override the proofs' speed scope (YAML flow); NULL: the binding's */
    const char *record_card;   /* override the speed records' card "NAME:CC:SMS" */
    fx_proof proofs[8];
    size_t n_proofs;
} fx_binding;

static inline void fx_init(fx_dir *f, const char *precedence)
{
    snprintf(f->dir, sizeof f->dir, "/tmp/gf_evidence_XXXXXX");
    char *d = mkdtemp(f->dir);
    assert(d);
    (void)d;
    char path[128];
    snprintf(path, sizeof path, "%s/bindings", f->dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/records", f->dir);
    mkdir(path, 0755);
    if (precedence) {
        snprintf(path, sizeof path, "%s/precedence.yaml", f->dir);
        FILE *fp = fopen(path, "w");
        assert(fp);
        fprintf(fp, "precedence: [%s]\n", precedence);
        fclose(fp);
    }
}

static inline int fx_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static inline void fx_cleanup(fx_dir *f)
{
    nftw(f->dir, fx_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static inline void fx_write(fx_dir *f, const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, rel);
    FILE *fp = fopen(path, "w");
    assert(fp);
    fputs(text, fp);
    fclose(fp);
}

/* Write a record and return its name (the SHA-256 of its bytes). */
static inline void fx_put_record(fx_dir *f, json_object *rec, char sha[GF_SHA256_HEX_LEN])
{
    const char *text = json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PRETTY);
    gf_sha256_hex(text, strlen(text), sha);
    char rel[128];
    snprintf(rel, sizeof rel, "records/%s.json", sha);
    fx_write(f, rel, text);
    json_object_put(rec);
}

static inline const char *fx_area_key(const char *area)
{
    if (strcmp(area, "lstm") == 0)
        return "hidden_per_block";
    if (strcmp(area, "embedding") == 0)
        return "tile_n";
    if (strcmp(area, "pooling") == 0 || strcmp(area, "fbank") == 0)
        return "frames_per_block";
    return "tile_m";   /* dense, resnet */
}

static inline void fx_card_of_arch(int arch, const char **name, const char **cc, int *sms)
{
    if (arch == 80) {
        *name = "NVIDIA A100-SXM4-80GB", *cc = "8.0", *sms = 108;
    } else if (arch == 89) {
        *name = "NVIDIA L4", *cc = "8.9", *sms = 58;
    } else {
        *name = "NVIDIA H200", *cc = "9.0", *sms = 132;
    }
}

static inline json_object *fx_record(const fx_binding *b, const fx_proof *p, const char *kind,
                                     const char *name, const char *cc, int sms)
{
    json_object *r = json_object_new_object();
    json_object_object_add(r, "format", json_object_new_int(1));
    json_object_object_add(r, "kind", json_object_new_string(kind));
    json_object *t = json_object_new_object();
    json_object_object_add(t, "boundary", json_object_new_string(p->boundary));
    json_object_object_add(t, "batch", json_object_new_int(p->batch ? p->batch : 32));
    json_object_object_add(t, "math", json_object_new_string(p->math ? p->math : "fp32"));
    json_object_object_add(r, "tuple", t);
    json_object *m = json_object_new_object();
    json_object_object_add(m, "area", json_object_new_string(b->area));
    json_object_object_add(m, "tier", json_object_new_string(b->tier));
    json_object_object_add(m, "artifact", json_object_new_string(b->artifact ? b->artifact : "ptx-jit"));
    if (b->arch)
        json_object_object_add(m, "arch", json_object_new_string(b->arch));
    json_object_object_add(m, "sha256", json_object_new_string(b->sha));
    json_object_object_add(r, "module", m);
    json_object *c = json_object_new_object();
    json_object_object_add(c, p->key ? p->key : fx_area_key(b->area),
                           json_object_new_string(p->value ? p->value : "128"));
    json_object_object_add(r, "config", c);
    json_object *card = json_object_new_object();
    json_object_object_add(card, "kind", json_object_new_string("cuda"));
    json_object_object_add(card, "name", json_object_new_string(name));
    json_object_object_add(card, "cc", json_object_new_string(cc));
    json_object_object_add(card, "sms", json_object_new_int(sms));
    json_object_object_add(card, "uuid", json_object_new_string("GPU-00000000-1111-2222-3333-444444444444"));
    json_object_object_add(r, "card", card);
    if (strcmp(kind, "accuracy") == 0) {
        json_object_object_add(r, "reference", json_object_new_string("float64"));
        json_object_object_add(r, "seed", json_object_new_int(20240601));
        json_object_object_add(r, "elements", json_object_new_int(1 << 16));
        json_object_object_add(r, "mismatches", json_object_new_int(p->mismatches));
        json_object_object_add(r, "max_abs_err", json_object_new_double(3.1e-6));
        json_object_object_add(r, "max_rel_err", json_object_new_double(2.2e-5));
        json_object_object_add(r, "atol", json_object_new_double(1e-5));
        json_object_object_add(r, "rtol", json_object_new_double(1e-4));
        return r;
    }
    double s = p->speedup > 0 ? p->speedup : 1.5;
    double lib = strcmp(kind, "speed") == 0 ? 2.0 : 900.0;
    json_object_object_add(r, "unit", json_object_new_string(strcmp(kind, "speed") == 0 ? "ms" : "s"));
    json_object_object_add(r, "order", json_object_new_string("ABABABAB"));
    double e2e = p->e2e_ratio > 0 ? p->e2e_ratio : 0.98;
    double med[2] = { strcmp(kind, "speed") == 0 ? lib / s : lib * e2e, lib };
    static const char *const side[2] = { "candidate", "library" };
    for (int i = 0; i < 2; i++) {   /* runs within +-0.5 % of the median */
        json_object *o = json_object_new_object();
        json_object_object_add(o, "median", json_object_new_double(med[i]));
        json_object_object_add(o, "spread", json_object_new_double(0.01 * med[i]));
        json_object_object_add(o, "runs", json_object_new_int(4));
        json_object_object_add(o, "min", json_object_new_double(0.995 * med[i]));
        json_object_object_add(o, "max", json_object_new_double(1.005 * med[i]));
        json_object_object_add(r, side[i], o);
    }
    return r;
}

/* The YAML of one binding (a list item), with its records written. */
static inline char *fx_binding_yaml(fx_dir *f, const fx_binding *b)
{
    char scope[256];
    double claim = b->claim > 0 ? b->claim : 1.3;
    if (strcmp(b->kind, "point") == 0) {
        snprintf(scope, sizeof scope, "{kind: point, cc: \"%s\", sms: %d, name: \"%s\"}", b->cc,
                 b->sms, b->name);
    } else if (strcmp(b->kind, "capability") == 0) {
        snprintf(scope, sizeof scope, "{kind: capability, cc: \"%s\"}", b->cc);
    } else {
        size_t n = (size_t)snprintf(scope, sizeof scope, "{kind: all-devices, speedups: {");
        for (size_t i = 0; i < b->n_archs; i++)
            n += (size_t)snprintf(scope + n, sizeof scope - n, "%ssm%d: %.2f", i ? ", " : "",
                                  b->archs[i], claim);
        snprintf(scope + n, sizeof scope - n, "}}");
    }
    char *y = gf_strfmt("  - id: %s\n    scope: %s\n    module:\n      area: %s\n      tier: %s\n"
                        "      artifact: {kind: %s, sha256: %s%s%s}\n    proofs:\n",
                        b->id, scope, b->area, b->tier, b->artifact ? b->artifact : "ptx-jit",
                        b->sha, b->arch ? ", arch: " : "", b->arch ? b->arch : "");
    for (size_t i = 0; i < b->n_proofs; i++) {
        const fx_proof *p = &b->proofs[i];
        const char *name = b->name, *cc = b->cc;
        int sms = b->sms;
        if (strcmp(b->kind, "all-devices") == 0)
            fx_card_of_arch(b->archs[0], &name, &cc, &sms);
        char acc[GF_SHA256_HEX_LEN], e2e[GF_SHA256_HEX_LEN];
        fx_put_record(f, fx_record(b, p, "accuracy", name, cc, sms), acc);
        char speed[2048] = "unmeasured";
        if (!p->unmeasured) {
            char recs[400] = "";
            size_t n = 0;
            size_t k = strcmp(b->kind, "all-devices") == 0 ? b->n_archs : 1;
            char rname[128], rcc[16];
            int rsms = sms;
            snprintf(rname, sizeof rname, "%s", name);
            snprintf(rcc, sizeof rcc, "%s", cc);
            if (b->record_card) {
                const char *c2 = strrchr(b->record_card, ':');
                const char *c1 = c2 - 1;
                while (*c1 != ':')
                    c1--;
                snprintf(rname, sizeof rname, "%.*s", (int)(c1 - b->record_card), b->record_card);
                snprintf(rcc, sizeof rcc, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
                rsms = atoi(c2 + 1);
            }
            for (size_t a = 0; a < k; a++) {
                const char *an = rname, *ac = rcc;
                int as = rsms;
                if (strcmp(b->kind, "all-devices") == 0)
                    fx_card_of_arch(b->archs[a], &an, &ac, &as);
                char sha[GF_SHA256_HEX_LEN];
                fx_put_record(f, fx_record(b, p, "speed", an, ac, as), sha);
                n += (size_t)snprintf(recs + n, sizeof recs - n, "%s%s", a ? ", " : "", sha);
            }
            fx_put_record(f, fx_record(b, p, "end-to-end", name, cc, sms), e2e);
            snprintf(speed, sizeof speed, "{kind: measured, scope: %s, %s: %s%s%s, end_to_end: %s}",
                     b->speed_scope ? b->speed_scope : scope, k > 1 ? "records" : "record",
                     k > 1 ? "[" : "", recs, k > 1 ? "]" : "", e2e);
        }
        char *more = gf_strfmt("%s      - boundary: %s\n        batch: %d\n        math: %s\n"
                               "        config: {%s: %s}\n        accuracy: %s\n        speed: %s\n",
                               y, p->boundary, p->batch ? p->batch : 32, p->math ? p->math : "fp32",
                               p->key ? p->key : fx_area_key(b->area), p->value ? p->value : "128",
                               acc, speed);
        free(y);
        y = more;
    }
    return y;
}

/* Write bindings/<file> holding these bindings. */
static inline void fx_table(fx_dir *f, const char *file, const fx_binding *bs, size_t n)
{
    char *text = gf_strdup("bindings:\n");
    for (size_t i = 0; i < n; i++) {
        char *item = fx_binding_yaml(f, &bs[i]);
        char *more = gf_strfmt("%s%s", text, item);
        free(text);
        free(item);
        text = more;
    }
    char rel[128];
    snprintf(rel, sizeof rel, "bindings/%s", file);
    fx_write(f, rel, text);
    free(text);
}

/* The usual binding: lstm.stack at batch 32 fp32 on one H200, measured. */
static inline fx_binding fx_h200_lstm(void)
{
    fx_binding b = {
        .id = "lstm-h200", .kind = "point", .name = "NVIDIA H200", .cc = "9.0", .sms = 132,
        .area = "lstm", .tier = "sm90", .sha = FX_SHA_A,
        .proofs = { { .boundary = "lstm.stack" } }, .n_proofs = 1,
    };
    return b;
}

#endif
