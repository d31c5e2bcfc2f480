/* test_log.c — the logging module and the small utilities. */
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* The whole of a small file, or NULL when it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = gf_calloc(1 << 16, 1);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* stderr into the void while a case logs on purpose; gf_log writes it. */
static int quiet_stderr(void)
{
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    if (getenv("GF_TEST_LOUD"))
        return saved;
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    dup2(fileno(null), STDERR_FILENO);
    fclose(null);
    return saved;
}

static void loud_stderr(int saved)
{
    dup2(saved, STDERR_FILENO);
    close(saved);
}

/* The log file: made 0640 in a folder made 0750, each event line in it with
 * its date; a rename then a reopen sends the lines before to the old file
 * and those after to the new one; a rename nobody signals is noticed by
 * gf_log_check_file; a newline in a message stays inside its line. */
static void test_log_file_and_reopen(void **state)
{
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "test_log"), 0);
    char *logs = gf_strfmt("%s/logs", dir), *path = gf_strfmt("%s/gf.log", logs);
    char *old = gf_strfmt("%s.1", path), *older = gf_strfmt("%s.2", path);
    int saved = quiet_stderr();
    gf_log_init("test_log", GF_LOG_INFO);
    assert_int_equal(gf_log_open_file(path), 0);
    assert_string_equal(gf_log_file_path(), path);
    GF_INFO("line one %d", 1);
    GF_DEBUG("below the threshold");
    GF_WARN("two\nlines? no: %s", "one");
    assert_int_equal(rename(path, old), 0);
    GF_INFO("after the move, before the reopen");
    assert_int_equal(gf_log_reopen(), 0);
    GF_INFO("after the reopen");
    assert_int_equal(rename(path, older), 0);
    assert_int_equal(gf_log_check_file(), 0);      /* not signalled: seen by the check */
    GF_INFO("after the check");
    assert_int_equal(gf_log_check_file(), 0);      /* the same file: nothing to do */
    gf_log_close_file();
    assert_null(gf_log_file_path());
    GF_INFO("after the close");
    loud_stderr(saved);

    struct stat st;
    assert_int_equal(stat(logs, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0750);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    char *a = slurp(old), *b = slurp(older), *c = slurp(path);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    char tag[64];
    snprintf(tag, sizeof tag, " test_log[%d] info: line one 1\n", (int)getpid());
    assert_non_null(strstr(a, tag));
    assert_true(a[4] == '-' && a[7] == '-' && a[10] == 'T');   /* 2025-01-31T12:00:00.000+0100 */
    assert_non_null(strstr(a, "warn: two\\x0alines? no: one\n"));
    assert_non_null(strstr(a, "after the move, before the reopen\n"));
    assert_null(strstr(a, "below the threshold"));
    assert_null(strstr(a, "after the reopen"));
    assert_non_null(strstr(b, "reopened\n"));
    assert_non_null(strstr(b, "after the reopen\n"));
    assert_null(strstr(b, "after the check"));
    assert_non_null(strstr(c, "after the check\n"));
    assert_null(strstr(c, "after the close"));
    for (const char *p = a; *p; p = strchr(p, '\n') + 1)   /* every line whole */
        assert_true(p[4] == '-' && strchr(p, '\n'));
    free(a);
    free(b);
    free(c);
    assert_int_equal(gf_test_rmtree(dir), 0);
    free(logs);
    free(path);
    free(old);
    free(older);
}

/* What may not be at the name, or around it, is refused and never
 * followed nor written: a symlink, a hard link, a FIFO, a folder others (or
 * its group) may write, a folder reached through a symlink. */
static void test_log_file_refusals(void **state)
{
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "test_log"), 0);
    char *target = gf_strfmt("%s/target", dir), *name = gf_strfmt("%s/gf.log", dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("not a log\n", f);
    fclose(f);
    int saved = quiet_stderr();
    assert_int_equal(symlink(target, name), 0);
    assert_int_equal(gf_log_open_file(name), GF_EPERM);
    assert_non_null(strstr(gf_log_last_error(), "is a symbolic link: refused"));
    unlink(name);
    assert_int_equal(link(target, name), 0);
    assert_int_equal(gf_log_open_file(name), GF_EPERM);
    assert_non_null(strstr(gf_log_last_error(), "hard links"));
    unlink(name);
    assert_int_equal(mkfifo(name, 0600), 0);
    assert_int_equal(gf_log_open_file(name), GF_EPERM);
    assert_non_null(strstr(gf_log_last_error(), "not a regular file"));
    unlink(name);
    char *pub = gf_strfmt("%s/pub", dir), *in_pub = gf_strfmt("%s/pub/gf.log", dir);
    assert_int_equal(mkdir(pub, 0700), 0);
    assert_int_equal(chmod(pub, 01777), 0);      /* sticky does not make the folder safe */
    assert_int_equal(gf_log_open_file(in_pub), GF_EPERM);
    assert_non_null(strstr(gf_log_last_error(), "is writable by others"));
    assert_int_equal(chmod(pub, 0770), 0);
    assert_int_equal(gf_log_open_file(in_pub), GF_EPERM);
    assert_non_null(strstr(gf_log_last_error(), "is writable by its group"));
    char *via = gf_strfmt("%s/via", dir), *in_via = gf_strfmt("%s/via/gf.log", dir);
    assert_int_equal(chmod(pub, 0700), 0);
    assert_int_equal(symlink(pub, via), 0);
    assert_int_equal(gf_log_open_file(in_via), GF_EPERM);
    assert_non_null(strstr(gf_log_last_error(), "not canonical"));
    assert_int_equal(gf_log_open_file("gf.log"), GF_EINVAL);
    assert_int_equal(gf_log_open_file(in_pub), 0);  /* the folder as it should be */
    GF_INFO("into pub");
    gf_log_close_file();
    loud_stderr(saved);
    assert_null(gf_log_file_path());
    char *t = slurp(target), *p = slurp(in_pub);
    assert_string_equal(t, "not a log\n");
    assert_non_null(strstr(p, "into pub\n"));
    free(t);
    free(p);
    assert_int_equal(gf_test_rmtree(dir), 0);
    free(target);
    free(name);
    free(pub);
    free(in_pub);
    free(via);
    free(in_via);
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
        cmocka_unit_test(test_log_file_and_reopen),
        cmocka_unit_test(test_log_file_refusals),
        cmocka_unit_test(test_strfmt),
        cmocka_unit_test(test_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
