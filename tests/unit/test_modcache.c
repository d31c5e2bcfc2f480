/* test_modcache.c — the module cache and its key-completeness proof, with a
 * tiny PTX generator (a tiled GEMM whose tile sizes and unrolling are baked
 * into the text, and whose launch geometry is not) and a compile function
 * that stands in for cuModuleLoadData. */
#include "common/error.h"
#include "common/sha256.h"
#include "common/util.h"
#include "gpu/modcache.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One request for the GEMM kernel. */
typedef struct {
    int tile_m, tile_n;        /* baked into the PTX */
    int unroll;                /* baked into the PTX */
    int grid_x, block_x;       /* launch geometry: not in the PTX */
    int gen_calls;             /* how often its PTX was generated */
} gemm_req;

static int gemm_ptx(void *ctx, char **ptx, size_t *len)
{
    gemm_req *r = ctx;
    r->gen_calls++;
    char *body = gf_strdup("");
    for (int u = 0; u < r->unroll; u++) {
        char *more = gf_strfmt("%s\tfma.rn.f32 %%f%d, %%f%d, %%f%d, %%f%d;\n", body, 4 + u, u, u + 1, 4 + u);
        free(body);
        body = more;
    }
    *ptx = gf_strfmt(".version 7.8\n.target sm_80\n.address_size 64\n\n"
                     ".visible .entry gemm_tm%d_tn%d(.param .u64 a, .param .u64 b, .param .u64 c)\n"
                     "{\n\t.shared .align 16 .b8 tile[%d];\n%s\tret;\n}\n",
                     r->tile_m, r->tile_n, 4 * r->tile_m * r->tile_n, body);
    free(body);
    *len = strlen(*ptx);
    return 0;
}

typedef struct {
    int compiles;
    int fail_next;             /* nonzero: the next compile fails with this */
} backend_state;

static int compile(void *ctx, const char *ptx, size_t len, void **module)
{
    backend_state *s = ctx;
    if (s->fail_next) {
        int rc = s->fail_next;
        s->fail_next = 0;
        return rc;
    }
    s->compiles++;
    char *m = gf_malloc(GF_SHA256_HEX_LEN);   /* the "module": its PTX's hash */
    gf_sha256_hex(ptx, len, m);
    *module = m;
    return 0;
}

static void unload(void *ctx, void *module)
{
    (void)ctx;
    free(module);
}

static char *incomplete_key(const gemm_req *r)   /* forgets the unrolling */
{
    return gf_strfmt("gemm/tm%d/tn%d", r->tile_m, r->tile_n);
}

static char *complete_key(const gemm_req *r)
{
    return gf_strfmt("gemm/tm%d/tn%d/u%d", r->tile_m, r->tile_n, r->unroll);
}

static char *describe(const gemm_req *r)
{
    return gf_strfmt("gemm(tile %dx%d, unroll %d, grid %d, block %d)", r->tile_m, r->tile_n,
                     r->unroll, r->grid_x, r->block_x);
}

static int get(gf_modcache *c, char *(*keyf)(const gemm_req *), gemm_req *r, void **m)
{
    char *key = keyf(r), *req = describe(r);
    int rc = gf_modcache_get(c, key, req, gemm_ptx, r, m);
    free(key);
    free(req);
    return rc;
}

static void test_test_builds_prove(void **state)
{
    (void)state;
#ifdef NDEBUG
    assert_int_equal(gf_modcache_default_mode(), GF_MODCACHE_LOOKUP);
#else
    assert_int_equal(gf_modcache_default_mode(), GF_MODCACHE_PROVE);
#endif
}

