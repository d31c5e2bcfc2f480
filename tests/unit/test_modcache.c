/* test_modcache.c — the module cache and its key-completeness proof, with a
 * tiny PTX generator (a tiled GEMM whose tile sizes and unrolling are baked
 * into the text, and whose launch geometry is not), a JIT option that
 * changes the code (the register limit), and a load function that stands in
 * for cuModuleLoadDataEx. An incomplete key aborts the process: those cases
 * run in a real child process, whose death by SIGABRT and whose message are
 * what the test reads. */
#include "common/error.h"
#include "common/sha256.h"
#include "common/util.h"
#include "gpu/modcache.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define JIT_MAX_REGISTERS 0   /* CU_JIT_MAX_REGISTERS */

/* One request for the GEMM kernel. */
typedef struct {
    int tile_m, tile_n;        /* baked into the PTX */
    int unroll;                /* baked into the PTX */
    int max_registers;         /* a JIT option (0: none passed) */
    int target;                /* the device it compiles for */
    int grid_x, block_x;       /* launch geometry: not in the image */
    int gen_calls;             /* how often its image was made */
} gemm_req;

static int gemm_image(void *ctx, gf_modcache_image *img)
{
    gemm_req *r = ctx;
    r->gen_calls++;
    char *body = gf_strdup("");
    for (int u = 0; u < r->unroll; u++) {
        char *more = gf_strfmt("%s\tfma.rn.f32 %%f%d, %%f%d, %%f%d, %%f%d;\n", body, 4 + u, u, u + 1, 4 + u);
        free(body);
        body = more;
    }
    char *ptx = gf_strfmt(".version 7.8\n.target sm_80\n.address_size 64\n\n"
                          ".visible .entry gemm_tm%d_tn%d(.param .u64 a, .param .u64 b, .param .u64 c)\n"
                          "{\n\t.shared .align 16 .b8 tile[%d];\n%s\tret;\n}\n",
                          r->tile_m, r->tile_n, 4 * r->tile_m * r->tile_n, body);
    free(body);
    img->data = ptx;
    img->len = strlen(ptx);
    img->owned = ptx;
    img->target = r->target ? r->target : 90;
    if (r->max_registers) {
        img->jit_opts[img->n_jit] = JIT_MAX_REGISTERS;
        img->jit_values[img->n_jit++] = r->max_registers;
    }
    return 0;
}

typedef struct {
    int loads;
    int fail_next;             /* nonzero: the next load fails with this */
} backend_state;

static int load(void *ctx, const gf_modcache_image *img, void **module)
{
    backend_state *s = ctx;
    if (s->fail_next) {
        int rc = s->fail_next;
        s->fail_next = 0;
        return rc;
    }
    s->loads++;
    char *m = gf_malloc(GF_SHA256_HEX_LEN);   /* the "module": its image's fingerprint */
    gf_modcache_fingerprint(img, m);
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
    return gf_strfmt("gemm/tm%d/tn%d/u%d/sm_%d/maxreg%d", r->tile_m, r->tile_n, r->unroll,
                     r->target ? r->target : 90, r->max_registers);
}

static char *no_jit_key(const gemm_req *r)   /* forgets the JIT options */
{
    return gf_strfmt("gemm/tm%d/tn%d/u%d/sm_%d", r->tile_m, r->tile_n, r->unroll,
                     r->target ? r->target : 90);
}

static char *no_target_key(const gemm_req *r)   /* forgets the device */
{
    return gf_strfmt("gemm/tm%d/tn%d/u%d/maxreg%d", r->tile_m, r->tile_n, r->unroll,
                     r->max_registers);
}

static char *describe(const gemm_req *r)
{
    return gf_strfmt("gemm(tile %dx%d, unroll %d, maxreg %d, sm_%d, grid %d, block %d)",
                     r->tile_m, r->tile_n, r->unroll, r->max_registers, r->target ? r->target : 90,
                     r->grid_x, r->block_x);
}

static int get(gf_modcache *c, char *(*keyf)(const gemm_req *), gemm_req *r, void **m)
{
    char *key = keyf(r), *req = describe(r);
    int rc = gf_modcache_get(c, key, req, gemm_image, r, m);
    free(key);
    free(req);
    return rc;
}

