/* test_ahc.c — centroid linkage and distance cut against scipy 1.10's
 * linkage/fcluster (a small case with an inversion, values printed by
 * scipy), and the recipe's AHC on the community-1 fixture embeddings. */
#include "tests/unit/fixtures.h"
#include "diar/cluster/ahc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

/* three blobs of four points; scipy: linkage(X, 'centroid') */
static const double X[12][3] = {
    {0.00036904600724477226, 0.089623661252540968, -0.082241356608665273},
    {-0.26717755162718226, -0.13640123555151676, -0.29749396649893872},
    {0.018043080779231543, 0.40206457366636006, -0.14766195556539888},
    {-0.18614246994598213, 0.14695261505555945, 0.10706610244801822},
    {2.0316242746993693, -0.27914041341246137, -0.0087755467389820461},
    {2.2085909583374863, -0.40326436418552458, -0.13728472831206545},
    {1.4296331780597469, -0.38686132193549283, -0.55252051133751967},
    {1.9294726606775956, -0.38023394443311093, 0.081379307646510454},
    {0.047025325987267545, 1.9439207166110137, 0.24497208675384607},
    {-0.16160786875399097, 1.9854497163796785, 1.0339926958009922},
    {-0.45904072965161802, 1.8566740171898208, 0.70644427658300812},
    {-0.24265117182767976, 2.3182695870158234, 0.75773959740043106},
};
static const double Zref[11][4] = {
    {4, 7, 0.16965480255726872, 2},
    {0, 3, 0.27186479834987343, 2},
    {5, 12, 0.29588729353490251, 3},
    {2, 13, 0.34417767927520715, 3},
    {9, 11, 0.44006006139987769, 2},
    {10, 16, 0.43476266301980554, 3},   /* an inversion: below the merge before */
    {1, 15, 0.48212913596227819, 4},
    {8, 17, 0.68522956486544906, 4},
    {6, 14, 0.82220750446714819, 4},
    {18, 19, 2.0607125683051333, 8},
    {20, 21, 2.5483705259578926, 12},
};

static void test_linkage_matches_scipy(void **state)
{
    (void)state;
    double Z[11 * 4];
    assert_int_equal(gf_ahc_linkage_centroid(&X[0][0], 12, 3, Z), 0);
    for (int i = 0; i < 11; i++) {
        assert_int_equal((int)Z[i * 4], (int)Zref[i][0]);
        assert_int_equal((int)Z[i * 4 + 1], (int)Zref[i][1]);
        assert_int_equal((int)Z[i * 4 + 3], (int)Zref[i][3]);
    }
    assert_int_equal(fx_compare("Z distances", (double[]){ Z[2], Z[6], Z[10], Z[14], Z[18], Z[22],
                                                           Z[26], Z[30], Z[34], Z[38], Z[42] },
                                (const double[]){ Zref[0][2], Zref[1][2], Zref[2][2], Zref[3][2],
                                                  Zref[4][2], Zref[5][2], Zref[6][2], Zref[7][2],
                                                  Zref[8][2], Zref[9][2], Zref[10][2] },
                                11, 1e-14, 1e-12),
                     0);
}

static void test_fcluster_numbering_matches_scipy(void **state)
{
    (void)state;
    static const struct {
        double t;
        int want[12];
    } cut[] = {
        { 0.5, { 2, 2, 2, 2, 0, 0, 1, 0, 4, 3, 3, 3 } },
        { 1.0, { 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2 } },
        { 1.6, { 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2 } },
        { 3.0, { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 } },
    };
    double Z[11 * 4];
    memcpy(Z, Zref, sizeof Z);
    for (size_t c = 0; c < sizeof cut / sizeof cut[0]; c++) {
        int lab[12];
        size_t k = gf_ahc_fcluster_distance(Z, 12, cut[c].t, lab);
        int kmax = 0;
        for (int i = 0; i < 12; i++)
            kmax = cut[c].want[i] > kmax ? cut[c].want[i] : kmax;
        assert_int_equal(k, (size_t)kmax + 1);
        assert_memory_equal(lab, cut[c].want, sizeof lab);
    }
    /* below every merge: singletons, numbered in scipy's walk order */
    int lab[12];
    assert_int_equal(gf_ahc_fcluster_distance(Z, 12, 0.0, lab), 12);
}

