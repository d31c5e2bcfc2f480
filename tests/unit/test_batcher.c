/* test_batcher.c — several pipelines' batches through one batcher
 * (diar/batcher.h): each client gets, byte for byte, what its windows get
 * through the networks on their own (diar/netbatch.h), however the batcher
 * cut and mixed them; a batch carries the windows of several clients; a
 * failed batch fails its clients and the batcher goes on; a backend whose
 * numbers depend on the batch's size (fixed_batch) sees every batch padded
 * to the capacity, by its own pipeline's netbatch and through the batcher,
 * and its windows' results stay those of the unpadded run.
 *
 * The networks are a small backend of the test's own behind the same table
 * (the trained ones need model files a unit test does not have; the
 * integration tests run the real ones, tests/integration/jobs_diarize_batch.sh):
 * its segmentation scores each frame from the frame's own samples, and its
 * embedding pools the real CPU fbank of the window (netbatch computes it)
 * under the real pooling masks, so every output depends on its own window
 * and on nothing else, as the kernels' outputs do. Its first batch can be
 * held at a gate, so that the test knows the others are queued behind it. */
#include "common/devstats.h"
#include "common/error.h"
#include "common/util.h"
#include "diar/batcher.h"
#include "diar/netbatch.h"
#include "diar/pipeline.h"
#include "kernels/fbank/fbank_cpu.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAP 8

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool gate_closed;   /* the next segment call waits until it opens */
    bool in_gate;       /* a call is waiting at it */
    int fail_at;        /* the call number (1-based) that fails; 0: none */
    int calls;
    int min_B, max_B;   /* the sizes the segmentation was called with */
} test_net;

static void sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ms * 1000000L };
    nanosleep(&ts, NULL);
}

static int t_segment(void *ctx, const float *wave, int B, float *logp, gf_devstats *stats)
{
    (void)stats;
    test_net *t = ctx;
    pthread_mutex_lock(&t->mu);
    int call = ++t->calls;
    if (!t->min_B || B < t->min_B)
        t->min_B = B;
    if (B > t->max_B)
        t->max_B = B;
    while (t->gate_closed) {
        t->in_gate = true;
        pthread_cond_wait(&t->cv, &t->mu);
    }
    t->in_gate = false;
    bool fail = t->fail_at == call;
    pthread_mutex_unlock(&t->mu);
    if (fail)
        return GF_EDEVICE;
    for (int b = 0; b < B; b++)
        for (int f = 0; f < GF_DIAR_FRAMES; f++) {
            const float *x = wave + (size_t)b * GF_DIAR_WINDOW + (size_t)f * GF_DIAR_FRAME_STEP;
            float e = 0.0f;
            for (int k = 0; k < GF_DIAR_FRAME_LEN; k++)
                e += x[k] * x[k];
            float *lp = logp + ((size_t)b * GF_DIAR_FRAMES + (size_t)f) * GF_DIAR_CLASSES;
            for (int c = 0; c < GF_DIAR_CLASSES; c++)   /* the class the energy falls in wins */
                lp[c] = -fabsf(e * 0.5f - (float)c);
        }
    return 0;
}

static int t_embed(void *ctx, const float *fbank, int B, const int *job_window,
                   const float *masks, int n_jobs, float *emb, gf_devstats *stats)
{
    (void)ctx;
    (void)B;
    (void)stats;
    for (int j = 0; j < n_jobs; j++) {
        const float *F = fbank + (size_t)job_window[j] * GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS;
        const float *m = masks + (size_t)j * GF_DIAR_FRAMES;
        for (int k = 0; k < GF_DIAR_EMB_DIM; k++) {
            double s = 0.0;
            for (int f = 0; f < GF_DIAR_FRAMES; f++)
                s += m[f] * F[(size_t)(f * GF_DIAR_FBANK_FRAMES / GF_DIAR_FRAMES) * GF_FBANK_BINS
                              + (size_t)(k % GF_FBANK_BINS)];
            emb[(size_t)j * GF_DIAR_EMB_DIM + (size_t)k] = (float)(s / GF_DIAR_FRAMES) + (float)k;
        }
    }
    return 0;
}

