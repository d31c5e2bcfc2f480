/* test_pidfile.c — pid files held by flock(2): the second taker is refused
 * and told who holds it; a released file is taken again; the file gets
 * the mode asked for whatever the umask, and a looser one left by an older
 * version is tightened; missing folders are made (gf_mkdir_p), and one
 * that cannot be is named. */
#include "common/pidfile.h"
#include "common/error.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_one_holder(void **state)
{
    (void)state;
    char dir[96];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-pidfile"), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/sub/deeper/x.pid", dir);   /* the folders are made too */
    long holder = -5;
    int fd = gf_pidfile_take(path, 0644, &holder);
    assert_true(fd >= 0);
    assert_int_equal(holder, 0);
    long other = 0;
    assert_int_equal(gf_pidfile_take(path, 0644, &other), -1);   /* a second open file description */
    assert_int_equal(other, (long)getpid());
    close(fd);
    int again = gf_pidfile_take(path, 0644, &other);
    assert_true(again >= 0);
    close(again);
    assert_int_equal(gf_test_rmtree(dir), 0);
}

static mode_t mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mode & 07777;
}

static void test_modes(void **state)
{
    (void)state;
    char dir[96];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-pidmode"), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/run/w0.pid", dir);
    mode_t old = umask(077);   /* the modes asked for, whatever the umask */
    long holder;
    int fd = gf_pidfile_take(path, 0600, &holder);   /* a worker's: the broker's user alone */
    assert_true(fd >= 0);
    assert_int_equal(mode_of(path), 0600);
    snprintf(path, sizeof path, "%s/run", dir);
    assert_int_equal(mode_of(path), 0711);           /* its folder: traversable, not listable */
    close(fd);
    /* an older version's 0666 file: tightened when taken */
    snprintf(path, sizeof path, "%s/run/w0.pid", dir);
    assert_int_equal(chmod(path, 0666), 0);
    fd = gf_pidfile_take(path, 0600, &holder);
    assert_true(fd >= 0);
    assert_int_equal(mode_of(path), 0600);
    close(fd);
    /* the broker's: the CLI of every user opens it to see whether it runs */
    snprintf(path, sizeof path, "%s/run/b.pid", dir);
    fd = gf_pidfile_take(path, 0644, &holder);
    assert_true(fd >= 0);
    assert_int_equal(mode_of(path), 0644);
    close(fd);
    umask(old);
    assert_int_equal(gf_test_rmtree(dir), 0);
}

static void test_mkdir_p(void **state)
{
    (void)state;
    char dir[96];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-mkdir"), 0);
    char path[160], *failed = (char *)1;
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    assert_int_equal(gf_mkdir_p(path, 0755, &failed), 0);
    assert_null(failed);
    assert_int_equal(access(path, W_OK), 0);
    assert_int_equal(gf_mkdir_p(path, 0755, NULL), 0);          /* exists: fine */
    /* a file where a folder should be: refused, the folder named */
    char file[160];
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/f/g", dir);
    assert_int_equal(gf_mkdir_p(path, 0755, &failed), GF_EIO);
    assert_non_null(failed);
    assert_string_equal(failed, path);
    free(failed);
    assert_int_equal(gf_test_rmtree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_one_holder),
                                        cmocka_unit_test(test_modes),
                                        cmocka_unit_test(test_mkdir_p) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
