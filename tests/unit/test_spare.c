/* test_spare.c — a job guard made ready ahead (worker/spare.c) by the real
 * gpuflock-guard fork server (beside this build's tests, in bin/): the job
 * a spare is handed runs in the spare's own process group with the given
 * arguments, environment, directory, stdout and stderr, keeps the
 * descriptors it was given (a card lock), and ends with the command's
 * status or signal, after its report (guard/request.h); the spare is this
 * process's child; without a spare waiting nothing is taken; one server
 * makes every spare; a spare or a server that died is replaced, and
 * nothing is left behind. Output past the cap is cut, marked and counted,
 * binary bytes kept exactly, and the command is never blocked; a killed
 * guard reports nothing. */
#include "worker/guard/request.h"
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
#include <stdbool.h>
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

static char *slurp_n(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char *buf = gf_calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, fp);
    buf[n] = 0;
    fclose(fp);
    if (len)
        *len = n;
    return buf;
}

static char *slurp(const char *path)
{
    return slurp_n(path, NULL);
}

/* A report pipe: [0] ours to read (non-blocking), [1] the guard's. */
static void report_pipe(int fds[2])
{
    assert_int_equal(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
}

/* The guard's report after it ended: true with the cut counts when it wrote one. */
static bool read_report(int fd, int64_t cut[2])
{
    int64_t w[GUARD_REPORT_WORDS];
    ssize_t n = read(fd, w, sizeof w);
    close(fd);
    if (n != (ssize_t)sizeof w || w[0] != GUARD_REPORT_MAGIC)
        return false;
    cut[0] = w[1];
    cut[1] = w[2];
    return true;
}

static void test_job_through_spare(void **state)
{
    fx *f = *state;
    gf_spare *sp = gf_spare_new(f->guard, NULL);
    gf_jobcg *cg = NULL;
    gf_spare_job job;
    memset(&job, 0, sizeof(job));
    assert_int_equal(gf_spare_take(sp, &job, &cg), -1);     /* none started yet */
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
    int rep[2];
    report_pipe(rep);
    job = (gf_spare_job){ .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                          .cwd = f->dir, .argv = argv, .envp = envp, .out = out, .err = err,
                          .report = rep[1], .keep = &lock, .n_keep = 1 };
    pid_t pid = gf_spare_take(sp, &job, &cg);
    assert_true(pid > 0);
    assert_int_equal(gf_spare_take(sp, &job, &cg), -1);      /* used: none until the next fill */
    close(out);
    close(err);
    close(rep[1]);
    close(lock);           /* the job's copy holds the card now */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
    int64_t cut[2] = { -1, -1 };
    assert_true(read_report(rep[0], cut));              /* ended with its command */
    assert_int_equal(cut[0], 0);
    assert_int_equal(cut[1], 0);
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
    int rep[2];
    report_pipe(rep);
    gf_spare_job job = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                         .cwd = "-", .argv = argv, .envp = envp, .out = null, .err = null,
                         .report = rep[1] };
    gf_spare_fill(sp);
    gf_jobcg *cg;
    pid_t pid = gf_spare_take(sp, &job, &cg);
    assert_null(cg);                                     /* no cgroup folder given */
    close(null);
    close(rep[1]);
    close(rep[0]);
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
    gf_spare *sp = gf_spare_new(f->guard, NULL);
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
    gf_spare *sp = gf_spare_new(f->guard, NULL);
    gf_jobcg *cg = NULL;
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
                          .cwd = "-", .argv = argv, .envp = envp, .out = null, .err = null,
                          .report = null };
    pid_t pid = gf_spare_take(sp, &job, &cg);
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
    gf_spare *sp = gf_spare_new(fake, NULL);
    gf_jobcg *cg = NULL;
    gf_spare_fill(sp);
    assert_true(gf_spare_fd(sp) >= 0);            /* asked */
    char *argv[] = { "true", NULL };
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    gf_spare_job job = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                         .cwd = "-", .argv = argv, .envp = envp, .out = null, .err = null,
                         .report = null };
    assert_int_equal(gf_spare_take(sp, &job, &cg), -1);
    gf_spare_fill(sp);
    assert_int_equal(gf_spare_fd(sp), -1);        /* not again so soon */
    usleep(1100000);
    gf_spare_fill(sp);
    assert_true(gf_spare_fd(sp) >= 0);            /* a second later it asks again */
    assert_int_equal(gf_spare_take(sp, &job, &cg), -1);
    gf_spare_destroy(&sp);
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
    close(null);
}

/* Run script through a fresh spare with stdout and stderr into the files
 * out and err of the fixture's folder and the given cap; the wait status,
 * the report's cut counts (false: no report). */
