/* test_histfmt.c — `gpuflock history`'s accounting forms (cli/histfmt.h):
 * sacct's elapsed [D-]HH:MM:SS and ExitCode STATUS:SIGNAL, local times and
 * ISO 8601 with the zone's offset, peak memory, and a hostile name made
 * safe for a terminal. */
#include "cli/histfmt.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void test_elapsed_and_times(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    char b[64];
    gf_hist_elapsed(3400, b, sizeof b);
    assert_string_equal(b, "00:00:03");
    gf_hist_elapsed((26LL * 3600 + 3 * 60 + 4) * 1000, b, sizeof b);
    assert_string_equal(b, "1-02:03:04");
    gf_hist_elapsed(-1, b, sizeof b);
    assert_string_equal(b, "-");
    gf_hist_time(1764500000000LL, b, sizeof b);
    assert_string_equal(b, "2025-11-30T10:53:20");
    gf_hist_time(0, b, sizeof b);
    assert_string_equal(b, "-");
    gf_hist_iso(1764500000000LL, b, sizeof b);
    assert_string_equal(b, "2025-11-30T10:53:20+00:00");
    setenv("TZ", "CET-1", 1);   /* POSIX form: one hour east, no zone files needed */
    tzset();
    gf_hist_iso(1764500000000LL, b, sizeof b);
    assert_string_equal(b, "2025-11-30T11:53:20+01:00");
    gf_hist_iso(0, b, sizeof b);
    assert_string_equal(b, "");
    setenv("TZ", "UTC", 1);
    tzset();
}

static void test_exit_rss_text(void **state)
{
    (void)state;
    char b[64];
    gf_job j;
    gf_job_init(&j);
    gf_hist_exit(&j, b, sizeof b);     /* never ran */
    assert_string_equal(b, "-");
    j.exit_status = 3;
    gf_hist_exit(&j, b, sizeof b);
    assert_string_equal(b, "3:0");
    j.exit_status = -1;
    j.term_signal = 9;
    gf_hist_exit(&j, b, sizeof b);
    assert_string_equal(b, "0:9");
    assert_int_equal(gf_hist_elapsed_ms(&j, 5000), -1);
    j.started_ms = 1000;
    assert_int_equal(gf_hist_elapsed_ms(&j, 5000), 4000);   /* running */
    j.ended_ms = 3000;
    assert_int_equal(gf_hist_elapsed_ms(&j, 5000), 2000);
    gf_job_clear(&j);
    gf_hist_rss(812, b, sizeof b);
    assert_string_equal(b, "812K");
    gf_hist_rss(1536, b, sizeof b);
    assert_string_equal(b, "1.5M");
    gf_hist_rss(2LL << 20, b, sizeof b);
    assert_string_equal(b, "2.0G");
    gf_hist_rss(0, b, sizeof b);
    assert_string_equal(b, "-");
    gf_hist_text("ok\x1b[2J\r\nname\x7f", b, sizeof b);
    assert_string_equal(b, "ok?[2J??name?");
    gf_hist_text("abcdefgh", b, 5);
    assert_string_equal(b, "abcd");
    gf_hist_text(NULL, b, sizeof b);
    assert_string_equal(b, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_elapsed_and_times),
        cmocka_unit_test(test_exit_rss_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
