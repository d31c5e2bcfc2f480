/* evidence_rules.c — the validator's rules on bindings (see
 * evidence_parts.h; the rules are numbered in docs/evidence.md).
 *
 * A binding on its own: its area in the precedence list, its scope and
 * module consistent (tier loadable, cubin for the scope's architecture,
 * broad scopes backed on two architectures by portable PTX), no proof
 * twice, and each proof's records (evidence_records.c). Then against the
 * bindings before it: no id twice, no two modules for one area on
 * overlapping scopes. And what a scope and a module mean, which the planner
 * uses too (gf_scope_contains, gf_module_equal). */
#include "route/evidence.h"
#include "route/evidence_parts.h"
#include "common/util.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int scope_arch(const gf_scope *s)
{
    return s->cc_major * 10 + s->cc_minor;
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
        gf_evidence_check_records(c, b, p);
    }
}

void gf_evidence_check_bindings(gf_evidence *ev)
{
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
}
