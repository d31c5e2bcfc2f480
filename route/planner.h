/* planner.h — which implementation runs each layer boundary on this card.
 *
 * For one (boundary, batch, math) on one card identity the planner chooses
 * the project's own kernel or the library route (cuBLAS / the CPU
 * reference). Production takes an own kernel only when all of these hold:
 *   - a binding's scope contains this exact card (point: name + cc + SM
 *     count; capability: cc; all-devices: any CUDA card);
 *   - a proof of that binding covers the tuple with measured speed;
 *   - the module that would load has exactly the bound identity (area, PTX
 *     tier, artifact kind and hash), as its provider reports it;
 *   - the kernel's own planning accepts the tuple.
 * Between areas bound for the same tuple, the route precedence list decides.
 * Anything else is the library route, with the reason; no module is loaded
 * to find that out. Every route names the evidence it stands on.
 *
 * An explicit (qualification) request names its candidate module and runs
 * exactly that or fails with a typed error; it never falls back. */
#ifndef GF_PLANNER_H
#define GF_PLANNER_H

#include "common/card.h"
#include "route/boundary.h"
#include "route/evidence.h"

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* Environment switch: GPUFLOCK_FORCE_LIBRARY=1 puts every boundary on the
 * library route. */
#define GF_FORCE_LIBRARY_ENV "GPUFLOCK_FORCE_LIBRARY"

/* One tuple to run, with the kernel configuration it pins. */
typedef struct {
    const char *boundary;      /* "lstm.stack" */
    int batch;
    gf_math math;
    const gf_pin *config;      /* the pinned configuration (borrowed) */
    size_t n_config;
    const char *area;          /* the candidate module's area ("resnet32"): a boundary some
                                  areas share runs one area's kernels; NULL: not asked */
} gf_route_request;

/* The modules this build can load, behind a table of function pointers (the
 * GPU code plugs in the embedded PTX; tests plug in their own). */
typedef struct gf_module_provider {
    const char *name;          /* "none", "embedded-ptx", ... */
    /* Identity of the module that would load for 'area' at PTX tier 'tier' on
     * 'card' (e.g. the SHA-256 of the embedded PTX), WITHOUT loading it.
     * Returns 0; GF_ENOENT when this build has no such module; GF_EDEVICE on
     * a driver error. */
    int (*identity)(void *ctx, const char *area, int tier, const gf_card_identity *card,
                    gf_module_id *out);
    /* The kernel's own planning of one tuple on 'card', for the module of
     * req->area. Returns 0 (it can run it); GF_EUNSUP when it refuses
     * (a device it does not support, a valid geometry outside those its
     * kernels run, a boundary this area's kernels do not run here: the
     * library route takes those), with the reason in why. It sees the tuple,
     * not the weights: no hook refuses weights out of a kernel's contract
     * (none of today's kernels has one); GF_EINVAL for invalid geometry;
     * GF_EDEVICE for a driver error. NULL: accepts every tuple (tests;
     * production plugs in diar/kernel_plan.h). */
    int (*plan)(void *ctx, const gf_route_request *req, const gf_card_identity *card,
                char *why, size_t why_len);
    void *ctx;                 /* passed to both */
} gf_module_provider;

/* Words of a kernel's planning step, so that every launcher refuses alike:
 * GF_EUNSUP with the reason in why when the candidate's area `asked` (NULL:
 * not asked) is not `runs`, the module whose kernels run `boundary`; when a
 * kernel needs `need` bytes of shared memory a block and the card offers
 * `optin` (0: not known, not checked). 0 otherwise. */
int gf_plan_refuse_area(const char *asked, const char *runs, const char *boundary, char *why,
                        size_t len);
int gf_plan_refuse_smem(int need, int optin, const char *kernel, char *why, size_t len);

/* A build with no own modules: identity always GF_ENOENT. */
extern const gf_module_provider gf_module_provider_none;

/* The modules embedded in this binary (gpu/modules.h): identity is the
 * ptx-jit module of (area, "sm<tier>") with the SHA-256 of its PTX text, or
 * GF_ENOENT. Its plan step accepts every tuple: the kernels' own refusals
 * (geometry, weights, device) belong to the GPU code, whose provider
 * (gf_kernel_modules, diar/kernel_plan.h) has the same identity and the
 * kernels' plan step; production plans with that one. Without nvcc the
 * table is empty. */
extern const gf_module_provider gf_module_provider_embedded;

typedef enum {
    GF_ROUTE_LIBRARY = 0,      /* cuBLAS (or the CPU reference on a CPU card) */
    GF_ROUTE_OWN = 1,          /* the project's own kernel */
} gf_route_kind;

