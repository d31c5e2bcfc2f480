/* test_notify.c — `submit --notify` (broker/notify.h): what the command
 * gets (argv, an environment of its own with the job's id, state and
 * exit status, the job's name only as a variable), the queue's limits
 * (per user, in all, full), and real children: one runs in the job's
 * folder with /dev/null for its output, one that hangs is killed at its
 * time with what it left in its group, one that cannot enter the folder
 * runs in the home folder. As the user running the test (root's jobs run as
 * root); other users are tests/integration/jobs_notify.sh's. */
#include "broker/notify.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_job(gf_job *j, uint64_t id, const char *cmd)
{
    gf_job_init(j);
    j->id = id;
    j->state = GF_STATE_FAILED;
    j->exit_status = 3;
    j->uid = (uint32_t)geteuid();
    j->gid = (uint32_t)getegid();
    j->spec.notify = gf_strdup(cmd);
    j->spec.cwd = gf_strdup("/");
    j->spec.name = gf_strdup("train; rm -rf / $(id)");
    j->reason = gf_strdup("exit status 3");
}

static const char *env_get(char **env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], name, n) == 0 && env[i][n] == '=')
            return env[i] + n + 1;
    return NULL;
}

static void free_strv(char **v)
{
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
}

static void test_argv_and_environment(void **state)
{
    (void)state;
    gf_job j;
    make_job(&j, 42, "echo hi");
    j.out_path = gf_strdup("/spool/42.out");
    gf_notify_run r = { .job = &j, .user = "ana", .home = "/home/ana" };
    char **argv = gf_notify_argv(&j);
    assert_string_equal(argv[0], "sh");
    assert_string_equal(argv[1], "-c");
    assert_string_equal(argv[2], "echo hi");
    assert_string_equal(argv[3], "gpuflock-notify");
    assert_string_equal(argv[4], "42");
    assert_string_equal(argv[5], "failed");
    assert_string_equal(argv[6], "3");
    assert_null(argv[7]);
    free_strv(argv);
    char **env = gf_notify_env(&r);
    assert_string_equal(env_get(env, "PATH"), "/usr/local/bin:/usr/bin:/bin");
    assert_string_equal(env_get(env, "HOME"), "/home/ana");
    assert_string_equal(env_get(env, "USER"), "ana");
    assert_string_equal(env_get(env, "LOGNAME"), "ana");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_ID"), "42");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_STATE"), "failed");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_EXIT"), "3");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_SIGNAL"), "0");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_NAME"), "train; rm -rf / $(id)");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_REASON"), "exit status 3");
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_STDOUT"), "/spool/42.out");
    assert_null(env_get(env, "GPUFLOCK_JOB_STDERR"));
    /* nothing of the broker's own environment */
    setenv("GF_TEST_SECRET", "s3cret", 1);
    for (size_t i = 0; env[i]; i++)
        assert_null(strstr(env[i], "s3cret"));
    free_strv(env);
    /* cancelled before it ran: no exit status, no home known */
    j.state = GF_STATE_CANCELLED;
    j.exit_status = -1;
    r.home = NULL;
    env = gf_notify_env(&r);
    assert_string_equal(env_get(env, "GPUFLOCK_JOB_EXIT"), "");
    assert_string_equal(env_get(env, "HOME"), "/");
    free_strv(env);
    argv = gf_notify_argv(&j);
    assert_string_equal(argv[5], "cancelled");
    assert_string_equal(argv[6], "");
    free_strv(argv);
    gf_job_clear(&j);
}

static bool always(void *arg, uint64_t id)
{
    (void)arg;
    (void)id;
    return true;
}

static bool odd_only(void *arg, uint64_t id)
{
    (void)arg;
    return id % 2 == 1;
}

static void test_queue_order_and_readiness(void **state)
{
    (void)state;
    gf_notify *n = gf_notify_new(5);
    for (uint64_t id = 1; id <= 4; id++)
        assert_true(gf_notify_queue(n, id, 1000));
    assert_int_equal(gf_notify_waiting(n), 4);
    /* not ready yet (its end not in the store): passed over, kept */
    assert_int_equal(gf_notify_next(n, odd_only, NULL), 1);
    assert_int_equal(gf_notify_next(n, odd_only, NULL), 3);
    assert_int_equal(gf_notify_next(n, odd_only, NULL), 0);
    assert_int_equal(gf_notify_waiting(n), 2);
    assert_int_equal(gf_notify_next(n, always, NULL), 2);
    assert_int_equal(gf_notify_next(n, always, NULL), 4);
    assert_int_equal(gf_notify_next(n, always, NULL), 0);
    gf_notify_destroy(&n);
    assert_null(n);
    gf_notify_destroy(&n);
}

static void test_queue_is_bounded(void **state)
{
    (void)state;
    gf_notify *n = gf_notify_new(5);
    for (uint64_t id = 1; id <= GF_NOTIFY_QUEUED; id++)
        assert_true(gf_notify_queue(n, id, (uint32_t)(id % 7)));
    assert_false(gf_notify_queue(n, GF_NOTIFY_QUEUED + 1, 0));
    assert_int_equal(gf_notify_waiting(n), GF_NOTIFY_QUEUED);
    assert_int_equal(gf_notify_next(n, always, NULL), 1);
    assert_true(gf_notify_queue(n, GF_NOTIFY_QUEUED + 2, 0));   /* room again */
    gf_notify_destroy(&n);
}

