/* test_gpu_plan.c — the worker's route plan on card 0, end to end: the card
 * identified once and the plan made as the worker makes them
 * (gf_card_identify, gf_kernel_plan_new: worker/main.c, worker/agent.c), the
 * GPU backend built as the worker builds it (gf_diar_backend_gpu with that
 * plan: worker/diarjob.c), and then:
 *   - the routes the backend applied are READY's (gf_route_plan_text), row by
 *     row, for every call size it can be asked (each production batch up to
 *     32, and the library row for the sizes that are none), in both math
 *     modes, and applying changed nothing READY had said;
 *   - each call runs its size's row (the devstats name the route that ran),
 *     and a batch of 5 windows (the library row) gives the log-probabilities
 *     of the same windows in a batch of 8 (its own row).
 * Prints the own and library counts of each row. Model files: GF_TEST_MODELS
 * when set, else random weights written here (the test is about routes, not
 * about a trained network). Skips without a CUDA device. */
#include "common/card.h"
#include "common/devstats.h"
#include "common/error.h"
#include "diar/models.h"
#include "diar/pipeline.h"
#include "diar/backend_gpu.h"
#include "diar/kernel_plan.h"
#include "route/plan.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/stwrite.h"

static gf_card_identity card;       /* card 0, read once */
static gf_route_plan *plan;         /* its plan, made once */
static char models[4096];           /* the model files' folder */
static bool own_models;             /* written here (removed at the end) */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void)   /* uniform in [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

static float *add(stw *w, const char *name, int nd, int s0, int s1, int s2, int s3, float scale,
                  float offset)
{
    int sh[4] = { s0, s1, s2, s3 };
    float *p = stw_add(w, name, nd, sh);
    for (long i = 0; i < stw_numel(w, w->n - 1); i++)
        p[i] = offset + scale * frand();
    return p;
}

/* segmentation-3.0 with random weights (the shapes of MODELS.md). */
static int write_segmentation(const char *path)
{
    stw *w = calloc(1, sizeof *w);
    char name[96];
    add(w, "sincnet.wav_norm1d.weight", 1, 1, 0, 0, 0, 0.1f, 1.0f);
    add(w, "sincnet.wav_norm1d.bias", 1, 1, 0, 0, 0, 0.1f, 0.0f);
    float *lo = add(w, "sincnet.conv1d.0.filterbank.low_hz_", 2, 40, 1, 0, 0, 0.0f, 0.0f);
    float *bd = add(w, "sincnet.conv1d.0.filterbank.band_hz_", 2, 40, 1, 0, 0, 0.0f, 0.0f);
    for (int i = 0; i < 40; i++) {
        lo[i] = 30.0f + 180.0f * (float)i;
        bd[i] = 100.0f + 10.0f * (float)i;
    }
    float *win = add(w, "sincnet.conv1d.0.filterbank.window_", 1, 125, 0, 0, 0, 0.0f, 0.0f);
    float *n = add(w, "sincnet.conv1d.0.filterbank.n_", 2, 1, 125, 0, 0, 0.0f, 0.0f);
    for (int j = 0; j < 125; j++) {
        win[j] = 0.54f - 0.46f * cosf(2.0f * 3.14159265f * (float)j / 251.0f);
        n[j] = 2.0f * 3.14159265f * (float)(j - 125) / 16000.0f;
    }
    add(w, "sincnet.conv1d.1.weight", 3, 60, 80, 5, 0, 0.05f, 0.0f);
    add(w, "sincnet.conv1d.1.bias", 1, 60, 0, 0, 0, 0.05f, 0.0f);
    add(w, "sincnet.conv1d.2.weight", 3, 60, 60, 5, 0, 0.05f, 0.0f);
    add(w, "sincnet.conv1d.2.bias", 1, 60, 0, 0, 0, 0.05f, 0.0f);
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "sincnet.norm1d.%d.weight", i);
        add(w, name, 1, i ? 60 : 80, 0, 0, 0, 0.2f, 1.0f);
        snprintf(name, sizeof name, "sincnet.norm1d.%d.bias", i);
        add(w, name, 1, i ? 60 : 80, 0, 0, 0, 0.1f, 0.0f);
    }
    for (int l = 0; l < 4; l++)
        for (int d = 0; d < 2; d++) {
            const char *sfx = d ? "_reverse" : "";
            snprintf(name, sizeof name, "lstm.weight_ih_l%d%s", l, sfx);
            add(w, name, 2, 512, l ? 256 : 60, 0, 0, 0.08f, 0.0f);
            snprintf(name, sizeof name, "lstm.weight_hh_l%d%s", l, sfx);
            add(w, name, 2, 512, 128, 0, 0, 0.08f, 0.0f);
            snprintf(name, sizeof name, "lstm.bias_ih_l%d%s", l, sfx);
            add(w, name, 1, 512, 0, 0, 0, 0.05f, 0.0f);
            snprintf(name, sizeof name, "lstm.bias_hh_l%d%s", l, sfx);
            add(w, name, 1, 512, 0, 0, 0, 0.05f, 0.0f);
        }
    add(w, "linear.0.weight", 2, 128, 256, 0, 0, 0.06f, 0.0f);
    add(w, "linear.0.bias", 1, 128, 0, 0, 0, 0.05f, 0.0f);
    add(w, "linear.1.weight", 2, 128, 128, 0, 0, 0.08f, 0.0f);
    add(w, "linear.1.bias", 1, 128, 0, 0, 0, 0.05f, 0.0f);
    add(w, "classifier.weight", 2, 7, 128, 0, 0, 0.2f, 0.0f);
    add(w, "classifier.bias", 1, 7, 0, 0, 0, 0.1f, 0.0f);
    int rc = stw_write(w, path);
    stw_free(w);
    free(w);
    return rc;
}

