/* plan.c — the worker's route plan, made once (see plan.h).
 *
 * The rows are gf_plan_all's, in its order (boundary, then production
 * batch, then math), so a row is found by arithmetic once its boundary is.
 * The evidence they cite stays loaded for the plan's life. One mutex guards
 * the rows: the agent's thread serialises them for READY while diarize
 * threads apply them and, rarely, amend one. */
#include "route/plan.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "route/boundary.h"
#include "route/evidence.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_route_plan {
    pthread_mutex_t mu;            /* guards routes, own and revision */
    gf_card_identity card;         /* the card planned for */
    char *evidence_dir;            /* where the evidence was read */
    char *problem;                 /* why it was not used; NULL: it was */
    gf_evidence *evidence;         /* what the routes cite; NULL: none */
    gf_route *routes;              /* gf_plan_all's rows */
    size_t n;
    size_t own;                    /* rows on the own route */
    uint64_t revision;             /* rows changed by applying */
};

gf_route_plan *gf_route_plan_new(const gf_card_identity *card, const char *evidence_dir,
                                 const gf_module_provider *modules, bool force_library)
{
    gf_route_plan *self = gf_calloc(1, sizeof *self);
    pthread_mutex_init(&self->mu, NULL);
    self->card = *card;
    self->evidence_dir = gf_strdup(evidence_dir);
    self->evidence = gf_evidence_new();
    if (gf_evidence_load(self->evidence, evidence_dir) != 0) {
        self->problem = gf_strdup("evidence missing or rejected: library route everywhere");
        GF_WARN("route plan: no valid evidence in %s: the library route everywhere",
                evidence_dir);
        gf_evidence_destroy(&self->evidence);
    }
    gf_planner pl = {
        .evidence = self->evidence,
        .card = &self->card,
        .modules = modules,
        .force_library = force_library,
    };
    int rc = gf_plan_all(&pl, &self->routes, &self->n);
    if (rc != 0) {
        GF_ERROR("route plan for %s: planning failed: %s", card->name, gf_strerror(rc));
        gf_route_plan_destroy(&self);
        return NULL;
    }
    for (size_t i = 0; i < self->n; i++)
        self->own += self->routes[i].kind == GF_ROUTE_OWN;
    GF_INFO("route plan for %s: %zu own, %zu library (evidence %s%s)", card->name, self->own,
            self->n - self->own, evidence_dir, force_library ? ", " GF_FORCE_LIBRARY_ENV "=1" : "");
    return self;
}

void gf_route_plan_destroy(gf_route_plan **self_p)
{
    gf_route_plan *self = *self_p;
    if (!self)
        return;
    free(self->routes);
    gf_evidence_destroy(&self->evidence);
    free(self->problem);
    free(self->evidence_dir);
    pthread_mutex_destroy(&self->mu);
    free(self);
    *self_p = NULL;
}

const gf_card_identity *gf_route_plan_card(const gf_route_plan *self) { return &self->card; }
const char *gf_route_plan_evidence_dir(const gf_route_plan *self) { return self->evidence_dir; }
const char *gf_route_plan_problem(const gf_route_plan *self) { return self->problem; }
size_t gf_route_plan_count(const gf_route_plan *self) { return self->n; }

int gf_route_plan_row(int windows)
{
    const int *batches = gf_production_batches();   /* ascending */
    for (int j = 0; windows >= 1 && j < GF_N_PRODUCTION_BATCHES; j++)
        if (batches[j] >= windows)
            return batches[j];
    return 0;
}

/* The index of (boundary, batch, math) in gf_plan_all's order; -1 for an
 * unknown boundary, -2 for a batch outside the production batches. */
static long row_index(const char *boundary, int batch, gf_math math)
{
    long b = -1;
    for (size_t i = 0; i < gf_boundary_count() && b < 0; i++)
        if (strcmp(gf_boundary_at(i)->name, boundary) == 0)
            b = (long)i;
    if (b < 0)
        return -1;
    const int *batches = gf_production_batches();
    for (long j = 0; j < GF_N_PRODUCTION_BATCHES; j++)
        if (batches[j] == batch)
            return (b * GF_N_PRODUCTION_BATCHES + j) * GF_N_MATH + (long)math;
    return -2;
}

