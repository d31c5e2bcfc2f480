/* test_cluster.c — the whole community-1 recipe from the fixture's
 * segmentation and embeddings: every intermediate against the reference
 * (counts, kept embeddings, AHC, PLDA, VBx, hard clusters, frame-level
 * diarization) and the turns against pipeline_expected.rttm; speaker-count
 * constraints; input checks; the same result on one thread, on several, on
 * a pool the caller lends, and through the linkage hook (the card's path). */
#include "tests/unit/fixtures.h"
#include "common/log.h"
#include "diar/cluster/ahc.h"
#include "diar/cluster/cluster.h"
#include "diar/io/rttm.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

typedef struct {
    gf_npy_array *seg, *emb;
    gf_plda *plda;
} fx;

static int setup(void **state)
{
    gf_log_init("test_cluster", GF_LOG_ERROR);
    fx *f = calloc(1, sizeof *f);
    f->seg = fx_load("pipeline_segmentation_data.npy");
    f->emb = fx_load("pipeline_embeddings_data.npy");
    if (gf_plda_load(PLDADIR, &f->plda))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    gf_npy_destroy(&f->seg);
    gf_npy_destroy(&f->emb);
    gf_plda_destroy(&f->plda);
    free(f);
    return 0;
}

static size_t exact_i64(const char *what, const int64_t *want, const void *got, size_t n, int kind)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t g = kind == 0 ? ((const int64_t *)got)[i]
                    : kind == 1 ? ((const int *)got)[i]
                    : kind == 2 ? ((const int8_t *)got)[i]
                                : ((const uint8_t *)got)[i];
        if (g != want[i] && bad++ < 8)
            fprintf(stderr, "%s: element %zu: got %lld want %lld\n", what, i, (long long)g,
                    (long long)want[i]);
    }
    return bad;
}

static void test_every_stage_matches_reference(void **state)
{
    fx *f = *state;
    gf_cluster_opts o = gf_cluster_defaults();
    gf_cluster_result r;
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    struct {
        const char *file;
        const void *got;
        size_t n;
        int kind;
    } ints[] = {
        { "pipeline_speaker_counting_data.npy", r.count, 1601, 3 },
        { "pipeline_train_chunk_idx.npy", r.train_chunk, 27, 0 },
        { "pipeline_train_speaker_idx.npy", r.train_spk, 27, 0 },
        { "pipeline_ahc_clusters.npy", r.ahc, 27, 1 },
        { "pipeline_hard_clusters.npy", r.hard, 54, 2 },
    };
    assert_int_equal(r.n_total, 1601);
    assert_int_equal(r.n_train, 27);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        gf_npy_array *a = fx_load(ints[i].file);
        assert_int_equal(a->count, ints[i].n);
        int64_t *w = gf_npy_to_i64(a);
        assert_int_equal(exact_i64(ints[i].file, w, ints[i].got, ints[i].n, ints[i].kind), 0);
        free(w);
        gf_npy_destroy(&a);
    }
    gf_npy_array *fea = fx_load("pipeline_plda_features.npy");
    assert_int_equal(fx_compare("plda features", r.fea, fea->data, 27 * 128, 0.0, 1e-6), 0);
    gf_npy_array *g = fx_load("pipeline_vbx_gamma.npy"), *pi = fx_load("pipeline_vbx_pi.npy");
    assert_int_equal(r.n_ahc, 2);
    assert_int_equal(fx_compare("vbx gamma", r.gamma, g->data, 54, 1e-4, 0.0), 0);
    assert_int_equal(fx_compare("vbx pi", r.pi, pi->data, 2, 1e-4, 0.0), 0);
    gf_npy_array *dd = fx_load("pipeline_discrete_diarization_data.npy");
    assert_int_equal(r.n_clusters, 2);
    double *got = malloc(1601 * 2 * sizeof *got), *want = gf_npy_to_f64(dd);
    for (size_t i = 0; i < 1601 * 2; i++)
        got[i] = r.diar[i];
    assert_int_equal(fx_compare("discrete diarization", got, want, 1601 * 2, 0.0, 0.0), 0);
    gf_rttm *ref = NULL;
    assert_int_equal(gf_rttm_read(FIXDIR "pipeline_expected.rttm", &ref), 0);
    assert_int_equal(r.n_turns, ref->n);
    for (size_t i = 0; i < r.n_turns; i++) {
        char name[16];
        snprintf(name, sizeof name, "SPEAKER_%02d", r.turns[i].label);
        assert_string_equal(name, ref->turns[i].speaker);
        assert_true(fabs(r.turns[i].start - ref->turns[i].start) < 1e-3);
        assert_true(fabs((r.turns[i].end - r.turns[i].start) - ref->turns[i].duration) < 1e-3);
    }
    gf_rttm_destroy(&ref);
    free(got);
    free(want);
    gf_npy_destroy(&fea);
    gf_npy_destroy(&g);
    gf_npy_destroy(&pi);
    gf_npy_destroy(&dd);
    gf_cluster_result_free(&r);
}

