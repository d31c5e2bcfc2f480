/* test_pidfile.c — pid files held by flock(2): the second taker is refused
 * and told who holds it; a released file is taken again. */
#include "common/pidfile.h"

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
    char dir[] = "/tmp/gf-test-pidfile-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/sub/x.pid", dir);   /* the folder is made too */
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
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_one_holder) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
