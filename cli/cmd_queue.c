/* cmd_queue.c — `gpuflock queue [--all] [--json]`: the jobs, like squeue. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/jobfmt.h"
#include "common/error.h"
#include "common/util.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_queue(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_queue(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool all = false, json = false;
    const gf_cli_flag flags[] = { { "all", 'a', &all }, { "json", 0, &json }, { NULL, 0, NULL } };
    int prc = gf_cli_flags(argc, argv,
                           "usage: gpuflock queue [--all] [--json] [--config FILE]\n"
                           "  pending and running jobs (--all: the 10,000 most recent ended ones too)\n",
                           flags, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    if (optind != argc)
        return gf_cli_usage_error("queue", "unexpected argument '%s'", argv[optind]);
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_QUEUE;
    req.all = all;
    int rc = gf_client_once(config, cli, &req, &rep, 30000);
    if (rc)
        return rc;
    if (rep.op != GF_OP_JOBS) {
        rc = gf_client_report("queue", &rep);
    } else if (json) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < rep.n_jobs; i++)
            json_object_array_add(a, gf_job_json(&rep.jobs[i]));
        printf("%s\n", json_object_to_json_string_ext(a, JSON_C_TO_STRING_PRETTY));
        json_object_put(a);
    } else {
        printf("%8s %-16s %-10s %-9s %-5s %5s %s\n", "ID", "NAME", "USER", "STATE", "CARD",
               "PRIO", "TIME/REASON");
        int64_t now = gf_wall_ms();
        for (size_t i = 0; i < rep.n_jobs; i++) {
            const gf_job *j = &rep.jobs[i];
            char cards[64], what[512];
            gf_fmt_cards(j, cards, sizeof(cards));
            if (j->state == GF_STATE_RUNNING && j->started_ms) {
                gf_fmt_duration(now - j->started_ms, what, sizeof(what));
                int pct = gf_job_progress_percent(j);
                if (pct >= 0) {     /* diarize: windows done */
                    size_t l = strlen(what);
                    snprintf(what + l, sizeof(what) - l, " %d%%", pct);
                }
            } else if (j->state == GF_STATE_DONE || j->state == GF_STATE_FAILED) {
                char d[32];
                gf_fmt_duration(j->ended_ms - j->started_ms, d, sizeof(d));
                snprintf(what, sizeof(what), "%s%s%s", j->started_ms ? d : "",
                         j->reason && j->started_ms ? " " : "", j->reason ? j->reason : "");
            } else {
                snprintf(what, sizeof(what), "%s", j->reason ? j->reason : "");
            }
            const char *name = j->spec.name ? j->spec.name : j->spec.argc ? j->spec.argv[0] : "-";
            const char *base = strrchr(name, '/');
            if (!j->spec.name && base && base[1])
                name = base + 1;
            printf("%8llu %-16.16s %-10.10s %-9s %-5s %5d %s\n", (unsigned long long)j->id, name,
                   j->user ? j->user : "?", gf_job_state_name(j->state), cards, j->spec.priority,
                   what);
        }
    }
    gf_msg_clear(&rep);
    return rc;
}