static size_t speakers_in(const gf_cluster_result *r)
{
    int mx = -1;
    for (size_t i = 0; i < r->n_turns; i++)
        mx = r->turns[i].label > mx ? r->turns[i].label : mx;
    return (size_t)(mx + 1);
}

/* The CPU linkage behind the card's hook (gf_ahc_link_fn), so that the run
 * takes the path of a linkage on the card: the PLDA features computed on
 * their own thread meanwhile. */
static int cpu_link(void *ctx, gf_devstats *stats, const double *x, size_t n, size_t dim,
                    double *Z)
{
    (void)ctx, (void)stats;
    return gf_ahc_linkage_centroid(x, n, dim, Z);
}

/* Seconds of [a, b) covered by the turns of speaker k (-1: any), turns
 * merged first so that overlaps count once. */
static double covered(const gf_segment *t, size_t n, int k, double a, double b)
{
    double sum = 0.0, grid = 0.001;   /* 1 ms steps: the turns' own grid is 16.875 ms */
    for (double x = a + grid / 2; x < b; x += grid) {
        for (size_t i = 0; i < n; i++)
            if ((k < 0 || t[i].label == k) && t[i].start <= x && x < t[i].end) {
                sum += grid;
                break;
            }
    }
    return sum;
}

/* The exclusive diarization (pyannote's exclusive_speaker_diarization: the
 * count capped at one): no two of its turns meet; its speech is the regular
 * diarization's speech, time for time; each of its moments belongs to a
 * regular turn of the same speaker; the centroids, one per speaker, are
 * finite and not zero. */
static void test_exclusive_and_centroids(void **state)
{
    fx *f = *state;
    gf_cluster_opts o = gf_cluster_defaults();
    gf_cluster_result r;
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    assert_true(r.n_excl_turns > 0);
    double end = 0.0;
    for (size_t i = 0; i < r.n_turns; i++)
        end = r.turns[i].end > end ? r.turns[i].end : end;
    for (size_t i = 0; i < r.n_excl_turns; i++)
        for (size_t j = i + 1; j < r.n_excl_turns; j++)
            assert_false(r.excl_turns[i].start < r.excl_turns[j].end
                         && r.excl_turns[j].start < r.excl_turns[i].end);
    double regular = covered(r.turns, r.n_turns, -1, 0.0, end);
    double exclusive = covered(r.excl_turns, r.n_excl_turns, -1, 0.0, end);
    if (fabs(regular - exclusive) > 0.05)
        fail_msg("speech: regular %.3f s, exclusive %.3f s", regular, exclusive);
    for (size_t i = 0; i < r.n_excl_turns; i++) {
        const gf_segment *e = &r.excl_turns[i];
        double len = e->end - e->start;
        double in = covered(r.turns, r.n_turns, e->label, e->start, e->end);
        if (len - in > 0.02)
            fail_msg("exclusive turn %zu [%.3f, %.3f) of %d: %.3f s outside its regular turns", i,
                     e->start, e->end, e->label, len - in);
    }
    /* overlap exists in this recording: the exclusive one has less time in
     * all, counted per speaker */
    double per_regular = 0.0, per_excl = 0.0;
    for (size_t i = 0; i < r.n_turns; i++)
        per_regular += r.turns[i].end - r.turns[i].start;
    for (size_t i = 0; i < r.n_excl_turns; i++)
        per_excl += r.excl_turns[i].end - r.excl_turns[i].start;
    assert_true(per_excl <= per_regular + 1e-9);
    assert_int_equal(r.n_speakers, speakers_in(&r));
    assert_int_equal(r.dim, 256);
    for (size_t s = 0; s < r.n_speakers; s++) {
        double norm = 0.0;
        for (size_t d = 0; d < 256; d++) {
            assert_true(isfinite(r.centroids[s * 256 + d]));
            norm += (double)r.centroids[s * 256 + d] * r.centroids[s * 256 + d];
        }
        assert_true(norm > 0.0);
    }
    gf_cluster_result_free(&r);
}

