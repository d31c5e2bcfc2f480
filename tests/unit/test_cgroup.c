/* test_cgroup.c — a cgroup v2 per job (worker/cgroup.c).
 *
 * Finding the worker's cgroup folder from the texts of /proc/self/mountinfo
 * and /proc/self/cgroup (the unified and the hybrid layouts, a cgroup
 * namespace's mount, none at all); then, where this process may write
 * cgroup v2 (root on a box with it; the cases skip elsewhere), the real
 * thing: a job cgroup that holds a process which left its session, every
 * process of it signalled and killed, the end seen in cgroup.events, the
 * empty cgroup kept for the next job (one) and the others removed; a
 * process born in it by clone3 (CLONE_INTO_CGROUP, as the guards do); the
 * folder of a worker that is gone emptied and removed by the next one;
 * files that only root may write. */
#include <sys/syscall.h>
#include "common/log.h"
#include "common/util.h"
#include "worker/cgroup.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* mountinfo of a systemd hybrid box (this project's VM): v1 controllers
 * under /sys/fs/cgroup, cgroup2 at /sys/fs/cgroup/unified */
static const char hybrid[] =
    "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
static const char unified[] =
    "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

static void test_locate_layouts(void **state)
{
    (void)state;
    char why[256];
    char *p = gf_cgroup_locate(hybrid, "4:memory:/x\n0::/\n", why, sizeof why);
    assert_string_equal(p, "/sys/fs/cgroup/unified");
    free(p);
    p = gf_cgroup_locate(unified, "0::/system.slice/gpuflockd.service\n", why, sizeof why);
    assert_string_equal(p, "/sys/fs/cgroup/system.slice/gpuflockd.service");
    free(p);
    /* a container's view: the mount's root is the container's cgroup */
    const char ns[] = "50 40 0:26 /lxc/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
    p = gf_cgroup_locate(ns, "0::/lxc/c1/workers\n", why, sizeof why);
    assert_string_equal(p, "/sys/fs/cgroup/workers");
    free(p);
    p = gf_cgroup_locate(ns, "0::/lxc/c1\n", why, sizeof why);
    assert_string_equal(p, "/sys/fs/cgroup");
    free(p);
    /* a mount point with a blank in it, as mountinfo escapes it */
    const char blank[] = "50 40 0:26 / /mnt/cg\\0402 rw shared:9 - cgroup2 none rw\n";
    p = gf_cgroup_locate(blank, "0::/a\n", why, sizeof why);
    assert_string_equal(p, "/mnt/cg 2/a");
    free(p);
}

static void test_locate_refusals(void **state)
{
    (void)state;
    char why[256];
    const char v1_only[] = "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
    assert_null(gf_cgroup_locate(v1_only, "0::/\n", why, sizeof why));
    assert_non_null(strstr(why, "no cgroup2 file system mounted"));
    assert_null(gf_cgroup_locate(hybrid, "1:cpu:/\n", why, sizeof why));
    assert_non_null(strstr(why, "no cgroup v2 line"));
    const char ns[] = "50 40 0:26 /lxc/c1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
    assert_null(gf_cgroup_locate(ns, "0::/lxc/c10\n", why, sizeof why));   /* not under /lxc/c1 */
    assert_non_null(strstr(why, "outside every cgroup2 mount"));
}

/* The real cgroup folder, or skip. */
static gf_cgroup *open_or_skip(void)
{
    char why[512];
    gf_cgroup *cg = gf_cgroup_open(why, sizeof why);
    if (!cg) {
        print_message("skipped: %s\n", why);
        skip();
    }
    return cg;
}

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A child that enters dir (as a guard does), then forks a grandchild that
 * leaves the session (setsid) and sleeps, and sleeps itself. */
static pid_t start_in(const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        char *procs = gf_strfmt("%s/cgroup.procs", dir);
        int fd = open(procs, O_WRONLY);
        if (fd < 0 || write(fd, "0", 1) != 1)
            _exit(2);
        close(fd);
        if (fork() == 0) {
            setsid();
            execlp("sleep", "sleep", "300", (char *)NULL);
            _exit(3);
        }
        execlp("sleep", "sleep", "301", (char *)NULL);
        _exit(3);
    }
    return pid;
}

static bool wait_empty(gf_jobcg *jc)
{
    for (int i = 0; i < 400 && gf_jobcg_populated(jc); i++)
        sleep_ms(5);
    return !gf_jobcg_populated(jc);
}

