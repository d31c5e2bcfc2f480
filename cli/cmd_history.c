/* cmd_history.c — `gpuflock history [--csv] [SELECTION]`: the accounting of
 * jobs, like sacct: id, name, user, state, exit status, cards, submitted,
 * started, ended, elapsed, CPU time, peak RSS; pending and running jobs and
 * the 10,000 most recent ended ones the selection takes (the same as
 * `queue --all`, cli/jobsel.h), applied by the broker. --csv: one record per
 * job, RFC 4180 (cli/csv.h), for a spreadsheet or a script. */
#include "cli/client.h"
#include "cli/cliopts.h"
#include "cli/csv.h"
#include "cli/histfmt.h"
#include "cli/jobfmt.h"
#include "cli/jobsel.h"
#include "common/error.h"
#include "common/util.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_history(int argc, char **argv, gf_cli_ctx *cli);

static const char usage[] =
    "usage: gpuflock history [--csv] [--user U[,U]] [--state S[,S]] [--name NAME]\n"
    "                        [--since DATE] [--card N[,N]] [--config FILE]\n"
    "  the jobs' accounting: pending and running jobs, and the 10,000 most recent ended\n"
    "  ones the selection takes (--user, --state, --name, --since, --card as for queue)\n"
    "  --csv       RFC 4180 records: id,name,user,uid,state,exit,signal,cards,submitted,\n"
    "              started,ended,elapsed_s,cpu_s,maxrss_kb,reason\n";

/* The job's name as queue shows it: its --name, else its program. */
static const char *job_name(const gf_job *j)
{
    if (j->spec.name)
        return j->spec.name;
    if (!j->spec.argc)
        return "-";
    const char *base = strrchr(j->spec.argv[0], '/');
    return base && base[1] ? base + 1 : j->spec.argv[0];
}

static void print_table(const gf_msg *rep, int64_t now)
{
    printf("%8s %-16s %-10s %-9s %5s %-5s %-19s %-19s %-19s %11s %11s %7s\n", "ID", "NAME",
           "USER", "STATE", "EXIT", "CARD", "SUBMITTED", "STARTED", "ENDED", "ELAPSED", "CPU",
           "MAXRSS");
    for (size_t i = 0; i < rep->n_jobs; i++) {
        const gf_job *j = &rep->jobs[i];
        char name[17], user[11], ex[24], cards[64], sub[32], start[32], end[32], el[32], cpu[32],
            rss[32];
        gf_hist_text(job_name(j), name, sizeof name);
        gf_hist_text(j->user ? j->user : "?", user, sizeof user);
        gf_hist_exit(j, ex, sizeof ex);
        gf_fmt_cards(j, cards, sizeof cards);
        gf_hist_time(j->submitted_ms, sub, sizeof sub);
        gf_hist_time(j->started_ms, start, sizeof start);
        gf_hist_time(j->ended_ms, end, sizeof end);
        gf_hist_elapsed(gf_hist_elapsed_ms(j, now), el, sizeof el);
        gf_hist_elapsed(j->started_ms ? j->cpu_user_ms + j->cpu_sys_ms : -1, cpu, sizeof cpu);
        gf_hist_rss(j->maxrss_kb, rss, sizeof rss);
        printf("%8llu %-16s %-10s %-9s %5s %-5s %-19s %-19s %-19s %11s %11s %7s\n",
               (unsigned long long)j->id, name, user, gf_job_state_name(j->state), ex, cards,
               sub, start, end, el, cpu, rss);
    }
}

static void put_num(FILE *out, long long v, bool have)
{
    char b[32] = "";
    if (have)
        snprintf(b, sizeof b, "%lld", v);
    gf_csv_put(out, b, false);
}

