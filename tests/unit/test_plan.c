/* test_plan.c — the worker's route plan, made once: the object READY
 * serialises is the object applied, row for row; a network call of a size no
 * production batch is runs the library route; a kernel that refuses at load
 * changes the plan that READY shows; a device error is returned. No GPU: the
 * network is a fake object that records its routes, the modules a fake
 * provider. */
#include "common/error.h"
#include "route/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/fixture_evidence.h"

#define ALL_AREAS "fbank, sincnet, segconv, lstm, resnet, pooling, embedding, dense"

static int fake_identity(void *ctx, const char *area, int tier, const gf_card_identity *card,
                         gf_module_id *out)
{
    (void)ctx;
    (void)card;
    if (strcmp(area, "lstm") != 0 || tier != 90)
        return GF_ENOENT;
    memset(out, 0, sizeof *out);
    snprintf(out->area, sizeof out->area, "lstm");
    out->tier = 90;
    out->artifact = GF_ARTIFACT_PTX_JIT;
    snprintf(out->sha256, sizeof out->sha256, "%s", FX_SHA_A);
    return 0;
}

static const gf_module_provider fake_modules = { "fake", fake_identity, NULL, NULL };

/* A network object: every boundary of the registry, its route, and what its
 * own route does when asked (load FX_SHA_A, refuse, or fail). */
typedef struct {
    gf_route_kind kind[64];
    int own_rc;                /* 0: loads FX_SHA_A; else returned by an own switch */
    int calls;
} fake_net;

static int fake_switch(void *obj, const char *boundary, gf_route_kind kind, const char **sha)
{
    fake_net *net = obj;
    net->calls++;
    for (size_t i = 0; i < gf_boundary_count(); i++)
        if (strcmp(gf_boundary_at(i)->name, boundary) == 0) {
            if (kind == GF_ROUTE_OWN && net->own_rc)
                return net->own_rc;
            net->kind[i] = kind;
            if (kind == GF_ROUTE_OWN && sha)
                *sha = FX_SHA_A;
            return 0;
        }
    return GF_ENOENT;
}

typedef struct {
    fx_dir dir;
    gf_route_plan *plan;
    const char *names[64];     /* the registry's boundaries */
    size_t n;
} world;

static void world_init(world *w)
{
    memset(w, 0, sizeof *w);
    fx_init(&w->dir, ALL_AREAS);
    fx_binding b = fx_h200_lstm();
    b.proofs[1] = (fx_proof){ .boundary = "lstm.stack", .batch = 8 };
    b.n_proofs = 2;
    fx_table(&w->dir, "t.yaml", &b, 1);
    gf_card_identity h200;
    assert_int_equal(gf_card_parse_spec("NVIDIA H200:9.0:132", &h200), 0);
    w->plan = gf_route_plan_new(&h200, w->dir.dir, &fake_modules, false);
    assert_non_null(w->plan);
    for (size_t i = 0; i < gf_boundary_count(); i++)
        w->names[w->n++] = gf_boundary_at(i)->name;
}

static void world_destroy(world *w)
{
    gf_route_plan_destroy(&w->plan);
    gf_route_plan_destroy(&w->plan);   /* safe twice */
    fx_cleanup(&w->dir);
}

/* The route of (boundary, batch, math) in READY's JSON text. */
static json_object *ready_route(const char *text, const char *boundary, int batch, gf_math math,
                                json_object **whole)
{
    *whole = json_tokener_parse(text);
    assert_non_null(*whole);
    json_object *routes;
    assert_true(json_object_object_get_ex(*whole, "routes", &routes));
    for (size_t i = 0; i < json_object_array_length(routes); i++) {
        json_object *r = json_object_array_get_idx(routes, i), *b, *n, *m;
        json_object_object_get_ex(r, "boundary", &b);
        json_object_object_get_ex(r, "batch", &n);
        json_object_object_get_ex(r, "math", &m);
        if (strcmp(json_object_get_string(b), boundary) == 0 && json_object_get_int(n) == batch &&
            strcmp(json_object_get_string(m), gf_math_name(math)) == 0)
            return r;
    }
    fail_msg("READY has no route for %s %d %s", boundary, batch, gf_math_name(math));
    return NULL;
}

