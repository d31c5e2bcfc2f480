/* cmd_queue.c — `gpuflock queue [--all] [--json] [SELECTION]`: the jobs,
 * like squeue; the selection (--user, --state, --name, --since, --card,
 * cli/jobsel.h) is applied by the broker. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/histfmt.h"
#include "cli/jobfmt.h"
#include "cli/jobsel.h"
#include "common/error.h"
#include "common/util.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_queue(int argc, char **argv, gf_cli_ctx *cli);

static const char usage[] =
    "usage: gpuflock queue [--all] [--json] [--user U[,U]] [--state S[,S]] [--name NAME]\n"
    "                      [--since DATE] [--card N[,N]] [--config FILE]\n"
    "  pending and running jobs (--all: the 10,000 most recent ended ones too)\n"
    "  --user      submitted by these users (names or uids)\n"
    "  --state     in these states: pending, running, done, failed, cancelled (an ended\n"
    "              state implies --all)\n"
    "  --name      with exactly this name\n"
    "  --since     not ended, or ended at or after DATE (2026-11-30, 2026-11-30T08:15,\n"
    "              @SECONDS, now-3d, now-12h)\n"
    "  --card      run or ran on these cards\n";

static void print_table(const gf_msg *rep)
{
    printf("%8s %-16s %-10s %-9s %-5s %5s %s\n", "ID", "NAME", "USER", "STATE", "CARD", "PRIO",
           "TIME/REASON");
    int64_t now = gf_wall_ms();
    for (size_t i = 0; i < rep->n_jobs; i++) {
        const gf_job *j = &rep->jobs[i];
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
        /* a name, a user's command or a reason quoting one: no control byte
         * reaches the terminal */
        char safe_name[17], safe_what[512];
        gf_hist_text(name, safe_name, sizeof safe_name);
        gf_hist_text(what, safe_what, sizeof safe_what);
        printf("%8llu %-16.16s %-10.10s %-9s %-5s %5d %s\n", (unsigned long long)j->id,
               safe_name, j->user ? j->user : "?", gf_job_state_name(j->state), cards,
               j->spec.priority, safe_what);
    }
}

int gf_cmd_queue(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool all = false, json = false;
    enum { O_JSON = 256, O_CONFIG };
    struct option opts[10] = {
        { "all", no_argument, NULL, 'a' },
        { "json", no_argument, NULL, O_JSON },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
    };
    gf_jobsel_options(GF_SEL_ALL, opts + 4);
    gf_jobsel sel = { NULL, 0 };
    int64_t now = gf_wall_ms();
    int c, rc = 0;
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":ah", opts, NULL)) != -1) {
        switch (c) {
        case 'a': all = true; break;
        case O_JSON: json = true; break;
        case O_CONFIG: config = optarg; break;
        case 'h':
            fputs(usage, stdout);
            gf_jobsel_clear(&sel);
            return 0;
        case GF_SEL_OPT_USER: case GF_SEL_OPT_STATE: case GF_SEL_OPT_NAME:
        case GF_SEL_OPT_SINCE: case GF_SEL_OPT_CARD:
            rc = gf_jobsel_take_opt(&sel, "queue", c, optarg, now);
            break;
        default:
            rc = gf_cli_opt_error("queue", c, argc, argv, opts);
        }
    }
    if (!rc && optind != argc)
        rc = gf_cli_usage_error("queue", "unexpected argument '%s'", argv[optind]);
    if (rc) {
        gf_jobsel_clear(&sel);
        return rc;
    }
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_QUEUE;
    req.all = all;
    req.filter = gf_jobsel_take(&sel);
    /* --state done (failed, cancelled) asks for ended jobs: --all goes without saying */
    for (size_t i = 0; req.filter && i < req.filter->n_states; i++)
        req.all |= strcmp(req.filter->states[i], "pending") != 0 &&
                   strcmp(req.filter->states[i], "running") != 0;
    rc = gf_client_once(config, cli, &req, &rep, 30000);
    gf_msg_clear(&req);
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
        print_table(&rep);
    }
    gf_msg_clear(&rep);
    return rc;
}
