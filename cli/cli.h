/* cli.h — the gpuflock command's subcommands.
 *
 * Each subcommand lives in cli/cmd_<name>.c and has the signature of
 * gf_cli_fn: it gets argv starting at the subcommand's name and returns the
 * process exit status. The table in cli/commands.c lists them. */
#ifndef GF_CLI_H
#define GF_CLI_H

typedef int (*gf_cli_fn)(int argc, char **argv);

typedef struct {
    const char *name;     /* as typed: "exec", "locks", ... */
    gf_cli_fn run;        /* entry point */
    const char *summary;  /* one line for `gpuflock help` */
} gf_cli_command;

/* The table of subcommands, terminated by an entry with name NULL. */
extern const gf_cli_command gf_cli_commands[];

/* Look a subcommand up by name; NULL if unknown. */
const gf_cli_command *gf_cli_find(const char *name);

#endif
