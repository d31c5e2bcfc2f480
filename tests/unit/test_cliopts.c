/* test_cliopts.c — the shared option parsing of the small job commands. */
#include "cli/cliopts.h"
#include "common/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static void test_flags_config_operands(void **state)
{
    (void)state;
    bool all = false, json = false;
    const char *config = NULL;
    const gf_cli_flag flags[] = { { "all", 'a', &all }, { "json", 0, &json }, { NULL, 0, NULL } };
    char *argv[] = { "queue", "-a", "--config", "/tmp/c.yaml", "7", "8", NULL };
    assert_int_equal(gf_cli_flags(6, argv, "usage\n", flags, &config), 0);
    assert_true(all);
    assert_false(json);
    assert_string_equal(config, "/tmp/c.yaml");
    assert_int_equal(optind, 4);
    assert_string_equal(argv[optind], "7");
}

static void test_long_flag_help_and_unknown(void **state)
{
    (void)state;
    bool json = false;
    const char *config = NULL;
    const gf_cli_flag flags[] = { { "json", 0, &json }, { NULL, 0, NULL } };
    char *a1[] = { "show", "--json", "3", NULL };
    assert_int_equal(gf_cli_flags(3, a1, "usage\n", flags, &config), 0);
    assert_true(json);
    assert_null(config);
    char *a2[] = { "show", "--help", NULL };
    assert_int_equal(gf_cli_flags(2, a2, "usage: gpuflock show ID\n", flags, &config), -1);
    char *a3[] = { "show", "--nope", NULL };
    assert_int_equal(gf_cli_flags(2, a3, "usage\n", flags, &config), GF_EXIT_USAGE);
    char *a4[] = { "cancel", "-x", NULL };
    assert_int_equal(gf_cli_flags(2, a4, "usage\n", NULL, &config), GF_EXIT_USAGE);
}

int main(void)
{
    opterr = 0;   /* keep getopt's own complaints out of the test log */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags_config_operands),
        cmocka_unit_test(test_long_flag_help_and_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