static test_net net;

static gf_diar_backend test_backend(void)
{
    return (gf_diar_backend){ .name = "test", .route = "cpu", .segment = t_segment,
                              .embed = t_embed, .ctx = &net };
}

/* One client's recording: nwin windows as a span (step 1 s), with its
 * outputs, and the reference outputs of the same windows on their own. */
typedef struct {
    int nwin;
    float *span;
    float *seg, *emb, *logits;
    float *ref_seg, *ref_emb, *ref_logits;
    gf_diar_backend client;
    gf_devstats *stats;
    int rc;
} rec;

static uint64_t seed = 0x51ced;

static void rec_make(rec *r, int nwin)
{
    r->nwin = nwin;
    size_t samples = (size_t)(nwin - 1) * GF_DIAR_STEP + GF_DIAR_WINDOW;
    r->span = gf_malloc(samples * sizeof(float));
    for (size_t i = 0; i < samples; i++)   /* bursts of different loudness */
        r->span[i] = gf_rand_sym(&seed, 0.02f + 0.09f * (float)((i / 12000) % 5));
    size_t W = (size_t)nwin;
    r->seg = gf_malloc(W * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float));
    r->emb = gf_malloc(W * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM * sizeof(float));
    r->logits = gf_malloc(W * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof(float));
    r->ref_seg = gf_malloc(W * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float));
    r->ref_emb = gf_malloc(W * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM * sizeof(float));
    r->ref_logits = gf_malloc(W * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof(float));
    r->stats = gf_devstats_new();
}

static void rec_free(rec *r)
{
    free(r->span);
    free(r->seg);
    free(r->emb);
    free(r->logits);
    free(r->ref_seg);
    free(r->ref_emb);
    free(r->ref_logits);
    gf_devstats_destroy(&r->stats);
}

static gf_diar_piece piece_of(rec *r, bool ref)
{
    return (gf_diar_piece){
        .in = { .samples = r->span, .windows = r->nwin, .step = GF_DIAR_STEP },
        .seg = ref ? r->ref_seg : r->seg, .emb = ref ? r->ref_emb : r->emb,
        .logits = ref ? r->ref_logits : r->logits, .exclude_overlap = true,
    };
}

/* The recording's windows through a netbatch of its own, a pipeline's
 * batches of CAP, into its reference outputs or its outputs. */
static void own_batches(rec *r, gf_diar_backend *be, bool ref)
{
    gf_diar_netbatch *nb = gf_diar_netbatch_new(CAP);
    for (int w0 = 0; w0 < r->nwin; w0 += CAP) {
        gf_diar_piece p = piece_of(r, ref);
        int n = r->nwin - w0 < CAP ? r->nwin - w0 : CAP;
        p.in.samples += (size_t)w0 * GF_DIAR_STEP;
        p.in.windows = n;
        p.seg += (size_t)w0 * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS;
        p.emb += (size_t)w0 * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM;
        p.logits += (size_t)w0 * GF_DIAR_FRAMES * GF_DIAR_CLASSES;
        assert_int_equal(gf_diar_netbatch_run(nb, be, &p, 1, NULL, NULL), 0);
    }
    gf_diar_netbatch_destroy(&nb);
}

/* The reference: the recording's windows alone, one netbatch of its own. */
static void reference(rec *r)
{
    gf_diar_backend be = test_backend();
    own_batches(r, &be, true);
}

static void *client_main(void *arg)
{
    rec *r = arg;
    gf_diar_piece p = piece_of(r, false);
    gf_diar_times t = { 0 };
    r->rc = r->client.run_batch(r->client.ctx, &p, 1, r->stats, &t);
    return NULL;
}

