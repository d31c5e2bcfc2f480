/* main.c — the gpuflock command: the options before the subcommand, then
 * dispatch to it (cli/cmd_*.c). */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "net/transport.h"
#include "common/blasenv.h"
#include "common/error.h"
#include "common/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The client backend of the full command: libzmq, every endpoint (ipc://,
 * tcp:// with CURVE). */
const gf_transport *const gf_client_transports[] = { &gf_transport_zmq, NULL };

static void usage(FILE *out)
{
    fprintf(out, "usage: gpuflock [--config FILE] [--help] [--version] COMMAND [ARGS...]\n\n"
                 "commands:\n");
    for (const gf_cli_command *c = gf_cli_commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\n`gpuflock COMMAND --help` describes one command. Options before COMMAND\n"
                 "are given to it as if they came after its name.\n");
}

int main(int argc, char **argv)
{
    gf_blas_spin_forget();
    gf_log_init("gpuflock", GF_LOG_WARN);
    gf_cli_globals g;
    if (gf_cli_globals_parse(argc, argv, &g) != 0)
        return GF_EXIT_USAGE;
    if (g.version) {
        char *version[] = { "version", NULL };
        gf_cli_ctx none = { NULL, NULL };
        return gf_cli_find("version")->run(1, version, &none);
    }
    if (g.command == argc) {
        usage(g.help ? stdout : stderr);
        return g.help ? 0 : GF_EXIT_USAGE;
    }
    if (strcmp(argv[g.command], "help") == 0) {
        usage(stdout);
        return 0;
    }
    const gf_cli_command *cmd = gf_cli_find(argv[g.command]);
    if (!cmd) {
        fprintf(stderr, "gpuflock: unknown command '%s' (`gpuflock help` lists them)\n",
                argv[g.command]);
        return GF_EXIT_USAGE;
    }
    char who[64];
    snprintf(who, sizeof who, "gpuflock %s", cmd->name);
    gf_log_set_user(who);    /* what library code logs reads as the command's own */
    int n;
    char **args = gf_cli_globals_argv(&g, argc, argv, !cmd->no_config, &n);
    gf_cli_ctx ctx = { .config_path = NULL, .config = NULL };
    int rc = cmd->run(n, args, &ctx);
    free(args);
    return rc;
}
