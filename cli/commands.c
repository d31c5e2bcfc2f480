/* commands.c — the table of gpuflock subcommands (see cli.h).
 * One line per subcommand; keep it in the order `gpuflock help` shows. */
#include "cli/cli.h"

#include <string.h>

/* Subcommand entry points, defined in cli/cmd_<name>.c. */
int gf_cmd_version(int argc, char **argv);
int gf_cmd_der(int argc, char **argv);

const gf_cli_command gf_cli_commands[] = {
    { "version", gf_cmd_version, "print the version" },
    { "der", gf_cmd_der, "diarization error rate of a hypothesis RTTM against a reference" },
    { NULL, NULL, NULL },
};

const gf_cli_command *gf_cli_find(const char *name)
{
    for (const gf_cli_command *c = gf_cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
