/* cliopts.c — shared option parsing of the small job commands (cliopts.h). */
#include "cli/cliopts.h"
#include "common/error.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cli_int(const char *cmd, const char *opt, const char *s, int lo, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > 1000000) {
        fprintf(stderr, "gpuflock %s: %s '%s': expected an integer >= %d\n", cmd, opt, s, lo);
        return -1;
    }
    *out = (int)v;
    return 0;
}

#define MAX_FLAGS 8

int gf_cli_flags(int argc, char **argv, const char *usage, const gf_cli_flag *flags,
                 const char **config)
{
    struct option opts[MAX_FLAGS + 3];
    char shorts[2 * MAX_FLAGS + 2] = "h";
    size_t n = 0, ns = 1;
    for (; flags && flags[n].name && n < MAX_FLAGS; n++) {
        opts[n] = (struct option){ flags[n].name, no_argument, NULL, 256 + (int)n };
        if (flags[n].letter)
            shorts[ns++] = (char)flags[n].letter;
    }
    shorts[ns] = '\0';
    opts[n] = (struct option){ "config", required_argument, NULL, 'c' };
    opts[n + 1] = (struct option){ "help", no_argument, NULL, 'h' };
    opts[n + 2] = (struct option){ NULL, 0, NULL, 0 };
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
        if (c == 'c') {
            *config = optarg;
        } else if (c == 'h') {
            fputs(usage, stdout);
            return -1;
        } else if (c >= 256 && c < 256 + (int)n) {
            *flags[c - 256].set = true;
        } else {
            size_t i;
            for (i = 0; i < n && flags[i].letter != c; i++)
                ;
            if (i == n)
                return GF_EXIT_USAGE;
            *flags[i].set = true;
        }
    }
    return 0;
}