/* Request a then b under keyf in a child process with a proving cache;
 * return how the child ended (its wait status) and what it wrote on stderr
 * (the caller frees). The child exits 0 when both requests passed. */
static int in_child(char *(*keyf)(const gemm_req *), gemm_req a, gemm_req b, char **err)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGABRT, SIG_DFL);   /* whatever the test runner set: die of it */
        dup2(fds[1], 2);
        close(fds[0]);
        backend_state bs = { 0 };
        gf_modcache_backend be = { load, unload, &bs };
        gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
        void *ma, *mb;
        if (get(c, keyf, &a, &ma) != 0 || get(c, keyf, &b, &mb) != 0)
            _exit(3);
        _exit(ma == mb ? 0 : 4);
    }
    close(fds[1]);
    size_t cap = 4096, n = 0;
    char *buf = gf_malloc(cap);
    ssize_t got;
    while ((got = read(fds[0], buf + n, cap - n - 1)) > 0) {
        n += (size_t)got;
        if (n + 1 == cap)
            buf = gf_realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    *err = buf;
    return status;
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
    gf_modcache_backend be = { load, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    gemm_req a = { 64, 64, 4, 0, 90, 120, 256, 0 }, b = { 64, 64, 4, 0, 90, 33, 128, 0 };
    void *ma, *mb;
    assert_int_equal(get(c, incomplete_key, &a, &ma), 0);
    assert_int_equal(get(c, incomplete_key, &b, &mb), 0);
    assert_ptr_equal(ma, mb);
    assert_int_equal(bs.loads, 1);
    assert_int_equal(b.gen_calls, 1);   /* proven by making its image again */
    assert_int_equal(gf_modcache_proven(c), 1);
    assert_int_equal(gf_modcache_count(c), 1);
    gf_modcache_destroy(&c);
    gf_modcache_destroy(&c);
    assert_null(c);
}

static void test_incomplete_key_stops_naming_both_requests(void **state)
{
    (void)state;
    gemm_req a = { 128, 64, 4, 0, 90, 120, 256, 0 }, b = { 128, 64, 8, 0, 90, 120, 256, 0 };
    char *err = NULL;
    int status = in_child(incomplete_key, a, b, &err);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_non_null(strstr(err, "module key 'gemm/tm128/tn64' is incomplete"));
    assert_non_null(strstr(err, "request gemm(tile 128x64, unroll 8, maxreg 0, sm_90, grid 120, block 256)"));
    assert_non_null(strstr(err, "loaded for request gemm(tile 128x64, unroll 4, maxreg 0, sm_90, grid 120, block 256)"));
    free(err);
    /* The same two requests under the complete key: both load, no stop. */
    status = in_child(complete_key, a, b, &err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 4);   /* two modules, as they should be */
    free(err);
}

static void test_jit_options_and_device_belong_in_the_key(void **state)
{
    (void)state;
    /* A register limit changes the code: a key without it is incomplete. */
    gemm_req a = { 64, 64, 4, 0, 90, 1, 256, 0 }, b = { 64, 64, 4, 128, 90, 1, 256, 0 };
    char *err = NULL;
    int status = in_child(no_jit_key, a, b, &err);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    assert_non_null(strstr(err, "jit {0=128}"));
    assert_non_null(strstr(err, "jit {}"));
    free(err);
    /* The same PTX JIT-compiled for another device is another module. */
    gemm_req c = { 64, 64, 4, 0, 80, 1, 256, 0 }, d = { 64, 64, 4, 0, 90, 1, 256, 0 };
    status = in_child(no_target_key, c, d, &err);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    assert_non_null(strstr(err, "target sm_90"));
    assert_non_null(strstr(err, "target sm_80"));
    free(err);
    status = in_child(complete_key, c, d, &err);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 4);
    free(err);
}

