/* cmd_locks.c — `gpuflock locks [--json]`: who holds which card.
 *
 * One row per configured card (index, kind, name, lock file) with each
 * holder of its lock from /proc/locks (pid, mode, command, gpuflock job or
 * someone else's flock) and each exclusive waiter announced at its fairness
 * gate (common/lock.h), then the bench lock. Reads only: never takes a lock.
 *
 * A broker job's locks are taken by the worker that runs it, so /proc/locks
 * names the worker. Where a broker answers, its workers (their pids and
 * jobs) and its queue (each job's cards, user and command) name the job as
 * well; where none does, the holders are shown as /proc/locks has them,
 * without a word about the broker. */
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/cliopts.h"
#include "common/card.h"
#include "common/config.h"
#include "common/error.h"
#include "common/lockinfo.h"
#include "common/log.h"
#include "common/util.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int gf_cmd_locks(int argc, char **argv, gf_cli_ctx *cli);

/* One lock file and what is known about it. */
typedef struct {
    const gf_device_conf *dev;   /* NULL for the bench lock */
    const char *lock;            /* the lock file */
    char name[160];              /* card name, or why it is unknown */
    char uuid[48];
    gf_lock_holder *holders;
    size_t n_holders;
    gf_lock_holder *waiters;     /* exclusive holders of "<lock>.gate": announced waiters */
    size_t n_waiters;
    const gf_job **jobs;         /* per holder: the broker job it holds the lock for, or NULL */
    int *worker_cards;           /* per holder with a job: the card of the worker holding it */
} lock_row;

/* What the broker says runs where; both replies empty when none answered. */
typedef struct {
    gf_msg workers;              /* WORKERS_LIST: each card's worker, its pid and its jobs */
    gf_msg jobs;                 /* JOBS: the pending and running jobs */
} broker_view;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: gpuflock locks [--json] [--config FILE]\n"
        "\n"
        "For each configured card: index, kind, name, lock file and each holder of the\n"
        "lock (pid, shared or exclusive, command, and whether it is a gpuflock job or\n"
        "someone else's flock), and each exclusive waiter announced at the card's\n"
        "fairness gate; then the bench lock of --proof jobs. A broker job's lock is\n"
        "held by its worker: where gpuflockd answers, the job is named (id, user,\n"
        "command).\n"
        "\n"
        "  --json          one JSON object instead of the table\n"
        "  --config FILE   configuration file\n"
        "\n"
        "Exit status: 0; 64 usage error; 69 /proc/locks unreadable; 78 configuration error.\n");
}

static int fill_row(lock_row *row, const gf_device_conf *dev, const char *lock)
{
    memset(row, 0, sizeof *row);
    row->dev = dev;
    row->lock = lock;
    if (dev) {
        gf_card_identity id;
        gf_log_level lv = gf_log_get_level();
        gf_log_init(NULL, GF_LOG_OFF);   /* an unnamed card is shown as such, not logged */
        int rc = gf_card_identify(dev, &id);
        gf_log_init(NULL, lv);
        snprintf(row->name, sizeof row->name, "%s",
                 rc ? "(unknown: CUDA driver or device missing)" : id.name);
        snprintf(row->uuid, sizeof row->uuid, "%s", rc ? "" : id.uuid);
    }
    int rc = gf_lock_holders(lock, &row->holders, &row->n_holders);
    if (rc || !dev)
        return rc;
    /* the gate's exclusive holders wait for the card; its shared ones are
     * takers passing it for a moment */
    char *gate = gf_strfmt("%s.gate", lock);
    gf_lock_holder *g = NULL;
    size_t ng = 0;
    rc = gf_lock_holders(gate, &g, &ng);
    for (size_t i = 0; i < ng; i++) {
        if (g[i].mode != GF_LOCK_EXCLUSIVE) {
            free(g[i].command);
            continue;
        }
        row->waiters = gf_realloc(row->waiters, (row->n_waiters + 1) * sizeof *row->waiters);
        row->waiters[row->n_waiters++] = g[i];
    }
    free(g);
    free(gate);
    return rc;
}

