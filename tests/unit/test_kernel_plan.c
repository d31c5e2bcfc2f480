/* test_kernel_plan.c — the production module provider's planning step: the
 * own kernels' launchers refuse what they cannot run on a card (no GPU
 * needed: the networks' geometry and the card's identity decide), a refusal
 * is the library route with its reason, and on the H200 they refuse nothing
 * the evidence binds. */
#include "common/error.h"
#include "diar/kernel_plan.h"
#include "route/planner.h"
#include "gpu/modules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/fixture_evidence.h"

#define H200_SMEM (227 * 1024)   /* the H200's opt-in shared memory a block */

static gf_card_identity card(const char *spec, int smem_optin)
{
    gf_card_identity id;
    assert_int_equal(gf_card_parse_spec(spec, &id), 0);
    id.smem_optin = smem_optin;
    return id;
}

/* The hook's answer for one tuple, with the reason it gives. */
static int ask(const char *boundary, gf_math math, const char *area, const gf_card_identity *c,
               char *why, size_t len)
{
    gf_pin pin = { "threads", "256" };
    gf_route_request req = { boundary, 32, math, &pin, 1, area };
    why[0] = '\0';
    return gf_kernel_modules.plan(gf_kernel_modules.ctx, &req, c, why, len);
}

static void test_kernels_refuse_what_they_cannot_run(void **state)
{
    (void)state;
    char why[200];
    /* The implicit-GEMM convolutions need the tensor cores' tf32 mma (cc >= 8.0). */
    gf_card_identity t4 = card("Tesla T4:7.5:40", 64 * 1024);
    assert_int_equal(ask("resnet.layer2.1.conv1", GF_MATH_TF32, "resnet", &t4, why, sizeof why),
                     GF_EUNSUP);
    assert_non_null(strstr(why, "needs cc >= 8.0"));
    /* A card with 48 KiB a block: the kernels that hold more are refused. */
    gf_card_identity small = card("NVIDIA H200:9.0:132", 48 * 1024);
    assert_int_equal(ask("lstm.stack", GF_MATH_FP32, "lstm", &small, why, sizeof why), GF_EUNSUP);
    assert_non_null(strstr(why, "gf_lstm_rec_v1 needs 133632 bytes of shared memory a block, "
                                "this card offers 49152"));
    assert_int_equal(ask("segconv.conv1", GF_MATH_FP32, "segconv", &small, why, sizeof why),
                     GF_EUNSUP);   /* 80 channels x 784 bytes */
    assert_int_equal(ask("segconv.conv2", GF_MATH_FP32, "segconv", &small, why, sizeof why), 0);
    assert_int_equal(ask("sincnet.conv0.abs_pool", GF_MATH_TF32, "sincnet", &small, why,
                         sizeof why), GF_EUNSUP);
    assert_int_equal(ask("pooling.stats", GF_MATH_FP32, "pooling", &small, why, sizeof why), 0);
    /* Unknown shared memory (a described card) is not held against a kernel. */
    gf_card_identity described = card("NVIDIA H200:9.0:132", 0);
    assert_int_equal(ask("lstm.stack", GF_MATH_FP32, "lstm", &described, why, sizeof why), 0);
    /* A boundary the GPU code runs with one area's kernels only. */
    gf_card_identity h200 = card("NVIDIA H200:9.0:132", H200_SMEM);
    assert_int_equal(ask("fbank.dft", GF_MATH_FP32, "dense", &h200, why, sizeof why), GF_EUNSUP);
    assert_non_null(strstr(why, "fbank.dft runs the fbank module's kernels here, not dense's"));
    assert_int_equal(ask("embedding.seg_1", GF_MATH_TF32, "dense", &h200, why, sizeof why),
                     GF_EUNSUP);
    assert_int_equal(ask("embedding.seg_1", GF_MATH_TF32, "embedding", &h200, why, sizeof why), 0);
    /* The trunk: fp32 runs the resnet32 module's 3xTF32 variants, tf32 the
     * resnet module's; resnet.conv1's direct kernel is the resnet module's in
     * both. */
    assert_int_equal(ask("resnet.layer3.0.shortcut", GF_MATH_FP32, "resnet", &h200, why,
                         sizeof why), GF_EUNSUP);
    assert_non_null(strstr(why, "this layer in fp32 runs the resnet32 module's kernels"));
    assert_int_equal(ask("resnet.layer3.0.shortcut", GF_MATH_FP32, "resnet32", &h200, why,
                         sizeof why), 0);
    assert_int_equal(ask("resnet.layer3.0.shortcut", GF_MATH_TF32, "resnet32", &h200, why,
                         sizeof why), GF_EUNSUP);
    assert_int_equal(ask("resnet.conv1", GF_MATH_FP32, "resnet", &h200, why, sizeof why), 0);
    assert_int_equal(ask("resnet.conv1", GF_MATH_FP32, "resnet32", &h200, why, sizeof why),
                     GF_EUNSUP);
    /* Every boundary of the registry has a launcher that answers. */
    for (size_t i = 0; i < gf_boundary_count(); i++)
        for (int m = 0; m < GF_N_MATH; m++) {
            const gf_boundary *b = gf_boundary_at(i);
            const char *area = b->area;
            if (strcmp(area, "resnet") == 0 && m == GF_MATH_FP32 &&
                strcmp(b->name, "resnet.conv1") != 0)
                area = "resnet32";
            if (ask(b->name, (gf_math)m, area, &h200, why, sizeof why) != 0)
                fail_msg("%s %s (%s): refused on the H200: %s", b->name,
                         gf_math_name((gf_math)m), area, why);
        }
}

