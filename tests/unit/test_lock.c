/* test_lock.c — card lock primitives against real flock(1) processes. */
#include "common/error.h"
#include "common/lock.h"
#include "common/log.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/unit/flock_procs.h"
#include "tests/unit/tmpdir.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

static char dir[64];

static int setup(void **state)
{
    (void)state;
    return gf_test_mkdtemp(dir, sizeof dir, "gf-test-lock");
}

static int teardown(void **state)
{
    (void)state;
    return gf_test_rmtree(dir);
}

static char *lock_path(const char *name)
{
    return gf_strfmt("%s/%s", dir, name);
}

static void test_open_creates_folder_and_file(void **state)
{
    (void)state;
    char *path = lock_path("a/b/gpu0.lock");
    mode_t old = umask(077);
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    umask(old);
    assert_non_null(l);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);       /* flock(2) needs no write */
    char *parent = lock_path("a/b");
    assert_int_equal(stat(parent, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0755);       /* writable by its owner alone */
    assert_string_equal(gf_lock_path(l), path);
    assert_int_equal(fcntl(gf_lock_fd(l), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    gf_lock_destroy(&l);
    assert_null(l);
    gf_lock_destroy(&l);
    assert_int_equal(stat(path, &st), 0);   /* never unlinked */
    l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);   /* an existing file opens as is */
    assert_non_null(l);
    gf_lock_destroy(&l);
    free(parent);
    free(path);
}

static void test_open_failure_names_path(void **state)
{
    (void)state;
    char *blocker = lock_path("plainfile");
    FILE *f = fopen(blocker, "w");
    assert_non_null(f);
    fclose(f);
    char *path = lock_path("plainfile/gpu0.lock");   /* a file where a folder must be */
    gf_log_init(NULL, GF_LOG_OFF);
    assert_null(gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0));
    assert_null(gf_lock_open("", GF_LOCK_NO_OWNER, NULL, 0));
    gf_log_init(NULL, GF_LOG_WARN);
    free(path);
    free(blocker);
}

/* gf_lock_open on 'path' must fail with a reason holding 'want'. */
static void assert_refused(const char *path, const char *want)
{
    char why[1024] = "";
    gf_log_init(NULL, GF_LOG_OFF);
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, why, sizeof why);
    gf_log_init(NULL, GF_LOG_WARN);
    if (l || !strstr(why, want))
        fail_msg("%s: opened %d, reason '%s', wanted '%s'", path, l != NULL, why, want);
}

/* A lock folder writable by others, or owned by someone else, lets them
 * rename the lock file under a holder: refused, naming folder, owner, mode. */
static void test_untrusted_folders_refused(void **state)
{
    (void)state;
    char *open_dir = lock_path("open"), *path = lock_path("open/gpu0.lock");
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    assert_refused(path, "is writable by other users");
    assert_refused(path, "mode 0777");
    assert_int_equal(chmod(open_dir, 01777), 0);          /* sticky is not enough for it */
    assert_refused(path, "is writable by other users");
    /* a sticky world-writable folder above is fine (like /run/lock) */
    char *below = lock_path("open/mine"), *deep = lock_path("open/mine/gpu0.lock");
    assert_int_equal(mkdir(below, 0755), 0);
    gf_lock *l = gf_lock_open(deep, GF_LOCK_NO_OWNER, NULL, 0);
    assert_non_null(l);
    gf_lock_destroy(&l);
    assert_int_equal(chmod(open_dir, 0777), 0);           /* not sticky above: refused */
    assert_refused(deep, "writable by other users and not sticky");
    assert_int_equal(chmod(open_dir, 0755), 0);
    if (geteuid() == 0) {
        /* owned by another user (nobody's uid): refused, unless it is lock_owner */
        assert_int_equal(chown(below, 65534, 65534), 0);
        assert_refused(deep, "belongs to");
        char why[512];
        l = gf_lock_open(deep, 65534, why, sizeof why);
        assert_non_null(l);
        gf_lock_destroy(&l);
    }
    free(deep);
    free(below);
    free(path);
    free(open_dir);
}

