/* test_npy.c — .npy/.npz reading and writing: round trips of every dtype,
 * files written by numpy (tests/data/npy, made by numpy 1.24), the
 * community-1 fixtures and PLDA archives, and malformed inputs. */
#include "common/error.h"
#include "common/log.h"
#include "diar/io/npy.h"
#include "diar/io/npz.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIX "../shared/data/fixtures/community-1/"
#define PLDA "../shared/data/community-1/plda/"

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    gf_log_init("test_npy", GF_LOG_ERROR);
    strcpy(tmpdir, "/tmp/gf_npy_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *tmp(const char *name)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static gf_npy_array *filled(gf_npy_dtype dt, int ndim, const size_t *shape)
{
    gf_npy_array *a = gf_npy_new(dt, ndim, shape);
    size_t isz = gf_npy_itemsize(dt);
    unsigned char *p = a->data;
    for (size_t i = 0; i < a->count * isz; i++)
        p[i] = (unsigned char)(i * 37u + 11u);
    if (dt == GF_NPY_BOOL)
        for (size_t i = 0; i < a->count; i++)
            p[i] &= 1;
    if (dt == GF_NPY_F32)
        for (size_t i = 0; i < a->count; i++)
            ((float *)a->data)[i] = (float)i * 0.37f - 5.0f;
    if (dt == GF_NPY_F64)
        for (size_t i = 0; i < a->count; i++)
            ((double *)a->data)[i] = sin((double)i) * 1e3;
    return a;
}

static void test_roundtrip_every_dtype(void **state)
{
    (void)state;
    const gf_npy_dtype all[] = { GF_NPY_F32, GF_NPY_F64, GF_NPY_I8, GF_NPY_I16, GF_NPY_I32,
                                 GF_NPY_I64, GF_NPY_U8, GF_NPY_U16, GF_NPY_U32, GF_NPY_U64,
                                 GF_NPY_BOOL };
    const size_t shapes[][3] = { { 5, 0, 0 }, { 3, 7, 0 }, { 2, 3, 4 } };
    for (size_t d = 0; d < sizeof all / sizeof all[0]; d++) {
        for (int s = 0; s < 3; s++) {
            gf_npy_array *a = filled(all[d], s + 1, shapes[s]);
            assert_int_equal(gf_npy_save(tmp("rt.npy"), a), 0);
            gf_npy_array *b = NULL;
            assert_int_equal(gf_npy_load(tmp("rt.npy"), &b), 0);
            assert_int_equal(b->dtype, a->dtype);
            assert_int_equal(b->ndim, a->ndim);
            for (int i = 0; i < a->ndim; i++)
                assert_int_equal(b->shape[i], a->shape[i]);
            assert_memory_equal(a->data, b->data, a->count * gf_npy_itemsize(a->dtype));
            gf_npy_destroy(&a);
            gf_npy_destroy(&b);
            assert_null(b);
        }
    }
    /* a scalar */
    gf_npy_array *s = gf_npy_new(GF_NPY_F64, 0, NULL);
    *(double *)s->data = 2.5;
    assert_int_equal(gf_npy_save(tmp("scalar.npy"), s), 0);
    gf_npy_array *t = NULL;
    assert_int_equal(gf_npy_load(tmp("scalar.npy"), &t), 0);
    assert_int_equal(t->ndim, 0);
    assert_int_equal(t->count, 1);
    assert_true(*(double *)t->data == 2.5);
    gf_npy_destroy(&s);
    gf_npy_destroy(&t);
}

static void test_npz_roundtrip_stored_and_deflated(void **state)
{
    (void)state;
    size_t s1[] = { 40, 3 }, s2[] = { 1000 };
    gf_npy_array *a = filled(GF_NPY_F64, 2, s1), *b = filled(GF_NPY_I32, 1, s2);
    const char *names[] = { "alpha", "beta" };
    const gf_npy_array *arrs[] = { a, b };
    for (int comp = 0; comp < 2; comp++) {
        assert_int_equal(gf_npz_save(tmp("rt.npz"), names, arrs, 2, comp), 0);
        gf_npz *z = NULL;
        assert_int_equal(gf_npz_load(tmp("rt.npz"), &z), 0);
        assert_int_equal(gf_npz_count(z), 2);
        assert_string_equal(gf_npz_name(z, 0), "alpha");
        const gf_npy_array *ra = gf_npz_get(z, "alpha"), *rb = gf_npz_get(z, "beta");
        assert_non_null(ra);
        assert_non_null(rb);
        assert_null(gf_npz_get(z, "gamma"));
        assert_memory_equal(ra->data, a->data, a->count * 8);
        assert_memory_equal(rb->data, b->data, b->count * 4);
        gf_npz_destroy(&z);
        gf_npz_destroy(&z);   /* safe twice */
    }
    gf_npy_destroy(&a);
    gf_npy_destroy(&b);
}

static void test_files_written_by_numpy(void **state)
{
    (void)state;
    const char *files[] = { "tests/data/npy/numpy_compressed.npz", "tests/data/npy/numpy_stored.npz" };
    for (int f = 0; f < 2; f++) {
        gf_npz *z = NULL;
        assert_int_equal(gf_npz_load(files[f], &z), 0);
        const gf_npy_array *a = gf_npz_get(z, "a"), *b = gf_npz_get(z, "b");
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(a->dtype, GF_NPY_F64);
        assert_int_equal(a->ndim, 2);
        assert_int_equal(a->shape[0], 3);
        assert_int_equal(a->shape[1], 4);
        for (size_t i = 0; i < 12; i++)
            assert_true(((double *)a->data)[i] == (double)i * 0.5 - 1.25);
        assert_int_equal(b->dtype, GF_NPY_I16);
        int64_t *bi = gf_npy_to_i64(b);
        const int64_t want[] = { 1, -2, 3, 4, 5, -6 };
        assert_memory_equal(bi, want, sizeof want);
        free(bi);
        gf_npz_destroy(&z);
    }
    gf_npy_array *v2 = NULL;
    assert_int_equal(gf_npy_load("tests/data/npy/v2.npy", &v2), 0);
    assert_int_equal(v2->count, 12);
    assert_true(((double *)v2->data)[11] == 11 * 0.5 - 1.25);
    gf_npy_destroy(&v2);
    gf_npy_array *bo = NULL;
    assert_int_equal(gf_npy_load("tests/data/npy/bool.npy", &bo), 0);
    assert_int_equal(bo->dtype, GF_NPY_BOOL);
    double *bd = gf_npy_to_f64(bo);
    assert_true(bd[0] == 1.0 && bd[1] == 0.0 && bd[2] == 1.0);
    free(bd);
    gf_npy_destroy(&bo);
}

static void test_fixtures_load_with_their_shapes(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        gf_npy_dtype dtype;
        int ndim;
        size_t shape[3];
    } fx[] = {
        { "pipeline_ahc_clusters.npy", GF_NPY_I64, 1, { 27 } },
        { "pipeline_discrete_diarization_data.npy", GF_NPY_F32, 2, { 1601, 2 } },
        { "pipeline_embeddings_data.npy", GF_NPY_F32, 3, { 18, 3, 256 } },
        { "pipeline_hard_clusters.npy", GF_NPY_I8, 2, { 18, 3 } },
        { "pipeline_plda_features.npy", GF_NPY_F64, 2, { 27, 128 } },
        { "pipeline_plda_phi.npy", GF_NPY_F64, 1, { 128 } },
        { "pipeline_segmentation_data.npy", GF_NPY_F32, 3, { 18, 589, 3 } },
        { "pipeline_speaker_counting_data.npy", GF_NPY_U8, 2, { 1601, 1 } },
        { "pipeline_train_chunk_idx.npy", GF_NPY_I64, 1, { 27 } },
        { "pipeline_train_embeddings.npy", GF_NPY_F32, 2, { 27, 256 } },
        { "pipeline_train_speaker_idx.npy", GF_NPY_I64, 1, { 27 } },
        { "pipeline_vbx_gamma.npy", GF_NPY_F64, 2, { 27, 2 } },
        { "pipeline_vbx_pi.npy", GF_NPY_F64, 1, { 2 } },
        { "powerset_hard_output.npy", GF_NPY_F32, 3, { 1, 589, 3 } },
        { "powerset_input_logits.npy", GF_NPY_F32, 3, { 1, 589, 7 } },
    };
    for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, FIX "%s", fx[i].file);
        gf_npy_array *a = NULL;
        int rc = gf_npy_load(path, &a);
        if (rc)
            fail_msg("%s: %s", path, gf_strerror(rc));
        assert_int_equal(a->dtype, fx[i].dtype);
        assert_int_equal(gf_npy_check_shape(path, a, fx[i].ndim, fx[i].shape), 0);
        gf_npy_destroy(&a);
    }
}

