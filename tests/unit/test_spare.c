/* test_spare.c — a job guard made ready ahead (worker/spare.c) by the real
 * gpuflock-guard fork server (beside this build's tests, in bin/): the job
 * a spare is handed runs in the spare's own process group with the given
 * arguments, environment, directory, stdout and stderr, keeps the
 * descriptors it was given (a card lock), and ends with the command's
 * status or signal; the spare is this process's child; without a spare
 * waiting nothing is taken; one server makes every spare; a spare or a
 * server that died is replaced, and nothing is left behind. */
#include "common/log.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"
#include "worker/spare.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    char dir[64];
    char guard[PATH_MAX];
} fx;

static int setup(void **state)
{
    fx *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-spare") != 0)
        return -1;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return -1;
    self[n] = 0;
    snprintf(f->guard, sizeof(f->guard), "%s/../bin/gpuflock-guard", dirname(self));
    if (access(f->guard, X_OK) != 0)
        return -1;
    gf_log_init("test_spare", GF_LOG_OFF);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    gf_test_rmtree(f->dir);
    free(f);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char *buf = gf_calloc(1, 4096);
    size_t n = fread(buf, 1, 4095, fp);
    buf[n] = 0;
    fclose(fp);
    return buf;
}

static void test_job_through_spare(void **state)
{
    fx *f = *state;
    gf_spare *sp = gf_spare_new(f->guard);
    gf_spare_job job;
    memset(&job, 0, sizeof(job));
    assert_int_equal(gf_spare_take(sp, &job), -1);     /* none started yet */
    gf_spare_fill(sp);

    char out_path[128], err_path[128], lock_path[128];
    snprintf(out_path, sizeof out_path, "%s/out", f->dir);
    snprintf(err_path, sizeof err_path, "%s/err", f->dir);
    snprintf(lock_path, sizeof lock_path, "%s/gpu0.lock", f->dir);
    int out = open(out_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    int err = open(err_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    int lock = open(lock_path, O_RDONLY | O_CREAT | O_CLOEXEC, 0666);
    assert_int_equal(flock(lock, LOCK_EX), 0);
    char script[256];
    snprintf(script, sizeof script,
             "printf '%%s %%s %%s' \"$WHO\" \"$PWD\" \"$(ps -o pgid= -p $$ | tr -d ' ')\"; "
             "echo oops >&2; flock -n %s true && exit 9; exit 7", lock_path);
    char *argv[] = { "sh", "-c", script, NULL };
    char *envp[] = { "WHO=ana", "PATH=/usr/bin:/bin", NULL };
    job = (gf_spare_job){ .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                          .cwd = f->dir, .argv = argv, .envp = envp, .out = out, .err = err,
                          .keep = &lock, .n_keep = 1 };
    pid_t pid = gf_spare_take(sp, &job);
    assert_true(pid > 0);
    assert_int_equal(gf_spare_take(sp, &job), -1);      /* used: none until the next fill */
    close(out);
    close(err);
    close(lock);           /* the job's copy holds the card now */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
    char *o = slurp(out_path), *e = slurp(err_path);
    char want[256];
    snprintf(want, sizeof want, "ana %s %d", f->dir, (int)pid);   /* the guard leads its group */
    assert_string_equal(o, want);
    assert_string_equal(e, "oops\n");
    free(o);
    free(e);
    /* the lock went with the job */
    lock = open(lock_path, O_RDONLY | O_CLOEXEC);
    assert_int_equal(flock(lock, LOCK_EX | LOCK_NB), 0);
    close(lock);
    gf_spare_destroy(&sp);
    assert_null(sp);
    gf_spare_destroy(&sp);
}

/* Wait for the server's answer to a fill. */
static void answered(gf_spare *sp)
{
    struct pollfd pfd = { gf_spare_fd(sp), POLLIN, 0 };
    assert_true(pfd.fd >= 0);
    assert_int_equal(poll(&pfd, 1, 5000), 1);
    gf_spare_collect(sp);
    assert_int_equal(gf_spare_fd(sp), -1);
}

/* The pid of our child whose command line matches the pattern, or 0. */
static int child_matching(const char *pattern)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "pgrep -P %d -f '%s'", (int)getpid(), pattern);
    FILE *p = popen(cmd, "r");
    int pid = 0;
    if (fscanf(p, "%d", &pid) != 1)
        pid = 0;
    pclose(p);
    return pid;
}

