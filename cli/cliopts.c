/* cliopts.c — the option parsing the commands share (cliopts.h).
 *
 * getopt's own messages are never shown (opterr 0): glibc and musl word
 * them differently and name the subcommand without the program ("queue:
 * unrecognized option"); gf_cli_opt_error says the same in the house's one
 * line. */
#include "cli/cliopts.h"
#include "common/error.h"
#include "common/util.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "gpuflock %s: %s\n", cmd, msg);
    return GF_EXIT_USAGE;
}

int gf_cli_int(const char *cmd, const char *opt, const char *s, int lo, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > 1000000) {
        gf_cli_usage_error(cmd, "%s '%s': expected an integer >= %d", opt, s, lo);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Does longopts name a long option `name` (up to '=') taking no value whose
 * getopt value is val? */
static bool takes_no_value(const struct option *longopts, const char *name, size_t len, int val)
{
    for (const struct option *o = longopts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o->has_arg == no_argument && !o->flag && o->val == val;
    return false;
}

int gf_cli_opt_error(const char *cmd, int c, int argc, char **argv,
                     const struct option *longopts)
{
    /* The argument getopt was reading: the last one it stepped over (musl
     * steps past the end after a short option lacking its value). */
    int at = optind > argc ? argc - 1 : optind - 1;
    const char *arg = at >= 1 ? argv[at] : "";
    bool is_long = strncmp(arg, "--", 2) == 0;
    int len = is_long ? (int)strcspn(arg, "=") : 0;
    if (c == ':')
        return is_long ? gf_cli_usage_error(cmd, "option '%.*s' needs a value", len, arg)
                       : gf_cli_usage_error(cmd, "option '-%c' needs a value", optopt);
    if (is_long && arg[len] == '=' && optopt &&
        takes_no_value(longopts, arg + 2, (size_t)len - 2, optopt))
        return gf_cli_usage_error(cmd, "option '%.*s' takes no value", len, arg);
    if (optopt > ' ' && optopt < 127)
        return gf_cli_usage_error(cmd, "unknown option '-%c' (`gpuflock %s --help` lists them)",
                                  optopt, cmd);
    return gf_cli_usage_error(cmd, "unknown option '%.*s' (`gpuflock %s --help` lists them)",
                              is_long ? len : (int)strlen(arg), arg, cmd);
}

int gf_cli_globals_parse(int argc, char **argv, gf_cli_globals *g)
{
    *g = (gf_cli_globals){ .command = argc };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || !a[1]) {
            g->command = i;
            return 0;
        }
        if (strcmp(a, "--") == 0) {
            g->command = i + 1;
            return 0;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            g->help = true;
        } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            g->version = true;
        } else if (strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "gpuflock: option '--config' needs a value\n");
                return GF_EXIT_USAGE;
            }
            g->config = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            g->config = a + 9;
        } else {
            fprintf(stderr, "gpuflock: unknown option '%s' before the command (`gpuflock --help` "
                    "lists the commands)\n", a);
            return GF_EXIT_USAGE;
        }
    }
    return 0;
}

char **gf_cli_globals_argv(const gf_cli_globals *g, int argc, char **argv, bool with_config,
                           int *n)
{
    char **out = gf_calloc((size_t)(argc - g->command) + 4, sizeof *out);
    int k = 0;
    out[k++] = argv[g->command];
    if (with_config && g->config) {
        out[k++] = "--config";
        out[k++] = (char *)g->config;
    }
    if (g->help)
        out[k++] = "--help";
    for (int i = g->command + 1; i < argc; i++)
        out[k++] = argv[i];
    out[k] = NULL;
    *n = k;
    return out;
}

#define MAX_FLAGS 8

int gf_cli_flags(int argc, char **argv, const char *usage, const gf_cli_flag *flags,
                 const char **config)
{
    struct option opts[MAX_FLAGS + 3];
    char shorts[2 * MAX_FLAGS + 3] = ":h";
    size_t n = 0, ns = 2;
    for (; flags && flags[n].name && n < MAX_FLAGS; n++) {
        opts[n] = (struct option){ flags[n].name, no_argument, NULL, 256 + (int)n };
        if (flags[n].letter)
            shorts[ns++] = (char)flags[n].letter;
    }
    shorts[ns] = '\0';
    opts[n] = (struct option){ "config", required_argument, NULL, 'c' };
    opts[n + 1] = (struct option){ "help", no_argument, NULL, 'h' };
    opts[n + 2] = (struct option){ NULL, 0, NULL, 0 };
    optind = 0;   /* a full reset: a cluster an earlier parse left half read is forgotten */
    opterr = 0;
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
            for (i = 0; i < n && (c == '?' || c == ':' || flags[i].letter != c); i++)
                ;
            if (i == n)
                return gf_cli_opt_error(argv[0], c, argc, argv, opts);
            *flags[i].set = true;
        }
    }
    return 0;
}
