/* planner.c — route planning on an exact card (see planner.h).
 *
 * The planner reads validated evidence only (route/evidence.c) and asks the
 * module provider two questions: which module would load (its identity, not
 * the module itself) and whether the kernel accepts the tuple. It never
 * loads a module; the library route in particular touches no module at all.
 * A library route records the reason of the highest-precedence candidate
 * that fell through, so `gpuflock plan` can say why a bound kernel does not
 * run. */
#include "route/planner.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "gpu/modules.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int none_identity(void *ctx, const char *area, int tier, const gf_card_identity *card,
                         gf_module_id *out)
{
    (void)ctx;
    (void)area;
    (void)tier;
    (void)card;
    (void)out;
    return GF_ENOENT;
}

const gf_module_provider gf_module_provider_none = {
    .name = "none",
    .identity = none_identity,
    .plan = NULL,
    .ctx = NULL,
};

static int embedded_identity(void *ctx, const char *area, int tier, const gf_card_identity *card,
                             gf_module_id *out)
{
    (void)ctx;
    (void)card;
    char want[16];
    snprintf(want, sizeof want, "sm%d", tier);
    for (const gf_ptx_blob *b = gf_ptx_blobs; b->area; b++) {
        if (strcmp(b->area, area) != 0 || strcmp(b->tier, want) != 0)
            continue;
        memset(out, 0, sizeof *out);
        snprintf(out->area, sizeof out->area, "%s", b->area);
        out->tier = tier;
        out->artifact = GF_ARTIFACT_PTX_JIT;
        gf_sha256_hex(b->text, b->len, out->sha256);
        return 0;
    }
    return GF_ENOENT;
}

const gf_module_provider gf_module_provider_embedded = {
    .name = "embedded",
    .identity = embedded_identity,
    .plan = NULL,
    .ctx = NULL,
};

int gf_plan_refuse_area(const char *asked, const char *runs, const char *boundary, char *why,
                        size_t len)
{
    if (!asked || strcmp(asked, runs) == 0)
        return 0;
    snprintf(why, len, "%s runs the %s module's kernels here, not %s's", boundary, runs, asked);
    return GF_EUNSUP;
}

int gf_plan_refuse_smem(int need, int optin, const char *kernel, char *why, size_t len)
{
    if (optin <= 0 || need <= optin)
        return 0;
    snprintf(why, len, "%s needs %d bytes of shared memory a block, this card offers %d", kernel,
             need, optin);
    return GF_EUNSUP;
}

bool gf_planner_force_library_env(void)
{
    const char *v = getenv(GF_FORCE_LIBRARY_ENV);
    return v && strcmp(v, "1") == 0;
}

static void set_why(gf_route *r, gf_route_why why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_why(gf_route *r, gf_route_why why, const char *fmt, ...)
{
    r->why = why;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->detail, sizeof r->detail, fmt, ap);
    va_end(ap);
}

static void route_init(gf_route *r, const char *boundary, int batch, gf_math math)
{
    memset(r, 0, sizeof *r);
    const gf_boundary *b = gf_boundary_find(boundary);
    r->boundary = b ? b->name : boundary;
    r->batch = batch;
    r->math = math;
    r->kind = GF_ROUTE_LIBRARY;
}

static const gf_proof *find_proof(const gf_binding *b, const char *boundary, int batch,
                                  gf_math math)
{
    for (size_t i = 0; i < b->n_proofs; i++) {
        const gf_proof *p = &b->proofs[i];
        if (strcmp(p->boundary, boundary) == 0 && p->batch == batch && p->math == math)
            return p;
    }
    return NULL;
}

typedef struct {
    const gf_binding *binding; /* a binding whose scope holds the card */
    const gf_proof *proof;     /* its proof of the tuple */
    int rank;                  /* precedence of its area */
} plan_candidate;

