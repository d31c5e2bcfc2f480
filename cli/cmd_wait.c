/* cmd_wait.c — `gpuflock wait ID...`: until every job has ended; the exit
 * status of the first that did not succeed (in the order given), else 0. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/error.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_wait(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_wait(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    long long timeout = 0;
    enum { O_TIMEOUT = 256, O_CONFIG };
    static const struct option opts[] = {
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 1;
    opterr = 0;
    char *end;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_TIMEOUT:
            timeout = strtoll(optarg, &end, 10);
            if (*end || end == optarg || timeout <= 0 || timeout > 100LL * 365 * 86400)
                return gf_cli_usage_error("wait", "--timeout '%s': not a positive number of "
                                          "seconds", optarg);
            break;
        case O_CONFIG: config = optarg; break;
        case 'h':
            printf("usage: gpuflock wait [--timeout SEC] [--config FILE] ID...\n"
                   "  exit status: that of the first job that did not succeed, else 0;\n"
                   "  75 when --timeout ran out first\n");
            return 0;
        default: return gf_cli_opt_error("wait", c, argc, argv, opts);
        }
    }
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_WAIT;
    if (optind == argc)
        return gf_cli_usage_error("wait", "no job id given (usage: gpuflock wait [--timeout SEC] "
                                  "ID...)");
    if (gf_parse_ids("wait", argc - optind, argv + optind, &req.ids, &req.n_ids))
        return GF_EXIT_USAGE;
    req.timeout_ms = timeout * 1000;
    int rc;
    gf_client *cl = gf_client_open(config, cli, &rc);
    if (!cl) {
        gf_msg_clear(&req);
        return rc;
    }
    if (gf_client_call(cl, &req, &rep, -1) != 0) {
        rc = GF_EXIT_UNAVAIL;
    } else if (rep.op != GF_OP_JOBS) {
        rc = gf_client_report("wait", &rep);
    } else {
        rc = 0;
        for (size_t k = 0; k < req.n_ids && rc == 0; k++)
            for (size_t i = 0; i < rep.n_jobs; i++) {
                const gf_job *j = &rep.jobs[i];
                if (j->id != req.ids[k])
                    continue;
                if (j->state == GF_STATE_PENDING || j->state == GF_STATE_RUNNING)
                    rc = GF_EXIT_TEMPFAIL;
                else
                    rc = gf_job_exit_status(j);
                if (rc)
                    fprintf(stderr, "gpuflock wait: job %llu %s%s%s\n", (unsigned long long)j->id,
                            gf_job_state_name(j->state), j->reason ? ": " : "",
                            j->reason ? j->reason : "");
            }
    }
    gf_msg_clear(&rep);
    gf_msg_clear(&req);
    gf_client_destroy(&cl);
    return rc;
}
