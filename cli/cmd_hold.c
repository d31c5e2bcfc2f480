/* cmd_hold.c — the operator's verbs on jobs: `gpuflock hold ID...`
 * (a pending job stays pending until released), `gpuflock release ID...`
 * and `gpuflock requeue ID...` (a running job checkpoints, or is stopped
 * where it cannot, and goes back to the queue in its place). Only a job's
 * owner or root. One request per command, one result code per id. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/error.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_hold(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_release(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_requeue(int argc, char **argv, gf_cli_ctx *cli);

/* What a code means for this verb's job. */
static const char *why(gf_op op, int code)
{
    switch (code) {
    case GF_ESTATE:
        return op == GF_OP_HOLD      ? "not pending (only a pending job can be held)"
               : op == GF_OP_RELEASE ? "not held"
                                     : "not running (only a running job can be requeued)";
    default:        return gf_strerror(code);
    }
}

static int verb(int argc, char **argv, gf_cli_ctx *cli, gf_op op, const char *name)
{
    char usage[128];
    snprintf(usage, sizeof usage, "usage: gpuflock %s [--config FILE] ID...\n", name);
    const char *config = NULL;
    int prc = gf_cli_flags(argc, argv, usage, NULL, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    gf_msg req;
    memset(&req, 0, sizeof(req));
    req.op = op;
    if (optind == argc)
        return gf_cli_usage_error(name, "no job id given (usage: gpuflock %s ID...)", name);
    if (gf_parse_ids(name, argc - optind, argv + optind, &req.ids, &req.n_ids))
        return GF_EXIT_USAGE;
    int rc = gf_client_ids_verb(config, cli, &req, name, why);
    gf_msg_clear(&req);
    return rc;
}

int gf_cmd_hold(int argc, char **argv, gf_cli_ctx *cli)
{
    return verb(argc, argv, cli, GF_OP_HOLD, "hold");
}

int gf_cmd_release(int argc, char **argv, gf_cli_ctx *cli)
{
    return verb(argc, argv, cli, GF_OP_RELEASE, "release");
}

int gf_cmd_requeue(int argc, char **argv, gf_cli_ctx *cli)
{
    return verb(argc, argv, cli, GF_OP_REQUEUE, "requeue");
}