static int candidate_cmp(const void *pa, const void *pb)
{
    const plan_candidate *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    /* Within one area (one module, by the validator), the narrower scope. */
    if (a->binding->scope.kind != b->binding->scope.kind)
        return a->binding->scope.kind < b->binding->scope.kind ? -1 : 1;
    return 0;
}

static const gf_module_provider *provider(const gf_planner *pl)
{
    return pl->modules ? pl->modules : &gf_module_provider_none;
}

int gf_plan_route(const gf_planner *pl, const char *boundary, int batch, gf_math math,
                  gf_route *out)
{
    route_init(out, boundary, batch, math);
    if (!gf_boundary_find(boundary)) {
        set_why(out, GF_WHY_INVALID, "unknown boundary '%s'", boundary);
        return GF_EINVAL;
    }
    if (!gf_batch_is_production(batch)) {
        set_why(out, GF_WHY_INVALID, "batch %d is not a production batch (1, 8, 32)", batch);
        return GF_EINVAL;
    }
    if (pl->force_library) {
        set_why(out, GF_WHY_FORCED, GF_FORCE_LIBRARY_ENV "=1");
        return 0;
    }
    const gf_card_identity *card = pl->card;
    if (card->kind != GF_DEVICE_CUDA) {
        set_why(out, GF_WHY_NOT_CUDA, "%s is not a CUDA card", card->name);
        return 0;
    }
    size_t nb = pl->evidence ? gf_evidence_binding_count(pl->evidence) : 0;
    plan_candidate *cands = gf_calloc(nb ? nb : 1, sizeof *cands);
    size_t nc = 0;
    const gf_binding *holding = NULL;   /* some binding for this card, for the reason */
    for (size_t i = 0; i < nb; i++) {
        const gf_binding *b = gf_evidence_binding(pl->evidence, i);
        if (!gf_scope_contains(&b->scope, card))
            continue;
        if (!holding)
            holding = b;
        const gf_proof *p = find_proof(b, boundary, batch, math);
        if (!p)
            continue;
        cands[nc].binding = b;
        cands[nc].proof = p;
        cands[nc].rank = gf_evidence_precedence(pl->evidence, b->module.area);
        nc++;
    }
    if (nc == 0) {
        if (holding) {
            out->binding = holding;
            set_why(out, GF_WHY_NO_PROOF, "no proof of (%s, %d, %s) for %s cc %d.%d %d SMs",
                    boundary, batch, gf_math_name(math), card->name, card->cc_major,
                    card->cc_minor, card->sm_count);
        } else {
            set_why(out, GF_WHY_NO_BINDING, "no binding for %s cc %d.%d %d SMs", card->name,
                    card->cc_major, card->cc_minor, card->sm_count);
        }
        free(cands);
        return 0;
    }
    qsort(cands, nc, sizeof *cands, candidate_cmp);

    const gf_module_provider *mods = provider(pl);
    bool reason_set = false;
    int rc = 0;
    /* The first reason (highest precedence) is the one the library route cites. */
#define FELL_THROUGH(b_, p_, why_, ...)                  \
    do {                                                 \
        if (!reason_set) {                               \
            out->binding = (b_);                         \
            out->proof = (p_);                           \
            set_why(out, (why_), __VA_ARGS__);           \
            reason_set = true;                           \
        }                                                \
    } while (0)
    for (size_t i = 0; i < nc; i++) {
        const gf_binding *b = cands[i].binding;
        const gf_proof *p = cands[i].proof;
        const gf_module_id *want = &b->module;
        if (!p->measured) {
            FELL_THROUGH(b, p, GF_WHY_UNMEASURED, "binding '%s' (%s:%d): speed unmeasured",
                         b->id, b->file, p->line);
            continue;
        }
        if (want->tier > gf_card_arch(card)) {
            FELL_THROUGH(b, p, GF_WHY_REFUSED, "binding '%s': device unsupported: module tier "
                         "sm%d above the card's sm%d", b->id, want->tier, gf_card_arch(card));
            continue;
        }
        gf_module_id have;
        memset(&have, 0, sizeof have);
        int irc = mods->identity(mods->ctx, want->area, want->tier, card, &have);
        if (irc == GF_ENOENT) {
            FELL_THROUGH(b, p, GF_WHY_NO_MODULE, "binding '%s': this build (%s modules) has no "
                         "%s module for sm%d", b->id, mods->name, want->area, want->tier);
            continue;
        }
        if (irc != 0) {
            out->binding = b;
            out->proof = p;
            set_why(out, GF_WHY_DEVICE_ERROR, "binding '%s': identifying the %s module failed: %s",
                    b->id, want->area, gf_strerror(irc));
            rc = irc;
            goto out_free;
        }
        if (!gf_module_equal(want, &have)) {
            char w[160], h[160];
            gf_module_describe(want, w, sizeof w);
            gf_module_describe(&have, h, sizeof h);
            FELL_THROUGH(b, p, GF_WHY_MODULE_MISMATCH, "binding '%s' binds %s, but the module "
                         "that loads is %s", b->id, w, h);
            continue;
        }
        gf_route_request req = { boundary, batch, math, p->config, p->n_config, want->area };
        char why[200] = "";
        int prc = mods->plan ? mods->plan(mods->ctx, &req, card, why, sizeof why) : 0;
        if (prc == GF_EUNSUP) {
            FELL_THROUGH(b, p, GF_WHY_REFUSED, "binding '%s': the kernel refuses: %s", b->id,
                         why[0] ? why : "unsupported");
            continue;
        }
        if (prc != 0) {
            out->binding = b;
            out->proof = p;
            set_why(out, prc == GF_EINVAL ? GF_WHY_INVALID : GF_WHY_DEVICE_ERROR,
                    "binding '%s': %s: %s", b->id, gf_strerror(prc), why[0] ? why : "(no detail)");
            rc = prc;
            goto out_free;
        }
        out->kind = GF_ROUTE_OWN;
        out->binding = b;
        out->proof = p;
        out->module = have;
        char m[160];
        gf_module_describe(&have, m, sizeof m);
        set_why(out, GF_WHY_EVIDENCE, "binding '%s' (%s:%d), %s, speed record %.12s", b->id,
                b->file, p->line, m, p->speed[0]);
        goto out_free;
    }
#undef FELL_THROUGH
out_free:
    free(cands);
    return rc;
}

