/* cmd_cancel.c — `gpuflock cancel [--checkpoint] ID...` and
 * `gpuflock cancel [--checkpoint] --user U --name NAME --state S`: pending
 * jobs leave the queue, running ones get SIGTERM on their whole process
 * group (SIGKILL after kill_grace_s); with --checkpoint a running
 * yieldable job saves its progress and waits, held, instead. By ids, or by
 * a selection as scancel takes one (cli/jobsel.h), which the broker applies
 * to the live jobs and answers with the jobs it cancelled; the command
 * says how many. Only your own jobs, unless you are root (a selection of
 * root's takes every user's jobs unless --user narrows it). */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/jobsel.h"
#include "common/error.h"
#include "common/util.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_cancel(int argc, char **argv, gf_cli_ctx *cli);

static const char usage[] =
    "usage: gpuflock cancel [--checkpoint] [--config FILE] ID...\n"
    "       gpuflock cancel [--checkpoint] [--user U[,U]] [--name NAME] [--state S[,S]]\n"
    "  --checkpoint  a running diarize or --yieldable job saves its progress and\n"
    "                waits, held (gpuflock release: it resumes); others are cancelled\n"
    "  --user, --name, --state\n"
    "                every pending or running job of yours (root: anyone's) that they\n"
    "                select: by user (names or uids), exact name, state (pending, running)\n";

static const char *words(gf_op op, int code)
{
    (void)op;
    return code == GF_ESTATE ? "already ended" : gf_strerror(code);
}

/* The broker's answer to a cancel by selection: how many, and any it could
 * not cancel. */
static int cancelled(gf_msg *rep)
{
    if (rep->op != GF_OP_CODES || rep->n_codes != rep->n_ids)
        return gf_client_report("cancel", rep);
    size_t ok = 0;
    int rc = 0;
    for (size_t i = 0; i < rep->n_codes; i++) {
        if (rep->codes[i] == 0) {
            ok++;
            continue;
        }
        fprintf(stderr, "gpuflock cancel: job %llu: %s\n", (unsigned long long)rep->ids[i],
                words(GF_OP_CANCEL, rep->codes[i]));
        rc = 1;
    }
    printf("cancelled %zu job%s\n", ok, ok == 1 ? "" : "s");
    return rc;
}

int gf_cmd_cancel(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool checkpoint = false;
    enum { O_CHECKPOINT = 256, O_CONFIG };
    struct option opts[8] = {
        { "checkpoint", no_argument, NULL, O_CHECKPOINT },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
    };
    gf_jobsel_options(GF_SEL_USER | GF_SEL_STATE | GF_SEL_NAME, opts + 3);
    gf_jobsel sel = { NULL, 0 };
    int c, rc = 0;
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_CHECKPOINT: checkpoint = true; break;
        case O_CONFIG: config = optarg; break;
        case 'h':
            fputs(usage, stdout);
            gf_jobsel_clear(&sel);
            return 0;
        case GF_SEL_OPT_USER: case GF_SEL_OPT_STATE: case GF_SEL_OPT_NAME:
            rc = gf_jobsel_take_opt(&sel, "cancel", c, optarg, 0);
            break;
        default:
            rc = gf_cli_opt_error("cancel", c, argc, argv, opts);
        }
    }
    /* only live jobs can be cancelled: a selection of ended states is a mistake */
    for (size_t i = 0; !rc && sel.filter && i < sel.filter->n_states; i++)
        if (strcmp(sel.filter->states[i], "pending") != 0 &&
            strcmp(sel.filter->states[i], "running") != 0)
            rc = gf_cli_usage_error("cancel", "--state %s: only pending and running jobs can be "
                                    "cancelled", sel.filter->states[i]);
    if (!rc && sel.filter && optind != argc)
        rc = gf_cli_usage_error("cancel", "job ids or --user/--name/--state, not both");
    if (!rc && !sel.filter && optind == argc)
        rc = gf_cli_usage_error("cancel", "no job id given (usage: gpuflock cancel "
                                "[--checkpoint] ID... | --user U | --name NAME | --state S)");
    if (rc) {
        gf_jobsel_clear(&sel);
        return rc;
    }
    gf_msg req;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_CANCEL;
    req.checkpoint = checkpoint;
    if (!sel.filter) {
        if (gf_parse_ids("cancel", argc - optind, argv + optind, &req.ids, &req.n_ids))
            return GF_EXIT_USAGE;
        rc = gf_client_ids_verb(config, cli, &req, "cancel", words);
        gf_msg_clear(&req);
        return rc;
    }
    req.filter = gf_jobsel_take(&sel);
    gf_msg rep;
    rc = gf_client_once(config, cli, &req, &rep, 30000);
    gf_msg_clear(&req);
    if (rc)
        return rc;
    rc = cancelled(&rep);
    gf_msg_clear(&rep);
    return rc;
}
