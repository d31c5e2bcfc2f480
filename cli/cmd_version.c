/* cmd_version.c — `gpuflock version` (and `gpuflock --version`). */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "common/error.h"
#include "common/version.h"

#include <getopt.h>
#include <stdio.h>

int gf_cmd_version(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_version(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;
    static const struct option opts[] = {
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c != 'h')
            return gf_cli_opt_error("version", c, argc, argv, opts);
        printf("usage: gpuflock version   (or: gpuflock --version)\n"
               "  the release of gpuflock and the version of the protocol it speaks with "
               "gpuflockd\n");
        return 0;
    }
    if (optind < argc)
        return gf_cli_usage_error("version", "unexpected argument '%s'", argv[optind]);
    printf("gpuflock %s (protocol %d)\n", GF_VERSION, GF_PROTOCOL_VERSION);
    return 0;
}