/* Ask the broker of this configuration, if one answers soon; quietly
 * nothing otherwise (no broker, one this program cannot reach, no answer). */
static void ask_broker(const char *config, broker_view *b)
{
    memset(b, 0, sizeof *b);
    gf_log_level lv = gf_log_get_level();
    gf_log_init(NULL, GF_LOG_OFF);   /* its absence is no error of locks */
    int status;
    gf_client *cl = gf_client_open(config, NULL, &status);
    gf_msg req;
    memset(&req, 0, sizeof req);
    req.op = GF_OP_WORKERS;
    if (cl && gf_client_call(cl, &req, &b->workers, 2000) == 0 &&
        b->workers.op == GF_OP_WORKERS_LIST) {
        req.op = GF_OP_QUEUE;
        if (gf_client_call(cl, &req, &b->jobs, 2000) != 0 || b->jobs.op != GF_OP_JOBS)
            gf_msg_clear(&b->jobs);
    }
    if (b->jobs.op != GF_OP_JOBS) {
        gf_msg_clear(&b->workers);
        gf_msg_clear(&b->jobs);
    }
    gf_client_destroy(&cl);
    gf_log_init(NULL, lv);
}

static const gf_job *find_job(const broker_view *b, uint64_t id)
{
    for (size_t i = 0; i < b->jobs.n_jobs; i++)
        if (b->jobs.jobs[i].id == id)
            return &b->jobs.jobs[i];
    return NULL;
}

/* Does running job j hold the lock of row (its card, or the bench lock)? */
static bool job_holds(const gf_job *j, const lock_row *row)
{
    if (j->state != GF_STATE_RUNNING)
        return false;
    if (!row->dev)
        return j->spec.proof;
    for (size_t i = 0; i < j->n_cards; i++)
        if (j->cards[i] == row->dev->index)
            return true;
    return false;
}

/* Name the job behind each holder of row that is a worker of the broker's:
 * a worker takes one lock per job, so its k-th holder in the row holds for
 * its k-th job there (two shared locks of one pid are alike). */
static void name_jobs(lock_row *row, const broker_view *b)
{
    row->jobs = gf_calloc(row->n_holders ? row->n_holders : 1, sizeof *row->jobs);
    row->worker_cards = gf_calloc(row->n_holders ? row->n_holders : 1, sizeof *row->worker_cards);
    for (size_t i = 0; i < row->n_holders; i++) {
        const gf_lock_holder *h = &row->holders[i];
        const gf_worker_info *w = NULL;
        for (size_t k = 0; h->alive && k < b->workers.n_workers; k++)
            if (b->workers.workers[k].pid == h->pid)
                w = &b->workers.workers[k];
        if (!w)
            continue;
        size_t nth = 0;
        for (size_t k = 0; k < i; k++)
            nth += row->holders[k].pid == h->pid;
        for (size_t k = 0; k < w->n_jobs && !row->jobs[i]; k++) {
            const gf_job *j = find_job(b, w->jobs[k]);
            if (j && job_holds(j, row) && nth-- == 0) {
                row->jobs[i] = j;
                row->worker_cards[i] = w->device;
            }
        }
    }
}

/* The job's command line, arguments joined by spaces (the caller frees). */
static char *job_command(const gf_job *j)
{
    char *cmd = gf_strdup("");
    for (size_t i = 0; i < j->spec.argc; i++) {
        char *next = gf_strfmt("%s%s%s", cmd, i ? " " : "", j->spec.argv[i]);
        free(cmd);
        cmd = next;
    }
    return cmd;
}

static const char *kind_name(const gf_device_conf *dev)
{
    return dev->kind == GF_DEVICE_CUDA ? "cuda" : "cpu";
}

