/* cliopts.h — the option parsing the commands share: the options before the
 * subcommand (gpuflock [--config FILE] [--help] [--version] COMMAND ...),
 * boolean flags with --config FILE and --help, and the one style of every
 * usage error: a single line "gpuflock COMMAND: message" on stderr, exit
 * status 64. */
#ifndef GF_CLIOPTS_H
#define GF_CLIOPTS_H

#include <stdbool.h>

struct option;

/* What came before the subcommand's name. */
typedef struct {
    const char *config;  /* --config FILE, or NULL */
    bool help;           /* --help or -h */
    bool version;        /* --version or -V */
    int command;         /* argv index of the subcommand's name; argc when there is none */
} gf_cli_globals;

/* Read the options before the subcommand in argv (argv[0] the program).
 * Returns 0, or GF_EXIT_USAGE after saying which option is wrong. */
int gf_cli_globals_parse(int argc, char **argv, gf_cli_globals *g);

/* The subcommand's argv as if the options before it came right after its
 * name: the name, --config FILE (when with_config), --help, then the rest.
 * A new NULL-terminated array of argv's strings (free() the array only);
 * its length in *n. g->command < argc. */
char **gf_cli_globals_argv(const gf_cli_globals *g, int argc, char **argv, bool with_config,
                           int *n);

typedef struct {
    const char *name;   /* long name: "json" for --json */
    int letter;         /* short letter, or 0 for none */
    bool *set;          /* becomes true when given */
} gf_cli_flag;

/* Parse argv (argv[0] the command's name) for the flags (an array ended by
 * a NULL name), --config FILE (into *config) and --help (prints usage to
 * stdout). Operands start at optind afterwards. Returns 0, -1 after --help,
 * or GF_EXIT_USAGE after saying what is wrong. */
int gf_cli_flags(int argc, char **argv, const char *usage, const gf_cli_flag *flags,
                 const char **config);

/* The integer option opt of command cmd ("cluster"), between lo and
 * 1,000,000, into *out: 0, or -1 after saying what was expected. */
int gf_cli_int(const char *cmd, const char *opt, const char *s, int lo, int *out);

/* After getopt_long (opterr 0, an optstring starting with ':', after any
 * '+') returned c, '?' or ':', for command cmd: one line saying which
 * option is unknown, lacks its value or takes none. Returns GF_EXIT_USAGE. */
int gf_cli_opt_error(const char *cmd, int c, int argc, char **argv,
                     const struct option *longopts);

/* "gpuflock CMD: message" on stderr. Returns GF_EXIT_USAGE. */
int gf_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
