/* plan.h — a worker's route plan: made once, applied, shown.
 *
 * The route of every boundary x production batch x math mode on one card
 * (planner.h, gf_plan_all), planned once from evidence loaded once. The
 * worker makes it at start-up from the card identity it read once, keeps it,
 * applies it to every GPU network it builds (gf_route_plan_apply) and sends
 * it in READY (gf_route_plan_text): the plan shown is the plan applied.
 *
 * Which row a network call takes: a call of B windows runs the row of the
 * smallest production batch (1, 8, 32) that holds it (gf_route_plan_row): a
 * recording's last, shorter batch of 7 windows runs batch 8's routes, as a
 * configured batch of 16 runs batch 32's. The kernels' launch geometry
 * depends on the batch only through the window count, which fits that row's,
 * and their results do not depend on it (tests/gpu/test_gpu_plan.c). A call
 * above the largest production batch runs the library route: no proof
 * covers it. The plan covers every batch and both math modes, and depends on
 * nothing a job chooses (the networks' geometry is the architecture's), so a
 * job never needs a plan the worker did not make.
 *
 * A row the kernel refuses when it loads, or where another module than the
 * planned one loads, is applied as the library route with that reason
 * (gf_route_apply), and the row in this object becomes that route: the next
 * READY shows what runs. The kernels' planning step applies the rule their
 * loaders apply (diar/kernel_plan.h), so that amendment is for what no
 * plan can see (logged as a warning); gf_route_plan_revision counts them.
 * Thread-safe: diarize threads apply it while the agent sends it. */
#ifndef GF_PLAN_H
#define GF_PLAN_H

#include "common/card.h"
#include "route/planner.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gf_route_plan gf_route_plan;

/* Plan card (copied) from the evidence in evidence_dir (loaded and validated
 * once, kept: the routes cite it) with the modules of `modules` (borrowed,
 * usually static), all on the library route when force_library. Evidence
 * that is missing or rejected plans the library route everywhere and says so
 * (gf_route_plan_problem). Returns NULL after logging when planning fails (a
 * driver error from the provider). */
gf_route_plan *gf_route_plan_new(const gf_card_identity *card, const char *evidence_dir,
                                 const gf_module_provider *modules, bool force_library);
void gf_route_plan_destroy(gf_route_plan **self_p);

/* The card it plans (borrowed), the evidence folder it read, and why the
 * evidence was not used (NULL: it was). */
const gf_card_identity *gf_route_plan_card(const gf_route_plan *self);
const char *gf_route_plan_evidence_dir(const gf_route_plan *self);
const char *gf_route_plan_problem(const gf_route_plan *self);

/* The plan row a network call of `windows` windows takes: the smallest
 * production batch >= windows, else 0 (above them all: the library route,
 * GF_WHY_OFF_BATCH). */
int gf_route_plan_row(int windows);

/* The route of (boundary, batch, math) into *out, as it stands now (a copy);
 * batch 0 or any batch that is no production batch: the library route
 * with GF_WHY_OFF_BATCH. Returns 0, or GF_EINVAL for an unknown boundary. */
int gf_route_plan_get(const gf_route_plan *self, const char *boundary, int batch, gf_math math,
                      gf_route *out);

/* Rows (every boundary x production batch x math) and how many are own. */
size_t gf_route_plan_count(const gf_route_plan *self);
size_t gf_route_plan_own(const gf_route_plan *self);

/* How many rows applying has changed since the plan was made (0: every
 * route applied so far is the route planned). */
uint64_t gf_route_plan_revision(const gf_route_plan *self);

/* The plan as READY carries it (`gpuflock workers --json` shows it): JSON
 * {"evidence", "evidence_problem" (when there is one), "own", "library",
 * "other_batches": "library", "routes": [every row, gf_route_to_json]}.
 * The caller frees (the agent keeps it within what a READY carries). */
char *gf_route_plan_text(const gf_route_plan *self);

/* Put each of the n boundaries of obj on its route for a call of `batch`
 * windows in `math` (the row gf_route_plan_get gives), through set
 * (gf_route_apply); applied (n entries, may be NULL) gets the route each
 * runs. A row the kernel refuses at load or where another module loads runs
 * the library route, and becomes that route here (logged). Returns 0, or the
 * first error of gf_route_plan_get or of a setter (GF_EDEVICE: the job fails
 * and the worker restarts), after which obj's routes are partly set. */
int gf_route_plan_apply(gf_route_plan *self, int batch, gf_math math,
                        const char *const *boundaries, size_t n, gf_route_setter set, void *obj,
                        gf_route *applied);

#endif
