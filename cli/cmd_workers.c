/* cmd_workers.c — `gpuflock workers [--json]`: each card, its worker's
 * state and identity, the jobs on it, and how it supervises them (a line
 * of its own under the card's: a cgroup per job, or the process group
 * that a process calling setsid escapes). */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/jobfmt.h"
#include "common/card.h"
#include "common/error.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_workers(int argc, char **argv, gf_cli_ctx *cli);

int gf_cmd_workers(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool json = false;
    const gf_cli_flag flags[] = { { "json", 0, &json }, { NULL, 0, NULL } };
    int prc = gf_cli_flags(argc, argv, "usage: gpuflock workers [--json] [--config FILE]\n",
                           flags, &config);
    if (prc)
        return prc < 0 ? 0 : prc;
    if (optind != argc)
        return gf_cli_usage_error("workers", "unexpected argument '%s'", argv[optind]);
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_WORKERS;
    int rc = gf_client_once(config, cli, &req, &rep, 30000);
    if (rc)
        return rc;
    if (rep.op != GF_OP_WORKERS_LIST) {
        rc = gf_client_report("workers", &rep);
    } else if (json) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; i < rep.n_workers; i++)
            json_object_array_add(a, gf_worker_json(&rep.workers[i]));
        printf("%s\n", json_object_to_json_string_ext(a, JSON_C_TO_STRING_PRETTY));
        json_object_put(a);
    } else {
        printf("%4s %-18s %7s %-10s %-22s %s\n", "CARD", "STATE", "PID", "JOBS", "PLAN", "IDENTITY");
        for (size_t i = 0; i < rep.n_workers; i++) {
            const gf_worker_info *w = &rep.workers[i];
            char jobs[64] = "-";
            size_t l = 0;
            for (size_t k = 0; k < w->n_jobs && l < sizeof(jobs) - 1; k++)
                l += (size_t)snprintf(jobs + l, sizeof(jobs) - l, "%s%llu", k ? "," : "",
                                      (unsigned long long)w->jobs[k]);
            char *id = gf_card_format(&w->card);
            char plan[64] = "-";
            json_object *p = w->plan ? json_tokener_parse(w->plan) : NULL;
            json_object *own, *lib;
            if (p && json_object_object_get_ex(p, "own", &own) &&
                json_object_object_get_ex(p, "library", &lib))
                snprintf(plan, sizeof(plan), "%d own, %d library", json_object_get_int(own),
                         json_object_get_int(lib));
            json_object_put(p);
            printf("%4d %-18s %7d %-10s %-22s %s\n", w->device, w->state ? w->state : "?", w->pid,
                   jobs, plan, id);
            if (w->drain)
                printf("%4s %s by the operator%s%s (gpuflock resume %d)\n", "", w->drain,
                       w->drain_reason && *w->drain_reason ? ": " : "",
                       w->drain_reason ? w->drain_reason : "", w->device);
            if (w->supervision)
                printf("%4s supervision: %s\n", "", w->supervision);
            free(id);
        }
    }
    gf_msg_clear(&rep);
    return rc;
}