static void same_bytes(const rec *r)
{
    size_t W = (size_t)r->nwin;
    assert_memory_equal(r->seg, r->ref_seg, W * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float));
    assert_memory_equal(r->logits, r->ref_logits,
                        W * GF_DIAR_FRAMES * GF_DIAR_CLASSES * sizeof(float));
    assert_memory_equal(r->emb, r->ref_emb, W * GF_DIAR_SPEAKERS * GF_DIAR_EMB_DIM * sizeof(float));
}

static int setup(void **state)
{
    (void)state;
    memset(&net, 0, sizeof net);
    pthread_mutex_init(&net.mu, NULL);
    pthread_cond_init(&net.cv, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    pthread_mutex_destroy(&net.mu);
    pthread_cond_destroy(&net.cv);
    return 0;
}

static void wait_until_waiting(gf_diar_batcher *b, int n)
{
    gf_diar_batcher_counts c;
    for (int i = 0; i < 20000; i++) {   /* 20 s at most */
        gf_diar_batcher_counts_get(b, &c);
        if (c.waiting >= n)
            return;
        sleep_ms(1);
    }
    fail_msg("%d requests waiting after 20 s, not %d", c.waiting, n);
}

static void open_gate(void)
{
    pthread_mutex_lock(&net.mu);
    net.gate_closed = false;
    pthread_cond_broadcast(&net.cv);
    pthread_mutex_unlock(&net.mu);
}

/* Four recordings of 5, 7, 3 and 8 windows at once, batches of 8: the
 * batcher cuts and mixes them, and each gets exactly its own results. */
static void test_mixed_batches_give_each_its_own_results(void **state)
{
    (void)state;
    static const int sizes[4] = { 5, 7, 3, 8 };
    rec r[4];
    for (int i = 0; i < 4; i++) {
        rec_make(&r[i], sizes[i]);
        reference(&r[i]);
    }
    gf_diar_backend be = test_backend();
    gf_diar_batcher *b = gf_diar_batcher_new(&be, CAP);
    assert_null(be.ctx);   /* taken */
    net.calls = 0;
    net.gate_closed = true;   /* the first batch waits until the others are queued */
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        r[i].client = gf_diar_batcher_client(b);
        assert_null(r[i].client.destroy);
        assert_string_equal(r[i].client.name, "test");
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &r[i]), 0);
        if (i == 0) {   /* its batch is at the gate before the others come */
            for (int k = 0; k < 20000; k++) {
                pthread_mutex_lock(&net.mu);
                bool at = net.in_gate;
                pthread_mutex_unlock(&net.mu);
                if (at)
                    break;
                sleep_ms(1);
            }
        }
    }
    wait_until_waiting(b, 3);
    open_gate();
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].rc, 0);
        same_bytes(&r[i]);
    }
    gf_diar_batcher_counts c;
    gf_diar_batcher_counts_get(b, &c);
    assert_int_equal(c.windows, 5 + 7 + 3 + 8);
    /* 5 alone, then 7+1, 2+6, 2: four batches, the middle ones of two jobs */
    assert_int_equal(c.batches, 4);
    assert_int_equal(c.most_jobs, 2);
    assert_int_equal(c.waiting, 0);
    gf_diar_batcher_destroy(&b);
    assert_null(b);
    gf_diar_batcher_destroy(&b);   /* safe twice */
    for (int i = 0; i < 4; i++)
        rec_free(&r[i]);
}

/* A batch that fails fails the clients in it; the batcher goes on with the
 * next client's windows. */
