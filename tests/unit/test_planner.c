/* test_planner.c — route planning on exact cards, from evidence tables
 * written by the test and a module provider that reports the modules a
 * build would load (no GPU needed: identity is a hash, not a load). */
#include "common/error.h"
#include "route/planner.h"
#include "gpu/modules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/fixture_evidence.h"

#define ALL_AREAS "fbank, sincnet, segconv, lstm, resnet, pooling, embedding, dense"

/* The modules a test build "has", and what its kernels refuse. */
typedef struct {
    gf_module_id mods[4];      /* what identity() reports, per area */
    size_t n_mods;
    int identity_calls;        /* how often the planner asked */
    int identity_rc;           /* nonzero: identity fails with this */
    const char *refuse;        /* boundary the kernel refuses (GF_EUNSUP) */
    int refuse_batch;          /* ... at this batch */
    const char *invalid;       /* boundary whose geometry is invalid (GF_EINVAL) */
    int plan_rc;               /* nonzero: the kernel's planning fails with this */
    char asked_area[16];       /* the area the last plan() call planned for */
} test_mods;

static int test_identity(void *ctx, const char *area, int tier, const gf_card_identity *card,
                         gf_module_id *out)
{
    (void)card;
    test_mods *t = ctx;
    t->identity_calls++;
    if (t->identity_rc)
        return t->identity_rc;
    for (size_t i = 0; i < t->n_mods; i++)
        if (strcmp(t->mods[i].area, area) == 0 && t->mods[i].tier == tier) {
            *out = t->mods[i];
            return 0;
        }
    return GF_ENOENT;
}

static int test_plan(void *ctx, const gf_route_request *req, const gf_card_identity *card,
                     char *why, size_t len)
{
    (void)card;
    test_mods *t = ctx;
    snprintf(t->asked_area, sizeof t->asked_area, "%s", req->area ? req->area : "");
    if (t->plan_rc) {
        snprintf(why, len, "cuFuncGetAttribute failed");
        return t->plan_rc;
    }
    if (t->refuse && strcmp(req->boundary, t->refuse) == 0 && req->batch == t->refuse_batch) {
        snprintf(why, len, "batch %d: geometry not implemented", req->batch);
        return GF_EUNSUP;
    }
    if (t->invalid && strcmp(req->boundary, t->invalid) == 0) {
        snprintf(why, len, "negative frame count");
        return GF_EINVAL;
    }
    assert_true(req->n_config > 0);   /* the pinned configuration reaches the kernel */
    return 0;
}

static gf_module_id module(const char *area, int tier, const char *sha)
{
    gf_module_id m;
    memset(&m, 0, sizeof m);
    snprintf(m.area, sizeof m.area, "%s", area);
    m.tier = tier;
    m.artifact = GF_ARTIFACT_PTX_JIT;
    snprintf(m.sha256, sizeof m.sha256, "%s", sha);
    return m;
}

static gf_card_identity card(const char *spec)
{
    gf_card_identity id;
    assert_int_equal(gf_card_parse_spec(spec, &id), 0);
    return id;
}

typedef struct {
    fx_dir dir;
    gf_evidence *ev;
    test_mods mods;
    gf_module_provider provider;
} world;

/* Evidence from 'bs' (validated), and a build that has module 'sha' for each bound area. */
static void world_init(world *w, const char *precedence, const fx_binding *bs, size_t n)
{
    memset(w, 0, sizeof *w);
    fx_init(&w->dir, precedence);
    fx_table(&w->dir, "t.yaml", bs, n);
    assert_int_equal(gf_evidence_open(w->dir.dir, &w->ev), 0);
    for (size_t i = 0; i < n; i++)
        w->mods.mods[w->mods.n_mods++] = module(bs[i].area, atoi(bs[i].tier + 2), bs[i].sha);
    w->provider = (gf_module_provider){ "test", test_identity, test_plan, &w->mods };
}

static void world_destroy(world *w)
{
    gf_evidence_destroy(&w->ev);
    fx_cleanup(&w->dir);
}

static gf_planner planner_for(world *w, const gf_card_identity *c)
{
    return (gf_planner){ .evidence = w->ev, .card = c, .modules = &w->provider };
}

