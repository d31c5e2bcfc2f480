/* test_vbx.c — VBx from the reference's PLDA features and AHC labels:
 * responsibilities and priors within 1e-4 of pipeline_vbx_gamma / _pi. */
#include "tests/unit/fixtures.h"
#include "diar/cluster/vbx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static void test_fixture(void **state)
{
    (void)state;
    gf_npy_array *fea = fx_load("pipeline_plda_features.npy");
    gf_npy_array *phi = fx_load("pipeline_plda_phi.npy");
    gf_npy_array *ahc = fx_load("pipeline_ahc_clusters.npy");
    gf_npy_array *g = fx_load("pipeline_vbx_gamma.npy");
    gf_npy_array *pi = fx_load("pipeline_vbx_pi.npy");
    int64_t *a64 = gf_npy_to_i64(ahc);
    int init[27];
    for (int i = 0; i < 27; i++)
        init[i] = (int)a64[i];
    double gamma[27 * 2], prior[2];
    gf_vbx_opts o = gf_vbx_defaults();
    int it = gf_vbx(fea->data, 27, 128, phi->data, init, 2, &o, NULL, gamma, prior);
    assert_true(it >= 1 && it <= 20);
    assert_int_equal(fx_compare("vbx gamma", gamma, g->data, 54, 1e-4, 0.0), 0);
    assert_int_equal(fx_compare("vbx pi", prior, pi->data, 2, 1e-4, 0.0), 0);
    /* responsibilities are distributions */
    for (int t = 0; t < 27; t++)
        assert_true(fabs(gamma[t * 2] + gamma[t * 2 + 1] - 1.0) < 1e-12);
    free(a64);
    gf_npy_destroy(&fea);
    gf_npy_destroy(&phi);
    gf_npy_destroy(&ahc);
    gf_npy_destroy(&g);
    gf_npy_destroy(&pi);
}

static void test_redundant_speaker_loses_its_prior(void **state)
{
    (void)state;
    /* two tight groups, but AHC-style init with three labels: the third
     * label covers one point of group A; VBx drains that speaker */
    enum { N = 40, D = 8 };
    double x[N * D], phi[D] = { 40.0, 30.0, 20.0, 10.0, 8.0, 6.0, 4.0, 2.0 };
    int init[N];
    for (int t = 0; t < N; t++) {
        double c = t < N / 2 ? 6.0 : -6.0;
        for (int d = 0; d < D; d++)
            x[t * D + d] = c * (d % 2 ? -1 : 1) + 0.05 * sin(t * 7.0 + d);
        init[t] = t < N / 2 ? 0 : 1;
    }
    init[3] = 2;
    double gamma[N * 3], pi[3];
    gf_vbx_opts o = gf_vbx_defaults();
    gf_vbx(x, N, D, phi, init, 3, &o, NULL, gamma, pi);
    fprintf(stderr, "pi %g %g %g gamma3 %g %g %g\n", pi[0], pi[1], pi[2], gamma[9], gamma[10], gamma[11]);
    assert_true(pi[2] < 1e-3);
    assert_true(pi[0] > 0.4 && pi[1] > 0.4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_redundant_speaker_loses_its_prior),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