static void test_linkage_hook_same_result(void **state)
{
    fx *f = *state;
    gf_cluster_opts o = gf_cluster_defaults();
    gf_cluster_result a, b;
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &a), 0);
    o.ahc_link = cpu_link;
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &b), 0);
    assert_int_equal(a.n_train, b.n_train);
    assert_int_equal(a.n_ahc, b.n_ahc);
    assert_memory_equal(a.ahc, b.ahc, a.n_train * sizeof *a.ahc);
    assert_memory_equal(a.fea, b.fea, a.n_train * gf_plda_dim(f->plda) * sizeof *a.fea);
    assert_memory_equal(a.gamma, b.gamma, a.n_train * a.n_ahc * sizeof *a.gamma);
    assert_memory_equal(a.hard, b.hard, 18 * 3 * sizeof *a.hard);
    assert_int_equal(a.n_turns, b.n_turns);
    for (size_t i = 0; i < a.n_turns; i++) {   /* field by field: the struct has padding */
        assert_true(a.turns[i].start == b.turns[i].start && a.turns[i].end == b.turns[i].end);
        assert_int_equal(a.turns[i].label, b.turns[i].label);
    }
    gf_cluster_result_free(&a);
    gf_cluster_result_free(&b);
}

static void test_speaker_constraints(void **state)
{
    fx *f = *state;
    gf_cluster_result r;
    gf_cluster_opts o = gf_cluster_defaults();
    o.num_speakers = 2;   /* what VBx finds anyway: same as automatic */
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    assert_int_equal(speakers_in(&r), 2);
    assert_int_equal(r.n_turns, 7);
    gf_cluster_result_free(&r);
    o = gf_cluster_defaults();
    o.min_speakers = 3;   /* forces k-means with 3 clusters */
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    assert_int_equal(r.n_centroids, 3);
    assert_true(speakers_in(&r) >= 2 && speakers_in(&r) <= 3);
    gf_cluster_result_free(&r);
    o = gf_cluster_defaults();
    o.max_speakers = 1;   /* one speaker, and at most one active per frame */
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    assert_int_equal(speakers_in(&r), 1);
    for (size_t t = 0; t < r.n_total; t++)
        assert_true(r.diar[t * r.n_clusters] <= 1.0f);
    gf_cluster_result_free(&r);
    o = gf_cluster_defaults();
    o.min_speakers = 40;   /* more than the 27 kept embeddings: capped, no NaN */
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    assert_int_equal(r.n_centroids, 27);
    for (size_t i = 0; i < 54; i++)
        assert_true(r.hard[i] >= -2 && r.hard[i] < 27);
    gf_cluster_result_free(&r);
    o = gf_cluster_defaults();
    o.min_speakers = 3;
    o.max_speakers = 2;
    assert_int_equal(gf_cluster_run(f->seg->data, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r),
                     GF_EINVAL);
}

