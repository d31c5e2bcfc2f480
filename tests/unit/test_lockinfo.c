/* test_lockinfo.c — holders of a lock file from /proc/locks, with real
 * flock(1) holders. */
#include "common/error.h"
#include "common/lock.h"
#include "common/lockinfo.h"
#include "common/log.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/flock_procs.h"
#include "tests/unit/tmpdir.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    return gf_test_mkdtemp(dir, sizeof dir, "gf-test-lockinfo");
}

static int teardown(void **state)
{
    (void)state;
    return gf_test_rmtree(dir);
}

static char *make_lock_file(const char *name)
{
    char *path = gf_strfmt("%s/%s", dir, name);
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_non_null(l);
    gf_lock_destroy(&l);
    return path;
}

static void test_flock_holder_with_pid(void **state)
{
    (void)state;
    char *path = make_lock_file("x.lock");
    char *other = make_lock_file("other.lock");
    pid_t fl = flock_holder(path, 1);
    assert_true(fl > 0);
    gf_lock_holder *h = NULL;
    size_t n = 0;
    assert_int_equal(gf_lock_holders(path, &h, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].pid, fl);
    assert_int_equal(h[0].mode, GF_LOCK_EXCLUSIVE);
    assert_true(h[0].alive);
    assert_false(h[0].gpuflock);
    assert_string_equal(h[0].command, "sleep 600");   /* flock -F exec'd it */
    char buf[256];
    gf_lock_holder_describe(&h[0], buf, sizeof buf);
    char *want = gf_strfmt("pid %d (exclusive, flock: sleep 600)", (int)fl);
    assert_string_equal(buf, want);
    free(want);
    gf_lock_holders_free(&h, n);
    assert_null(h);

    assert_int_equal(gf_lock_holders(other, &h, &n), 0);   /* same folder, other inode */
    assert_int_equal(n, 0);
    kill_wait(fl);
    assert_int_equal(gf_lock_holders(path, &h, &n), 0);
    assert_int_equal(n, 0);
    free(path);
    free(other);
}

static void test_shared_holders_listed(void **state)
{
    (void)state;
    char *path = make_lock_file("s.lock");
    pid_t fl = flock_holder(path, 0);
    assert_true(fl > 0);
    gf_lock *mine = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_int_equal(gf_lock_try(mine, GF_LOCK_SHARED), 0);
    gf_lock_holder *h = NULL;
    size_t n = 0;
    assert_int_equal(gf_lock_holders(path, &h, &n), 0);
    assert_int_equal(n, 2);
    int seen_flock = 0, seen_me = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(h[i].mode, GF_LOCK_SHARED);
        seen_flock += h[i].pid == fl;
        seen_me += h[i].pid == getpid();
    }
    assert_int_equal(seen_flock, 1);
    assert_int_equal(seen_me, 1);
    gf_lock_holders_free(&h, n);
    gf_lock_destroy(&mine);
    kill_wait(fl);
    free(path);
}

static void test_missing_file_has_no_holders(void **state)
{
    (void)state;
    char *path = gf_strfmt("%s/never-made.lock", dir);
    gf_lock_holder *h = NULL;
    size_t n = 7;
    assert_int_equal(gf_lock_holders(path, &h, &n), 0);
    assert_int_equal(n, 0);
    assert_null(h);
    free(path);
}

/* GPUFLOCK_LOCK_FILE naming this file marks a gpuflock job. */
static void test_gpuflock_job_by_environment(void **state)
{
    (void)state;
    char *path = make_lock_file("env.lock");
    char *env = gf_strfmt("GPUFLOCK_LOCK_FILE=/elsewhere/gpu9.lock,%s", path);
    char *argv[] = { "env", env, "flock", "-F", "-x", path, "sleep", "600", NULL };
    pid_t pid = spawn_argv(argv, 0);   /* env execs flock execs sleep: one pid */
    assert_true(pid > 0);
    assert_true(wait_holder(path, pid));
    gf_lock_holder *h = NULL;
    size_t n = 0;
    assert_int_equal(gf_lock_holders(path, &h, &n), 0);
    assert_int_equal(n, 1);
    assert_true(h[0].gpuflock);
    gf_lock_holders_free(&h, n);
    kill_wait(pid);
    free(env);
    free(path);
}

/* flock(1) killed while its command runs on: /proc/locks keeps the dead
 * taker's pid; the lock is held through the inherited descriptor. */
static void test_dead_taker_inherited(void **state)
{
    (void)state;
    char *path = make_lock_file("dead.lock");
    char *pidfile = gf_strfmt("%s/child.pid", dir);
    char *script = gf_strfmt("echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 600", pidfile,
                             pidfile, pidfile);
    char *argv[] = { "flock", "-x", path, "sh", "-c", script, NULL };
    pid_t fl = spawn_argv(argv, 0);
    assert_true(fl > 0);
    assert_true(wait_holder(path, fl));
    FILE *f = NULL;
    for (uint64_t end = gf_now_ms() + READY_DEADLINE_MS; !f && gf_now_ms() < end; sleep_ms(5))
        f = fopen(pidfile, "r");
    assert_non_null(f);
    int child = 0;
    assert_int_equal(fscanf(f, "%d", &child), 1);
    fclose(f);
    kill_wait(fl);

    gf_lock_holder *h = NULL;
    size_t n = 0;
    assert_int_equal(gf_lock_holders(path, &h, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(h[0].pid, fl);
    assert_false(h[0].alive);
    char buf[256];
    gf_lock_holder_describe(&h[0], buf, sizeof buf);
    assert_non_null(strstr(buf, "exited"));
    gf_lock_holders_free(&h, n);
    assert_int_equal(flock_probe(path, 0), 1);
    kill((pid_t)child, SIGKILL);       /* not our child: poll until it is gone */
    int free_now = 1;
    for (uint64_t end = gf_now_ms() + READY_DEADLINE_MS; free_now && gf_now_ms() < end;)
        if ((free_now = flock_probe(path, 1)) != 0)
            sleep_ms(5);
    assert_int_equal(free_now, 0);
    free(script);
    free(pidfile);
    free(path);
}

int main(void)
{
    gf_log_init("test_lockinfo", GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flock_holder_with_pid),
        cmocka_unit_test(test_shared_holders_listed),
        cmocka_unit_test(test_missing_file_has_no_holders),
        cmocka_unit_test(test_gpuflock_job_by_environment),
        cmocka_unit_test(test_dead_taker_inherited),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