static bool run_capped(fx *f, gf_spare *sp, const char *script, long long cap, int *status,
                       int64_t cut[2])
{
    char out_path[128], err_path[128];
    snprintf(out_path, sizeof out_path, "%s/out", f->dir);
    snprintf(err_path, sizeof err_path, "%s/err", f->dir);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rep[2];
    report_pipe(rep);
    char *argv[] = { "sh", "-c", (char *)script, NULL };
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    gf_spare_job job = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                         .cwd = f->dir, .argv = argv, .envp = envp, .cap = cap, .out = out,
                         .err = err, .report = rep[1] };
    gf_spare_fill(sp);
    gf_jobcg *cg;
    pid_t pid = gf_spare_take(sp, &job, &cg);
    assert_true(pid > 0);
    close(out);
    close(err);
    close(rep[1]);
    assert_int_equal(waitpid(pid, status, 0), pid);
    return read_report(rep[0], cut);
}

/* The cap: the first cap bytes of stdout kept exactly (NUL bytes too),
 * then one line saying what was cut; stderr under the cap untouched; the
 * command not blocked (it writes 40 times the cap and exits 0); the report
 * counts what was discarded. No cap (0): everything kept, no line. */
static void test_output_cap(void **state)
{
    fx *f = *state;
    gf_spare *sp = gf_spare_new(f->guard, NULL);
    /* 200,000 bytes of every value, NUL among them, then 3 on stderr */
    char gen[256];
    snprintf(gen, sizeof gen, "%s/gen", f->dir);
    FILE *fp = fopen(gen, "w");
    assert_non_null(fp);
    for (int i = 0; i < 200000; i++)
        fputc((i * 7 + i / 256) & 0xff, fp);
    fclose(fp);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat %s; printf 'e%sr' >&2; exit 0", gen, "\\0");
    int status;
    int64_t cut[2];
    assert_true(run_capped(f, sp, cmd, 5000, &status, cut));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(cut[0], 200000 - 5000);
    assert_int_equal(cut[1], 0);
    char out_path[128], err_path[128];
    snprintf(out_path, sizeof out_path, "%s/out", f->dir);
    snprintf(err_path, sizeof err_path, "%s/err", f->dir);
    size_t n, en, gn;
    char *o = slurp_n(out_path, &n), *e = slurp_n(err_path, &en), *g = slurp_n(gen, &gn);
    assert_int_equal(gn, 200000);
    assert_true(n > 5000);
    assert_memory_equal(o, g, 5000);
    const char *mark = o + 5000;
    if (g[4999] != '\n')
        assert_int_equal(*mark++, '\n');   /* the line starts on a line of its own */
    char want[160];
    snprintf(want, sizeof want, "[gpuflock: output cut after 5000 bytes (spool.max_bytes); "
             "195000 more bytes discarded]\n");
    assert_int_equal((size_t)(o + n - mark), strlen(want));
    assert_memory_equal(mark, want, strlen(want));
    assert_int_equal(en, 3);
    assert_memory_equal(e, "e\0r", 3);
    free(o);
    free(e);
    /* no cap: all of it, byte for byte */
    assert_true(run_capped(f, sp, cmd, 0, &status, cut));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(cut[0], 0);
    o = slurp_n(out_path, &n);
    assert_int_equal(n, 200000);
    assert_memory_equal(o, g, 200000);
    free(o);
    /* a cap above the output: all of it, through the pipes, no line */
    assert_true(run_capped(f, sp, cmd, 1 << 20, &status, cut));
    assert_int_equal(cut[0], 0);
    o = slurp_n(out_path, &n);
    assert_int_equal(n, 200000);
    assert_memory_equal(o, g, 200000);
    free(o);
    /* exactly the cap: nothing cut */
    assert_true(run_capped(f, sp, cmd, 200000, &status, cut));
    assert_int_equal(cut[0], 0);
    o = slurp_n(out_path, &n);
    assert_int_equal(n, 200000);
    free(o);
    free(g);
    /* the command's signal still comes through the copy loop */
    assert_true(run_capped(f, sp, "echo x; kill -TERM $$", 10, &status, cut));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGTERM);
    gf_spare_destroy(&sp);
}

/* A guard killed while its command runs writes no report: how the worker
 * tells it from a guard that ended with its command. */
static void test_killed_guard_reports_nothing(void **state)
{
    fx *f = *state;
    gf_spare *sp = gf_spare_new(f->guard, NULL);
    gf_jobcg *cg = NULL;
    int rep[2];
    report_pipe(rep);
    char *argv[] = { "sleep", "30", NULL };
    char *envp[] = { "PATH=/usr/bin:/bin", NULL };
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    gf_spare_job job = { .uid = (unsigned)getuid(), .gid = (unsigned)getgid(), .groups = "-",
                         .cwd = "-", .argv = argv, .envp = envp, .cap = 100, .out = null,
                         .err = null, .report = rep[1] };
    gf_spare_fill(sp);
    pid_t pid = gf_spare_take(sp, &job, &cg);
    assert_true(pid > 0);
    close(null);
    close(rep[1]);
    usleep(100000);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    int64_t cut[2];
    assert_false(read_report(rep[0], cut));
    kill(-pid, SIGKILL);                 /* the sleep, left in the guard's group */
    gf_spare_destroy(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_job_through_spare, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_spare_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_server, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_without_spares, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_guard_reports_nothing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
