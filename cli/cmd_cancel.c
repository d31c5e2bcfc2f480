/* cmd_cancel.c — `gpuflock cancel [--checkpoint] ID...`: pending jobs leave
 * the queue, running ones get SIGTERM on their whole process group (SIGKILL
 * after kill_grace_s); with --checkpoint a running yieldable job saves its
 * progress and waits, held, instead. Only your own jobs, unless you are
 * root. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/error.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_cancel(int argc, char **argv, gf_cli_ctx *cli);

static const char *words(gf_op op, int code)
{
    (void)op;
    return code == GF_ESTATE ? "already ended" : gf_strerror(code);
}

int gf_cmd_cancel(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool checkpoint = false;
    const gf_cli_flag flags[] = { { "checkpoint", 0, &checkpoint }, { NULL, 0, NULL } };
    int prc = gf_cli_flags(argc, argv,
                           "usage: gpuflock cancel [--checkpoint] [--config FILE] ID...\n"
                           "  --checkpoint  a running diarize or --yieldable job saves its "
                           "progress and\n                waits, held (gpuflock release: it "
                           "resumes); others are cancelled\n", flags, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    gf_msg req;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_CANCEL;
    req.checkpoint = checkpoint;
    if (optind == argc)
        return gf_cli_usage_error("cancel", "no job id given (usage: gpuflock cancel "
                                  "[--checkpoint] ID...)");
    if (gf_parse_ids("cancel", argc - optind, argv + optind, &req.ids, &req.n_ids))
        return GF_EXIT_USAGE;
    int rc = gf_client_ids_verb(config, cli, &req, "cancel", words);
    gf_msg_clear(&req);
    return rc;
}