int gf_route_apply(const gf_route *planned, gf_route_setter set, void *obj, gf_route *applied)
{
    *applied = *planned;
    if (planned->kind != GF_ROUTE_OWN)
        return set(obj, planned->boundary, GF_ROUTE_LIBRARY, NULL);
    const char *sha = NULL;
    int rc = set(obj, planned->boundary, GF_ROUTE_OWN, &sha);
    if (rc == 0 && sha && strcmp(sha, planned->module.sha256) == 0)
        return 0;
    if (rc != 0 && rc != GF_EUNSUP) {
        GF_ERROR("%s: the planned module %.12s cannot be loaded: %s", planned->boundary,
                 planned->module.sha256, gf_strerror(rc));
        return rc;
    }
    applied->kind = GF_ROUTE_LIBRARY;
    memset(&applied->module, 0, sizeof applied->module);
    if (rc == GF_EUNSUP)
        set_why(applied, GF_WHY_REFUSED, "binding '%s': the kernel refused at load what its "
                "plan accepted (the worker's log says why)",
                planned->binding ? planned->binding->id : "?");
    else
        set_why(applied, GF_WHY_MODULE_MISMATCH, "binding '%s': the module that loaded is %.12s, "
                "not the planned %.12s", planned->binding ? planned->binding->id : "?",
                sha ? sha : "(unnamed)", planned->module.sha256);
    GF_WARN("%s: %s: library route", planned->boundary, applied->detail);
    return set(obj, planned->boundary, GF_ROUTE_LIBRARY, NULL);
}