static void test_plda_archives_load(void **state)
{
    (void)state;
    gf_npz *x = NULL, *p = NULL;
    assert_int_equal(gf_npz_load(PLDA "xvec_transform.npz", &x), 0);
    assert_int_equal(gf_npz_load(PLDA "plda.npz", &p), 0);
    const size_t s256[] = { 256 }, s128[] = { 128 }, s256x128[] = { 256, 128 }, s128x128[] = { 128, 128 };
    assert_int_equal(gf_npy_check_shape("mean1", gf_npz_get(x, "mean1"), 1, s256), 0);
    assert_int_equal(gf_npy_check_shape("mean2", gf_npz_get(x, "mean2"), 1, s128), 0);
    assert_int_equal(gf_npy_check_shape("lda", gf_npz_get(x, "lda"), 2, s256x128), 0);
    assert_int_equal(gf_npz_get(x, "lda")->dtype, GF_NPY_F32);
    assert_int_equal(gf_npy_check_shape("mu", gf_npz_get(p, "mu"), 1, s128), 0);
    assert_int_equal(gf_npy_check_shape("tr", gf_npz_get(p, "tr"), 2, s128x128), 0);
    assert_int_equal(gf_npy_check_shape("psi", gf_npz_get(p, "psi"), 1, s128), 0);
    assert_int_equal(gf_npz_get(p, "tr")->dtype, GF_NPY_F64);
    /* values are real data, not zeros */
    const double *psi = gf_npz_get(p, "psi")->data;
    assert_true(psi[0] != 0.0 && isfinite(psi[0]));
    gf_npz_destroy(&x);
    gf_npz_destroy(&p);
}