/* Planned with the kernels' step, the source tree's evidence gives the H200
 * (with its real shared memory) the same plan as without it: the launchers
 * refuse nothing it binds. */
static void test_the_h200_plan_keeps_every_bound_route(void **state)
{
    (void)state;
    gf_evidence *ev = NULL;
    if (gf_evidence_open(gf_evidence_default_dir(), &ev) != 0) {
        printf("no valid evidence in %s: skipping\n", gf_evidence_default_dir());
        skip();
    }
    gf_card_identity h200 = card("NVIDIA H200:9.0:132", H200_SMEM);
    gf_planner with = { ev, &h200, &gf_kernel_modules, false };
    gf_planner without = { ev, &h200, &gf_module_provider_embedded, false };
    gf_route *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(gf_plan_all(&with, &a, &na), 0);
    assert_int_equal(gf_plan_all(&without, &b, &nb), 0);
    assert_int_equal(na, nb);
    size_t own = 0;
    for (size_t i = 0; i < na; i++) {
        if (a[i].kind != b[i].kind || a[i].why != b[i].why)
            fail_msg("%s batch %d %s: %s (%s) with the kernels' step, %s without", a[i].boundary,
                     a[i].batch, gf_math_name(a[i].math), gf_route_kind_name(a[i].kind),
                     a[i].detail, gf_route_kind_name(b[i].kind));
        own += a[i].kind == GF_ROUTE_OWN;
    }
    printf("H200: %zu own routes of %zu, none refused\n", own, na);
    free(a);
    free(b);
    gf_evidence_destroy(&ev);
}

/* The embedded lstm module at tier sm90, or skip (a build without nvcc). */
static void embedded_sha(const char *area, const char *tier, char sha[GF_SHA256_HEX_LEN])
{
    for (const gf_ptx_blob *p = gf_ptx_blobs; p->area; p++)
        if (strcmp(p->area, area) == 0 && strcmp(p->tier, tier) == 0) {
            gf_sha256_hex(p->text, p->len, sha);
            return;
        }
    printf("no embedded %s %s module (built without nvcc): skipping\n", area, tier);
    skip();
}

static void test_a_refusal_is_the_library_route_with_its_reason(void **state)
{
    (void)state;
    char sha[GF_SHA256_HEX_LEN];
    embedded_sha("lstm", "sm90", sha);
    fx_binding b = fx_h200_lstm();
    b.sha = sha;   /* binds the module this build embeds */
    fx_dir dir;
    fx_init(&dir, "fbank, sincnet, segconv, lstm, resnet, pooling, embedding, dense");
    fx_table(&dir, "t.yaml", &b, 1);
    gf_evidence *ev = NULL;
    assert_int_equal(gf_evidence_open(dir.dir, &ev), 0);
    gf_card_identity h200 = card("NVIDIA H200:9.0:132", H200_SMEM);
    gf_planner pl = { ev, &h200, &gf_kernel_modules, false };
    gf_route r;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_OWN);
    /* The same binding on a card whose blocks hold 48 KiB: refused, with why. */
    gf_card_identity small = card("NVIDIA H200:9.0:132", 48 * 1024);
    pl.card = &small;
    assert_int_equal(gf_plan_route(&pl, "lstm.stack", 32, GF_MATH_FP32, &r), 0);
    assert_int_equal(r.kind, GF_ROUTE_LIBRARY);
    assert_int_equal(r.why, GF_WHY_REFUSED);
    assert_string_equal(r.binding->id, "lstm-h200");
    assert_non_null(strstr(r.detail, "binding 'lstm-h200': the kernel refuses: gf_lstm_rec_v1 "
                                     "needs 133632 bytes"));
    gf_evidence_destroy(&ev);
    fx_cleanup(&dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_refuse_what_they_cannot_run),
        cmocka_unit_test(test_the_h200_plan_keeps_every_bound_route),
        cmocka_unit_test(test_a_refusal_is_the_library_route_with_its_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
