/* cmd_version.c — `gpuflock version`. */
#include "common/version.h"

#include <stdio.h>

int gf_cmd_version(int argc, char **argv);

int gf_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("gpuflock %s (protocol %d)\n", GF_VERSION, GF_PROTOCOL_VERSION);
    return 0;
}