static void test_point_binding_selects_on_that_card_only(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);
    assert_int_equal(r.why, GF_WHY_EVIDENCE);
    assert_string_equal(r.binding->id, "lstm-h200");
    assert_non_null(strstr(r.detail, "lstm-h200"));
    assert_memory_equal(r.detail + strlen(r.detail) - 12, r.proof->speed[0], 12);

    /* Another tuple on the same card: bound here, but unproven. */
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 8, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_NO_PROOF);
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_TF32, &r), 0);
    assert_int_equal(r.why, GF_WHY_NO_PROOF);

    /* A different SM count, name or capability is a different card. */
    static const char *const others[] = {
        "NVIDIA H200:9.0:140", "NVIDIA H200 NVL:9.0:132", "NVIDIA H100 80GB HBM3:9.0:132",
        "NVIDIA H200:9.1:132",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        gf_card_identity other = card(others[i]);
        gf_planner po = planner_for(&w, &other);
        w.mods.identity_calls = 0;
        assert_int_equal(gf_plan_route(&po, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
        assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
        assert_int_equal(r.why, GF_WHY_NO_BINDING);
        assert_int_equal(w.mods.identity_calls, 0);   /* the library route asks no module */
    }
    world_destroy(&w);
}

/* A network object's boundary switch, as gf_plan_apply drives it: loads
 * `loads` (a module identity) or fails with `fail` on the own route. */
typedef struct {
    const char *loads;
    int fail;
    gf_route_kind kinds[4];
    int n;
} fake_obj;

static int fake_set(void *obj, const char *boundary, gf_route_kind kind, const char **sha)
{
    fake_obj *o = obj;
    assert_string_equal(boundary, "lstm.stack");
    o->kinds[o->n++] = kind;
    if (kind == GF_ROUTE_OWN) {
        if (o->fail)
            return o->fail;
        if (sha)
            *sha = o->loads;
    }
    return 0;
}

static void test_apply_takes_own_only_as_bound(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);

    fake_obj bound = { r.module.sha256, 0, { 0 }, 0 };   /* the bound module loads */
    assert_int_equal(gf_plan_apply(&pl, "lstm.stack", 32, GF_MATH_FP32, fake_set, &bound), 0);
    assert_int_equal(bound.n, 1);
    assert_int_equal(bound.kinds[0], GF_ROUTE_OWN);

    fake_obj other = { FX_SHA_B, 0, { 0 }, 0 };           /* another module loads */
    assert_int_equal(gf_plan_apply(&pl, "lstm.stack", 32, GF_MATH_FP32, fake_set, &other), 0);
    assert_int_equal(other.n, 2);
    assert_int_equal(other.kinds[1], GF_ROUTE_LIBRARY);

    fake_obj refused = { NULL, GF_EUNSUP, { 0 }, 0 };      /* the card refuses the kernel */
    assert_int_equal(gf_plan_apply(&pl, "lstm.stack", 32, GF_MATH_FP32, fake_set, &refused), 0);
    assert_int_equal(refused.n, 2);
    assert_int_equal(refused.kinds[1], GF_ROUTE_LIBRARY);

    /* A device error while loading is a device error: returned, and the
     * boundary is not quietly put on the library route. */
    fake_obj broken = { NULL, GF_EDEVICE, { 0 }, 0 };
    assert_int_equal(gf_plan_apply(&pl, "lstm.stack", 32, GF_MATH_FP32, fake_set, &broken),
                     GF_EDEVICE);
    assert_int_equal(broken.n, 1);
    assert_int_equal(broken.kinds[0], GF_ROUTE_OWN);
    fake_obj missing = { NULL, GF_ENOENT, { 0 }, 0 };      /* the object has no such boundary */
    assert_int_equal(gf_plan_apply(&pl, "lstm.stack", 32, GF_MATH_FP32, fake_set, &missing),
                     GF_ENOENT);
    assert_int_equal(missing.n, 1);

    fake_obj unproven = { r.module.sha256, 0, { 0 }, 0 };  /* batch 8 has no proof */
    assert_int_equal(gf_plan_apply(&pl, "lstm.stack", 8, GF_MATH_FP32, fake_set, &unproven), 0);
    assert_int_equal(unproven.n, 1);
    assert_int_equal(unproven.kinds[0], GF_ROUTE_LIBRARY);

    fake_obj none = { NULL, 0, { 0 }, 0 };
    assert_int_equal(gf_plan_apply(&pl, "lstm.stak", 32, GF_MATH_FP32, fake_set, &none),
                     GF_EINVAL);
    assert_int_equal(none.n, 0);
    world_destroy(&w);
}

