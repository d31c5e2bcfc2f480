/* test_gpu_batcher.c — windows of several recordings in one network batch
 * on card 0 (diar/batcher.h, diar/netbatch.h), in fp32 and tf32: every
 * window's activity, log-probabilities and embeddings are bit for bit the
 * same whether the recording runs through its own pipeline's batches (as
 * `diarize --local` and a worker without batch_jobs run it), alone through
 * the batcher, or beside two others whose windows share its batches. The
 * GPU backend is fixed_batch, so netbatch pads every batch to the capacity;
 * the test also prints how many values of 3 windows differ without the
 * padding, a batch of 3 on its own row against the same windows in a padded
 * batch (the reason for it). Model files: GF_TEST_MODELS (random weights do:
 * tools/gpu-session writes them); skips without a CUDA device or without
 * GF_TEST_MODELS. */
#include "common/card.h"
#include "common/devstats.h"
#include "common/error.h"
#include "common/util.h"
#include "diar/backend_gpu.h"
#include "diar/batcher.h"
#include "diar/kernel_plan.h"
#include "diar/netbatch.h"
#include "diar/pipeline.h"
#include "route/plan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static gf_card_identity card;
static gf_route_plan *plan;
static const char *models;

#define CAP 32
#define NREC 3
static const int sizes[NREC] = { 5, 37, 3 };

typedef struct {
    int nwin;
    float *span;
    float *out[3];   /* seg, emb, logits */
    float *ref[3];
    gf_diar_backend client;
    int rc;
} rec;

static const size_t per[3] = { GF_DIAR_FRAMES * GF_DIAR_SPEAKERS,
                               GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM,
                               GF_DIAR_FRAMES * GF_DIAR_CLASSES };

static uint64_t seed = 0xba7c4;

static void rec_make(rec *r, int nwin)
{
    memset(r, 0, sizeof *r);
    r->nwin = nwin;
    size_t samples = (size_t)(nwin - 1) * GF_DIAR_STEP + GF_DIAR_WINDOW;
    r->span = gf_malloc(samples * sizeof(float));
    for (size_t i = 0; i < samples; i++)   /* tones and noise in bursts, speech-like enough */
        r->span[i] = gf_rand_sym(&seed, 0.01f)
                     + (float)((i / 8000) % 3) * 0.05f * sinf((float)i * (0.02f + 0.01f * (float)(i / 40000 % 4)));
    for (int k = 0; k < 3; k++) {
        r->out[k] = gf_calloc((size_t)nwin * per[k], sizeof(float));
        r->ref[k] = gf_calloc((size_t)nwin * per[k], sizeof(float));
    }
}

static void rec_free(rec *r)
{
    free(r->span);
    for (int k = 0; k < 3; k++) {
        free(r->out[k]);
        free(r->ref[k]);
    }
}

/* Windows [w0, w0 + n) of r, into its outputs or its reference. */
static gf_diar_piece piece(rec *r, int w0, int n, bool ref)
{
    float **o = ref ? r->ref : r->out;
    return (gf_diar_piece){
        .in = { .samples = r->span + (size_t)w0 * GF_DIAR_STEP, .windows = n,
                .step = GF_DIAR_STEP },
        .seg = o[0] + (size_t)w0 * per[0], .emb = o[1] + (size_t)w0 * per[1],
        .logits = o[2] + (size_t)w0 * per[2], .exclude_overlap = true,
    };
}

static size_t differing(const rec *r)
{
    size_t d = 0;
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < (size_t)r->nwin * per[k]; i++)
            d += memcmp(&r->out[k][i], &r->ref[k][i], sizeof(float)) != 0;
    return d;
}

static void *client_main(void *arg)
{
    rec *r = arg;
    /* the whole recording as one request, which the batcher cuts where its
     * batches end: all three are queued behind the gated first batch (a
     * client sending a batch at a time could find the batcher gone past it,
     * and nothing mixed; the card showed that) */
    gf_diar_piece p = piece(r, 0, r->nwin, false);
    r->rc = r->client.run_batch(r->client.ctx, &p, 1, NULL, NULL);
    return NULL;
}

/* The GPU backend behind a gate: the batcher's first segmentation call
 * waits until the gate opens, so that the test can have every client
 * queued behind it and the batches that follow mix their windows. */
typedef struct {
    gf_diar_backend in;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool closed;
} gated;

static int g_segment_spans(void *ctx, const gf_diar_span *spans, int n, float *logp,
                           gf_devstats *stats)
{
    gated *g = ctx;
    pthread_mutex_lock(&g->mu);
    while (g->closed)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return g->in.segment_spans(g->in.ctx, spans, n, logp, stats);
}

static int g_fbank(void *ctx, const float *wave, int B, float *feats, gf_devstats *stats)
{
    gated *g = ctx;
    return g->in.fbank(g->in.ctx, wave, B, feats, stats);
}

static int g_embed(void *ctx, const float *fbank, int B, const int *job_window,
                   const float *masks, int n_jobs, float *emb, gf_devstats *stats)
{
    gated *g = ctx;
    return g->in.embed(g->in.ctx, fbank, B, job_window, masks, n_jobs, emb, stats);
}

static void g_destroy(void *ctx)
{
    gated *g = ctx;
    g->in.destroy(g->in.ctx);
}