static void test_job_cgroup_holds_and_kills_all(void **state)
{
    (void)state;
    gf_cgroup *cg = open_or_skip();
    char want[64];
    snprintf(want, sizeof want, "/gpuflock-worker-%d", (int)getpid());
    assert_non_null(strstr(gf_cgroup_path(cg), want));
    char why[512];
    gf_jobcg *jc = gf_jobcg_new(cg, why, sizeof why);
    assert_non_null(jc);
    assert_non_null(strstr(gf_jobcg_path(jc), "/run-1"));
    assert_int_equal(access(gf_jobcg_path(jc), F_OK), 0);
    assert_false(gf_jobcg_populated(jc));
    struct stat st;
    char *procs = gf_strfmt("%s/cgroup.procs", gf_jobcg_path(jc));
    assert_int_equal(stat(procs, &st), 0);
    assert_int_equal(st.st_uid, geteuid());
    assert_int_equal(st.st_mode & 0022, 0);                    /* nobody else may write */
    free(procs);

    pid_t child = start_in(gf_jobcg_path(jc));
    for (int i = 0; i < 200 && gf_jobcg_signal(jc, 0) < 2; i++)
        sleep_ms(5);
    assert_int_equal(gf_jobcg_signal(jc, 0), 2);               /* child and the one that left */
    assert_true(gf_jobcg_populated(jc));
    assert_int_equal(gf_jobcg_signal(jc, SIGSTOP), 2);         /* each of them gets it */
    assert_int_equal(gf_jobcg_signal(jc, SIGCONT), 2);
    assert_int_equal(gf_jobcg_kill(jc), 2);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_true(wait_empty(jc));                               /* the setsid one too */
    assert_int_equal(gf_jobcg_signal(jc, 0), 0);
    char *dir = gf_strdup(gf_jobcg_path(jc));
    gf_jobcg_destroy(&jc);
    assert_null(jc);
    gf_jobcg_destroy(&jc);
    /* killed through cgroup.kill: removed, never kept (the kernel would
     * kill whatever is born in it next: gf_jobcg_destroy) */
    assert_int_equal(access(dir, F_OK), -1);
    gf_jobcg *a = gf_jobcg_new(cg, why, sizeof why), *b = gf_jobcg_new(cg, why, sizeof why);
    assert_non_null(strstr(gf_jobcg_path(a), "/run-2"));
    assert_non_null(strstr(gf_jobcg_path(b), "/run-3"));
    char *kept = gf_strdup(gf_jobcg_path(a)), *other_dir = gf_strdup(gf_jobcg_path(b));
    gf_jobcg_destroy(&a);                                      /* empty, never killed: kept */
    assert_int_equal(access(kept, F_OK), 0);
    gf_jobcg_destroy(&b);                                      /* one is kept: removed */
    assert_int_equal(access(other_dir, F_OK), -1);
    jc = gf_jobcg_new(cg, why, sizeof why);                    /* the kept one again */
    assert_non_null(jc);
    assert_string_equal(gf_jobcg_path(jc), kept);
    assert_false(gf_jobcg_populated(jc));
    free(kept);
    /* born inside, as a spare guard is: clone3 with CLONE_INTO_CGROUP */
    struct {
        uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
        uint64_t set_tid, set_tid_size, cgroup;
    } ca = { .flags = 0x200000000ULL, .exit_signal = SIGCHLD, .cgroup = (uint64_t)gf_jobcg_fd(jc) };
    long born = syscall(SYS_clone3, &ca, sizeof ca);
    if (born == 0) {
        execlp("sleep", "sleep", "302", (char *)NULL);
        _exit(3);
    }
    if (born > 0) {
        assert_true(gf_jobcg_populated(jc));
        assert_int_equal(gf_jobcg_signal(jc, 0), 1);
        gf_jobcg_destroy(&jc);                                 /* kills it */
        assert_int_equal(waitpid((pid_t)born, &status, 0), born);
        assert_true(WIFSIGNALED(status));
    } else {
        print_message("no clone3 into a cgroup here (%s): the guards write cgroup.procs\n",
                      strerror(errno));
        gf_jobcg_destroy(&jc);
    }
    free(other_dir);
    free(dir);
    char *folder = gf_strdup(gf_cgroup_path(cg));
    gf_cgroup_destroy(&cg);
    assert_null(cg);
    assert_int_equal(access(folder, F_OK), -1);
    free(folder);
}

/* Destroying a cgroup that still holds a process kills it first. */
static void test_destroy_kills_what_is_left(void **state)
{
    (void)state;
    gf_cgroup *cg = open_or_skip();
    char why[512];
    gf_jobcg *jc = gf_jobcg_new(cg, why, sizeof why);
    assert_non_null(jc);
    pid_t child = start_in(gf_jobcg_path(jc));
    for (int i = 0; i < 200 && gf_jobcg_signal(jc, 0) < 2; i++)
        sleep_ms(5);
    char *dir = gf_strdup(gf_jobcg_path(jc));
    gf_log_init("test_cgroup", GF_LOG_OFF);
    gf_jobcg_destroy(&jc);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(access(dir, F_OK), -1);
    free(dir);
    gf_cgroup_destroy(&cg);
}

/* The folder of a worker that is gone (here: a pid that exited) is
 * emptied, its processes killed, and removed by the next open. */
static void test_gone_worker_swept(void **state)
{
    (void)state;
    gf_cgroup *cg = open_or_skip();
    char *base = gf_strdup(gf_cgroup_path(cg));
    *strrchr(base, '/') = 0;
    gf_cgroup_destroy(&cg);
    pid_t gone = fork();
    if (gone == 0)
        _exit(0);
    waitpid(gone, NULL, 0);
    char *folder = gf_strfmt("%s/gpuflock-worker-%d", base, (int)gone);
    char *job = gf_strfmt("%s/job-1-1", folder);
    assert_int_equal(mkdir(folder, 0755), 0);
    assert_int_equal(mkdir(job, 0755), 0);
    pid_t child = start_in(job);
    sleep_ms(100);
    gf_log_init("test_cgroup", GF_LOG_OFF);
    cg = open_or_skip();
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(access(job, F_OK), -1);
    assert_int_equal(access(folder, F_OK), -1);
    gf_cgroup_destroy(&cg);
    free(job);
    free(folder);
    free(base);
}

int main(void)
{
    gf_log_init("test_cgroup", GF_LOG_OFF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_locate_layouts),
        cmocka_unit_test(test_locate_refusals),
        cmocka_unit_test(test_job_cgroup_holds_and_kills_all),
        cmocka_unit_test(test_destroy_kills_what_is_left),
        cmocka_unit_test(test_gone_worker_swept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