static void test_input_checks(void **state)
{
    fx *f = *state;
    assert_int_equal(gf_cluster_check("seg", f->seg->data, "emb", f->emb->data, 18, 589, 3, 256,
                                      f->plda), 0);
    assert_int_equal(gf_cluster_check("seg", f->seg->data, "emb", f->emb->data, 18, 589, 3, 255,
                                      f->plda), GF_EINVAL);
    float *emb = malloc(f->emb->count * sizeof *emb);
    memcpy(emb, f->emb->data, f->emb->count * sizeof *emb);
    /* window 0 speaker 1 is active: a NaN embedding there is an error */
    for (int d = 0; d < 256; d++)
        emb[(0 * 3 + 1) * 256 + d] = NAN;
    assert_int_equal(gf_cluster_check("seg", f->seg->data, "emb", emb, 18, 589, 3, 256, f->plda),
                     GF_EINVAL);
    memcpy(emb, f->emb->data, f->emb->count * sizeof *emb);
    emb[(0 * 3 + 1) * 256 + 5] = NAN;   /* partly NaN */
    assert_int_equal(gf_cluster_check("seg", f->seg->data, "emb", emb, 18, 589, 3, 256, f->plda),
                     GF_EINVAL);
    free(emb);
    float *seg = malloc(f->seg->count * sizeof *seg);
    memcpy(seg, f->seg->data, f->seg->count * sizeof *seg);
    seg[1000] = 0.5f;
    assert_int_equal(gf_cluster_check("seg", seg, "emb", f->emb->data, 18, 589, 3, 256, f->plda),
                     GF_EINVAL);
    free(seg);
}

static void test_silence_gives_no_turns(void **state)
{
    fx *f = *state;
    float *seg = calloc(f->seg->count, sizeof *seg);
    gf_cluster_opts o = gf_cluster_defaults();
    gf_cluster_result r;
    assert_int_equal(gf_cluster_run(seg, f->emb->data, 18, 589, 3, 256, f->plda, &o, &r), 0);
    assert_int_equal(r.n_turns, 0);
    gf_cluster_result_free(&r);
    free(seg);
}

/* A generated recording of n_chunks windows: four speakers taking turns
 * in blocks, two to three local speakers per window (some overlapping,
 * some silent), embeddings around one direction per speaker. */
typedef struct {
    size_t n_chunks;
    float *seg;   /* n_chunks x 589 x 3 */
    float *emb;   /* n_chunks x 3 x 256 */
} gen_case;