static void conv_bn(stw *w, const char *conv, const char *bn, int co, int ci, int k)
{
    add(w, conv, 4, co, ci, k, k, sqrtf(2.0f / (float)(ci * k * k)), 0.0f);
    static const char *const parts[4] = { "weight", "bias", "running_mean", "running_var" };
    static const float scale[4] = { 0.2f, 0.1f, 0.1f, 0.5f }, offset[4] = { 0.8f, 0, 0, 1.0f };
    char name[96];
    for (int p = 0; p < 4; p++) {
        snprintf(name, sizeof name, "%s.%s", bn, parts[p]);
        add(w, name, 1, co, 0, 0, 0, scale[p], offset[p]);
    }
}

/* The WeSpeaker ResNet34 with random weights. */
static int write_embedding(const char *path)
{
    stw *w = calloc(1, sizeof *w);
    char cv[96], bn[96];
    conv_bn(w, "resnet.conv1.weight", "resnet.bn1", 32, 1, 3);
    static const int nb[4] = { 3, 4, 6, 3 };
    int cin = 32;
    for (int l = 0; l < 4; l++)
        for (int b = 0; b < nb[l]; b++) {
            int co = 32 << l;
            snprintf(cv, sizeof cv, "resnet.layer%d.%d.conv1.weight", l + 1, b);
            snprintf(bn, sizeof bn, "resnet.layer%d.%d.bn1", l + 1, b);
            conv_bn(w, cv, bn, co, cin, 3);
            snprintf(cv, sizeof cv, "resnet.layer%d.%d.conv2.weight", l + 1, b);
            snprintf(bn, sizeof bn, "resnet.layer%d.%d.bn2", l + 1, b);
            conv_bn(w, cv, bn, co, co, 3);
            if (b == 0 && l > 0) {
                snprintf(cv, sizeof cv, "resnet.layer%d.%d.shortcut.0.weight", l + 1, b);
                snprintf(bn, sizeof bn, "resnet.layer%d.%d.shortcut.1", l + 1, b);
                conv_bn(w, cv, bn, co, cin, 1);
            }
            cin = co;
        }
    add(w, "resnet.seg_1.weight", 2, 256, 5120, 0, 0, 0.02f, 0.0f);
    add(w, "resnet.seg_1.bias", 1, 256, 0, 0, 0, 0.1f, 0.0f);
    int rc = stw_write(w, path);
    stw_free(w);
    free(w);
    return rc;
}

