/* test_modules.c — a card's kernel modules through the module cache: the
 * tier a card loads, one load per key with every later request proven, what
 * the key holds, and that the module loaded is the one the planner names.
 * The loader stands in for cuModuleLoadDataEx and keeps what it was handed;
 * the PTX tables are small ones written here, and the build's embedded one. */
#include "common/error.h"
#include "common/sha256.h"
#include "common/util.h"
#include "gpu/modcache.h"
#include "gpu/modload.h"
#include "route/planner.h"
#include "gpu/modules.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOB(area, tier, text) { area, tier, text, sizeof text - 1 }

static const gf_ptx_blob blobs[] = {
    BLOB("lstm", "sm75", ".version 7.0\n.target sm_75\n.address_size 64\n// lstm baseline\n"),
    BLOB("lstm", "sm90", ".version 7.8\n.target sm_90\n.address_size 64\n// lstm hopper\n"),
    BLOB("resnet", "sm75", ".version 7.0\n.target sm_75\n.address_size 64\n// resnet baseline\n"),
    BLOB("resnet", "sm90", ".version 7.8\n.target sm_90a\n.address_size 64\n// resnet wgmma\n"),
    BLOB("dense", "sm90", ".version 7.8\n.target sm_90\n.address_size 64\n// dense\n"),
    { 0, 0, 0, 0 },
};

typedef struct {
    int loads;
    int fail_next;             /* nonzero: the next load fails with this */
    gf_modcache_image last;    /* the last image handed over */
} loader;

static int load(void *ctx, const gf_modcache_image *img, void **module)
{
    loader *l = ctx;
    if (l->fail_next) {
        int rc = l->fail_next;
        l->fail_next = 0;
        return rc;
    }
    l->loads++;
    l->last = *img;
    *module = (void *)img->data;   /* a stand-in handle: which text it loaded */
    return 0;
}

static gf_modcache *new_cache(loader *l)
{
    gf_modcache_backend be = { load, NULL, l };
    return gf_modcache_new(GF_MODCACHE_PROVE, &be);
}

static const char *tier_for(int cc, const char *area)
{
    const gf_ptx_blob *b = gf_modules_pick(blobs, cc, area);
    return b ? b->tier : "none";
}

static void test_a_card_loads_its_best_tier(void **state)
{
    (void)state;
    assert_string_equal(tier_for(75, "lstm"), "sm75");
    assert_string_equal(tier_for(86, "lstm"), "sm75");   /* sm90 is newer than the card */
    assert_string_equal(tier_for(90, "lstm"), "sm90");
    assert_string_equal(tier_for(100, "lstm"), "sm90");  /* portable PTX JITs forward */
    /* An arch-specific tier (sm_90a) loads on exactly its own capability. */
    assert_string_equal(tier_for(90, "resnet"), "sm90");
    assert_string_equal(tier_for(100, "resnet"), "sm75");
    assert_string_equal(tier_for(70, "lstm"), "none");
    assert_string_equal(tier_for(80, "dense"), "none");
    assert_string_equal(tier_for(90, "pooling"), "none");
}

static void test_each_area_loads_once_and_each_later_request_is_proven(void **state)
{
    (void)state;
    loader l = { 0 };
    gf_modcache *cache = new_cache(&l);
    gf_modules *mods = gf_modules_new(90, blobs, cache, "test card");
    void *m[3];
    const char *tier = NULL, *sha = NULL;
    for (int i = 0; i < 3; i++)
        assert_int_equal(gf_modules_get(mods, "lstm", &m[i], &tier, &sha), 0);
    assert_ptr_equal(m[0], m[2]);
    assert_int_equal(l.loads, 1);
    assert_int_equal(gf_modcache_proven(cache), 2);
    assert_string_equal(tier, "sm90");
    /* The identity is the SHA-256 of the PTX loaded. */
    char want[GF_SHA256_HEX_LEN];
    gf_sha256_hex(blobs[1].text, blobs[1].len, want);
    assert_string_equal(sha, want);
    /* The loader got that text as it is, the card as the JIT target and no
     * JIT option (the driver's defaults, as before the cache). */
    assert_ptr_equal(l.last.data, blobs[1].text);
    assert_int_equal(l.last.len, blobs[1].len);
    assert_int_equal(l.last.target, 90);
    assert_int_equal(l.last.n_jit, 0);
    void *r;
    assert_int_equal(gf_modules_get(mods, "resnet", &r, NULL, NULL), 0);
    assert_int_equal(l.loads, 2);
    assert_int_equal(gf_modcache_count(cache), 2);
    gf_modules_destroy(&mods);
    gf_modules_destroy(&mods);   /* safe twice */
    assert_null(mods);
    gf_modcache_destroy(&cache);
}

