/* test_jobsel.c — the selection options of queue, history and cancel
 * (cli/jobsel.h): users by name or uid (root's 0 too), states checked,
 * a name taken whole, cards, each option once; and the dates of --since and
 * purge --before, in a fixed time zone. */
#include "cli/jobsel.h"
#include "common/error.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOW 1764500000000LL   /* 2025-11-30T10:53:20Z */

static int setup(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    tzset();
    return 0;
}

static int64_t date(const char *s)
{
    int64_t ms = -1;
    if (gf_parse_date(s, NOW, &ms) != 0)
        fail_msg("'%s' not taken", s);
    return ms;
}

static void test_dates(void **state)
{
    (void)state;
    assert_int_equal(date("2026-11-30"), 1795996800000LL);
    assert_int_equal(date("2026-11-30T08:15"), 1795996800000LL + (8 * 3600 + 15 * 60) * 1000LL);
    assert_int_equal(date("2026-11-30 08:15:30"),
                     1795996800000LL + (8 * 3600 + 15 * 60 + 30) * 1000LL);
    assert_int_equal(date("@1764500000"), 1764500000000LL);
    assert_int_equal(date("now"), NOW);
    assert_int_equal(date("now-90s"), NOW - 90000);
    assert_int_equal(date("now-30m"), NOW - 1800000);
    assert_int_equal(date("now-12h"), NOW - 12 * 3600000LL);
    assert_int_equal(date("now-3d"), NOW - 3 * 86400000LL);
    assert_int_equal(date("now-2w"), NOW - 14 * 86400000LL);
    static const char *const bad[] = {
        "", "yesterday", "2026-13-01", "2026-02-30", "2026-11-30T25:00", "2026-11-30T08",
        "2026-11-30x", "26-11-30", "now+3d", "now-3", "now-3y", "now-d", "@", "@12x", "@-5",
        "2026-11-30T08:15:30Z", "1969-12-31",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms;
        if (gf_parse_date(bad[i], NOW, &ms) == 0)
            fail_msg("'%s' taken as %lld", bad[i], (long long)ms);
    }
}

/* Run the options of argv (a command's, argv[0] its name) through a
 * selection; returns the first failure's code (0: all taken). */
static int parse(gf_jobsel *s, int argc, char **argv)
{
    struct option opts[6] = { { 0 } };
    gf_jobsel_options(GF_SEL_ALL, opts);
    optind = 1;
    opterr = 0;
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":", opts, NULL)) != -1)
        rc = c >= GF_SEL_OPT_USER ? gf_jobsel_take_opt(s, "queue", c, optarg, NOW)
                                  : GF_EXIT_USAGE;
    return rc;
}

static void test_options_into_the_filter(void **state)
{
    (void)state;
    struct passwd *root = getpwuid(0);
    assert_non_null(root);
    char *name = gf_strdup(root->pw_name);
    char *user = gf_strfmt("%s,4242", name);
    char *argv[] = { "queue", "--user", user, "--state", "failed,cancelled", "--name",
                     "train, v2", "--since", "now-1d", "--card", "0,3", NULL };
    gf_jobsel s = { NULL, 0 };
    assert_int_equal(parse(&s, 11, argv), 0);
    gf_job_filter *f = gf_jobsel_take(&s);
    assert_non_null(f);
    assert_int_equal(f->n_users, 2);
    assert_int_equal(f->users[0], 0);         /* root by name */
    assert_int_equal(f->users[1], 4242);      /* a uid NSS does not know, as a number */
    assert_int_equal(f->n_states, 2);
    assert_string_equal(f->states[0], "failed");
    assert_string_equal(f->states[1], "cancelled");
    assert_string_equal(f->name, "train, v2");   /* a name is not a list */
    assert_int_equal(f->since_ms, NOW - 86400000LL);
    assert_int_equal(f->n_cards, 2);
    assert_int_equal(f->cards[1], 3);
    gf_msg m;
    memset(&m, 0, sizeof m);
    m.op = GF_OP_QUEUE;
    m.filter = f;
    gf_msg_clear(&m);                         /* the message owns what was taken */
    assert_null(gf_jobsel_take(&s));
    gf_jobsel_clear(&s);
    free(user);
    free(name);
}

static void test_bad_options_refused(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        { "--state", "finished", NULL }, { "--state", ",", NULL }, { "--card", "x", NULL },
        { "--card", "2000", NULL }, { "--since", "soon", NULL },
        { "--user", "no-such-user-gf", NULL }, { "--user", ",", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[] = { "queue", (char *)cases[i][0], (char *)cases[i][1], NULL };
        gf_jobsel s = { NULL, 0 };
        if (parse(&s, 3, argv) != GF_EXIT_USAGE)
            fail_msg("%s %s taken", cases[i][0], cases[i][1]);
        gf_jobsel_clear(&s);
    }
    /* an option given twice */
    char *twice[] = { "queue", "--state", "done", "--state", "failed", NULL };
    gf_jobsel s = { NULL, 0 };
    assert_int_equal(parse(&s, 5, twice), GF_EXIT_USAGE);
    gf_jobsel_clear(&s);
    /* a name longer than the protocol takes */
    char *longname = gf_calloc(GF_PROTO_MAX_NAME + 2, 1);
    memset(longname, 'n', GF_PROTO_MAX_NAME + 1);
    char *toolong[] = { "queue", "--name", longname, NULL };
    assert_int_equal(parse(&s, 3, toolong), GF_EXIT_USAGE);
    gf_jobsel_clear(&s);
    free(longname);
}

static void test_no_option_no_filter(void **state)
{
    (void)state;
    char *argv[] = { "queue", NULL };
    gf_jobsel s = { NULL, 0 };
    assert_int_equal(parse(&s, 1, argv), 0);
    assert_null(gf_jobsel_take(&s));
    struct option opts[6] = { { 0 } };
    assert_int_equal(gf_jobsel_options(GF_SEL_USER | GF_SEL_NAME, opts), 2);
    assert_string_equal(opts[0].name, "user");
    assert_string_equal(opts[1].name, "name");
    assert_null(opts[2].name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dates, setup),
        cmocka_unit_test_setup(test_options_into_the_filter, setup),
        cmocka_unit_test_setup(test_bad_options_refused, setup),
        cmocka_unit_test_setup(test_no_option_no_filter, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