static void test_unmeasured_never_selects(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    b.proofs[0].unmeasured = true;
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_UNMEASURED);
    assert_string_equal(r.binding->id, "lstm-h200");
    assert_int_equal(w.mods.identity_calls, 0);
    world_destroy(&w);
}

static void test_module_identity_must_match_byte_for_byte(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r;
    /* The build's lstm PTX changed: its hash is no longer the bound one. */
    w.mods.mods[0].sha256[63] = '0';
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_MODULE_MISMATCH);
    assert_non_null(strstr(r.detail, "the module that loads is"));
    /* Same hash, shipped as a cubin instead of PTX: not the bound identity. */
    w.mods.mods[0] = module("lstm", 90, FX_SHA_A);
    w.mods.mods[0].artifact = GF_ARTIFACT_CUBIN;
    w.mods.mods[0].cubin_arch = 90;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.why, GF_WHY_MODULE_MISMATCH);
    /* No lstm module in this build at all. */
    w.mods.n_mods = 0;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.why, GF_WHY_NO_MODULE);
    /* The real provider of a build without kernels. */
    pl.modules = NULL;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.why, GF_WHY_NO_MODULE);
    assert_non_null(strstr(r.detail, "(none modules)"));
    /* A failing driver is an error, not a route. */
    pl.modules = &w.provider;
    w.mods.identity_rc = GF_EDEVICE;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), GF_EDEVICE);
    assert_int_equal(r.why, GF_WHY_DEVICE_ERROR);
    world_destroy(&w);
}

static void test_force_library(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    setenv(GF_FORCE_LIBRARY_ENV, "1", 1);
    pl.force_library = gf_planner_force_library_env();
    assert_true(pl.force_library);
    gf_route *all = NULL;
    size_t n = 0;
    assert_int_equal(gf_plan_all(&pl, &all, &n), 0);
    assert_int_equal(n, gf_boundary_count() * 3 * 2);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(all[i].kind, GF_ROUTE_LIBRARY);
        assert_int_equal(all[i].why, GF_WHY_FORCED);
    }
    free(all);
    assert_int_equal(w.mods.identity_calls, 0);
    setenv(GF_FORCE_LIBRARY_ENV, "0", 1);
    assert_false(gf_planner_force_library_env());
    unsetenv(GF_FORCE_LIBRARY_ENV);
    assert_false(gf_planner_force_library_env());
    pl.force_library = false;
    assert_int_equal(gf_plan_all(&pl, &all, &n), 0);
    size_t own = 0;
    for (size_t i = 0; i < n; i++)
        own += all[i].kind == GF_ROUTE_OWN;
    assert_int_equal(own, 1);
    free(all);
    world_destroy(&w);
}