static void test_launch_geometry_alone_passes(void **state)
{
    (void)state;
    backend_state bs = { 0 };
    gf_modcache_backend be = { compile, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    gemm_req a = { 64, 64, 4, 120, 256, 0 }, b = { 64, 64, 4, 33, 128, 0 };
    void *ma, *mb;
    assert_int_equal(get(c, incomplete_key, &a, &ma), 0);
    assert_int_equal(get(c, incomplete_key, &b, &mb), 0);
    assert_ptr_equal(ma, mb);
    assert_int_equal(bs.compiles, 1);
    assert_int_equal(b.gen_calls, 1);   /* proven by regenerating */
    assert_int_equal(gf_modcache_count(c), 1);
    gf_modcache_destroy(&c);
    gf_modcache_destroy(&c);
    assert_null(c);
}

static void test_incomplete_key_is_caught(void **state)
{
    (void)state;
    backend_state bs = { 0 };
    gf_modcache_backend be = { compile, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    gemm_req a = { 128, 64, 4, 120, 256, 0 }, b = { 128, 64, 8, 120, 256, 0 };
    void *ma, *mb = (void *)&b;
    assert_int_equal(get(c, incomplete_key, &a, &ma), 0);
    assert_int_equal(get(c, incomplete_key, &b, &mb), GF_ESTATE);
    assert_null(mb);
    const char *msg = gf_modcache_last_error(c);
    assert_non_null(strstr(msg, "module key 'gemm/tm128/tn64' is incomplete"));
    assert_non_null(strstr(msg, "gemm(tile 128x64, unroll 8, grid 120, block 256)"));
    assert_non_null(strstr(msg, "gemm(tile 128x64, unroll 4, grid 120, block 256)"));
    assert_int_equal(bs.compiles, 1);
    /* The module compiled first is still served to its own request. */
    void *again;
    assert_int_equal(get(c, incomplete_key, &a, &again), 0);
    assert_ptr_equal(again, ma);
    gf_modcache_destroy(&c);
}

static void test_complete_key_compiles_each(void **state)
{
    (void)state;
    backend_state bs = { 0 };
    gf_modcache_backend be = { compile, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    void *m[3];
    gemm_req r[3] = { { 128, 64, 4, 1, 256, 0 }, { 128, 64, 8, 1, 256, 0 }, { 64, 128, 4, 1, 256, 0 } };
    for (int i = 0; i < 3; i++)
        assert_int_equal(get(c, complete_key, &r[i], &m[i]), 0);
    assert_int_equal(bs.compiles, 3);
    assert_int_equal(gf_modcache_count(c), 3);
    assert_string_not_equal((char *)m[0], (char *)m[1]);
    assert_string_equal(gf_modcache_last_error(c), "");
    gf_modcache_destroy(&c);
}

static void test_release_only_looks_up(void **state)
{
    (void)state;
    backend_state bs = { 0 };
    gf_modcache_backend be = { compile, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_LOOKUP, &be);
    gemm_req a = { 128, 64, 4, 1, 256, 0 }, b = { 128, 64, 8, 1, 256, 0 };
    void *ma, *mb;
    assert_int_equal(get(c, incomplete_key, &a, &ma), 0);
    /* No PTX generated on a hit: the stale module is what an incomplete key
     * gets in a release build, which is why debug and test builds prove. */
    assert_int_equal(get(c, incomplete_key, &b, &mb), 0);
    assert_ptr_equal(ma, mb);
    assert_int_equal(b.gen_calls, 0);
    assert_int_equal(gf_modcache_compiles(c), 1);
    gf_modcache_destroy(&c);
}

static void test_compile_failure_caches_nothing(void **state)
{
    (void)state;
    backend_state bs = { .fail_next = GF_EDEVICE };
    gf_modcache_backend be = { compile, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    gemm_req a = { 32, 32, 2, 1, 64, 0 };
    void *m;
    assert_int_equal(get(c, complete_key, &a, &m), GF_EDEVICE);
    assert_null(m);
    assert_int_equal(gf_modcache_count(c), 0);
    assert_int_equal(get(c, complete_key, &a, &m), 0);   /* retried, not a cached failure */
    assert_non_null(m);
    gf_modcache_destroy(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_test_builds_prove),
        cmocka_unit_test(test_launch_geometry_alone_passes),
        cmocka_unit_test(test_incomplete_key_is_caught),
        cmocka_unit_test(test_complete_key_compiles_each),
        cmocka_unit_test(test_release_only_looks_up),
        cmocka_unit_test(test_compile_failure_caches_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
