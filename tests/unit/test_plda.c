/* test_plda.c — x-vector transform + PLDA read from the community-1 .npz
 * files: features within 1e-6 relative of pipeline_plda_features.npy,
 * eigenvalues of pipeline_plda_phi.npy; missing and malformed models. */
#include "tests/unit/fixtures.h"
#include "common/log.h"
#include "diar/cluster/plda.h"
#include "diar/io/npz.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

static void test_features_and_phi(void **state)
{
    (void)state;
    gf_plda *p = NULL;
    assert_int_equal(gf_plda_load(PLDADIR, &p), 0);
    assert_int_equal(gf_plda_in_dim(p), 256);
    assert_int_equal(gf_plda_dim(p), 128);
    gf_npy_array *emb = fx_load("pipeline_train_embeddings.npy");
    gf_npy_array *want = fx_load("pipeline_plda_features.npy");
    gf_npy_array *phi = fx_load("pipeline_plda_phi.npy");
    double *fea = malloc(27 * 128 * sizeof *fea);
    gf_plda_features(p, emb->data, 27, NULL, fea);
    assert_int_equal(fx_compare("plda features", fea, want->data, 27 * 128, 0.0, 1e-6), 0);
    assert_int_equal(fx_compare("plda phi", gf_plda_phi(p), phi->data, 128, 0.0, 1e-6), 0);
    free(fea);
    gf_npy_destroy(&emb);
    gf_npy_destroy(&want);
    gf_npy_destroy(&phi);
    gf_plda_destroy(&p);
    gf_plda_destroy(&p);
}

static void test_missing_and_malformed(void **state)
{
    (void)state;
    gf_log_init("test_plda", GF_LOG_ERROR);
    gf_plda *p = NULL;
    char dir[] = "/tmp/gf_plda_XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(gf_plda_load(dir, &p), GF_ENOENT);
    assert_null(p);
    /* a transform without 'lda', then one with a wrongly shaped mean1 */
    size_t s128[] = { 128 }, s256[] = { 256 }, s10[] = { 10 }, s256x128[] = { 256, 128 };
    gf_npy_array *m1 = gf_npy_new(GF_NPY_F64, 1, s256), *m2 = gf_npy_new(GF_NPY_F32, 1, s128);
    gf_npy_array *bad = gf_npy_new(GF_NPY_F64, 1, s10), *lda = gf_npy_new(GF_NPY_F32, 2, s256x128);
    char path[128];
    snprintf(path, sizeof path, "%s/xvec_transform.npz", dir);
    const char *n1[] = { "mean1", "mean2" };
    const gf_npy_array *a1[] = { m1, m2 };
    assert_int_equal(gf_npz_save(path, n1, a1, 2, false), 0);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cp " PLDADIR "/plda.npz %s/", dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(gf_plda_load(dir, &p), GF_EINVAL);
    const char *n2[] = { "mean1", "mean2", "lda" };
    const gf_npy_array *a2[] = { bad, m2, lda };
    assert_int_equal(gf_npz_save(path, n2, a2, 3, false), 0);
    assert_int_equal(gf_plda_load(dir, &p), GF_EINVAL);
    /* not a zip at all */
    FILE *f = fopen(path, "w");
    fputs("not a zip", f);
    fclose(f);
    assert_int_equal(gf_plda_load(dir, &p), GF_EINVAL);
    assert_null(p);
    gf_npy_destroy(&m1);
    gf_npy_destroy(&m2);
    gf_npy_destroy(&bad);
    gf_npy_destroy(&lda);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_features_and_phi),
        cmocka_unit_test(test_missing_and_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