static void write_bytes(const char *path, const void *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void test_malformed_inputs(void **state)
{
    (void)state;
    gf_npy_array *a = NULL;
    assert_int_equal(gf_npy_load(tmp("missing.npy"), &a), GF_ENOENT);
    assert_null(a);
    write_bytes(tmp("magic.npy"), "NOTNUMPYATALL", 13);
    assert_int_equal(gf_npy_load(tmp("magic.npy"), &a), GF_EINVAL);
    assert_int_equal(gf_npy_load("tests/data/npy/bigendian.npy", &a), GF_EUNSUP);
    assert_int_equal(gf_npy_load("tests/data/npy/fortran.npy", &a), GF_EUNSUP);
    assert_int_equal(gf_npy_load("tests/data/npy/complex.npy", &a), GF_EUNSUP);
    assert_null(a);

    /* truncated data and truncated header */
    size_t shape[] = { 10, 10 };
    gf_npy_array *good = filled(GF_NPY_F32, 2, shape);
    size_t len;
    unsigned char *buf = gf_npy_serialize(good, &len);
    write_bytes(tmp("trunc.npy"), buf, len - 1);
    assert_int_equal(gf_npy_load(tmp("trunc.npy"), &a), GF_EINVAL);
    write_bytes(tmp("trunch.npy"), buf, 40);
    assert_int_equal(gf_npy_load(tmp("trunch.npy"), &a), GF_EINVAL);
    /* a shape that is not a tuple of integers */
    unsigned char *bad = malloc(len);
    memcpy(bad, buf, len);
    char *sh = strstr((char *)bad + 10, "(10, 10)");
    assert_non_null(sh);
    memcpy(sh, "(1x, 10)", 8);
    write_bytes(tmp("shape.npy"), bad, len);
    assert_int_equal(gf_npy_load(tmp("shape.npy"), &a), GF_EINVAL);
    free(bad);
    free(buf);

    /* npz: a truncated archive, a corrupted member, a .npy posing as .npz */
    const char *names[] = { "x" };
    const gf_npy_array *arrs[] = { good };
    assert_int_equal(gf_npz_save(tmp("good.npz"), names, arrs, 1, true), 0);
    FILE *f = fopen(tmp("good.npz"), "rb");
    unsigned char zbuf[4096];
    size_t zn = fread(zbuf, 1, sizeof zbuf, f);
    fclose(f);
    gf_npz *z = NULL;
    write_bytes(tmp("ztrunc.npz"), zbuf, zn - 30);
    assert_int_equal(gf_npz_load(tmp("ztrunc.npz"), &z), GF_EINVAL);
    zbuf[60] ^= 0xff;   /* inside the deflated data */
    write_bytes(tmp("zcorrupt.npz"), zbuf, zn);
    assert_int_equal(gf_npz_load(tmp("zcorrupt.npz"), &z), GF_EINVAL);
    assert_int_equal(gf_npz_load("tests/data/npy/v2.npy", &z), GF_EINVAL);
    assert_null(z);
    gf_npy_destroy(&good);
}

static void test_check_shape_names_the_problem(void **state)
{
    (void)state;
    size_t shape[] = { 4, 5 };
    gf_npy_array *a = gf_npy_new(GF_NPY_F32, 2, shape);
    size_t any5[] = { (size_t)-1, 5 }, six5[] = { 6, 5, 1 };
    assert_int_equal(gf_npy_check_shape("a", a, 2, any5), 0);
    assert_int_equal(gf_npy_check_shape("a", a, 2, six5), GF_EINVAL);
    assert_int_equal(gf_npy_check_shape("a", a, 3, six5), GF_EINVAL);
    char s[64];
    gf_npy_shape_str(a, s, sizeof s);
    assert_string_equal(s, "(4, 5)");
    gf_npy_destroy(&a);
}

/* Mutated and truncated inputs: every outcome is an error code or a valid
 * array, never a crash (run under ASan/UBSan by make sanitize). */
static void test_mutations_never_crash(void **state)
{
    (void)state;
    gf_log_level saved = gf_log_get_level();
    gf_log_init("test_npy", GF_LOG_OFF);
    size_t shape[] = { 6, 5 };
    gf_npy_array *a = filled(GF_NPY_I16, 2, shape);
    size_t len;
    unsigned char *good = gf_npy_serialize(a, &len);
    unsigned char *buf = malloc(len);
    srand(4242);
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, good, len);
        int flips = 1 + rand() % 4;
        for (int f = 0; f < flips; f++)
            buf[(size_t)rand() % (it % 2 ? len : 128)] = (unsigned char)rand();
        size_t n = it % 3 == 0 ? (size_t)rand() % (len + 1) : len;
        gf_npy_array *b = NULL;
        if (gf_npy_parse("mutant", buf, n, &b) == 0) {
            assert_non_null(b);
            assert_true(b->count * gf_npy_itemsize(b->dtype) <= n);
            gf_npy_destroy(&b);
        } else {
            assert_null(b);
        }
    }
    const char *names[] = { "m" };
    const gf_npy_array *arrs[] = { a };
    for (int comp = 0; comp < 2; comp++) {
        assert_int_equal(gf_npz_save(tmp("m.npz"), names, arrs, 1, comp), 0);
        FILE *f = fopen(tmp("m.npz"), "rb");
        unsigned char z[8192];
        size_t zn = fread(z, 1, sizeof z, f);
        fclose(f);
        for (int it = 0; it < 400; it++) {
            unsigned char m[8192];
            memcpy(m, z, zn);
            for (int k = 0; k < 1 + rand() % 3; k++)
                m[(size_t)rand() % zn] = (unsigned char)rand();
            size_t n = it % 4 == 0 ? (size_t)rand() % (zn + 1) : zn;
            f = fopen(tmp("mut.npz"), "wb");
            fwrite(m, 1, n, f);
            fclose(f);
            gf_npz *zz = NULL;
            if (gf_npz_load(tmp("mut.npz"), &zz) == 0)
                gf_npz_destroy(&zz);
            assert_null(zz);
        }
    }
    free(buf);
    free(good);
    gf_npy_destroy(&a);
    gf_log_init("test_npy", saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_dtype),
        cmocka_unit_test(test_npz_roundtrip_stored_and_deflated),
        cmocka_unit_test(test_files_written_by_numpy),
        cmocka_unit_test(test_fixtures_load_with_their_shapes),
        cmocka_unit_test(test_plda_archives_load),
        cmocka_unit_test(test_malformed_inputs),
        cmocka_unit_test(test_check_shape_names_the_problem),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