static void test_a_failed_batch_fails_its_clients_only(void **state)
{
    (void)state;
    rec r[2];
    rec_make(&r[0], 4);
    rec_make(&r[1], 6);
    reference(&r[1]);
    gf_diar_backend be = test_backend();
    gf_diar_batcher *b = gf_diar_batcher_new(&be, CAP);
    net.calls = 0;
    net.fail_at = 1;   /* the first batch: the first client's alone */
    r[0].client = gf_diar_batcher_client(b);
    client_main(&r[0]);
    assert_int_equal(r[0].rc, GF_EDEVICE);
    r[1].client = gf_diar_batcher_client(b);
    client_main(&r[1]);
    assert_int_equal(r[1].rc, 0);
    same_bytes(&r[1]);
    net.fail_at = 0;
    gf_diar_batcher_destroy(&b);
    rec_free(&r[0]);
    rec_free(&r[1]);
}

/* A batch larger than the capacity is split; whole windows (step 10 s)
 * go through as well as spans. */
static void test_a_large_request_is_split(void **state)
{
    (void)state;
    rec r;
    rec_make(&r, 19);
    reference(&r);
    gf_diar_backend be = test_backend();
    gf_diar_batcher *b = gf_diar_batcher_new(&be, CAP);
    r.client = gf_diar_batcher_client(b);
    client_main(&r);
    assert_int_equal(r.rc, 0);
    same_bytes(&r);
    gf_diar_batcher_counts c;
    gf_diar_batcher_counts_get(b, &c);
    assert_int_equal(c.batches, 3);   /* 8, 8, 3 */

    /* the same windows laid out whole, end to end */
    float *whole = gf_malloc((size_t)r.nwin * GF_DIAR_WINDOW * sizeof(float));
    for (int w = 0; w < r.nwin; w++)
        memcpy(whole + (size_t)w * GF_DIAR_WINDOW, r.span + (size_t)w * GF_DIAR_STEP,
               GF_DIAR_WINDOW * sizeof(float));
    memset(r.seg, 0, (size_t)r.nwin * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float));
    gf_diar_piece p = piece_of(&r, false);
    p.in.samples = whole;
    p.in.step = GF_DIAR_WINDOW;
    assert_int_equal(r.client.run_batch(r.client.ctx, &p, 1, NULL, NULL), 0);
    same_bytes(&r);
    free(whole);
    gf_diar_batcher_destroy(&b);
    rec_free(&r);
}

/* fixed_batch: a recording of 11 windows (batches of 8 and 3) through its
 * own netbatch and through the batcher; the backend is only ever called with
 * 8 windows, and the results are those of the unpadded reference. */
static void test_fixed_batch_pads_to_the_capacity(void **state)
{
    (void)state;
    rec r;
    rec_make(&r, 11);
    reference(&r);   /* unpadded: batches of 8 and 3 */
    gf_diar_backend be = test_backend();
    be.fixed_batch = true;
    net.min_B = net.max_B = 0;
    own_batches(&r, &be, false);
    assert_int_equal(net.min_B, CAP);
    assert_int_equal(net.max_B, CAP);
    same_bytes(&r);

    memset(r.seg, 0, (size_t)r.nwin * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS * sizeof(float));
    net.min_B = net.max_B = 0;
    gf_diar_batcher *b = gf_diar_batcher_new(&be, CAP);
    r.client = gf_diar_batcher_client(b);
    client_main(&r);
    assert_int_equal(r.rc, 0);
    same_bytes(&r);
    assert_int_equal(net.min_B, CAP);
    gf_diar_batcher_counts c;
    gf_diar_batcher_counts_get(b, &c);
    assert_int_equal(c.windows, 11);   /* the padding is not counted */
    gf_diar_batcher_destroy(&b);

    /* not fixed_batch: the last batch runs at its own size */
    be = test_backend();
    net.min_B = net.max_B = 0;
    b = gf_diar_batcher_new(&be, CAP);
    r.client = gf_diar_batcher_client(b);
    client_main(&r);
    assert_int_equal(net.min_B, 3);
    gf_diar_batcher_destroy(&b);
    rec_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mixed_batches_give_each_its_own_results, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_batch_fails_its_clients_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_large_request_is_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_batch_pads_to_the_capacity, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
