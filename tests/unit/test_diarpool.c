/* test_diarpool.c — the worker's pool of loaded pipelines (worker/diarpool.h),
 * on a CPU card with weight-free models directories: a directory given back
 * is taken again loaded; beyond worker.model_sets the least recently used
 * idle directory is dropped, one in use never is, the configured one never
 * is; one whose load failed is not kept; a directory whose files changed
 * since they were loaded is loaded again and the old pipelines dropped;
 * and, as root, a caller whose file-system identity may not read the
 * directory is refused although its pipeline is loaded. */
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/models.h"
#include "route/plan.h"
#include "worker/diarpool.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char tmpdir[4096];   /* a fresh 0700 folder of mkdtemp's, removed at the end */
static gf_config *cfg;
static gf_route_plan *plan;   /* the CPU card's */

static int setup(void **state)
{
    (void)state;
    if (gf_test_mkdtemp(tmpdir, sizeof tmpdir, "gf-diarpool") != 0 ||
        gf_config_load(NULL, &cfg) != 0)
        return -1;
    free(cfg->models_dir);
    cfg->models_dir = gf_strfmt("%s/z", tmpdir);   /* the configured one */
    cfg->batch_size = 4;
    cfg->cpu_threads = 1;
    gf_card_identity card;
    memset(&card, 0, sizeof(card));
    card.kind = GF_DEVICE_CPU;
    plan = gf_route_plan_new(&card, gf_evidence_default_dir(), &gf_module_provider_none, false);
    if (!plan)
        return -1;
    for (const char *d = "abcz"; *d; d++) {
        char *p = gf_strfmt("%s/%c", tmpdir, *d);
        if (mkdir(p, 0755) != 0)
            return -1;
        free(p);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gf_route_plan_destroy(&plan);
    gf_config_destroy(&cfg);
    return gf_test_rmtree(tmpdir);
}

static char *dir(char name)
{
    return gf_strfmt("%s/%c", tmpdir, name);
}

/* Take a pipeline of directory name: it must come, cached or not as said. */
static gf_diar_pipe *take(gf_diar_pool *pool, char name, bool want_cached)
{
    char *d = dir(name);
    bool cached = !want_cached;
    gf_diar_pipe *p = gf_diar_pool_take(pool, d, &cached);
    assert_non_null(p);
    assert_non_null(p->diar);
    if (cached != want_cached)
        fail_msg("%s: cached %d, expected %d", d, cached, want_cached);
    free(d);
    return p;
}

static void reused_and_capped(void **state)
{
    (void)state;
    cfg->model_sets = 1;
    gf_diar_pool *pool = gf_diar_pool_new(cfg, plan);
    gf_diar_pipe *p = take(pool, 'a', false);
    gf_diar_pool_give(pool, &p);
    assert_null(p);
    p = take(pool, 'a', true);   /* given back: loaded */
    gf_diar_pool_give(pool, &p);
    assert_int_equal(gf_diar_pool_sets(pool), 1);
    p = take(pool, 'b', false);  /* a second directory: a is idle and dropped */
    assert_int_equal(gf_diar_pool_sets(pool), 1);
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'a', false);  /* loaded again */
    gf_diar_pool_give(pool, &p);

    /* in use, never dropped: a and b both held, then c; each given back
     * leaves the least recently used idle ones over the cap to go */
    gf_diar_pipe *pa = take(pool, 'a', true);
    gf_diar_pipe *pb = take(pool, 'b', false);
    gf_diar_pipe *pc = take(pool, 'c', false);
    assert_int_equal(gf_diar_pool_sets(pool), 3);
    gf_diar_pool_give(pool, &pb);
    assert_int_equal(gf_diar_pool_sets(pool), 2);   /* b went; a and c are in use */
    gf_diar_pool_give(pool, &pa);
    assert_int_equal(gf_diar_pool_sets(pool), 1);   /* a went */
    gf_diar_pool_give(pool, &pc);
    assert_int_equal(gf_diar_pool_sets(pool), 1);   /* c stays: within the cap */
    p = take(pool, 'c', true);
    gf_diar_pool_give(pool, &p);
    gf_diar_pool_destroy(&pool);

    /* two kept: a and b both stay loaded, c makes one too many */
    cfg->model_sets = 2;
    pool = gf_diar_pool_new(cfg, plan);
    p = take(pool, 'a', false);
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'b', false);
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'a', true);   /* a is now the more recently used */
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'c', false);
    gf_diar_pool_give(pool, &p);
    assert_int_equal(gf_diar_pool_sets(pool), 2);
    p = take(pool, 'a', true);   /* b went, not a */
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'b', false);
    gf_diar_pool_give(pool, &p);
    gf_diar_pool_destroy(&pool);
    cfg->model_sets = 2;
}

static void write_file(const char *path, const char *text);