static int setup(void **state)
{
    (void)state;
    gf_device_conf conf = { .index = 0, .kind = GF_DEVICE_CUDA };
    int count = 0;
    if (gf_card_cuda_count(&count) != 0 || count == 0 || gf_card_identify(&conf, &card) != 0)
        return 0;   /* no card: every case skips */
    plan = gf_kernel_plan_new(&card);
    if (!plan)
        return -1;   /* a card, and no plan: the worker would not start */
    const char *dir = getenv("GF_TEST_MODELS");
    if (dir) {
        snprintf(models, sizeof models, "%s", dir);
        return 0;
    }
    if (gf_test_mkdtemp(models, sizeof models, "gf_gpu_plan") != 0)
        return -1;
    own_models = true;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", models, GF_MODELS_SEGMENTATION);
    GF_TRY(write_segmentation(path));
    snprintf(path, sizeof path, "%s/%s", models, GF_MODELS_EMBEDDING);
    return write_embedding(path);
}

static int teardown(void **state)
{
    (void)state;
    gf_route_plan_destroy(&plan);
    if (own_models)
        gf_test_rmtree(models);
    return 0;
}

#define NEED_PLAN()                                             \
    do {                                                        \
        if (!plan) {                                            \
            printf("no CUDA device: skipping\n");               \
            skip();                                             \
        }                                                       \
    } while (0)

/* READY's route of (boundary, batch, math): "own" or "library". */
static const char *ready_route(json_object *ready, const char *boundary, int batch, gf_math math)
{
    json_object *routes;
    assert_true(json_object_object_get_ex(ready, "routes", &routes));
    for (size_t i = 0; i < json_object_array_length(routes); i++) {
        json_object *r = json_object_array_get_idx(routes, i), *b, *n, *m, *k;
        if (json_object_object_get_ex(r, "boundary", &b) &&
            json_object_object_get_ex(r, "batch", &n) && json_object_object_get_ex(r, "math", &m) &&
            json_object_object_get_ex(r, "route", &k) &&
            strcmp(json_object_get_string(b), boundary) == 0 && json_object_get_int(n) == batch &&
            strcmp(json_object_get_string(m), gf_math_name(math)) == 0)
            return json_object_get_string(k);
    }
    fail_msg("READY has no route for %s batch %d %s", boundary, batch, gf_math_name(math));
    return NULL;
}

static void test_the_backend_applies_the_ready_plan(void **state)
{
    (void)state;
    NEED_PLAN();
    char *before = gf_route_plan_text(plan);
    assert_non_null(before);
    json_object *ready = json_tokener_parse(before);
    assert_non_null(ready);
    printf("card 0: %s; plan: %zu own of %zu routes (evidence %s%s)\n", card.name,
           gf_route_plan_own(plan), gf_route_plan_count(plan), gf_route_plan_evidence_dir(plan),
           gf_route_plan_problem(plan) ? ": not valid" : "");
    for (int m = 0; m < GF_N_MATH; m++) {
        gf_diar_backend be;
        assert_int_equal(gf_diar_backend_gpu(plan, models, 32, (gf_math)m, true, &be), 0);
        const gf_route *routes;
        const int *batches;
        size_t rows = gf_diar_backend_gpu_routes(&be, &routes, &batches);
        assert_int_equal(rows, 3);   /* 1, 8, 32: every call of up to 32 windows fits one */
        size_t n = gf_boundary_count();
        for (size_t r = 0; r < rows; r++) {
            size_t own = 0;
            for (size_t i = 0; i < n; i++) {
                const gf_route *a = &routes[r * n + i];
                const char *name = gf_boundary_at(i)->name;
                assert_string_equal(a->boundary, name);
                assert_int_equal(a->math, m);
                const char *want = batches[r] ? ready_route(ready, name, batches[r], (gf_math)m)
                                              : "library";
                if (strcmp(gf_route_kind_name(a->kind), want) != 0)
                    fail_msg("%s batch %d %s: applied %s, READY says %s (%s)", name, batches[r],
                             gf_math_name((gf_math)m), gf_route_kind_name(a->kind), want,
                             a->detail);
                if (!batches[r])
                    assert_int_equal(a->why, GF_WHY_OFF_BATCH);
                own += a->kind == GF_ROUTE_OWN;
            }
            char size[32];
            if (batches[r])
                snprintf(size, sizeof size, "batch %d", batches[r]);
            else
                snprintf(size, sizeof size, "other sizes");
            printf("%s %-12s %2zu own, %2zu library: as READY says\n", gf_math_name((gf_math)m),
                   size, own, n - own);
        }
        be.destroy(be.ctx);
    }
    char *after = gf_route_plan_text(plan);
    assert_int_equal(gf_route_plan_revision(plan), 0);   /* nothing refused at load */
    assert_string_equal(before, after);                  /* READY's plan is the one that ran */
    free(before);
    free(after);
    json_object_put(ready);
}

