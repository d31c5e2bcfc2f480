/* test_assign.c — embedding filtering (exact vs pipeline_train_*), and
 * constrained assignment from the reference's VBx responsibilities (exact
 * vs pipeline_hard_clusters); k-means on separated blobs. */
#include "tests/unit/fixtures.h"
#include "diar/cluster/assign.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static void test_filter_fixture_exact(void **state)
{
    (void)state;
    gf_npy_array *seg = fx_load("pipeline_segmentation_data.npy");
    gf_npy_array *emb = fx_load("pipeline_embeddings_data.npy");
    gf_npy_array *tc = fx_load("pipeline_train_chunk_idx.npy");
    gf_npy_array *ts = fx_load("pipeline_train_speaker_idx.npy");
    gf_npy_array *te = fx_load("pipeline_train_embeddings.npy");
    int64_t ci[54], si[54];
    size_t n = gf_assign_filter(seg->data, emb->data, 18, 589, 3, 256, 0.2, NULL, ci, si, NULL);
    assert_int_equal(n, 27);
    assert_memory_equal(ci, tc->data, 27 * sizeof(int64_t));
    assert_memory_equal(si, ts->data, 27 * sizeof(int64_t));
    for (size_t i = 0; i < n; i++)
        assert_memory_equal((float *)emb->data + ((size_t)ci[i] * 3 + (size_t)si[i]) * 256,
                            (float *)te->data + i * 256, 256 * sizeof(float));
    gf_npy_destroy(&seg);
    gf_npy_destroy(&emb);
    gf_npy_destroy(&tc);
    gf_npy_destroy(&ts);
    gf_npy_destroy(&te);
}

static void test_hard_clusters_fixture_exact(void **state)
{
    (void)state;
    gf_npy_array *seg = fx_load("pipeline_segmentation_data.npy");
    gf_npy_array *emb = fx_load("pipeline_embeddings_data.npy");
    gf_npy_array *te = fx_load("pipeline_train_embeddings.npy");
    gf_npy_array *g = fx_load("pipeline_vbx_gamma.npy");
    gf_npy_array *want = fx_load("pipeline_hard_clusters.npy");
    double cent[2 * 256], soft[54 * 2];
    gf_assign_centroids(te->data, 27, 256, g->data, 2, NULL, cent);
    gf_assign_scores(emb->data, 18, 3, 256, cent, 2, NULL, soft);
    int8_t hard[54];
    float act[54];
    int64_t ci[54], si[54];
    gf_assign_filter(seg->data, emb->data, 18, 589, 3, 256, 0.2, NULL, ci, si, act);
    gf_assign_hard(soft, act, 18, 3, 2, true, NULL, hard);
    /* the pipeline then marks speakers never active as unassigned */
    for (size_t c = 0; c < 18; c++)
        for (size_t s = 0; s < 3; s++) {
            float a = 0;
            for (size_t f = 0; f < 589; f++)
                a += ((float *)seg->data)[(c * 589 + f) * 3 + s];
            if (a == 0)
                hard[c * 3 + s] = -2;
        }
    size_t bad = 0;
    for (size_t i = 0; i < 54; i++)
        if (hard[i] != ((int8_t *)want->data)[i] && bad++ < 8)
            fprintf(stderr, "hard: window %zu speaker %zu: got %d want %d\n", i / 3, i % 3,
                    hard[i], ((int8_t *)want->data)[i]);
    assert_int_equal(bad, 0);
    /* each window's speakers in distinct clusters */
    for (size_t c = 0; c < 18; c++)
        for (size_t a = 0; a < 3; a++)
            for (size_t b = a + 1; b < 3; b++)
                assert_true(hard[c * 3 + a] < 0 || hard[c * 3 + a] != hard[c * 3 + b]);
    gf_npy_destroy(&seg);
    gf_npy_destroy(&emb);
    gf_npy_destroy(&te);
    gf_npy_destroy(&g);
    gf_npy_destroy(&want);
}

static void test_kmeans_blobs(void **state)
{
    (void)state;
    enum { N = 60, D = 5 };
    double x[N * D];
    for (int i = 0; i < N; i++)
        for (int d = 0; d < D; d++)
            x[i * D + d] = (i % 3 == d ? 10.0 : 0.0) + 0.1 * sin(i * 1.7 + d * 0.3);
    int lab[N];
    gf_assign_kmeans(x, N, D, 3, 3, 42, NULL, lab);
    for (int i = 3; i < N; i++)
        assert_int_equal(lab[i], lab[i % 3]);
    assert_true(lab[0] != lab[1] && lab[1] != lab[2] && lab[0] != lab[2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_filter_fixture_exact),
        cmocka_unit_test(test_hard_clusters_fixture_exact),
        cmocka_unit_test(test_kmeans_blobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