int gf_plan_apply(const gf_planner *pl, const char *boundary, int batch, gf_math math,
                  gf_route_setter set, void *obj)
{
    gf_route r, applied;
    GF_TRY(gf_plan_route(pl, boundary, batch, math, &r));
    return gf_route_apply(&r, set, obj, &applied);
}

int gf_plan_explicit(const gf_planner *pl, const gf_route_request *req,
                     const gf_module_id *candidate, gf_route *out)
{
    route_init(out, req->boundary, req->batch, req->math);
    char c[160];
    gf_module_describe(candidate, c, sizeof c);
    if (!gf_boundary_find(req->boundary) || req->batch < 1) {
        set_why(out, GF_WHY_INVALID, "explicit %s: invalid tuple (%s, %d)", c, req->boundary,
                req->batch);
        return GF_EINVAL;
    }
    if (!gf_area_runs(candidate->area, req->boundary)) {
        set_why(out, GF_WHY_INVALID, "explicit %s: area %s cannot run %s", c, candidate->area,
                req->boundary);
        return GF_EINVAL;
    }
    if (pl->force_library) {
        set_why(out, GF_WHY_FORCED, "explicit %s: " GF_FORCE_LIBRARY_ENV "=1 forbids own kernels", c);
        return GF_ESTATE;
    }
    const gf_card_identity *card = pl->card;
    if (card->kind != GF_DEVICE_CUDA) {
        set_why(out, GF_WHY_NOT_CUDA, "explicit %s: %s is not a CUDA card", c, card->name);
        return GF_EUNSUP;
    }
    if (candidate->tier > gf_card_arch(card)) {
        set_why(out, GF_WHY_REFUSED, "explicit %s: device unsupported: tier above sm%d", c,
                gf_card_arch(card));
        return GF_EUNSUP;
    }
    const gf_module_provider *mods = provider(pl);
    gf_module_id have;
    memset(&have, 0, sizeof have);
    int rc = mods->identity(mods->ctx, candidate->area, candidate->tier, card, &have);
    if (rc == GF_ENOENT) {
        set_why(out, GF_WHY_NO_MODULE, "explicit %s: this build (%s modules) has no such module",
                c, mods->name);
        return GF_ENOENT;
    }
    if (rc != 0) {
        set_why(out, GF_WHY_DEVICE_ERROR, "explicit %s: identifying the module failed: %s", c,
                gf_strerror(rc));
        return rc;
    }
    if (!gf_module_equal(candidate, &have)) {
        char h[160];
        gf_module_describe(&have, h, sizeof h);
        set_why(out, GF_WHY_MODULE_MISMATCH, "explicit %s: the module that loads is %s", c, h);
        return GF_ESTATE;
    }
    char why[200] = "";
    gf_route_request asked = *req;   /* the hook plans for the candidate's area */
    asked.area = candidate->area;
    rc = mods->plan ? mods->plan(mods->ctx, &asked, card, why, sizeof why) : 0;
    if (rc != 0) {
        set_why(out, rc == GF_EUNSUP ? GF_WHY_REFUSED
                     : rc == GF_EINVAL ? GF_WHY_INVALID : GF_WHY_DEVICE_ERROR,
                "explicit %s: %s: %s", c, gf_strerror(rc), why[0] ? why : "(no detail)");
        return rc;
    }
    out->kind = GF_ROUTE_OWN;
    out->module = have;
    set_why(out, GF_WHY_EXPLICIT, "explicit %s", c);
    return 0;
}