/* The route the devstats name for stage (NULL: not timed). */
static const char *timed_route(const gf_devstats *st, const char *stage)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].stage, stage) == 0)
            return rows[i].route;
    return NULL;
}

static void test_each_call_runs_its_row(void **state)
{
    (void)state;
    NEED_PLAN();
    gf_diar_backend be;
    assert_int_equal(gf_diar_backend_gpu(plan, models, 32, GF_MATH_FP32, true, &be), 0);
    const gf_route *routes;
    const int *batches;
    size_t rows = gf_diar_backend_gpu_routes(&be, &routes, &batches), n = gf_boundary_count();
    const size_t samples = 31 * (size_t)GF_DIAR_STEP + GF_DIAR_WINDOW;
    float *span = malloc(samples * sizeof *span);
    for (size_t i = 0; i < samples; i++)
        span[i] = 0.1f * frand() * (float)(1.0 + sin((double)i / 4000.0));
    const size_t per = (size_t)GF_DIAR_FRAMES * GF_DIAR_CLASSES;
    float *logp[4];
    static const int sizes[4] = { 32, 5, 8, 1 };
    for (int k = 0; k < 4; k++) {
        logp[k] = malloc((size_t)sizes[k] * per * sizeof(float));
        gf_devstats *st = gf_devstats_new();
        gf_diar_span one = { .samples = span, .windows = sizes[k], .step = GF_DIAR_STEP };
        assert_int_equal(be.segment_spans(be.ctx, &one, 1, logp[k], st), 0);
        int row_batch = gf_route_plan_row(sizes[k]);
        size_t r = 0;
        while (r < rows && batches[r] != row_batch)
            r++;
        assert_true(r < rows);
        /* Every segmentation boundary ran its row's route. */
        static const char *const seg[] = { "sincnet.conv0.abs_pool", "segconv.conv1",
                                           "segconv.conv2", "lstm.stack", "dense.linear0",
                                           "dense.linear1", "dense.classifier" };
        for (size_t s = 0; s < sizeof seg / sizeof seg[0]; s++)
            for (size_t i = 0; i < n; i++)
                if (strcmp(routes[r * n + i].boundary, seg[s]) == 0) {
                    const char *ran = timed_route(st, seg[s]);
                    assert_non_null(ran);
                    if (strcmp(ran, gf_route_kind_name(routes[r * n + i].kind)) != 0)
                        fail_msg("a batch of %d: %s ran %s, its row says %s", sizes[k], seg[s],
                                 ran, gf_route_kind_name(routes[r * n + i].kind));
                }
        printf("a batch of %2d windows: row %s, lstm.stack %s\n", sizes[k],
               row_batch == sizes[k] ? "of its batch" : row_batch ? "of the next batch up" : "above every batch (library)",
               timed_route(st, "lstm.stack"));
        gf_devstats_destroy(&st);
    }
    /* The same windows through different rows: the same log-probabilities,
     * within float32 (both fp32; own kernels use float32 FMAs here). */
    double worst = 0.0;
    for (size_t i = 0; i < 5 * per; i++) {
        double d = fabs((double)logp[1][i] - (double)logp[2][i]);
        double d32 = fabs((double)logp[1][i] - (double)logp[0][i]);
        assert_true(isfinite(logp[1][i]));
        worst = fmax(worst, fmax(d, d32));
    }
    for (size_t i = 0; i < per; i++)
        worst = fmax(worst, fabs((double)logp[3][i] - (double)logp[0][i]));
    printf("windows 0-4 in batches of 5, 8 and 32 (window 0 also alone): largest difference "
           "%.3g\n", worst);
    assert_true(worst <= 2e-3);
    for (int k = 0; k < 4; k++)
        free(logp[k]);
    free(span);
    be.destroy(be.ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_backend_applies_the_ready_plan),
        cmocka_unit_test(test_each_call_runs_its_row),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