/* Run argv through a fresh spare; the wait status. */
static int run_through(gf_spare *sp, char **argv, pid_t *pid_out)
{
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    gf_spare_job job = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                         .cwd = "-", .argv = argv, .envp = envp, .out = null, .err = null };
    gf_spare_fill(sp);
    pid_t pid = gf_spare_take(sp, &job);
    close(null);
    assert_true(pid > 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);    /* our child */
    if (pid_out)
        *pid_out = pid;
    return status;
}

/* One server makes the spares, each a new process; a command that dies of
 * a signal makes its guard end by the same signal; a server killed between
 * jobs is replaced at the next fill. */
static void test_one_server(void **state)
{
    fx *f = *state;
    gf_spare *sp = gf_spare_new(f->guard);
    char *ok[] = { "true", NULL };
    char *term[] = { "sh", "-c", "kill -TERM $$", NULL };
    pid_t a, b;
    int status = run_through(sp, ok, &a);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int server = child_matching("^gpuflock-guard [0-9]+ --serve");
    assert_true(server > 0);
    status = run_through(sp, term, &b);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGTERM);
    assert_true(b != a);
    assert_int_equal(child_matching("^gpuflock-guard [0-9]+ --serve"), server);

    kill(server, SIGKILL);
    usleep(100000);
    status = run_through(sp, ok, NULL);  /* its fill reaps the server, starts another */
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int again = child_matching("^gpuflock-guard [0-9]+ --serve");
    assert_true(again > 0 && again != server);
    assert_int_equal(kill(server, 0), -1);           /* reaped, not a zombie */
    assert_int_equal(errno, ESRCH);
    gf_spare_destroy(&sp);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* A spare killed while it waits: the next fill replaces it, and a stopped
 * worker leaves no spare behind (reaped, not a zombie). */
static void test_dead_spare_replaced(void **state)
{
    fx *f = *state;
    gf_spare *sp = gf_spare_new(f->guard);
    gf_spare_fill(sp);
    answered(sp);
    /* find it: our child beside the server */
    int first = child_matching("^gpuflock-guard [0-9]+ --wait");
    assert_true(first > 0);
    kill(first, SIGKILL);
    usleep(100000);
    gf_spare_fill(sp);                 /* reaps the dead one, asks for another */
    assert_int_equal(kill(first, 0), -1);
    assert_int_equal(errno, ESRCH);
    gf_spare_job job;
    char *argv[] = { "true", NULL };
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    job = (gf_spare_job){ .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                          .cwd = "-", .argv = argv, .envp = envp, .out = null, .err = null };
    pid_t pid = gf_spare_take(sp, &job);
    assert_true(pid > 0 && pid != first);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gf_spare_fill(sp);
    gf_spare_destroy(&sp);             /* ends and reaps the waiting one */
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    close(null);
}

/* A server that answers without a spare (here a script in its place that
 * says EPERM, as a box refusing the fork would): nothing is taken, the
 * caller falls back, and the worker does not ask again within a second. */
static void test_server_without_spares(void **state)
{
    fx *f = *state;
    char fake[128];
    snprintf(fake, sizeof fake, "%s/fake-guard", f->dir);
    FILE *fp = fopen(fake, "w");
    assert_non_null(fp);
    /* one answer per request: pid 0, errno 1 (EPERM), native 32-bit words */
    fputs("#!/bin/sh\nwhile dd bs=1 count=1 <&3 2>/dev/null | grep -q .; do\n"
          "  printf '\\000\\000\\000\\000\\001\\000\\000\\000' >&3\ndone\n", fp);
    fclose(fp);
    chmod(fake, 0755);
    gf_spare *sp = gf_spare_new(fake);
    gf_spare_fill(sp);
    assert_true(gf_spare_fd(sp) >= 0);            /* asked */
    char *argv[] = { "true", NULL };
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    gf_spare_job job = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                         .cwd = "-", .argv = argv, .envp = envp, .out = null, .err = null };
    assert_int_equal(gf_spare_take(sp, &job), -1);
    gf_spare_fill(sp);
    assert_int_equal(gf_spare_fd(sp), -1);        /* not again so soon */
    usleep(1100000);
    gf_spare_fill(sp);
    assert_true(gf_spare_fd(sp) >= 0);            /* a second later it asks again */
    assert_int_equal(gf_spare_take(sp, &job), -1);
    gf_spare_destroy(&sp);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    close(null);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_job_through_spare, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_spare_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_without_spares, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
