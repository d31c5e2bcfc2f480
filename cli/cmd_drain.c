/* cmd_drain.c — `gpuflock drain CARD [--reason TEXT]` (no new job starts on
 * the card; running yieldable jobs yield, the others finish; `workers`
 * shows draining, then drained) and `gpuflock resume CARD` (in service
 * again). Root only; kept across broker restarts. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/error.h"
#include "common/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_drain(int argc, char **argv, gf_cli_ctx *cli);
int gf_cmd_resume(int argc, char **argv, gf_cli_ctx *cli);

static int card_verb(int argc, char **argv, gf_cli_ctx *cli, gf_op op, const char *name)
{
    const char *synopsis = op == GF_OP_DRAIN
                               ? "gpuflock drain CARD [--reason TEXT] [--config FILE]"
                               : "gpuflock resume CARD [--config FILE]";
    enum { O_REASON = 256, O_CONFIG };
    static const struct option drain_opts[] = {
        { "reason", required_argument, NULL, O_REASON },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    /* resume: the same but --reason */
    const struct option *longopts = op == GF_OP_DRAIN ? drain_opts : drain_opts + 1;
    const char *config = NULL, *reason = NULL;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case O_REASON: reason = optarg; break;
        case O_CONFIG: config = optarg; break;
        case 'h': printf("usage: %s\n", synopsis); return 0;
        default: return gf_cli_opt_error(name, c, argc, argv, longopts);
        }
    }
    if (optind + 1 != argc)
        return gf_cli_usage_error(name, "one card, please (usage: %s)", synopsis);
    char *end = NULL;
    long card = strtol(argv[optind], &end, 10);
    if (*end || end == argv[optind] || card < 0 || card > 1023)
        return gf_cli_usage_error(name, "'%s' is not a card number", argv[optind]);
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = op;
    req.device = (int32_t)card;
    req.message = reason ? gf_strdup(reason) : NULL;
    int rc;
    gf_client *cl = gf_client_open(config, cli, &rc);
    if (!cl) {
        gf_msg_clear(&req);
        return rc;
    }
    if (gf_client_call(cl, &req, &rep, 30000) != 0) {
        rc = GF_EXIT_UNAVAIL;
    } else if (rep.op == GF_OP_CODES && rep.n_codes == 1 && rep.codes[0] == 0) {
        rc = 0;
        if (rep.message)
            printf("%s\n", rep.message);
    } else {
        rc = gf_client_report(name, &rep);
    }
    gf_msg_clear(&rep);
    gf_msg_clear(&req);
    gf_client_destroy(&cl);
    return rc;
}

int gf_cmd_drain(int argc, char **argv, gf_cli_ctx *cli)
{
    return card_verb(argc, argv, cli, GF_OP_DRAIN, "drain");
}

int gf_cmd_resume(int argc, char **argv, gf_cli_ctx *cli)
{
    return card_verb(argc, argv, cli, GF_OP_RESUME, "resume");
}