static void configured_kept_failed_dropped(void **state)
{
    (void)state;
    cfg->model_sets = 1;
    gf_diar_pool *pool = gf_diar_pool_new(cfg, plan);
    bool cached = true;
    gf_diar_pipe *p = gf_diar_pool_take(pool, NULL, &cached);   /* the configured folder */
    assert_non_null(p);
    assert_false(cached);
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'a', false);
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'b', false);   /* a goes, the configured one stays */
    gf_diar_pool_give(pool, &p);
    assert_int_equal(gf_diar_pool_sets(pool), 1);
    p = gf_diar_pool_take(pool, NULL, &cached);
    assert_true(cached);
    gf_diar_pool_give(pool, &p);

    /* network files that are not networks: the load fails, nothing is kept */
    char *d = dir('c');
    char *seg = gf_strfmt("%s/%s", d, GF_MODELS_SEGMENTATION);
    char *emb = gf_strfmt("%s/%s", d, GF_MODELS_EMBEDDING);
    write_file(seg, "not a network\n");
    write_file(emb, "not a network\n");
    assert_null(gf_diar_pool_take(pool, d, &cached));
    assert_int_equal(gf_diar_pool_sets(pool), 1);
    assert_int_equal(unlink(seg), 0);
    assert_int_equal(unlink(emb), 0);
    free(seg);
    free(emb);
    free(d);
    gf_diar_pool_destroy(&pool);
    cfg->model_sets = 2;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void changed_files_loaded_again(void **state)
{
    (void)state;
    gf_diar_pool *pool = gf_diar_pool_new(cfg, plan);
    char *m = gf_strfmt("%s/a/%s", tmpdir, GF_MODELS_MANIFEST);
    write_file(m, "");
    gf_diar_pipe *p = take(pool, 'a', false);
    gf_diar_pool_give(pool, &p);
    p = take(pool, 'a', true);
    gf_diar_pool_give(pool, &p);
    /* the same bytes, written again: its change time moves */
    struct timespec pause = { 0, 20 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    write_file(m, "");
    p = take(pool, 'a', false);
    assert_int_equal(gf_diar_pool_sets(pool), 1);   /* the old pipelines went at once */
    gf_diar_pool_give(pool, &p);
    /* a file that appears, and one that goes, change it too */
    char *r = gf_strfmt("%s/a/%s", tmpdir, GF_MODELS_PLDA);
    char *pd = gf_strfmt("%s/a/plda", tmpdir);
    assert_int_equal(mkdir(pd, 0755), 0);
    write_file(r, "x");
    gf_models_id before, after;
    char *d = dir('a');
    assert_int_equal(gf_models_id_take(d, &before), 0);
    assert_int_equal(unlink(r), 0);
    assert_int_equal(gf_models_id_take(d, &after), 0);
    assert_false(gf_models_id_equal(&before, &after));
    assert_int_equal(gf_models_id_take(d, &before), 0);
    assert_true(gf_models_id_equal(&before, &after));
    assert_int_equal(rmdir(pd), 0);
    assert_int_equal(unlink(m), 0);
    free(d);
    free(pd);
    free(r);
    free(m);
    gf_diar_pool_destroy(&pool);
}

/* The thread's file-system uid and gid (per thread in the kernel), as a
 * worker's job thread takes its submitter's. */
static void become(unsigned uid)
{
    syscall(SYS_setfsgid, uid);
    syscall(SYS_setfsuid, uid);
}

static void unreadable_refused_though_loaded(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        skip();   /* needs root to take another file-system identity */
        return;
    }
    gf_diar_pool *pool = gf_diar_pool_new(cfg, plan);
    char *d = dir('c');
    char *m = gf_strfmt("%s/%s", d, GF_MODELS_MANIFEST);
    write_file(m, "");
    assert_int_equal(chmod(d, 0700), 0);
    gf_diar_pipe *p = take(pool, 'c', false);   /* root loads it */
    gf_diar_pool_give(pool, &p);
    become(65534);
    bool cached = true;
    gf_log_clear_last_error();
    assert_null(gf_diar_pool_take(pool, d, &cached));
    assert_false(cached);
    become(0);
    assert_non_null(strstr(gf_log_last_error(), "cannot read"));
    assert_non_null(strstr(gf_log_last_error(), d));
    /* and a file the user may not read, in a folder they may enter */
    assert_int_equal(chmod(d, 0755), 0);
    assert_int_equal(chmod(m, 0600), 0);
    become(65534);
    assert_null(gf_diar_pool_take(pool, d, &cached));
    become(0);
    p = take(pool, 'c', false);   /* the chmod moved the file's change time: loaded again */
    gf_diar_pool_give(pool, &p);
    assert_int_equal(unlink(m), 0);
    free(m);
    free(d);
    gf_diar_pool_destroy(&pool);
}

int main(void)
{
    gf_log_init("test_diarpool", GF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reused_and_capped),
        cmocka_unit_test(configured_kept_failed_dropped),
        cmocka_unit_test(changed_files_loaded_again),
        cmocka_unit_test(unreadable_refused_though_loaded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