static void put_seconds(FILE *out, int64_t ms)
{
    char b[32] = "";
    if (ms >= 0)
        snprintf(b, sizeof b, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
    gf_csv_put(out, b, false);
}

static void print_csv(const gf_msg *rep, int64_t now)
{
    FILE *o = stdout;
    static const char *const head[] = { "id", "name", "user", "uid", "state", "exit", "signal",
                                        "cards", "submitted", "started", "ended", "elapsed_s",
                                        "cpu_s", "maxrss_kb", "reason" };
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++)
        gf_csv_put(o, head[i], i == 0);
    gf_csv_end(o);
    for (size_t i = 0; i < rep->n_jobs; i++) {
        const gf_job *j = &rep->jobs[i];
        char b[64], cards[GF_PROTO_MAX_CARDS * 6] = "";
        snprintf(b, sizeof b, "%llu", (unsigned long long)j->id);
        gf_csv_put(o, b, true);
        gf_csv_put(o, j->spec.name, false);      /* the name as given: empty for none */
        gf_csv_put(o, j->user, false);
        put_num(o, j->uid, true);
        gf_csv_put(o, gf_job_state_name(j->state), false);
        put_num(o, j->exit_status, j->exit_status >= 0);
        put_num(o, j->term_signal, j->started_ms > 0 || j->term_signal > 0);
        size_t l = 0;
        for (size_t c = 0; c < j->n_cards && j->state != GF_STATE_PENDING && l < sizeof cards;
             c++)
            l += (size_t)snprintf(cards + l, sizeof cards - l, "%s%d", c ? "," : "", j->cards[c]);
        gf_csv_put(o, cards, false);
        gf_hist_iso(j->submitted_ms, b, sizeof b);
        gf_csv_put(o, b, false);
        gf_hist_iso(j->started_ms, b, sizeof b);
        gf_csv_put(o, b, false);
        gf_hist_iso(j->ended_ms, b, sizeof b);
        gf_csv_put(o, b, false);
        put_seconds(o, gf_hist_elapsed_ms(j, now));
        put_seconds(o, j->started_ms ? j->cpu_user_ms + j->cpu_sys_ms : -1);
        put_num(o, j->maxrss_kb, j->maxrss_kb > 0);
        gf_csv_put(o, j->reason, false);
        gf_csv_end(o);
    }
}

int gf_cmd_history(int argc, char **argv, gf_cli_ctx *cli)
{
    const char *config = NULL;
    bool csv = false;
    enum { O_CSV = 256, O_CONFIG };
    struct option opts[9] = {
        { "csv", no_argument, NULL, O_CSV },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, 'h' },
    };
    gf_jobsel_options(GF_SEL_ALL, opts + 3);
    gf_jobsel sel = { NULL, 0 };
    int64_t now = gf_wall_ms();
    int c, rc = 0;
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_CSV: csv = true; break;
        case O_CONFIG: config = optarg; break;
        case 'h':
            fputs(usage, stdout);
            gf_jobsel_clear(&sel);
            return 0;
        case GF_SEL_OPT_USER: case GF_SEL_OPT_STATE: case GF_SEL_OPT_NAME:
        case GF_SEL_OPT_SINCE: case GF_SEL_OPT_CARD:
            rc = gf_jobsel_take_opt(&sel, "history", c, optarg, now);
            break;
        default:
            rc = gf_cli_opt_error("history", c, argc, argv, opts);
        }
    }
    if (!rc && optind != argc)
        rc = gf_cli_usage_error("history", "unexpected argument '%s'", argv[optind]);
    if (rc) {
        gf_jobsel_clear(&sel);
        return rc;
    }
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_QUEUE;
    req.all = true;
    req.filter = gf_jobsel_take(&sel);
    rc = gf_client_once(config, cli, &req, &rep, 60000);
    gf_msg_clear(&req);
    if (rc)
        return rc;
    if (rep.op != GF_OP_JOBS)
        rc = gf_client_report("history", &rep);
    else if (csv)
        print_csv(&rep, gf_wall_ms());
    else
        print_table(&rep, gf_wall_ms());
    gf_msg_clear(&rep);
    return rc;
}