static void test_precedence_between_areas(void **state)
{
    (void)state;
    /* embedding.seg_1 is bound twice: its own area and the dense GEMM. */
    fx_binding bs[2] = {
        { .id = "emb-h200", .kind = "point", .name = "NVIDIA H200", .cc = "9.0", .sms = 132,
          .area = "embedding", .tier = "sm90", .sha = FX_SHA_A,
          .proofs = { { .boundary = "embedding.seg_1" } }, .n_proofs = 1 },
        { .id = "dense-cc90", .kind = "capability", .cc = "9.0", .name = "NVIDIA H200", .sms = 132,
          .area = "dense", .tier = "sm80", .sha = FX_SHA_B,
          .proofs = { { .boundary = "embedding.seg_1" }, { .boundary = "dense.linear0" } },
          .n_proofs = 2 },
    };
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_route r;
    static const struct {
        const char *precedence;
        const char *winner;
    } orders[] = {
        { "embedding, dense", "emb-h200" },
        { "dense, embedding", "dense-cc90" },
    };
    for (size_t i = 0; i < 2; i++) {
        world w;
        world_init(&w, orders[i].precedence, bs, 2);
        gf_planner pl = planner_for(&w, &h200);
        assert_int_equal(gf_plan_route(&pl, "embedding.seg_1", 32, GF_MATH_FP32, &r), 0);
        assert_int_equal(r.kind, GF_ROUTE_OWN);
        assert_string_equal(r.binding->id, orders[i].winner);
        /* Only one candidate for dense.linear0, whatever the order. */
        assert_int_equal(gf_plan_route(&pl, "dense.linear0", 32, GF_MATH_FP32, &r), 0);
        assert_string_equal(r.binding->id, "dense-cc90");
        world_destroy(&w);
    }
    /* The first area's module does not load as bound: the next area runs it. */
    world w;
    world_init(&w, "embedding, dense", bs, 2);
    w.mods.mods[0].sha256[0] = 'f';
    gf_planner pl = planner_for(&w, &h200);
    assert_int_equal(gf_plan_route(&pl, "embedding.seg_1", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);
    assert_string_equal(r.binding->id, "dense-cc90");
    world_destroy(&w);
}

static void test_refusal_production_versus_explicit(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    b.proofs[1] = (fx_proof){ .boundary = "lstm.stack", .batch = 1 };
    b.n_proofs = 2;
    world_init(&w, ALL_AREAS, &b, 1);
    w.mods.refuse = "lstm.stack";
    w.mods.refuse_batch = 1;
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r;
    /* Production: the refusal falls back to the library, with its reason. */
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 1, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_REFUSED);
    assert_non_null(strstr(r.detail, "geometry not implemented"));
    /* Explicit: the same refusal is a typed error. */
    gf_pin pin = { "hidden_per_block", "128" };
    gf_route_request req = { "lstm.stack", 1, GF_MATH_FP32, &pin, 1, NULL };
    gf_module_id cand = module("lstm", 90, FX_SHA_A);
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_EUNSUP);
    assert_int_equal(r.why, GF_WHY_REFUSED);
    /* Invalid geometry propagates in both. */
    w.mods.refuse = NULL;
    w.mods.invalid = "lstm.stack";
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 1, GF_MATH_FP32, &r), GF_EINVAL);
    assert_int_equal(r.why, GF_WHY_INVALID);
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_EINVAL);
    /* A driver error propagates in both. */
    w.mods.invalid = NULL;
    w.mods.identity_rc = GF_EDEVICE;
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_EDEVICE);
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 1, GF_MATH_FP32, &r), GF_EDEVICE);
    world_destroy(&w);
}

static void test_explicit_runs_exactly_the_candidate(void **state)
{
    (void)state;
    test_mods t = { .mods = { module("resnet", 80, FX_SHA_B) }, .n_mods = 1 };
    gf_module_provider prov = { "test", test_identity, test_plan, &t };
    gf_card_identity a100 = card("NVIDIA A100-SXM4-80GB:8.0:108");
    /* No evidence at all: qualification is how evidence is made. */
    gf_planner pl = { .evidence = NULL, .card = &a100, .modules = &prov };
    gf_pin pin = { "tile_m", "64" };
    gf_route_request req = { "resnet.layer3.2.conv2", 8, GF_MATH_TF32, &pin, 1, NULL };
    gf_module_id cand = module("resnet", 80, FX_SHA_B);
    gf_route r;
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);
    assert_int_equal(r.why, GF_WHY_EXPLICIT);
    assert_true(gf_module_equal(&r.module, &cand));
    /* Production on the same card does not take it: no evidence. */
    assert_int_equal(gf_plan_route(&pl, "resnet.layer3.2.conv2", 8, GF_MATH_TF32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_NO_BINDING);

    gf_module_id other = module("resnet", 80, FX_SHA_A);
    assert_int_equal(gf_plan_explicit(&pl, &req, &other, &r), GF_ESTATE);
    assert_int_equal(r.why, GF_WHY_MODULE_MISMATCH);
    gf_module_id tier90 = module("resnet", 90, FX_SHA_B);
    assert_int_equal(gf_plan_explicit(&pl, &req, &tier90, &r), GF_EUNSUP);
    gf_module_id missing = module("segconv", 80, FX_SHA_B);
    req.boundary = "segconv.conv1";
    assert_int_equal(gf_plan_explicit(&pl, &req, &missing, &r), GF_ENOENT);
    assert_int_equal(r.why, GF_WHY_NO_MODULE);
    req.boundary = "lstm.stack";
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_EINVAL);
    req.boundary = "resnet.layer3.2.conv2";
    pl.force_library = true;
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_ESTATE);
    assert_int_equal(r.why, GF_WHY_FORCED);
    pl.force_library = false;
    gf_card_identity cpu = a100;
    cpu.kind = GF_DEVICE_CPU;
    pl.card = &cpu;
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_EUNSUP);
    assert_int_equal(r.why, GF_WHY_NOT_CUDA);
}

