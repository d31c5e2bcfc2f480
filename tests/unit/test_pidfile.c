/* test_pidfile.c — pid files held by flock(2): the second taker is refused
 * and told who holds it; a released file is taken again; missing folders
 * are made (gf_mkdir_p), and one that cannot be is named. */
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
#include <unistd.h>

static void test_one_holder(void **state)
{
    (void)state;
    char dir[96];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-pidfile"), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/sub/deeper/x.pid", dir);   /* the folders are made too */
    long holder = -5;
    int fd = gf_pidfile_take(path, &holder);
    assert_true(fd >= 0);
    assert_int_equal(holder, 0);
    long other = 0;
    assert_int_equal(gf_pidfile_take(path, &other), -1);   /* a second open file description */
    assert_int_equal(other, (long)getpid());
    close(fd);
    int again = gf_pidfile_take(path, &other);
    assert_true(again >= 0);
    close(again);
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
                                        cmocka_unit_test(test_mkdir_p) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