static const char *field(json_object *o, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static void test_ready_sends_the_plan_that_is_applied(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    assert_int_equal(gf_route_plan_count(w.plan), gf_boundary_count() * 3 * 2);
    assert_int_equal(gf_route_plan_own(w.plan), 2);
    char *before = gf_route_plan_text(w.plan);
    assert_non_null(before);
    json_object *o;
    json_object *r = ready_route(before, "lstm.stack", 32, GF_MATH_FP32, &o);
    assert_string_equal(field(r, "route"), "own");
    assert_string_equal(field(o, "own"), "2");
    assert_string_equal(field(o, "other_batches"), "library");
    assert_null(field(o, "evidence_problem"));
    json_object_put(o);

    /* Each production batch: the object takes exactly READY's routes. */
    static const int batches[] = { 1, 8, 32 };
    for (size_t k = 0; k < 3; k++)
        for (int m = 0; m < GF_N_MATH; m++) {
            fake_net net = { { 0 }, 0, 0 };
            gf_route applied[64];
            assert_int_equal(gf_route_plan_apply(w.plan, batches[k], (gf_math)m, w.names, w.n,
                                                 fake_switch, &net, applied), 0);
            for (size_t i = 0; i < w.n; i++) {
                gf_route planned;
                assert_int_equal(gf_route_plan_get(w.plan, w.names[i], batches[k], (gf_math)m,
                                                   &planned), 0);
                assert_int_equal(applied[i].kind, planned.kind);
                assert_int_equal(net.kind[i], planned.kind);
                assert_string_equal(applied[i].detail, planned.detail);
                json_object *whole;
                json_object *jr = ready_route(before, w.names[i], batches[k], (gf_math)m, &whole);
                assert_string_equal(field(jr, "route"), gf_route_kind_name(net.kind[i]));
                json_object_put(whole);
            }
            bool own = batches[k] != 1 && m == GF_MATH_FP32;   /* lstm at 8 and 32, fp32 */
            assert_int_equal(net.kind[3], own ? GF_ROUTE_OWN : GF_ROUTE_LIBRARY);
        }
    char *after = gf_route_plan_text(w.plan);
    assert_string_equal(before, after);   /* applying changed nothing: READY's plan ran */
    assert_int_equal(gf_route_plan_revision(w.plan), 0);
    free(before);
    free(after);
    world_destroy(&w);
}

static void test_a_call_takes_the_row_of_the_smallest_batch_that_holds_it(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    assert_int_equal(gf_route_plan_row(32), 32);
    assert_int_equal(gf_route_plan_row(8), 8);
    assert_int_equal(gf_route_plan_row(1), 1);
    assert_int_equal(gf_route_plan_row(5), 8);    /* a recording's last 5 windows */
    assert_int_equal(gf_route_plan_row(9), 32);
    assert_int_equal(gf_route_plan_row(16), 32);  /* a configured batch of 16 */
    assert_int_equal(gf_route_plan_row(33), 0);   /* above every production batch */
    assert_int_equal(gf_route_plan_row(64), 0);
    assert_int_equal(gf_route_plan_row(0), 0);
    fake_net net = { { 0 }, GF_EDEVICE, 0 };      /* an own switch would fail */
    gf_route applied[64];
    assert_int_equal(gf_route_plan_apply(w.plan, gf_route_plan_row(64), GF_MATH_FP32, w.names,
                                         w.n, fake_switch, &net, applied), 0);
    for (size_t i = 0; i < w.n; i++) {
        assert_int_equal(applied[i].kind, GF_ROUTE_LIBRARY);
        assert_int_equal(applied[i].why, GF_WHY_OFF_BATCH);
    }
    assert_non_null(strstr(applied[3].detail, "no proof covers it"));
    gf_route r;
    assert_int_equal(gf_route_plan_get(w.plan, "lstm.stak", 32, GF_MATH_FP32, &r), GF_EINVAL);
    assert_int_equal(gf_route_plan_revision(w.plan), 0);
    world_destroy(&w);
}

static void test_a_refusal_at_load_changes_the_plan_shown(void **state)
{
    (void)state;
    world w;
    world_init(&w);
    /* A driver error while loading is the job's error; the plan stays. */
    fake_net broken = { { 0 }, GF_EDEVICE, 0 };
    assert_int_equal(gf_route_plan_apply(w.plan, 32, GF_MATH_FP32, w.names, w.n, fake_switch,
                                         &broken, NULL), GF_EDEVICE);
    assert_int_equal(gf_route_plan_own(w.plan), 2);
    assert_int_equal(gf_route_plan_revision(w.plan), 0);

    /* The kernel refuses at load: the library route runs, and is the plan. */
    fake_net refusing = { { 0 }, GF_EUNSUP, 0 };
    gf_route applied[64];
    assert_int_equal(gf_route_plan_apply(w.plan, 32, GF_MATH_FP32, w.names, w.n, fake_switch,
                                         &refusing, applied), 0);
    assert_int_equal(refusing.kind[3], GF_ROUTE_LIBRARY);
    assert_int_equal(applied[3].why, GF_WHY_REFUSED);
    assert_int_equal(gf_route_plan_revision(w.plan), 1);
    assert_int_equal(gf_route_plan_own(w.plan), 1);
    gf_route r;
    assert_int_equal(gf_route_plan_get(w.plan, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_REFUSED);
    char *text = gf_route_plan_text(w.plan);
    json_object *o;
    json_object *jr = ready_route(text, "lstm.stack", 32, GF_MATH_FP32, &o);
    assert_string_equal(field(jr, "route"), "library");
    assert_string_equal(field(jr, "why"), "refused");
    assert_non_null(strstr(field(jr, "detail"), "refused at load"));
    assert_string_equal(field(o, "own"), "1");
    json_object_put(o);
    free(text);
    /* The next network built from this plan takes the amended row. */
    fake_net next = { { 0 }, 0, 0 };
    assert_int_equal(gf_route_plan_apply(w.plan, 32, GF_MATH_FP32, w.names, w.n, fake_switch,
                                         &next, NULL), 0);
    assert_int_equal(next.kind[3], GF_ROUTE_LIBRARY);
    assert_int_equal(gf_route_plan_revision(w.plan), 1);
    world_destroy(&w);
}

static void test_without_evidence_the_library_route_everywhere(void **state)
{
    (void)state;
    gf_card_identity h200;
    assert_int_equal(gf_card_parse_spec("NVIDIA H200:9.0:132", &h200), 0);
    gf_route_plan *plan = gf_route_plan_new(&h200, "/nonexistent/evidence", &fake_modules, false);
    assert_non_null(plan);
    assert_int_equal(gf_route_plan_own(plan), 0);
    assert_non_null(gf_route_plan_problem(plan));
    assert_string_equal(gf_route_plan_evidence_dir(plan), "/nonexistent/evidence");
    assert_string_equal(gf_route_plan_card(plan)->name, "NVIDIA H200");
    char *text = gf_route_plan_text(plan);
    json_object *o = json_tokener_parse(text);
    assert_non_null(strstr(field(o, "evidence_problem"), "library route everywhere"));
    json_object_put(o);
    free(text);
    gf_route_plan_destroy(&plan);
    assert_null(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ready_sends_the_plan_that_is_applied),
        cmocka_unit_test(test_a_call_takes_the_row_of_the_smallest_batch_that_holds_it),
        cmocka_unit_test(test_a_refusal_at_load_changes_the_plan_shown),
        cmocka_unit_test(test_without_evidence_the_library_route_everywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