static void print_holders(const lock_row *row, int indent)
{
    if (row->n_holders == 0)
        printf("free\n");
    for (size_t i = 0; i < row->n_holders; i++) {
        const gf_lock_holder *h = &row->holders[i];
        const gf_job *j = row->jobs ? row->jobs[i] : NULL;
        if (i)
            printf("%*s", indent, "");
        if (j) {
            char *cmd = job_command(j);
            printf("pid %d %s gpuflock: job %llu (user %s): %s (held by the worker of card %d)\n",
                   (int)h->pid, gf_lock_mode_name(h->mode), (unsigned long long)j->id,
                   j->user ? j->user : "?", cmd, row->worker_cards[i]);
            free(cmd);
        } else if (h->alive && h->slurm_job)
            printf("pid %d %s slurm: job %u step %s (%s)\n", (int)h->pid,
                   gf_lock_mode_name(h->mode), (unsigned)h->slurm_job, h->slurm_step, h->command);
        else if (h->alive)
            printf("pid %d %s %s: %s\n", (int)h->pid, gf_lock_mode_name(h->mode),
                   h->gpuflock ? "gpuflock" : "flock", h->command);
        else
            printf("pid %d %s (exited; held by a process that inherited its descriptor)\n",
                   (int)h->pid, gf_lock_mode_name(h->mode));
    }
    for (size_t i = 0; i < row->n_waiters; i++) {
        const gf_lock_holder *h = &row->waiters[i];
        printf("%*swaiting: pid %d exclusive %s: %s (announced at the gate)\n", indent, "",
               (int)h->pid, h->gpuflock ? "gpuflock" : "flock", h->alive ? h->command : "");
    }
}

static void print_table(const lock_row *rows, size_t n, const lock_row *bench)
{
    int name_w = 4, lock_w = 4;
    for (size_t i = 0; i < n; i++) {
        name_w = (int)strlen(rows[i].name) > name_w ? (int)strlen(rows[i].name) : name_w;
        lock_w = (int)strlen(rows[i].lock) > lock_w ? (int)strlen(rows[i].lock) : lock_w;
    }
    printf("%-4s  %-4s  %-*s  %-*s  %s\n", "CARD", "KIND", name_w, "NAME", lock_w, "LOCK",
           "HOLDERS");
    int indent = 4 + 2 + 4 + 2 + name_w + 2 + lock_w + 2;
    for (size_t i = 0; i < n; i++) {
        printf("%-4d  %-4s  %-*s  %-*s  ", rows[i].dev->index, kind_name(rows[i].dev), name_w,
               rows[i].name, lock_w, rows[i].lock);
        print_holders(&rows[i], indent);
    }
    if (n == 0)
        printf("(no cards configured)\n");
    printf("bench lock %s: ", bench->lock);
    print_holders(bench, (int)strlen("bench lock : ") + (int)strlen(bench->lock));
}

/* The holders (jobs: the broker job of each, NULL for waiters) as JSON. */
static json_object *holders_json(const gf_lock_holder *list, size_t n, const gf_job **jobs,
                                 const int *worker_cards)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        const gf_lock_holder *h = &list[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "pid", json_object_new_int(h->pid));
        json_object_object_add(o, "mode", json_object_new_string(gf_lock_mode_name(h->mode)));
        json_object_object_add(o, "command", json_object_new_string(h->command));
        json_object_object_add(o, "holder", json_object_new_string(
                                      h->slurm_job ? "slurm" : h->gpuflock ? "gpuflock" : "flock"));
        json_object *so = NULL;
        if (h->slurm_job) {
            so = json_object_new_object();
            json_object_object_add(so, "job", json_object_new_int64(h->slurm_job));
            json_object_object_add(so, "step", json_object_new_string(h->slurm_step));
        }
        json_object_object_add(o, "slurm", so);
        json_object_object_add(o, "alive", json_object_new_boolean(h->alive));
        const gf_job *j = jobs ? jobs[i] : NULL;
        json_object *jo = NULL;
        if (j) {
            char *cmd = job_command(j);
            jo = json_object_new_object();
            json_object_object_add(jo, "id", json_object_new_int64((int64_t)j->id));
            json_object_object_add(jo, "user", json_object_new_string(j->user ? j->user : ""));
            json_object_object_add(jo, "command", json_object_new_string(cmd));
            json_object_object_add(jo, "worker_card", json_object_new_int(worker_cards[i]));
            free(cmd);
        }
        json_object_object_add(o, "job", jo);
        json_object_array_add(arr, o);
    }
    return arr;
}

