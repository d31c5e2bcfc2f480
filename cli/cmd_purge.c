/* cmd_purge.c — `gpuflock purge [--before DATE]`: remove ended jobs from the
 * job store, with their spool files, now rather than when history.keep_days
 * and history.keep_jobs would (all ended jobs, or those that ended before
 * DATE). Root only. The broker answers how many there are and removes them
 * a few at a time in the background (docs/operations.md, "History"); jobs
 * a pending or running job waits for stay. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/jobsel.h"
#include "common/error.h"
#include "common/util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_purge(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_purge(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    int64_t before = 0;
    enum { O_BEFORE = 256, O_CONFIG };
    static const struct option opts[] = {
        { "before", required_argument, NULL, O_BEFORE },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_BEFORE:
            if (gf_parse_date(optarg, gf_wall_ms(), &before) != 0 || before <= 0)
                return gf_cli_usage_error("purge", "--before '%s': not a date (2026-11-30, "
                                          "2026-11-30T08:15, @SECONDS, now-30d)", optarg);
            break;
        case O_CONFIG: config = optarg; break;
        case 'h':
            printf("usage: gpuflock purge [--before DATE] [--config FILE]\n"
                   "  remove ended jobs (all, or those that ended before DATE) and their spool\n"
                   "  files from the job store, a few at a time in the background (root only)\n");
            return 0;
        default: return gf_cli_opt_error("purge", c, argc, argv, opts);
        }
    }
    if (optind != argc)
        return gf_cli_usage_error("purge", "unexpected argument '%s'", argv[optind]);
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_PURGE;
    req.before_ms = before;
    int rc = gf_client_once(config, cli, &req, &rep, 30000);
    if (rc)
        return rc;
    if (rep.op == GF_OP_CODES && rep.n_codes == 1 && rep.codes[0] == 0) {
        if (rep.message)
            printf("%s\n", rep.message);
    } else {
        rc = gf_client_report("purge", &rep);
    }
    gf_msg_clear(&rep);
    return rc;
}
