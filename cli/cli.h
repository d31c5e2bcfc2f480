/* cli.h — the gpuflock command's subcommands.
 *
 * Each subcommand lives in cli/cmd_<name>.c and has the signature of
 * gf_cli_fn: it gets argv starting at the subcommand's name and main's
 * context (never NULL), and returns the process exit status. The table in
 * cli/commands.c lists them. A subcommand's messages to its user are single
 * lines "gpuflock NAME: ..." on stderr; main sets the log to that form
 * (gf_log_set_user) for what library code logs on its behalf. */
#ifndef GF_CLI_H
#define GF_CLI_H

#include "common/config.h"

#include <stdbool.h>

/* What a program's main hands a subcommand besides its arguments: the
 * configuration it loaded already, if any (the light front reads the
 * command's to choose its way), so that the command's broker client does
 * not load it again. Owned by main, which frees what is left of it after
 * the command returns. */
typedef struct {
    const char *config_path;  /* the --config it was loaded from; NULL: the default search */
    gf_config *config;        /* loaded, or NULL; gf_client_open (cli/client.h) takes it */
} gf_cli_ctx;

typedef int (*gf_cli_fn)(int argc, char **argv, gf_cli_ctx *ctx);

typedef struct {
    const char *name;     /* as typed: "exec", "locks", ... */
    gf_cli_fn run;        /* entry point */
    const char *summary;  /* one line for `gpuflock help` */
    bool no_config;       /* reads no configuration: a --config before its name is not its
                           * concern and is not handed to it */
} gf_cli_command;

/* The table of subcommands, terminated by an entry with name NULL. */
extern const gf_cli_command gf_cli_commands[];

/* Look a subcommand up by name; NULL if unknown. */
const gf_cli_command *gf_cli_find(const char *name);

#endif
