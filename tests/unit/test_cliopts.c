/* test_cliopts.c — the shared option parsing of the small job commands. */
#include "cli/cliopts.h"
#include "common/error.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* What gf_cli_flags says on stderr for argv (stderr a real file meanwhile,
 * read back once it is restored); the caller frees it. */
static char *said(int argc, char **argv, const gf_cli_flag *flags, int *rc)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
    const char *config = NULL;
    *rc = gf_cli_flags(argc, argv, "usage\n", flags, &config);
    fflush(stderr);
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

/* Every wrong option is one line naming the command and the option as it
 * was typed, the same under glibc and musl: unknown (long or short, alone or
 * inside a cluster), lacking its value, or given one it does not take. */
static void test_option_errors_one_line(void **state)
{
    (void)state;
    bool all = false, json = false;
    const gf_cli_flag flags[] = { { "all", 'a', &all }, { "json", 0, &json }, { NULL, 0, NULL } };
    static const struct {
        char *args[4];
        const char *line;
    } cases[] = {
        { { "queue", "--user", NULL },
          "gpuflock queue: unknown option '--user' (`gpuflock queue --help` lists them)\n" },
        { { "queue", "--user=ana", NULL },
          "gpuflock queue: unknown option '--user' (`gpuflock queue --help` lists them)\n" },
        { { "queue", "-q", NULL },
          "gpuflock queue: unknown option '-q' (`gpuflock queue --help` lists them)\n" },
        { { "queue", "--json", "-qa", NULL },
          "gpuflock queue: unknown option '-q' (`gpuflock queue --help` lists them)\n" },
        { { "queue", "-aq", NULL },
          "gpuflock queue: unknown option '-q' (`gpuflock queue --help` lists them)\n" },
        { { "queue", "--config", NULL }, "gpuflock queue: option '--config' needs a value\n" },
        { { "queue", "--json=1", NULL }, "gpuflock queue: option '--json' takes no value\n" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[4] = { NULL };   /* getopt may permute it */
        int argc = 0, rc;
        for (; cases[i].args[argc]; argc++)
            argv[argc] = cases[i].args[argc];
        char *text = said(argc, argv, flags, &rc);
        assert_int_equal(rc, GF_EXIT_USAGE);
        assert_string_equal(text, cases[i].line);
        free(text);
    }
}

/* The options before the command reach it as if typed after its name. */
static void test_globals_before_the_command(void **state)
{
    (void)state;
    char *argv[] = { "gpuflock", "--config", "/etc/x.yaml", "--help", "wait", "3", NULL };
    gf_cli_globals g;
    assert_int_equal(gf_cli_globals_parse(6, argv, &g), 0);
    assert_string_equal(g.config, "/etc/x.yaml");
    assert_true(g.help);
    assert_false(g.version);
    assert_int_equal(g.command, 4);
    int n;
    char **a = gf_cli_globals_argv(&g, 6, argv, true, &n);
    assert_int_equal(n, 5);
    assert_string_equal(a[0], "wait");
    assert_string_equal(a[1], "--config");
    assert_string_equal(a[2], "/etc/x.yaml");
    assert_string_equal(a[3], "--help");
    assert_string_equal(a[4], "3");
    assert_null(a[5]);
    free(a);
    a = gf_cli_globals_argv(&g, 6, argv, false, &n);   /* a command that reads no configuration */
    assert_int_equal(n, 3);
    assert_string_equal(a[1], "--help");
    free(a);

    char *v[] = { "gpuflock", "--config=c.yaml", "--version", NULL };
    assert_int_equal(gf_cli_globals_parse(3, v, &g), 0);
    assert_string_equal(g.config, "c.yaml");
    assert_true(g.version);
    assert_int_equal(g.command, 3);   /* none */

    char *bad[] = { "gpuflock", "--bogus", "wait", NULL };
    assert_int_equal(gf_cli_globals_parse(3, bad, &g), GF_EXIT_USAGE);
    char *lacking[] = { "gpuflock", "--config", NULL };
    assert_int_equal(gf_cli_globals_parse(2, lacking, &g), GF_EXIT_USAGE);
}

int main(void)
{
    opterr = 0;   /* keep getopt's own complaints out of the test log */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flags_config_operands),
        cmocka_unit_test(test_long_flag_help_and_unknown),
        cmocka_unit_test(test_option_errors_one_line),
        cmocka_unit_test(test_globals_before_the_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