static void print_json(const lock_row *rows, size_t n, const lock_row *bench)
{
    json_object *root = json_object_new_object();
    json_object *cards = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "index", json_object_new_int(rows[i].dev->index));
        json_object_object_add(o, "kind", json_object_new_string(kind_name(rows[i].dev)));
        json_object_object_add(o, "name", json_object_new_string(rows[i].name));
        json_object_object_add(o, "uuid", json_object_new_string(rows[i].uuid));
        json_object_object_add(o, "lock", json_object_new_string(rows[i].lock));
        json_object_object_add(o, "holders", holders_json(rows[i].holders, rows[i].n_holders,
                                                          rows[i].jobs, rows[i].worker_cards));
        json_object_object_add(o, "waiters", holders_json(rows[i].waiters, rows[i].n_waiters,
                                                          NULL, NULL));
        json_object_array_add(cards, o);
    }
    json_object_object_add(root, "cards", cards);
    json_object *b = json_object_new_object();
    json_object_object_add(b, "lock", json_object_new_string(bench->lock));
    json_object_object_add(b, "holders", holders_json(bench->holders, bench->n_holders,
                                                      bench->jobs, bench->worker_cards));
    json_object_object_add(root, "bench_lock", b);
    printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
}

static int parse_args(int argc, char **argv, bool *json, const char **config)
{
    static const struct option longopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "config", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'j': *json = true; break;
        case 'c': *config = optarg; break;
        case 'h': usage(stdout); return -1;
        default:
            return gf_cli_opt_error("locks", c, argc, argv, longopts);
        }
    }
    if (optind < argc)
        return gf_cli_usage_error("locks", "unexpected argument '%s'", argv[optind]);
    return 0;
}

int gf_cmd_locks(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* its configuration has cards, which the broker client's does not */
    bool json = false;
    const char *config = NULL;
    int rc = parse_args(argc, argv, &json, &config);
    if (rc)
        return rc < 0 ? 0 : rc;
    gf_config *cfg = NULL;
    if (gf_config_load(config, &cfg) != 0)
        return GF_EXIT_CONFIG;
    lock_row *rows = gf_calloc(cfg->n_devices, sizeof *rows);
    lock_row bench;
    for (size_t i = 0; i < cfg->n_devices; i++)
        if ((rc = fill_row(&rows[i], &cfg->devices[i], cfg->devices[i].lock)) != 0)
            goto out_free_rows;
    if ((rc = fill_row(&bench, NULL, cfg->bench_lock)) != 0)
        goto out_free_rows;
    broker_view b;
    ask_broker(config, &b);
    for (size_t i = 0; i < cfg->n_devices; i++)
        name_jobs(&rows[i], &b);
    name_jobs(&bench, &b);
    if (json)
        print_json(rows, cfg->n_devices, &bench);
    else
        print_table(rows, cfg->n_devices, &bench);
    gf_lock_holders_free(&bench.holders, bench.n_holders);
    free(bench.jobs);
    free(bench.worker_cards);
    gf_msg_clear(&b.workers);
    gf_msg_clear(&b.jobs);
out_free_rows:   /* the rows filled (the others are zero) */
    for (size_t i = 0; i < cfg->n_devices; i++) {
        gf_lock_holders_free(&rows[i].holders, rows[i].n_holders);
        gf_lock_holders_free(&rows[i].waiters, rows[i].n_waiters);
        free(rows[i].jobs);
        free(rows[i].worker_cards);
    }
    free(rows);
    gf_config_destroy(&cfg);
    return rc ? GF_EXIT_UNAVAIL : 0;
}