static void test_the_key_holds_area_tier_digest_device_and_options(void **state)
{
    (void)state;
    loader l = { 0 };
    gf_modcache *cache = new_cache(&l);
    gf_modules *h200 = gf_modules_new(90, blobs, cache, "cc 9.0 card");
    gf_modules *b200 = gf_modules_new(100, blobs, cache, "cc 10.0 card");
    char sha[GF_SHA256_HEX_LEN];
    gf_sha256_hex(blobs[1].text, blobs[1].len, sha);
    char *key = gf_modules_key(h200, "lstm");
    char *want = gf_strfmt("lstm sm90 ptx-jit %s target sm_90 jit {}", sha);
    assert_string_equal(key, want);
    free(want);
    /* The same PTX on a card of another capability is JIT-compiled for it:
     * another module, under another key (one cache serving both proves
     * it: no stop, two loads). */
    char *key2 = gf_modules_key(b200, "lstm");
    assert_string_not_equal(key, key2);
    void *a, *b;
    assert_int_equal(gf_modules_get(h200, "lstm", &a, NULL, NULL), 0);
    assert_int_equal(gf_modules_get(b200, "lstm", &b, NULL, NULL), 0);
    assert_int_equal(gf_modules_get(h200, "lstm", &a, NULL, NULL), 0);
    assert_int_equal(l.loads, 2);
    assert_int_equal(gf_modcache_proven(cache), 1);
    assert_null(gf_modules_key(h200, "pooling"));
    free(key);
    free(key2);
    gf_modules_destroy(&h200);
    gf_modules_destroy(&b200);
    gf_modcache_destroy(&cache);
}

static void test_no_ptx_for_this_card_or_a_failed_load(void **state)
{
    (void)state;
    loader l = { 0 };
    gf_modcache *cache = new_cache(&l);
    gf_modules *mods = gf_modules_new(80, blobs, cache, "cc 8.0 card");
    void *m = (void *)&l;
    assert_int_equal(gf_modules_get(mods, "dense", &m, NULL, NULL), GF_EUNSUP);
    assert_null(m);
    l.fail_next = GF_EDEVICE;
    assert_int_equal(gf_modules_get(mods, "lstm", &m, NULL, NULL), GF_EDEVICE);
    assert_int_equal(gf_modcache_count(cache), 0);
    assert_int_equal(gf_modules_get(mods, "lstm", &m, NULL, NULL), 0);
    assert_int_equal(l.loads, 1);
    gf_modules_destroy(&mods);
    gf_modcache_destroy(&cache);
}

/* Each embedded area on an H200: the module loaded is the one the planner's
 * embedded provider names (area, tier, hash), so a route bound to it runs
 * what its evidence measured. */
static void test_embedded_modules_are_the_planners(void **state)
{
    (void)state;
    if (gf_ptx_blob_count == 0)
        skip();   /* built without nvcc: no embedded PTX */
    loader l = { 0 };
    gf_modcache *cache = new_cache(&l);
    gf_modules *mods = gf_modules_new(90, gf_ptx_blobs, cache, "H200");
    size_t areas = 0;
    for (const gf_ptx_blob *b = gf_ptx_blobs; b->area; b++) {
        void *m;
        const char *tier, *sha;
        assert_int_equal(gf_modules_get(mods, b->area, &m, &tier, &sha), 0);
        gf_module_id id;
        assert_int_equal(gf_module_provider_embedded.identity(NULL, b->area, atoi(tier + 2),
                                                              NULL, &id), 0);
        assert_string_equal(id.sha256, sha);
        if (strcmp(b->tier, "sm75") == 0)
            areas++;
    }
    assert_int_equal(l.loads, areas);   /* each area once, whatever the requests */
    gf_modules_destroy(&mods);
    gf_modcache_destroy(&cache);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_card_loads_its_best_tier),
        cmocka_unit_test(test_each_area_loads_once_and_each_later_request_is_proven),
        cmocka_unit_test(test_the_key_holds_area_tier_digest_device_and_options),
        cmocka_unit_test(test_no_ptx_for_this_card_or_a_failed_load),
        cmocka_unit_test(test_embedded_modules_are_the_planners),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
