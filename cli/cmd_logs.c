/* cmd_logs.c — `gpuflock logs ID [-f] [--stderr]`: a job's captured output
 * (through the broker, which checks that it is yours). */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/error.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gf_cmd_logs(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_logs(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool follow = false, err = false;
    const gf_cli_flag flags[] = { { "follow", 'f', &follow }, { "stderr", 'e', &err },
                                  { NULL, 0, NULL } };
    int prc = gf_cli_flags(argc, argv,
                           "usage: gpuflock logs [-f|--follow] [-e|--stderr] [--config FILE] ID\n"
                           "  the job's stdout (--stderr: its stderr); -f: until the job ends\n",
                           flags, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    uint64_t *ids;
    size_t n;
    if (argc - optind != 1)
        return gf_cli_usage_error("logs", "one job id, please (usage: gpuflock logs [-f] "
                                  "[--stderr] ID)");
    if (gf_parse_ids("logs", 1, argv + optind, &ids, &n))
        return GF_EXIT_USAGE;
    if (n != 1) {
        free(ids);
        return gf_cli_usage_error("logs", "one job id, please (usage: gpuflock logs [-f] "
                                  "[--stderr] ID)");
    }
    int rc;
    gf_client *cl = gf_client_open(config, cli, &rc);
    if (!cl) {
        free(ids);
        return rc;
    }
    gf_msg req;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_LOGS;
    req.id = ids[0];
    req.stream = err ? GF_STREAM_ERR : GF_STREAM_OUT;
    free(ids);
    rc = 0;
    for (;;) {
        gf_msg rep;
        if (gf_client_call(cl, &req, &rep, 30000) != 0) {
            rc = GF_EXIT_UNAVAIL;
            break;
        }
        if (rep.op != GF_OP_LOG) {
            rc = gf_client_report("logs", &rep);
            gf_msg_clear(&rep);
            break;
        }
        if (rep.data_len && fwrite(rep.data, 1, rep.data_len, stdout) != rep.data_len) {
            gf_msg_clear(&rep);
            rc = GF_EXIT_SOFTWARE;
            break;
        }
        fflush(stdout);
        req.offset = rep.offset;
        bool more = rep.data_len > 0, eof = rep.eof;
        gf_msg_clear(&rep);
        if (eof || (!follow && !more))
            break;
        if (!more)
            usleep(100000);
    }
    gf_client_destroy(&cl);
    return rc;
}