static void test_whole_plan_and_bad_tuples(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity cpu = card("cpu:9.0:16");
    cpu.kind = GF_DEVICE_CPU;
    gf_planner pl = planner_for(&w, &cpu);
    gf_route *all;
    size_t n;
    assert_int_equal(gf_plan_all(&pl, &all, &n), 0);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(all[i].why, GF_WHY_NOT_CUDA);
    free(all);

    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    pl.card = &h200;
    gf_route r;
    assert_int_equal(gf_plan_route(&pl, "lstm.stak", 32, GF_MATH_FP32, &r), GF_EINVAL);
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 16, GF_MATH_FP32, &r), GF_EINVAL);

    /* The route's JSON names the binding and the records it stands on. */
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    json_object *o = gf_route_to_json(&r);
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(text, "\"route\":\"own\""));
    assert_non_null(strstr(text, "\"id\":\"lstm-h200\""));
    assert_non_null(strstr(text, r.proof->speed[0]));
    assert_non_null(strstr(text, r.proof->accuracy));
    assert_non_null(strstr(text, r.proof->end_to_end));
    json_object_put(o);
    world_destroy(&w);
}

/* gf_route_apply says which route runs: the planned one, or the library
 * route with the reason when the kernel refuses at load or another module
 * loads; a library plan asks the object for nothing else. */
static void test_route_apply_reports_the_route_that_runs(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r, applied;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);

    fake_obj bound = { r.module.sha256, 0, { 0 }, 0 };
    assert_int_equal(gf_route_apply(&r, fake_set, &bound, &applied), 0);
    assert_int_equal(applied.kind, GF_ROUTE_OWN);
    assert_int_equal(applied.why, GF_WHY_EVIDENCE);
    assert_string_equal(applied.module.sha256, r.module.sha256);

    fake_obj refused = { NULL, GF_EUNSUP, { 0 }, 0 };
    assert_int_equal(gf_route_apply(&r, fake_set, &refused, &applied), 0);
    assert_int_equal(applied.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(applied.why, GF_WHY_REFUSED);
    assert_non_null(strstr(applied.detail, "lstm-h200"));
    assert_string_equal(applied.module.sha256, "");
    assert_int_equal(refused.kinds[refused.n - 1], GF_ROUTE_LIBRARY);

    fake_obj other = { FX_SHA_B, 0, { 0 }, 0 };
    assert_int_equal(gf_route_apply(&r, fake_set, &other, &applied), 0);
    assert_int_equal(applied.why, GF_WHY_MODULE_MISMATCH);
    assert_non_null(strstr(applied.detail, "bbbbbbbbbbbb"));

    fake_obj broken = { NULL, GF_EDEVICE, { 0 }, 0 };
    assert_int_equal(gf_route_apply(&r, fake_set, &broken, &applied), GF_EDEVICE);
    assert_int_equal(broken.n, 1);

    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 8, GF_MATH_FP32, &r), 0);
    fake_obj lib = { NULL, GF_EDEVICE, { 0 }, 0 };          /* never asked for its kernel */
    assert_int_equal(gf_route_apply(&r, fake_set, &lib, &applied), 0);
    assert_int_equal(lib.n, 1);
    assert_int_equal(lib.kinds[0], GF_ROUTE_LIBRARY);
    assert_int_equal(applied.why, GF_WHY_NO_PROOF);
    world_destroy(&w);
}

/* The kernel's planning step: it is asked for the bound module's area, its
 * refusal is the library route with its words, and its device error is an
 * error in production and in an explicit request alike. */