/* Wait (real time) until nothing runs, ticking as the broker does. */
static void drain(gf_notify *n, int max_ms)
{
    for (int t = 0; t < max_ms && gf_notify_running(n); t += 20) {
        gf_notify_tick(n, gf_now_ms());
        usleep(20000);
    }
    gf_notify_tick(n, gf_now_ms());
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gf_strdup("");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return gf_strdup(buf);
}

static void test_child_runs_with_its_environment(void **state)
{
    (void)state;
    char dir[128];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-notify"), 0);
    char *cmd = gf_strfmt("{ pwd; echo \"$1 $2 [$3] $GPUFLOCK_JOB_NAME\"; id -u; "
                          "ls -l /proc/self/fd | grep -c socket; echo out-to-null; } > %s/got",
                          dir);
    gf_job j;
    make_job(&j, 7, cmd);
    free(j.spec.cwd);
    j.spec.cwd = gf_strdup(dir);
    uint32_t groups[] = { (uint32_t)getegid() };
    gf_notify_run r = { .job = &j, .user = "tester", .home = "/", .groups = groups,
                        .n_groups = 1 };
    gf_notify *n = gf_notify_new(10);
    /* the parent's signal mask and an ignored SIGPIPE stay the parent's */
    signal(SIGPIPE, SIG_IGN);
    pid_t pid = gf_notify_spawn(n, &r, 0, gf_now_ms());
    assert_true(pid > 0);
    assert_int_equal(gf_notify_running(n), 1);
    drain(n, 5000);
    assert_int_equal(gf_notify_running(n), 0);
    char *path = gf_strfmt("%s/got", dir), *got = slurp(path);
    char *want = gf_strfmt("%s\n7 failed [3] train; rm -rf / $(id)\n%u\n0\nout-to-null\n", dir,
                           (unsigned)geteuid());
    assert_string_equal(got, want);
    free(got);
    free(want);
    /* a folder it cannot enter (gone): its home instead */
    free(j.spec.cwd);
    j.spec.cwd = gf_strfmt("%s/gone", dir);
    r.home = dir;
    assert_true(gf_notify_spawn(n, &r, 0, gf_now_ms()) > 0);
    drain(n, 5000);
    got = slurp(path);
    assert_int_equal(strncmp(got, dir, strlen(dir)), 0);
    assert_int_equal(got[strlen(dir)], '\n');
    free(got);
    gf_notify_destroy(&n);
    gf_job_clear(&j);
    free(cmd);
    free(path);
    gf_test_rmtree(dir);
}

static void test_hanging_child_killed_with_its_group(void **state)
{
    (void)state;
    char dir[128];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-notify"), 0);
    /* a child in the background, then the command hangs */
    char *cmd = gf_strfmt("sleep 300 & echo $! > %s/bg; sleep 300", dir);
    gf_job j;
    make_job(&j, 8, cmd);
    uint32_t groups[] = { (uint32_t)getegid() };
    gf_notify_run r = { .job = &j, .user = "tester", .groups = groups, .n_groups = 1 };
    gf_notify *n = gf_notify_new(1);
    uint64_t t0 = gf_now_ms();
    assert_true(gf_notify_spawn(n, &r, 0, t0) > 0);
    drain(n, 10000);
    assert_int_equal(gf_notify_running(n), 0);
    assert_true(gf_now_ms() - t0 >= 1000);
    assert_true(gf_now_ms() - t0 < 8000);
    char *path = gf_strfmt("%s/bg", dir), *bg = slurp(path);
    pid_t left = (pid_t)atoi(bg);
    assert_true(left > 0);
    usleep(100000);
    char *proc = gf_strfmt("/proc/%d/stat", (int)left);
    char *st = slurp(proc);
    /* gone, or a zombie of another parent at most */
    assert_true(st[0] == '\0' || strstr(st, ") Z ") != NULL);
    free(st);
    free(proc);
    free(bg);
    free(path);
    gf_notify_destroy(&n);
    gf_job_clear(&j);
    free(cmd);
    gf_test_rmtree(dir);
}

static void test_running_limits(void **state)
{
    (void)state;
    gf_notify *n = gf_notify_new(5);
    gf_job j;
    make_job(&j, 1, "sleep 5");
    uint32_t groups[] = { (uint32_t)getegid() };
    gf_notify_run r = { .job = &j, .user = "tester", .groups = groups, .n_groups = 1 };
    /* one user's notifications: GF_NOTIFY_PER_USER at a time */
    for (int i = 0; i < GF_NOTIFY_PER_USER; i++)
        assert_true(gf_notify_spawn(n, &r, 0, gf_now_ms()) > 0);
    assert_true(gf_notify_queue(n, 2, j.uid));
    assert_true(gf_notify_queue(n, 3, j.uid + 1));
    assert_int_equal(gf_notify_next(n, always, NULL), 3);   /* another user's goes first */
    assert_int_equal(gf_notify_next(n, always, NULL), 0);   /* this user's waits */
    assert_int_equal(gf_notify_waiting(n), 1);
    /* end them: the time is up at once */
    for (int i = 0; i < 500 && gf_notify_running(n); i++) {
        gf_notify_tick(n, gf_now_ms() + 60000);
        usleep(10000);
    }
    assert_int_equal(gf_notify_running(n), 0);
    assert_int_equal(gf_notify_next(n, always, NULL), 2);
    gf_notify_destroy(&n);
    gf_job_clear(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_and_environment),
        cmocka_unit_test(test_queue_order_and_readiness),
        cmocka_unit_test(test_queue_is_bounded),
        cmocka_unit_test(test_child_runs_with_its_environment),
        cmocka_unit_test(test_hanging_child_killed_with_its_group),
        cmocka_unit_test(test_running_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