static gf_diar_backend gate(gated *g, gf_diar_backend *in)
{
    g->in = *in;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->closed = false;
    gf_diar_backend out = *in;
    out.segment_spans = g_segment_spans;
    out.fbank = g_fbank;
    out.embed = g_embed;
    out.destroy = g_destroy;
    out.pin = NULL;
    out.unpin = NULL;
    out.ctx = g;
    return out;
}

static void gate_set(gated *g, bool closed)
{
    pthread_mutex_lock(&g->mu);
    g->closed = closed;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static int setup(void **state)
{
    (void)state;
    gf_device_conf conf = { .index = 0, .kind = GF_DEVICE_CUDA };
    int count = 0;
    models = getenv("GF_TEST_MODELS");
    if (!models || gf_card_cuda_count(&count) != 0 || count == 0 ||
        gf_card_identify(&conf, &card) != 0)
        return 0;   /* every case skips */
    plan = gf_kernel_plan_new(&card);
    return plan ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    gf_route_plan_destroy(&plan);
    return 0;
}

static void mixed_batches(gf_math math)
{
    if (!plan) {
        printf("no CUDA device or no GF_TEST_MODELS: skipping\n");
        skip();
    }
    gf_diar_backend be;
    const char *ov = getenv("GF_TEST_OVERLAP");   /* the backend's second stream: on unless "0" */
    assert_int_equal(gf_diar_backend_gpu(plan, models, CAP, math, !(ov && strcmp(ov, "0") == 0),
                                         &be), 0);
    gf_diar_netbatch *nb = gf_diar_netbatch_new(CAP);
    rec r[NREC];
    for (int i = 0; i < NREC; i++)
        rec_make(&r[i], sizes[i]);

    /* the references: each recording through its own pipeline's batches */
    assert_true(be.fixed_batch);
    for (int i = 0; i < NREC; i++)
        for (int w0 = 0; w0 < r[i].nwin; w0 += CAP) {
            gf_diar_piece p = piece(&r[i], w0, r[i].nwin - w0 < CAP ? r[i].nwin - w0 : CAP, true);
            assert_int_equal(gf_diar_netbatch_run(nb, &be, &p, 1, NULL, NULL), 0);
        }
    /* without the padding: 3 windows alone, on their own row */
    be.fixed_batch = false;
    gf_diar_piece alone = piece(&r[1], 0, 3, false);
    assert_int_equal(gf_diar_netbatch_run(nb, &be, &alone, 1, NULL, NULL), 0);
    be.fixed_batch = true;
    size_t diff = 0;
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < 3 * per[k]; i++)
            diff += memcmp(&r[1].out[k][i], &r[1].ref[k][i], sizeof(float)) != 0;
    printf("%s, unpadded: %zu of %zu values of 3 windows differ between a batch of 3 and the "
           "same windows in a batch padded to %d\n", gf_math_name(math), diff,
           3 * (per[0] + per[1] + per[2]), CAP);
    gf_diar_netbatch_destroy(&nb);
    gated g;
    gf_diar_backend gb = gate(&g, &be);
    gf_diar_batcher *b = gf_diar_batcher_new(&gb, CAP);
    /* each recording alone through the batcher */
    for (int i = 0; i < NREC; i++) {
        r[i].client = gf_diar_batcher_client(b);
        r[i].rc = 0;
        client_main(&r[i]);
        assert_int_equal(r[i].rc, 0);
        size_t d = differing(&r[i]);
        if (d)
            fail_msg("%s: recording %d (%d windows) alone through the batcher: %zu values "
                     "differ from its own pipeline's batches", gf_math_name(math), i, r[i].nwin, d);
        for (int k = 0; k < 3; k++)   /* the run beside the others writes them again */
            memset(r[i].out[k], 0, (size_t)r[i].nwin * per[k] * sizeof(float));
    }
    /* three clients at once: their windows share batches, cut where they
     * fall (the first batch held until all three are queued) */
    gate_set(&g, true);
    pthread_t th[NREC];
    for (int i = 0; i < NREC; i++)
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &r[i]), 0);
    gf_diar_batcher_counts c;
    for (int k = 0; k < 20000; k++) {   /* 20 s at most */
        gf_diar_batcher_counts_get(b, &c);
        if (c.waiting >= NREC - 1)
            break;
        struct timespec ms = { 0, 1000 * 1000 };
        nanosleep(&ms, NULL);
    }
    gate_set(&g, false);
    for (int i = 0; i < NREC; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].rc, 0);
        size_t d = differing(&r[i]);
        if (d)
            fail_msg("%s: recording %d (%d windows) through the batcher beside the others: %zu "
                     "values differ from its own pipeline's batches", gf_math_name(math), i,
                     r[i].nwin, d);
    }
    gf_diar_batcher_counts_get(b, &c);
    assert_true(c.most_jobs >= 2);
    printf("%s, padded: its own batches, alone and beside others identical; the batcher ran %llu "
           "batches of %llu windows, up to %d recordings in one\n", gf_math_name(math),
           (unsigned long long)c.batches, (unsigned long long)c.windows, c.most_jobs);
    gf_diar_batcher_destroy(&b);
    pthread_mutex_destroy(&g.mu);
    pthread_cond_destroy(&g.cv);
    for (int i = 0; i < NREC; i++)
        rec_free(&r[i]);
}

static void test_mixed_batches_fp32(void **state)
{
    (void)state;
    mixed_batches(GF_MATH_FP32);
}

static void test_mixed_batches_tf32(void **state)
{
    (void)state;
    mixed_batches(GF_MATH_TF32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_batches_fp32),
        cmocka_unit_test(test_mixed_batches_tf32),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