static void test_plan_hook_refusal_and_device_error(void **state)
{
    (void)state;
    world w;
    fx_binding b = fx_h200_lstm();
    world_init(&w, ALL_AREAS, &b, 1);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_planner pl = planner_for(&w, &h200);
    gf_route r;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);
    assert_string_equal(w.mods.asked_area, "lstm");

    w.mods.refuse = "lstm.stack";
    w.mods.refuse_batch = 32;
    gf_route *all = NULL;
    size_t n = 0;
    assert_int_equal(gf_plan_all(&pl, &all, &n), 0);
    size_t refused = 0;
    for (size_t i = 0; i < n; i++)
        if (all[i].why == GF_WHY_REFUSED) {
            refused++;
            assert_int_equal(all[i].kind, GF_ROUTE_LIBRARY);
            assert_string_equal(all[i].boundary, "lstm.stack");
            assert_non_null(strstr(all[i].detail, "the kernel refuses: batch 32: geometry not "
                                                  "implemented"));
            assert_string_equal(all[i].binding->id, "lstm-h200");
        }
    assert_int_equal(refused, 1);
    free(all);
    /* Its JSON (what READY and `gpuflock plan --json` carry) says so. */
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    json_object *o = gf_route_to_json(&r);
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    assert_non_null(strstr(text, "\"route\":\"library\""));
    assert_non_null(strstr(text, "\"why\":\"refused\""));
    assert_non_null(strstr(text, "geometry not implemented"));
    json_object_put(o);

    w.mods.refuse = NULL;
    w.mods.plan_rc = GF_EDEVICE;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), GF_EDEVICE);
    assert_int_equal(r.why, GF_WHY_DEVICE_ERROR);
    assert_non_null(strstr(r.detail, "cuFuncGetAttribute failed"));
    assert_int_equal(gf_plan_all(&pl, &all, &n), GF_EDEVICE);
    assert_null(all);
    gf_pin pin = { "hidden_per_block", "128" };
    gf_route_request req = { "lstm.stack", 32, GF_MATH_FP32, &pin, 1, NULL };
    gf_module_id cand = module("lstm", 90, FX_SHA_A);
    w.mods.asked_area[0] = '\0';
    assert_int_equal(gf_plan_explicit(&pl, &req, &cand, &r), GF_EDEVICE);
    assert_int_equal(r.why, GF_WHY_DEVICE_ERROR);
    assert_string_equal(w.mods.asked_area, "lstm");   /* the candidate's area */
    world_destroy(&w);
}

static void test_embedded_provider_reports_the_embedded_ptx(void **state)
{
    (void)state;
    const gf_module_provider *p = &gf_module_provider_embedded;
    gf_card_identity h200 = card("NVIDIA H200:9.0:132");
    gf_module_id id;
    /* Every embedded blob is found under its area and tier, hashed as PTX. */
    for (const gf_ptx_blob *b = gf_ptx_blobs; b->area; b++) {
        int tier = atoi(b->tier + 2);
        assert_int_equal(p->identity(p->ctx, b->area, tier, &h200, &id), 0);
        char sha[GF_SHA256_HEX_LEN];
        gf_sha256_hex(b->text, b->len, sha);
        assert_string_equal(id.sha256, sha);
        assert_int_equal(id.artifact, GF_ARTIFACT_PTX_JIT);
        assert_int_equal(id.tier, tier);
    }
    assert_int_equal(p->identity(p->ctx, "lstm", 61, &h200, &id), GF_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_point_binding_selects_on_that_card_only),
        cmocka_unit_test(test_unmeasured_never_selects),
        cmocka_unit_test(test_module_identity_must_match_byte_for_byte),
        cmocka_unit_test(test_force_library),
        cmocka_unit_test(test_precedence_between_areas),
        cmocka_unit_test(test_refusal_production_versus_explicit),
        cmocka_unit_test(test_explicit_runs_exactly_the_candidate),
        cmocka_unit_test(test_whole_plan_and_bad_tuples),
        cmocka_unit_test(test_apply_takes_own_only_as_bound),
        cmocka_unit_test(test_route_apply_reports_the_route_that_runs),
        cmocka_unit_test(test_plan_hook_refusal_and_device_error),
        cmocka_unit_test(test_embedded_provider_reports_the_embedded_ptx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
