/* cmd_wait.c — `gpuflock wait ID...`: until every job has ended; the exit
 * status of the first that did not succeed (in the order given), else 0. */
#include "cli/client.h"
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
    static const struct option opts[] = {
        { "timeout", required_argument, NULL, 't' },
        { "config", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    optind = 1;
    char *end;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            timeout = strtoll(optarg, &end, 10);
            if (*end || timeout <= 0) {
                fprintf(stderr, "gpuflock wait: --timeout: not a positive number of seconds\n");
                return GF_EXIT_USAGE;
            }
            break;
        case 'c': config = optarg; break;
        case 'h':
            printf("usage: gpuflock wait [--timeout SEC] [--config FILE] ID...\n"
                   "  exit status: that of the first job that did not succeed, else 0;\n"
                   "  75 when --timeout ran out first\n");
            return 0;
        default: return GF_EXIT_USAGE;
        }
    }
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_WAIT;
    if (optind == argc || gf_parse_ids("wait", argc - optind, argv + optind, &req.ids, &req.n_ids)) {
        fprintf(stderr, "usage: gpuflock wait [--timeout SEC] ID...\n");
        return GF_EXIT_USAGE;
    }
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
