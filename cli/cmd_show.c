/* cmd_show.c — `gpuflock show ID [--json]`: everything about one job. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/jobfmt.h"
#include "common/error.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_show(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_show(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool json = false;
    const gf_cli_flag flags[] = { { "json", 0, &json }, { NULL, 0, NULL } };
    int prc = gf_cli_flags(argc, argv, "usage: gpuflock show ID [--json] [--config FILE]\n",
                           flags, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    uint64_t *ids;
    size_t n;
    if (argc - optind != 1)
        return gf_cli_usage_error("show", "one job id, please (usage: gpuflock show ID [--json])");
    if (gf_parse_ids("show", 1, argv + optind, &ids, &n))
        return GF_EXIT_USAGE;
    if (n != 1) {
        free(ids);
        return gf_cli_usage_error("show", "one job id, please (usage: gpuflock show ID [--json])");
    }
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_SHOW;
    req.id = ids[0];
    free(ids);
    int rc = gf_client_once(config, cli, &req, &rep, 30000);
    if (rc)
        return rc;
    if (rep.op != GF_OP_JOBS || rep.n_jobs != 1) {
        rc = gf_client_report("show", &rep);
    } else if (json) {
        json_object *o = gf_job_json(&rep.jobs[0]);
        printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
        json_object_put(o);
    } else {
        gf_job_print(stdout, &rep.jobs[0]);
    }
    gf_msg_clear(&rep);
    return rc;
}