static void test_complete_key_loads_each(void **state)
{
    (void)state;
    backend_state bs = { 0 };
    gf_modcache_backend be = { load, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    void *m[4];
    gemm_req r[4] = { { 128, 64, 4, 0, 90, 1, 256, 0 }, { 128, 64, 8, 0, 90, 1, 256, 0 },
                      { 64, 128, 4, 0, 90, 1, 256, 0 }, { 64, 128, 4, 96, 90, 1, 256, 0 } };
    for (int i = 0; i < 4; i++)
        assert_int_equal(get(c, complete_key, &r[i], &m[i]), 0);
    assert_int_equal(bs.loads, 4);
    assert_int_equal(gf_modcache_count(c), 4);
    assert_string_not_equal((char *)m[0], (char *)m[1]);
    assert_string_not_equal((char *)m[2], (char *)m[3]);
    void *again;
    assert_int_equal(get(c, complete_key, &r[3], &again), 0);
    assert_ptr_equal(again, m[3]);
    assert_int_equal(gf_modcache_proven(c), 1);
    gf_modcache_destroy(&c);
}

static void test_release_only_looks_up(void **state)
{
    (void)state;
    backend_state bs = { 0 };
    gf_modcache_backend be = { load, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_LOOKUP, &be);
    gemm_req a = { 128, 64, 4, 0, 90, 1, 256, 0 }, b = { 128, 64, 8, 0, 90, 1, 256, 0 };
    void *ma, *mb;
    assert_int_equal(get(c, incomplete_key, &a, &ma), 0);
    /* No image made on a hit: the stale module is what an incomplete key
     * gets in a release build, which is why debug and test builds prove. */
    assert_int_equal(get(c, incomplete_key, &b, &mb), 0);
    assert_ptr_equal(ma, mb);
    assert_int_equal(b.gen_calls, 0);
    assert_int_equal(gf_modcache_loads(c), 1);
    assert_int_equal(gf_modcache_proven(c), 0);
    gf_modcache_destroy(&c);
}

static void test_load_failure_caches_nothing(void **state)
{
    (void)state;
    backend_state bs = { .fail_next = GF_EDEVICE };
    gf_modcache_backend be = { load, unload, &bs };
    gf_modcache *c = gf_modcache_new(GF_MODCACHE_PROVE, &be);
    gemm_req a = { 32, 32, 2, 0, 90, 1, 64, 0 };
    void *m;
    assert_int_equal(get(c, complete_key, &a, &m), GF_EDEVICE);
    assert_null(m);
    assert_int_equal(gf_modcache_count(c), 0);
    assert_int_equal(get(c, complete_key, &a, &m), 0);   /* retried, not a cached failure */
    assert_non_null(m);
    gf_modcache_destroy(&c);
}

static void test_fingerprint_covers_data_target_and_options(void **state)
{
    (void)state;
    gf_modcache_image a = { .data = "ptx", .len = 3, .target = 90 };
    gf_modcache_image b = a;
    char pa[GF_SHA256_HEX_LEN], pb[GF_SHA256_HEX_LEN];
    gf_modcache_fingerprint(&a, pa);
    /* A known digest stands for the data: the same fingerprint as hashing it. */
    char dsha[GF_SHA256_HEX_LEN];
    gf_sha256_hex("ptx", 3, dsha);
    b.data_sha256 = dsha;
    gf_modcache_fingerprint(&b, pb);
    assert_string_equal(pa, pb);
    b.data = "PTX";
    b.data_sha256 = NULL;
    gf_modcache_fingerprint(&b, pb);
    assert_string_not_equal(pa, pb);
    b = a;
    b.target = 80;
    gf_modcache_fingerprint(&b, pb);
    assert_string_not_equal(pa, pb);
    b = a;
    b.n_jit = 1;
    b.jit_opts[0] = JIT_MAX_REGISTERS;
    b.jit_values[0] = 64;
    gf_modcache_fingerprint(&b, pb);
    assert_string_not_equal(pa, pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_test_builds_prove),
        cmocka_unit_test(test_launch_geometry_alone_passes),
        cmocka_unit_test(test_incomplete_key_stops_naming_both_requests),
        cmocka_unit_test(test_jit_options_and_device_belong_in_the_key),
        cmocka_unit_test(test_complete_key_loads_each),
        cmocka_unit_test(test_release_only_looks_up),
        cmocka_unit_test(test_load_failure_caches_nothing),
        cmocka_unit_test(test_fingerprint_covers_data_target_and_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