static double gen_uniform(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (double)((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0);
}

static gen_case gen_recording(size_t n_chunks)
{
    enum { F = 589, S = 3, D = 256, G = 4 };
    gen_case g = { n_chunks, calloc(n_chunks * F * S, sizeof(float)),
                   malloc(n_chunks * S * D * sizeof(float)) };
    uint64_t rng = 7;
    float dir[G][D];
    for (int k = 0; k < G; k++)
        for (int d = 0; d < D; d++)
            dir[k][d] = (float)(gen_uniform(&rng) - 0.5);
    for (size_t c = 0; c < n_chunks; c++) {
        size_t first = c / 12;   /* global speakers (first + s) % G, turns every 12 s */
        for (size_t s = 0; s < S; s++) {
            /* speaker s holds frames [a, b); the third speaker is silent in
             * one window of three */
            size_t a = s == 0 ? 0 : s == 1 ? 250 + (c * 37) % 100 : 450;
            size_t b = s == 0 ? 300 + (c * 53) % 120 : s == 1 ? 560 : (c % 3 == 0 ? 450 : 589);
            for (size_t f = a; f < b; f++)
                g.seg[(c * F + f) * S + s] = 1.0f;
            float *e = g.emb + (c * S + s) * D;
            int k = (int)((first + s) % G);
            for (int d = 0; d < D; d++)
                e[d] = b > a ? dir[k][d] + (float)(0.35 * (gen_uniform(&rng) - 0.5)) : NAN;
        }
    }
    return g;
}

static void same_result(const gf_cluster_result *a, const gf_cluster_result *b, size_t cells)
{
    assert_int_equal(a->n_total, b->n_total);
    assert_memory_equal(a->count, b->count, a->n_total);
    assert_int_equal(a->n_train, b->n_train);
    assert_memory_equal(a->train_chunk, b->train_chunk, a->n_train * sizeof *a->train_chunk);
    assert_memory_equal(a->train_spk, b->train_spk, a->n_train * sizeof *a->train_spk);
    assert_int_equal(a->n_ahc, b->n_ahc);
    assert_memory_equal(a->ahc, b->ahc, a->n_train * sizeof *a->ahc);
    assert_true((a->fea == NULL) == (b->fea == NULL));
    if (a->fea) {
        assert_memory_equal(a->fea, b->fea, a->n_train * 128 * sizeof *a->fea);
        assert_memory_equal(a->gamma, b->gamma, a->n_train * a->n_ahc * sizeof *a->gamma);
        assert_memory_equal(a->pi, b->pi, a->n_ahc * sizeof *a->pi);
    }
    assert_int_equal(a->n_centroids, b->n_centroids);
    assert_memory_equal(a->hard, b->hard, cells);
    assert_int_equal(a->n_clusters, b->n_clusters);
    assert_memory_equal(a->diar, b->diar, a->n_total * a->n_clusters * sizeof *a->diar);
    assert_int_equal(a->n_turns, b->n_turns);
    for (size_t i = 0; i < a->n_turns; i++) {
        assert_true(a->turns[i].start == b->turns[i].start);
        assert_true(a->turns[i].end == b->turns[i].end);
        assert_int_equal(a->turns[i].label, b->turns[i].label);
    }
}

static void test_threads_do_not_change_results(void **state)
{
    fx *f = *state;
    /* 700 windows: several tasks in every split (frames, windows,
     * embeddings, points) */
    gen_case g = gen_recording(700);
    struct {
        int num_speakers;   /* 0: VBx decides; 6: forces k-means */
        bool plda;          /* false: the weight-free mode */
    } cases[] = { { 0, true }, { 6, true }, { 0, false } };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gf_cluster_result r[4];
        int threads[4] = { 1, 4, 3, 0 };   /* 0: the caller's pool of 2, below */
        gf_par *pool = gf_par_new(2);
        for (int t = 0; t < 4; t++) {
            gf_cluster_opts o = gf_cluster_defaults();
            o.num_speakers = cases[i].num_speakers;
            o.threads = threads[t];
            o.par = threads[t] ? NULL : pool;
            assert_int_equal(gf_cluster_run(g.seg, g.emb, g.n_chunks, 589, 3, 256,
                                            cases[i].plda ? f->plda : NULL, &o, &r[t]), 0);
        }
        assert_true(r[0].n_turns > 0 && r[0].n_train > 256);
        if (cases[i].num_speakers)
            assert_int_equal(r[0].n_centroids, (size_t)cases[i].num_speakers);
        same_result(&r[0], &r[1], g.n_chunks * 3);
        same_result(&r[0], &r[2], g.n_chunks * 3);
        same_result(&r[0], &r[3], g.n_chunks * 3);
        assert_int_equal(gf_par_threads(pool), 2);   /* borrowed: still there */
        gf_par_destroy(&pool);
        for (int t = 0; t < 4; t++)
            gf_cluster_result_free(&r[t]);
    }
    free(g.seg);
    free(g.emb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_stage_matches_reference),
        cmocka_unit_test(test_linkage_hook_same_result),
        cmocka_unit_test(test_exclusive_and_centroids),
        cmocka_unit_test(test_speaker_constraints),
        cmocka_unit_test(test_input_checks),
        cmocka_unit_test(test_silence_gives_no_turns),
        cmocka_unit_test(test_threads_do_not_change_results),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
