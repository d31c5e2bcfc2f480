/* test_spawn.c — running a command in its own group: exit statuses, exec
 * failures, the environment given, and signals passed on to the group. */
#include "common/error.h"
#include "common/log.h"
#include "common/spawn.h"
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
#include <sys/wait.h>
#include <unistd.h>

static int run_sh(const char *script)
{
    char *argv[] = { "sh", "-c", (char *)script, NULL };
    int status = -1;
    assert_int_equal(gf_spawn_run(argv, NULL, &status), 0);
    return status;
}

static void test_exit_statuses(void **state)
{
    (void)state;
    assert_int_equal(run_sh("exit 0"), 0);
    assert_int_equal(run_sh("exit 42"), 42);
    assert_int_equal(run_sh("kill -KILL $$"), 128 + SIGKILL);
    assert_int_equal(run_sh("kill -SEGV $$"), 128 + SIGSEGV);
}

static void test_exec_failures(void **state)
{
    (void)state;
    gf_log_init(NULL, GF_LOG_OFF);
    char *missing[] = { "gf-no-such-command-here", NULL };
    char *notexec[] = { "/tmp", NULL };   /* a folder: EACCES */
    int status = 0;
    assert_int_equal(gf_spawn_run(missing, NULL, &status), 0);
    assert_int_equal(status, 127);
    assert_int_equal(gf_spawn_run(notexec, NULL, &status), 0);
    assert_int_equal(status, 126);
    gf_log_init(NULL, GF_LOG_WARN);
}

static void test_environment_given(void **state)
{
    (void)state;
    char *env[] = { "GF_TEST_VALUE=17", "PATH=/usr/bin:/bin", NULL };
    char *argv[] = { "sh", "-c", "[ \"$GF_TEST_VALUE\" = 17 ] && [ -z \"$HOME\" ]", NULL };
    int status = -1;
    assert_int_equal(gf_spawn_run(argv, env, &status), 0);
    assert_int_equal(status, 0);
}

/* Own process group: the command's group id is its pid, not ours. */
static void test_own_process_group(void **state)
{
    (void)state;
    char *script = NULL;
    assert_true(asprintf(&script, "[ \"$(ps -o pgid= -p $$ | tr -d ' ')\" = \"$$\" ] && "
                         "[ \"$(ps -o pgid= -p $$ | tr -d ' ')\" != %d ]", (int)getpgrp()) > 0);
    assert_int_equal(run_sh(script), 0);
    free(script);
}

/* A SIGTERM sent to us reaches every process of the command's group: the
 * script (which ignores it from its first word) waits for its background
 * child, which reports the signal through a file; the script then exits 33.
 * Readiness is a file the child writes once its trap is set. */
static void test_signals_passed_on(void **state)
{
    (void)state;
    char dir[200];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-spawn"), 0);
    pid_t runner = fork();
    if (runner == 0) {
        char *script = NULL;
        if (asprintf(&script,
                     "trap '' TERM; cd %s; env --default-signal sh -c "
                     "\"trap 'echo child > got; exit 0' TERM; touch ready; "
                     "while :; do sleep 0.05; done\" & "
                     "wait; [ -f got ] && exit 33; exit 1", dir) < 0)
            _exit(99);
        char *argv[] = { "sh", "-c", script, NULL };
        int status = -1;
        if (gf_spawn_run(argv, NULL, &status) != 0)
            _exit(98);
        _exit(status);
    }
    char ready[256];
    snprintf(ready, sizeof ready, "%s/ready", dir);
    for (int i = 0; i < 4000 && access(ready, F_OK) != 0; i++)
        usleep(5000);
    assert_int_equal(access(ready, F_OK), 0);
    kill(runner, SIGTERM);
    int st = 0;
    assert_int_equal(waitpid(runner, &st, 0), runner);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 33);
    assert_int_equal(gf_test_rmtree(dir), 0);
}

int main(void)
{
    gf_log_init("test_spawn", GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_statuses),
        cmocka_unit_test(test_exec_failures),
        cmocka_unit_test(test_environment_given),
        cmocka_unit_test(test_own_process_group),
        cmocka_unit_test(test_signals_passed_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