int gf_route_plan_get(const gf_route_plan *self, const char *boundary, int batch, gf_math math,
                      gf_route *out)
{
    long i = row_index(boundary, batch, math);
    if (i == -1) {
        GF_ERROR("route plan: no boundary '%s'", boundary);
        return GF_EINVAL;
    }
    if (i == -2) {
        memset(out, 0, sizeof *out);
        out->boundary = gf_boundary_find(boundary)->name;
        out->batch = batch;
        out->math = math;
        out->kind = GF_ROUTE_LIBRARY;
        out->why = GF_WHY_OFF_BATCH;
        snprintf(out->detail, sizeof out->detail, "a call of %d windows: above every production "
                 "batch (1, 8, 32), so no proof covers it", batch);
        return 0;
    }
    gf_route_plan *w = (gf_route_plan *)self;   /* the lock only */
    pthread_mutex_lock(&w->mu);
    *out = self->routes[i];
    pthread_mutex_unlock(&w->mu);
    return 0;
}

size_t gf_route_plan_own(const gf_route_plan *self)
{
    gf_route_plan *w = (gf_route_plan *)self;
    pthread_mutex_lock(&w->mu);
    size_t own = self->own;
    pthread_mutex_unlock(&w->mu);
    return own;
}

uint64_t gf_route_plan_revision(const gf_route_plan *self)
{
    gf_route_plan *w = (gf_route_plan *)self;
    pthread_mutex_lock(&w->mu);
    uint64_t rev = self->revision;
    pthread_mutex_unlock(&w->mu);
    return rev;
}

char *gf_route_plan_text(const gf_route_plan *self)
{
    gf_route_plan *w = (gf_route_plan *)self;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "evidence", json_object_new_string(self->evidence_dir));
    if (self->problem)
        json_object_object_add(o, "evidence_problem", json_object_new_string(self->problem));
    pthread_mutex_lock(&w->mu);
    json_object_object_add(o, "own", json_object_new_int64((int64_t)self->own));
    json_object_object_add(o, "library", json_object_new_int64((int64_t)(self->n - self->own)));
    json_object_object_add(o, "routes", gf_plan_to_json(self->routes, self->n));
    pthread_mutex_unlock(&w->mu);
    json_object_object_add(o, "other_batches", json_object_new_string("library"));
    char *text = gf_strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return text;
}

/* The row of applied's tuple becomes the route that runs (the library route
 * where the planned own one did not load as planned). */
static void amend(gf_route_plan *self, const gf_route *applied)
{
    long i = row_index(applied->boundary, applied->batch, applied->math);
    if (i < 0)
        return;
    pthread_mutex_lock(&self->mu);
    if (self->routes[i].kind == GF_ROUTE_OWN && applied->kind != GF_ROUTE_OWN)
        self->own--;
    self->routes[i] = *applied;
    self->revision++;
    pthread_mutex_unlock(&self->mu);
    GF_WARN("route plan: %s batch %d %s is now the library route (%s); READY shows it from the "
            "next registration", applied->boundary, applied->batch, gf_math_name(applied->math),
            applied->detail);
}

int gf_route_plan_apply(gf_route_plan *self, int batch, gf_math math,
                        const char *const *boundaries, size_t n, gf_route_setter set, void *obj,
                        gf_route *applied)
{
    for (size_t i = 0; i < n; i++) {
        gf_route planned, ran;
        GF_TRY(gf_route_plan_get(self, boundaries[i], batch, math, &planned));
        GF_TRY(gf_route_apply(&planned, set, obj, &ran));
        if (ran.kind != planned.kind)
            amend(self, &ran);
        if (applied)
            applied[i] = ran;
    }
    return 0;
}