/* Why a route is what it is. */
typedef enum {
    GF_WHY_EVIDENCE = 0,       /* own: a measured proof on this card */
    GF_WHY_EXPLICIT,           /* own: an explicit request for this candidate */
    GF_WHY_FORCED,             /* GPUFLOCK_FORCE_LIBRARY=1 */
    GF_WHY_NOT_CUDA,           /* the card is not a CUDA card */
    GF_WHY_NO_BINDING,         /* no binding's scope contains this card */
    GF_WHY_NO_PROOF,           /* bound for this card, but no proof of this tuple */
    GF_WHY_UNMEASURED,         /* proven accurate, speed unmeasured: never selects */
    GF_WHY_NO_MODULE,          /* this build has no module for the bound area and tier */
    GF_WHY_MODULE_MISMATCH,    /* the module that would load is not the bound one */
    GF_WHY_REFUSED,            /* the kernel refused the tuple on this card */
    GF_WHY_OFF_BATCH,          /* a network call above every production batch: no proof
                                  covers it (a configured batch size of 64, say) */
    GF_WHY_INVALID,            /* invalid geometry or tuple: an error, not a route */
    GF_WHY_DEVICE_ERROR,       /* the driver failed: an error, not a route */
} gf_route_why;

typedef struct {
    const char *boundary;      /* the tuple (boundary name from the registry) */
    int batch;
    gf_math math;
    gf_route_kind kind;
    gf_route_why why;
    char detail[320];          /* the reason or the evidence, in words */
    const gf_binding *binding; /* own: its binding; library: the binding considered, or NULL */
    const gf_proof *proof;     /* own: the proof it stands on; library: as considered, or NULL */
    gf_module_id module;       /* own: the module that runs it */
} gf_route;

typedef struct {
    const gf_evidence *evidence;        /* validated; NULL: no evidence, library everywhere */
    const gf_card_identity *card;       /* the card planned for */
    const gf_module_provider *modules;  /* NULL: gf_module_provider_none */
    bool force_library;                 /* GPUFLOCK_FORCE_LIBRARY */
} gf_planner;

/* Whether GPUFLOCK_FORCE_LIBRARY=1 is set. */
bool gf_planner_force_library_env(void);

/* Production route for one tuple. Returns 0 with *out filled (own or
 * library); GF_EINVAL for an unknown boundary, a batch outside the production
 * batches or invalid geometry; GF_EDEVICE for a driver error (the route's
 * detail says which). Refusals are library routes, not errors. */
int gf_plan_route(const gf_planner *pl, const char *boundary, int batch, gf_math math,
                  gf_route *out);

/* Switches one boundary of a network object to a route; with the own route,
 * *sha256 (may be NULL) becomes the identity of the module that loaded.
 * Returns 0; GF_EUNSUP when the kernel refuses (the reason logged);
 * GF_ENOENT for a boundary the object does not have; GF_EDEVICE for a
 * driver error. */
typedef int (*gf_route_setter)(void *obj, const char *boundary, gf_route_kind kind,
                               const char **sha256);

/* Put planned->boundary of obj on the planned route. *applied is the route
 * that runs: the planned one, or, where the plan says own and the kernel
 * refuses at load (the setter's GF_EUNSUP) or another module than the
 * planned one loads, the library route with that reason (logged). Returns 0;
 * any other setter failure (GF_EDEVICE: the job fails and the worker
 * restarts, gpu.h) is returned as it is, never turned into the library
 * route. */
int gf_route_apply(const gf_route *planned, gf_route_setter set, void *obj, gf_route *applied);

/* gf_plan_route, then gf_route_apply of that route (the applied route is
 * not returned). Returns 0 or the first error of either. */
int gf_plan_apply(const gf_planner *pl, const char *boundary, int batch, gf_math math,
                  gf_route_setter set, void *obj);

/* Explicit request: run exactly 'candidate' for req. Returns 0 (an own
 * route), or a typed error with the reason in out->detail: GF_ESTATE when
 * force-library is set or the module that would load is not the candidate;
 * GF_ENOENT when this build has no such module; GF_EUNSUP when the card or
 * the kernel refuses; GF_EINVAL for an unknown boundary or invalid geometry;
 * GF_EDEVICE for a driver error. */
int gf_plan_explicit(const gf_planner *pl, const gf_route_request *req,
                     const gf_module_id *candidate, gf_route *out);

/* Every boundary x production batch x math, in registry order, into a new
 * array (*n entries; the caller frees). Returns 0 or the first error of
 * gf_plan_route (nothing returned then). */
int gf_plan_all(const gf_planner *pl, gf_route **out, size_t *n);

/* "evidence", "force-library", "no-binding", ... */
const char *gf_route_why_name(gf_route_why why);
/* "own" or "library": the route's name in plans and device timing. */
const char *gf_route_kind_name(gf_route_kind kind);

/* A route as a json-c object (the caller puts it): tuple, route, why,
 * detail, and for own routes the binding (id, file, line), the module and
 * the records it stands on. */
struct json_object *gf_route_to_json(const gf_route *r);

/* A whole plan (from gf_plan_all) as a json-c array of routes, for the
 * worker's registration and `gpuflock plan --json`. The caller puts it. */
struct json_object *gf_plan_to_json(const gf_route *routes, size_t n);

#endif
