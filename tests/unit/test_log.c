/* test_log.c — the logging module and the small utilities. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static void test_level_parse(void **state)
{
    (void)state;
    gf_log_level lv;
    assert_int_equal(gf_log_level_parse("debug", &lv), 0);
    assert_int_equal(lv, GF_LOG_DEBUG);
    assert_int_equal(gf_log_level_parse("WARN", &lv), 0);
    assert_int_equal(lv, GF_LOG_WARN);
    assert_int_equal(gf_log_level_parse("loud", &lv), GF_EINVAL);
}

static void test_threshold(void **state)
{
    (void)state;
    gf_log_init("test_log", GF_LOG_ERROR);
    assert_int_equal(gf_log_get_level(), GF_LOG_ERROR);
    GF_INFO("not printed %d", 1);
    gf_log_init("test_log", GF_LOG_INFO);
}

static void test_strfmt(void **state)
{
    (void)state;
    char *s = gf_strfmt("gpu%d.lock", 7);
    assert_string_equal(s, "gpu7.lock");
    free(s);
    assert_null(gf_strdup(NULL));
    assert_string_equal(gf_strerror(GF_EBUSY), "busy");
}

static void test_clocks(void **state)
{
    (void)state;
    uint64_t a = gf_now_ns();
    uint64_t b = gf_now_ns();
    assert_true(b >= a);
    assert_true(gf_wall_ms() > 1600000000000LL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_level_parse),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_strfmt),
        cmocka_unit_test(test_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