static void test_recipe_ahc_on_fixture(void **state)
{
    (void)state;
    gf_npy_array *emb = fx_load("pipeline_train_embeddings.npy");
    gf_npy_array *ref = fx_load("pipeline_ahc_clusters.npy");
    int64_t *want = gf_npy_to_i64(ref);
    int lab[27];
    int k = gf_ahc_cluster(emb->data, 27, 256, 0.6, lab);
    assert_int_equal(k, 2);
    size_t bad = 0;
    for (int i = 0; i < 27; i++) {
        if (lab[i] != want[i] && bad++ < 8)
            fprintf(stderr, "ahc: embedding %d: got %d, want %lld\n", i, lab[i], (long long)want[i]);
    }
    assert_int_equal(bad, 0);
    free(want);
    gf_npy_destroy(&emb);
    gf_npy_destroy(&ref);
}

static void test_one_and_two_points(void **state)
{
    (void)state;
    const float one[4] = { 0.5f, -1.0f, 2.0f, 0.25f };
    int lab[2] = { 7, 7 };
    assert_int_equal(gf_ahc_cluster(one, 1, 4, 0.6, lab), 1);
    assert_int_equal(lab[0], 0);
    const float two[8] = { 1, 0, 0, 0, 0, 1, 0, 0 };   /* distance sqrt(2) > 0.6 */
    assert_int_equal(gf_ahc_cluster(two, 2, 4, 0.6, lab), 2);
    assert_true(lab[0] != lab[1]);
    assert_int_equal(gf_ahc_cluster(two, 2, 4, 1.5, lab), 1);
}

/* Naive centroid linkage: full scan for the closest pair (lowest indices
 * first), same Lance-Williams update, merged cluster in the slot of the
 * higher index. O(n^3), plain loops: the truth for the fast version. */
static void naive_linkage(const double *x, size_t n, size_t dim, double *Z)
{
    double *D = malloc(n * n * sizeof *D);
    int *size = malloc(n * sizeof *size), *id = malloc(n * sizeof *id);
    for (size_t i = 0; i < n; i++) {
        size[i] = 1;
        id[i] = (int)i;
        for (size_t j = 0; j < n; j++) {
            double s = 0.0;
            for (size_t k = 0; k < dim; k++) {
                double d = x[i * dim + k] - x[j * dim + k];
                s += d * d;
            }
            D[i * n + j] = sqrt(s);
        }
    }
    for (size_t k = 0; k + 1 < n; k++) {
        size_t a = 0, b = 0;
        double best = INFINITY;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                if (size[i] && size[j] && D[i * n + j] < best) {
                    best = D[i * n + j];
                    a = i;
                    b = j;
                }
        int na = size[a], nb = size[b];
        Z[k * 4] = id[a] < id[b] ? id[a] : id[b];
        Z[k * 4 + 1] = id[a] < id[b] ? id[b] : id[a];
        Z[k * 4 + 2] = best;
        Z[k * 4 + 3] = na + nb;
        size[a] = 0;
        size[b] = na + nb;
        id[b] = (int)(n + k);
        for (size_t z = 0; z < n; z++) {
            if (!size[z] || z == b)
                continue;
            double dxa = D[z * n + a], dxb = D[z * n + b];
            double v = sqrt((((na * dxa * dxa) + (nb * dxb * dxb)) - (na * nb * best * best) / (na + nb))
                            / (na + nb));
            D[z * n + b] = D[b * n + z] = v;
        }
    }
    free(D);
    free(size);
    free(id);
}

static void test_linkage_equals_naive_on_random_points(void **state)
{
    (void)state;
    /* large enough for the threaded, tiled distance code (n >= 512) */
    enum { N = 700, DIM = 37 };
    double *x = malloc(N * DIM * sizeof *x);
    srand(99);
    for (int i = 0; i < N * DIM; i++)
        x[i] = (double)rand() / RAND_MAX + ((i / DIM) % 5 == (i % DIM) % 5 ? 2.0 : 0.0);
    double *Z = malloc((N - 1) * 4 * sizeof *Z), *R = malloc((N - 1) * 4 * sizeof *R);
    assert_int_equal(gf_ahc_linkage_centroid(x, N, DIM, Z), 0);
    naive_linkage(x, N, DIM, R);
    size_t bad = 0;
    for (size_t i = 0; i < (N - 1) * 4; i++)
        if (Z[i] != R[i] && bad++ < 8)
            fprintf(stderr, "Z[%zu][%zu]: got %.17g want %.17g\n", i / 4, i % 4, Z[i], R[i]);
    assert_int_equal(bad, 0);
    free(x);
    free(Z);
    free(R);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linkage_matches_scipy),
        cmocka_unit_test(test_fcluster_numbering_matches_scipy),
        cmocka_unit_test(test_recipe_ahc_on_fixture),
        cmocka_unit_test(test_one_and_two_points),
        cmocka_unit_test(test_linkage_equals_naive_on_random_points),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
