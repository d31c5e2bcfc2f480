/* cliopts.h — the option parsing the small job commands share: boolean
 * flags, --config FILE and --help. */
#ifndef GF_CLIOPTS_H
#define GF_CLIOPTS_H

#include <stdbool.h>

typedef struct {
    const char *name;   /* long name: "json" for --json */
    int letter;         /* short letter, or 0 for none */
    bool *set;          /* becomes true when given */
} gf_cli_flag;

/* Parse argv (argv[0] the command's name) for the flags (an array ended by
 * a NULL name), --config FILE (into *config) and --help (prints usage to
 * stdout). Operands start at optind afterwards. Returns 0, -1 after --help,
 * or GF_EXIT_USAGE (getopt has said why). */
int gf_cli_flags(int argc, char **argv, const char *usage, const gf_cli_flag *flags,
                 const char **config);

/* The integer option opt of command cmd ("cluster"), between lo and
 * 1,000,000, into *out: 0, or -1 after saying what was expected. */
int gf_cli_int(const char *cmd, const char *opt, const char *s, int lo, int *out);

#endif
