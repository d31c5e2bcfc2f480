/* test_log.c — the logging module and the small utilities. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* What one line at each level puts on stderr under threshold: stderr is a
 * real file meanwhile, read back once it is restored (a failed check then
 * still reaches the terminal). The caller frees the text. */
static char *logged_under(gf_log_level threshold)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
    gf_log_init("test_log", threshold);
    GF_DEBUG("line at debug %d", 0);
    GF_INFO("line at info %d", 1);
    GF_WARN("line at warn %d", 2);
    GF_ERROR("line at error %d", 3);
    gf_log_init("test_log", GF_LOG_INFO);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    long n = ftell(f);
    assert_true(n >= 0);
    char *text = gf_calloc((size_t)n + 1, 1);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return text;
}

/* A line below the threshold is not written; one at or above it is, once,
 * with the program's name, its pid and the level; OFF silences errors too
 * (while the thread's last error is still kept for its job). */
static void test_threshold(void **state)
{
    (void)state;
    char tag[64];
    snprintf(tag, sizeof tag, "test_log[%d] ", (int)getpid());
    char *text = logged_under(GF_LOG_WARN);
    assert_null(strstr(text, "line at debug"));
    assert_null(strstr(text, "line at info"));
    char *warn = strstr(text, "line at warn 2\n"), *err = strstr(text, "line at error 3\n");
    assert_non_null(warn);
    assert_non_null(err);
    assert_true(warn < err);
    assert_non_null(strstr(text, tag));
    assert_non_null(strstr(text, "warn: line at warn 2"));
    assert_non_null(strstr(text, "error: line at error 3"));
    assert_null(strstr(err + 1, "line at error"));
    free(text);

    text = logged_under(GF_LOG_DEBUG);
    assert_non_null(strstr(text, "debug: line at debug 0\n"));
    assert_non_null(strstr(text, "info: line at info 1\n"));
    free(text);

    gf_log_clear_last_error();
    text = logged_under(GF_LOG_OFF);
    assert_string_equal(text, "");
    assert_string_equal(gf_log_last_error(), "line at error 3");
    free(text);
    assert_int_equal(gf_log_get_level(), GF_LOG_INFO);
}

/* A command's user reads its name, not an event line: errors as
 * "<who>: message", warnings marked, no time or pid; NULL brings the event
 * lines back. */
static void test_user_style(void **state)
{
    (void)state;
    gf_log_set_user("gpuflock test");
    char *text = logged_under(GF_LOG_WARN);
    gf_log_set_user(NULL);
    assert_string_equal(text, "gpuflock test: warning: line at warn 2\n"
                              "gpuflock test: line at error 3\n");
    free(text);

    text = logged_under(GF_LOG_ERROR);
    char tag[64];
    snprintf(tag, sizeof tag, "test_log[%d] error: line at error 3\n", (int)getpid());
    assert_non_null(strstr(text, tag));
    assert_null(strstr(text, "gpuflock test"));
    free(text);
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
        cmocka_unit_test(test_user_style),
        cmocka_unit_test(test_strfmt),
        cmocka_unit_test(test_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