int gf_plan_all(const gf_planner *pl, gf_route **out, size_t *n)
{
    size_t total = gf_boundary_count() * GF_N_PRODUCTION_BATCHES * GF_N_MATH;
    gf_route *routes = gf_calloc(total, sizeof *routes);
    size_t k = 0;
    const int *batches = gf_production_batches();
    for (size_t i = 0; i < gf_boundary_count(); i++)
        for (size_t j = 0; j < GF_N_PRODUCTION_BATCHES; j++)
            for (int m = 0; m < GF_N_MATH; m++) {
                int rc = gf_plan_route(pl, gf_boundary_at(i)->name, batches[j], (gf_math)m,
                                       &routes[k]);
                if (rc != 0) {
                    *out = NULL;
                    *n = 0;
                    free(routes);
                    return rc;
                }
                k++;
            }
    *out = routes;
    *n = k;
    return 0;
}

const char *gf_route_kind_name(gf_route_kind kind)
{
    return kind == GF_ROUTE_OWN ? "own" : "library";
}

const char *gf_route_why_name(gf_route_why why)
{
    switch (why) {
    case GF_WHY_EVIDENCE: return "evidence";
    case GF_WHY_EXPLICIT: return "explicit";
    case GF_WHY_FORCED: return "force-library";
    case GF_WHY_NOT_CUDA: return "not-cuda";
    case GF_WHY_NO_BINDING: return "no-binding";
    case GF_WHY_NO_PROOF: return "no-proof";
    case GF_WHY_UNMEASURED: return "unmeasured";
    case GF_WHY_NO_MODULE: return "no-module";
    case GF_WHY_MODULE_MISMATCH: return "module-mismatch";
    case GF_WHY_REFUSED: return "refused";
    case GF_WHY_OFF_BATCH: return "off-batch";
    case GF_WHY_INVALID: return "invalid";
    case GF_WHY_DEVICE_ERROR: return "device-error";
    }
    return "unknown";
}

struct json_object *gf_route_to_json(const gf_route *r)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "boundary", json_object_new_string(r->boundary));
    json_object_object_add(o, "batch", json_object_new_int(r->batch));
    json_object_object_add(o, "math", json_object_new_string(gf_math_name(r->math)));
    json_object_object_add(o, "route",
                           json_object_new_string(gf_route_kind_name(r->kind)));
    json_object_object_add(o, "why", json_object_new_string(gf_route_why_name(r->why)));
    json_object_object_add(o, "detail", json_object_new_string(r->detail));
    if (r->binding) {
        json_object *b = json_object_new_object();
        json_object_object_add(b, "id", json_object_new_string(r->binding->id));
        json_object_object_add(b, "file", json_object_new_string(r->binding->file));
        json_object_object_add(b, "line", json_object_new_int(r->proof ? r->proof->line
                                                                       : r->binding->line));
        json_object_object_add(o, "binding", b);
    }
    if (r->kind == GF_ROUTE_OWN) {
        json_object *m = json_object_new_object();
        char tier[16];
        snprintf(tier, sizeof tier, "sm%d", r->module.tier);
        json_object_object_add(m, "area", json_object_new_string(r->module.area));
        json_object_object_add(m, "tier", json_object_new_string(tier));
        json_object_object_add(m, "artifact", json_object_new_string(
            r->module.artifact == GF_ARTIFACT_CUBIN ? "cubin" : "ptx-jit"));
        json_object_object_add(m, "sha256", json_object_new_string(r->module.sha256));
        json_object_object_add(o, "module", m);
    }
    if (r->proof) {
        json_object *rec = json_object_new_object();
        json_object_object_add(rec, "accuracy", json_object_new_string(r->proof->accuracy));
        if (r->proof->measured) {
            json_object *sp = json_object_new_array();
            for (size_t i = 0; i < r->proof->n_speed; i++)
                json_object_array_add(sp, json_object_new_string(r->proof->speed[i]));
            json_object_object_add(rec, "speed", sp);
            json_object_object_add(rec, "end_to_end",
                                   json_object_new_string(r->proof->end_to_end));
        }
        json_object_object_add(o, "records", rec);
    }
    return o;
}

struct json_object *gf_plan_to_json(const gf_route *routes, size_t n)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, gf_route_to_json(&routes[i]));
    return arr;
}