/* A symlink or a FIFO planted at the lock path is refused (and the FIFO's
 * open does not block). */
static void test_symlink_and_fifo_refused(void **state)
{
    (void)state;
    char *target = lock_path("target"), *link = lock_path("link.lock");
    char *fifo = lock_path("fifo.lock");
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(symlink(target, link), 0);
    assert_refused(link, "is a symlink");
    char *dangling = lock_path("dangling.lock");
    assert_int_equal(symlink("/nonexistent/x", dangling), 0);
    assert_refused(dangling, "is a symlink");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_refused(fifo, "not a regular file");
    free(dangling);
    free(fifo);
    free(link);
    free(target);
}

/* The lock-file race: the path is made to name a new file after we opened
 * the old one. The lock taken must be on the file the path names now. */
static void test_replaced_file_relocked(void **state)
{
    (void)state;
    char *path = lock_path("moved.lock"), *aside = lock_path("moved.lock.old");
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_non_null(l);
    assert_int_equal(rename(path, aside), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    gf_log_init(NULL, GF_LOG_OFF);
    assert_int_equal(gf_lock_try(l, GF_LOCK_EXCLUSIVE), 0);
    gf_log_init(NULL, GF_LOG_WARN);
    assert_int_equal(flock_probe(path, 1), 1);     /* the file the path names is locked */
    assert_int_equal(flock_probe(aside, 1), 0);    /* the old one is not */
    gf_lock_destroy(&l);
    free(aside);
    free(path);
}

/* The fairness gate: an exclusive try that finds the card busy announces
 * itself; gpuflock's shared tries then stop at the gate until it has had the
 * card; flock(1) knows no gate. */
static void test_gate_holds_back_shared(void **state)
{
    (void)state;
    char *path = lock_path("gate.lock");
    gf_lock *s1 = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    gf_lock *s2 = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    gf_lock *x = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_int_equal(gf_lock_try(s1, GF_LOCK_SHARED), 0);
    assert_int_equal(gf_lock_try(x, GF_LOCK_EXCLUSIVE), GF_EBUSY);   /* announced now */
    assert_int_equal(flock_probe(gf_lock_gate_path(x), 0), 1);      /* gate held exclusively */
    assert_int_equal(gf_lock_try(s2, GF_LOCK_SHARED), GF_EBUSY);     /* though s1 is shared */
    assert_true(gf_lock_gated(s2));
    assert_int_equal(flock_probe(path, 0), 0);                       /* flock(1) -s gets in */
    gf_lock_release(s1);
    assert_int_equal(gf_lock_try(x, GF_LOCK_EXCLUSIVE), 0);          /* the card, then the */
    assert_int_equal(flock_probe(gf_lock_gate_path(x), 1), 0);      /* gate let go */
    gf_lock_release(x);
    assert_int_equal(gf_lock_try(s2, GF_LOCK_SHARED), 0);
    assert_false(gf_lock_gated(s2));
    /* an exclusive waiter that gives up withdraws */
    assert_int_equal(gf_lock_wait(x, GF_LOCK_EXCLUSIVE, 20, NULL), GF_ETIMEDOUT);
    assert_int_equal(flock_probe(gf_lock_gate_path(x), 1), 0);
    /* an uncontended exclusive take never touches the gate */
    gf_lock_release(s2);
    assert_int_equal(gf_lock_try(x, GF_LOCK_EXCLUSIVE), 0);
    gf_lock_destroy(&x);
    gf_lock_destroy(&s2);
    gf_lock_destroy(&s1);
    free(path);
}

/* gf_lock_prepare makes the file and its gate, 0644, and tightens an older
 * 0666 file of ours. */
static void test_prepare(void **state)
{
    (void)state;
    char *path = lock_path("prep/gpu0.lock"), *gate = lock_path("prep/gpu0.lock.gate");
    char why[256];
    assert_int_equal(gf_lock_prepare(path, GF_LOCK_NO_OWNER, why, sizeof why), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_int_equal(stat(gate, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(gf_lock_prepare(path, GF_LOCK_NO_OWNER, why, sizeof why), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    free(gate);
    free(path);
}

static void test_shared_holders_coexist(void **state)
{
    (void)state;
    char *path = lock_path("shared.lock");
    gf_lock *a = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    gf_lock *b = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_int_equal(gf_lock_try(a, GF_LOCK_SHARED), 0);
    assert_int_equal(gf_lock_try(b, GF_LOCK_SHARED), 0);
    pid_t fl = flock_holder(path, 0);                /* and flock(1) -s with them */
    assert_true(fl > 0);
    assert_int_equal(flock_probe(path, 1), 1);       /* exclusive would block */
    gf_lock_release(a);
    gf_lock_release(b);
    assert_int_equal(gf_lock_try(a, GF_LOCK_EXCLUSIVE), GF_EBUSY);   /* flock(1) still has it */
    kill_wait(fl);
    assert_int_equal(gf_lock_try(a, GF_LOCK_EXCLUSIVE), 0);
    gf_lock_destroy(&a);
    gf_lock_destroy(&b);
    free(path);
}

static void test_exclusive_excludes_both_ways(void **state)
{
    (void)state;
    char *path = lock_path("excl.lock");
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);

    pid_t fl = flock_holder(path, 1);                  /* flock(1) blocks us */
    assert_true(fl > 0);
    assert_int_equal(gf_lock_try(l, GF_LOCK_EXCLUSIVE), GF_EBUSY);
    assert_int_equal(gf_lock_try(l, GF_LOCK_SHARED), GF_EBUSY);
    assert_int_equal(gf_lock_wait(l, GF_LOCK_EXCLUSIVE, 30, NULL), GF_ETIMEDOUT);
    assert_false(gf_lock_held(l));
    kill_wait(fl);                                     /* SIGKILL frees it at once */
    assert_int_equal(gf_lock_try(l, GF_LOCK_EXCLUSIVE), 0);

    assert_int_equal(flock_probe(path, 1), 1);         /* we block flock(1) */
    assert_int_equal(flock_probe(path, 0), 1);
    gf_lock_release(l);
    assert_int_equal(flock_probe(path, 1), 0);
    gf_lock_destroy(&l);
    free(path);
}

static void test_no_conversion(void **state)
{
    (void)state;
    char *path = lock_path("conv.lock");
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_int_equal(gf_lock_try(l, GF_LOCK_SHARED), 0);
    assert_int_equal(gf_lock_try(l, GF_LOCK_SHARED), 0);   /* same mode: already had */
    assert_int_equal(gf_lock_try(l, GF_LOCK_EXCLUSIVE), GF_ESTATE);
    assert_true(gf_lock_held(l));
    assert_int_equal(gf_lock_mode_held(l), GF_LOCK_SHARED);
    assert_int_equal(flock_probe(path, 0), 0);   /* still shared, not dropped */
    assert_int_equal(flock_probe(path, 1), 1);
    gf_lock_destroy(&l);
    assert_int_equal(flock_probe(path, 1), 0);   /* destroy released it */
    free(path);
}

static void wait_until_holder_dies(const gf_lock *lock, void *arg)
{
    (void)lock;
    int *calls = arg;
    (*calls)++;
}

static void test_wait_returns_when_freed(void **state)
{
    (void)state;
    char *path = lock_path("wait.lock");
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    pid_t fl = flock_holder(path, 1);
    assert_true(fl > 0);
    pid_t killer = fork();            /* frees the card while we wait */
    if (killer == 0) {
        sleep_ms(50);
        kill(fl, SIGKILL);
        _exit(0);
    }
    int calls = 0;
    gf_lock_wait_opts opts = { .stop = NULL, .on_busy = wait_until_holder_dies, .arg = &calls };
    assert_int_equal(gf_lock_wait(l, GF_LOCK_EXCLUSIVE, -1, &opts), 0);
    assert_int_equal(calls, 1);       /* said once, however long the wait */
    waitpid(killer, NULL, 0);
    waitpid(fl, NULL, 0);
    gf_lock_destroy(&l);
    free(path);
}

static volatile sig_atomic_t stop_flag;

static void raise_stop(const gf_lock *lock, void *arg)
{
    (void)lock;
    (void)arg;
    stop_flag = 1;
}

static void test_wait_stops_on_flag(void **state)
{
    (void)state;
    char *path = lock_path("stop.lock");
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    pid_t fl = flock_holder(path, 1);
    assert_true(fl > 0);
    stop_flag = 0;
    gf_lock_wait_opts opts = { .stop = &stop_flag, .on_busy = raise_stop, .arg = NULL };
    assert_int_equal(gf_lock_wait(l, GF_LOCK_SHARED, -1, &opts), GF_EINTR);
    assert_false(gf_lock_held(l));
    kill_wait(fl);
    gf_lock_destroy(&l);
    free(path);
}

static void test_wait_any_takes_first_free(void **state)
{
    (void)state;
    char *p0 = lock_path("any0.lock"), *p1 = lock_path("any1.lock");
    gf_lock *locks[2] = { gf_lock_open(p0, GF_LOCK_NO_OWNER, NULL, 0),
                          gf_lock_open(p1, GF_LOCK_NO_OWNER, NULL, 0) };
    size_t which = 99;
    assert_int_equal(gf_lock_wait_any(locks, 2, GF_LOCK_EXCLUSIVE, 0, NULL, &which), 0);
    assert_int_equal(which, 0);
    gf_lock_release(locks[0]);

    pid_t h0 = flock_holder(p0, 1), h1 = flock_holder(p1, 1);
    assert_true(h0 > 0 && h1 > 0);
    assert_int_equal(gf_lock_wait_any(locks, 2, GF_LOCK_EXCLUSIVE, 20, NULL, &which),
                     GF_ETIMEDOUT);
    pid_t killer = fork();            /* card 1 frees first */
    if (killer == 0) {
        sleep_ms(50);
        kill(h1, SIGKILL);
        _exit(0);
    }
    assert_int_equal(gf_lock_wait_any(locks, 2, GF_LOCK_EXCLUSIVE, -1, NULL, &which), 0);
    assert_int_equal(which, 1);
    assert_false(gf_lock_held(locks[0]));
    waitpid(killer, NULL, 0);
    waitpid(h1, NULL, 0);
    kill_wait(h0);
    gf_lock_destroy(&locks[0]);
    gf_lock_destroy(&locks[1]);
    free(p0);
    free(p1);
}

static void test_lockset_order_and_all_or_none(void **state)
{
    (void)state;
    char *p[3] = { lock_path("set0.lock"), lock_path("set1.lock"), lock_path("set2.lock") };
    gf_lockset *set = gf_lockset_new();
    assert_int_equal(gf_lockset_add(set, 2, p[2], GF_LOCK_NO_OWNER), 0);
    assert_int_equal(gf_lockset_add(set, 0, p[0], GF_LOCK_NO_OWNER), 0);
    assert_int_equal(gf_lockset_add(set, 1, p[1], GF_LOCK_NO_OWNER), 0);
    gf_log_init(NULL, GF_LOG_OFF);
    assert_int_equal(gf_lockset_add(set, 1, p[1], GF_LOCK_NO_OWNER), GF_EINVAL);
    gf_log_init(NULL, GF_LOG_WARN);
    assert_int_equal(gf_lockset_count(set), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(gf_lockset_index(set, i), (int)i);
        assert_string_equal(gf_lock_path(gf_lockset_lock(set, i)), p[i]);
    }

    assert_int_equal(gf_lockset_take(set, GF_LOCK_EXCLUSIVE, 0, NULL), 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(flock_probe(p[i], 0), 1);
    gf_lockset_release(set);

    pid_t h = flock_holder(p[1], 1);     /* card 1 busy: the set takes none */
    assert_true(h > 0);
    assert_int_equal(gf_lockset_take(set, GF_LOCK_EXCLUSIVE, 20, NULL), GF_ETIMEDOUT);
    for (size_t i = 0; i < 3; i++)
        assert_false(gf_lock_held(gf_lockset_lock(set, i)));
    assert_int_equal(flock_probe(p[0], 1), 0);
    kill_wait(h);
    assert_int_equal(gf_lockset_take(set, GF_LOCK_SHARED, 0, NULL), 0);
    gf_lockset_destroy(&set);
    assert_null(set);
    assert_int_equal(flock_probe(p[1], 1), 0);
    for (size_t i = 0; i < 3; i++)
        free(p[i]);
}

/* Two processes taking {0,1} and {1,0} over and over: ascending order means
 * neither can hold one card while waiting for the other's. */
static void test_lockset_no_deadlock(void **state)
{
    (void)state;
    char *p0 = lock_path("dl0.lock"), *p1 = lock_path("dl1.lock");
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            gf_lockset *set = gf_lockset_new();
            gf_lockset_add(set, k == 0 ? 0 : 1, k == 0 ? p0 : p1, GF_LOCK_NO_OWNER);
            gf_lockset_add(set, k == 0 ? 1 : 0, k == 0 ? p1 : p0, GF_LOCK_NO_OWNER);
            for (int i = 0; i < 200; i++) {
                if (gf_lockset_take(set, GF_LOCK_EXCLUSIVE, -1, NULL) != 0)
                    _exit(1);
                gf_lockset_release(set);
            }
            gf_lockset_destroy(&set);
            _exit(0);
        }
    }
    for (int k = 0; k < 2; k++) {
        int st = 0;
        assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    free(p0);
    free(p1);
}

/* An inherited descriptor keeps the card locked while the child lives, even
 * after the parent let go of its copy. */
static void test_inherit(void **state)
{
    (void)state;
    char *path = lock_path("inherit.lock");
    gf_lock *l = gf_lock_open(path, GF_LOCK_NO_OWNER, NULL, 0);
    assert_int_equal(gf_lock_try(l, GF_LOCK_EXCLUSIVE), 0);
    assert_int_equal(gf_lock_inherit(l), 0);
    assert_int_equal(fcntl(gf_lock_fd(l), F_GETFD) & FD_CLOEXEC, 0);
    char *argv[] = { "sleep", "600", NULL };
    pid_t child = spawn_argv(argv, 0);
    assert_true(child > 0);
    gf_lock_destroy(&l);                       /* closes, does not unlock */
    assert_int_equal(flock_probe(path, 0), 1);  /* the child holds it */
    kill_wait(child);
    assert_int_equal(flock_probe(path, 1), 0);
    free(path);
}

int main(void)
{
    gf_log_init("test_lock", GF_LOG_WARN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_creates_folder_and_file),
        cmocka_unit_test(test_open_failure_names_path),
        cmocka_unit_test(test_untrusted_folders_refused),
        cmocka_unit_test(test_symlink_and_fifo_refused),
        cmocka_unit_test(test_replaced_file_relocked),
        cmocka_unit_test(test_gate_holds_back_shared),
        cmocka_unit_test(test_prepare),
        cmocka_unit_test(test_shared_holders_coexist),
        cmocka_unit_test(test_exclusive_excludes_both_ways),
        cmocka_unit_test(test_no_conversion),
        cmocka_unit_test(test_wait_returns_when_freed),
        cmocka_unit_test(test_wait_stops_on_flag),
        cmocka_unit_test(test_wait_any_takes_first_free),
        cmocka_unit_test(test_lockset_order_and_all_or_none),
        cmocka_unit_test(test_lockset_no_deadlock),
        cmocka_unit_test(test_inherit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
