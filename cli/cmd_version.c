/* cmd_version.c — `gpuflock version`. */
#include "cli/cli.h"
#include "common/version.h"

#include <stdio.h>

int gf_cmd_version(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_version(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)argc;
    (void)argv;
    (void)cli;
    printf("gpuflock %s (protocol %d)\n", GF_VERSION, GF_PROTOCOL_VERSION);
    return 0;
}
