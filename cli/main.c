/* main.c — the gpuflock command: dispatch to a subcommand (cli/cmd_*.c). */
#include "cli/cli.h"
#include "net/transport.h"
#include "common/blasenv.h"
#include "common/error.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>

/* The client backend of the full command: libzmq, every endpoint (ipc://,
 * tcp:// with CURVE). */
const gf_transport *const gf_client_transports[] = { &gf_transport_zmq, NULL };

static void usage(FILE *out)
{
    fprintf(out, "usage: gpuflock COMMAND [ARGS...]\n\ncommands:\n");
    for (const gf_cli_command *c = gf_cli_commands; c->name; c++)
        fprintf(out, "  %-10s %s\n", c->name, c->summary);
    fprintf(out, "\n`gpuflock COMMAND --help` describes one command.\n");
}

int main(int argc, char **argv)
{
    gf_blas_spin_forget();
    gf_log_init("gpuflock", GF_LOG_WARN);
    if (argc < 2) {
        usage(stderr);
        return GF_EXIT_USAGE;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    const gf_cli_command *cmd = gf_cli_find(argv[1]);
    if (!cmd) {
        fprintf(stderr, "gpuflock: unknown command '%s'\n", argv[1]);
        usage(stderr);
        return GF_EXIT_USAGE;
    }
    gf_cli_ctx ctx = { .config_path = NULL, .config = NULL };
    return cmd->run(argc - 1, argv + 1, &ctx);
}
