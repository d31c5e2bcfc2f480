/* diarize_slurm.c — `gpuflock diarize --slurm` (see diarize_slurm.h).
 *
 * Slurm is driven through its commands (sbatch, squeue), as a user would:
 * nothing here links libslurm, so a build without Slurm's headers has the
 * path too and says plainly when sbatch is missing. Every value put on a
 * command line is checked to a plain character set or single-quoted; the
 * recordings themselves travel in files, one path a line (a path with a
 * newline is refused before anything is submitted). */
#include "cli/diarize_slurm.h"
#include "common/error.h"
#include "common/log.h"
#include "common/spawn.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define WHO "gpuflock diarize"
#define DEFAULT_TASKS_MAX 8
#define MAX_TASKS 10000
#define POLL_US 500000

/* ---- checks ------------------------------------------------------------- */

static bool only(const char *s, const char *set)
{
    return *s && strspn(s, set) == strlen(s);
}

int gf_diarize_slurm_check(const gf_diarize_slurm_opts *o)
{
    if (o->partition && (!only(o->partition, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789_.,-") || strlen(o->partition) > 200)) {
        fprintf(stderr, WHO ": --partition '%s': not a partition name (letters, digits, _ . - ,)\n",
                o->partition);
        return GF_EXIT_USAGE;
    }
    if (o->time && (!only(o->time, "0123456789:-") || strlen(o->time) > 32)) {
        fprintf(stderr, WHO ": --time '%s': not a Slurm time limit (MIN, MIN:SEC, H:M:S, "
                        "D-H, D-H:M, D-H:M:S)\n", o->time);
        return GF_EXIT_USAGE;
    }
    if (o->tasks < 0 || o->tasks > MAX_TASKS) {
        fprintf(stderr, WHO ": --tasks %d: from 1 to %d\n", o->tasks, MAX_TASKS);
        return GF_EXIT_USAGE;
    }
    if (!o->out_dir) {
        fprintf(stderr, WHO ": --slurm needs --out DIR (the tasks write there, and the run "
                        "folder goes there)\n");
        return GF_EXIT_USAGE;
    }
    if (strchr(o->out_dir, '%')) {
        fprintf(stderr, WHO ": --out '%s': a '%%' would be read by sbatch as a pattern\n",
                o->out_dir);
        return GF_EXIT_USAGE;
    }
    return 0;
}

/* ---- the run folder ----------------------------------------------------- */

/* 'text' single-quoted for sh; the caller frees. */
static char *shq(const char *text)
{
    size_t n = 3;
    for (const char *p = text; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *q = gf_malloc(n), *w = q;
    *w++ = '\'';
    for (const char *p = text; *p; p++) {
        if (*p == '\'') {
            memcpy(w, "'\\''", 4);
            w += 4;
        } else
            *w++ = *p;
    }
    *w++ = '\'';
    *w = '\0';
    return q;
}

static char *absolute(const char *path)
{
    if (path[0] == '/')
        return gf_strdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return gf_strdup(path);
    return gf_strfmt("%s/%s", cwd, path);
}

/* The folder part of a recording's name ("2024/a" -> "2024", "a" -> ""). */
static char *name_folder(const char *name)
{
    const char *slash = strrchr(name, '/');
    char *d = gf_strdup(name);
    d[slash ? (size_t)(slash - name) : 0] = '\0';
    return d;
}

static int write_text(const char *path, const char *text)
{
    if (gf_write_file(path, text, strlen(text), true) != 0) {
        fprintf(stderr, WHO ": %s: %s\n", path, gf_log_last_error());
        return GF_EIO;
    }
    return 0;
}

/* The task's share, one list per output folder: RUN/task-K.G.list (inputs)
 * and RUN/task-K.G.out (the folder they go to). */
static int write_lists(const char *run, const gf_diarize_slurm_opts *o,
                       const gf_diarout_plan *plan, int tasks)
{
    int rc = 0;
    for (int k = 0; k < tasks && !rc; k++) {
        char **folders = NULL;   /* this task's output folders, in first-seen order */
        char **lists = NULL;
        size_t nf = 0;
        for (size_t i = (size_t)k; i < plan->n; i += (size_t)tasks) {
            char *f = name_folder(plan->items[i].name);
            char *in = absolute(plan->items[i].input);
            size_t g = 0;
            while (g < nf && strcmp(folders[g], f) != 0)
                g++;
            if (g == nf) {
                folders = gf_realloc(folders, (nf + 1) * sizeof *folders);
                lists = gf_realloc(lists, (nf + 1) * sizeof *lists);
                folders[nf] = f;
                lists[nf] = gf_strdup("");
                nf++;
            } else
                free(f);
            char *next = gf_strfmt("%s%s\n", lists[g], in);
            free(lists[g]);
            lists[g] = next;
            free(in);
        }
        for (size_t g = 0; g < nf && !rc; g++) {
            char *lp = gf_strfmt("%s/task-%d.%zu.list", run, k, g);
            char *op = gf_strfmt("%s/task-%d.%zu.out", run, k, g);
            char *out = absolute(o->out_dir);
            char *dir = *folders[g] ? gf_strfmt("%s/%s\n", out, folders[g]) : gf_strfmt("%s\n", out);
            rc = write_text(lp, lists[g]);
            if (!rc)
                rc = write_text(op, dir);
            free(lp);
            free(op);
            free(out);
            free(dir);
        }
        for (size_t g = 0; g < nf; g++) {
            free(folders[g]);
            free(lists[g]);
        }
        free(folders);
        free(lists);
    }
    return rc;
}

/* RUN/args: the local run's options, one a line. */
static int write_args(const char *run, const gf_diarize_slurm_opts *o)
{
    char *text = gf_strdup("");
    for (size_t i = 0; i < o->n_local_args; i++) {
        char *next = gf_strfmt("%s%s\n", text, o->local_args[i]);
        free(text);
        text = next;
    }
    char *next = gf_strfmt("%s%s\n", text, o->overwrite ? "--overwrite" : "--skip-existing");
    free(text);
    text = next;
    char *path = gf_strfmt("%s/args", run);
    int rc = write_text(path, text);
    free(path);
    free(text);
    return rc;
}

static int write_script(const char *run)
{
    char *prog = gf_beside_self("gpuflock-cli");
    if (!prog) {
        fprintf(stderr, WHO ": cannot tell where this program is (/proc/self/exe)\n");
        return GF_EIO;
    }
    char *qp = shq(prog), *qr = shq(run);
    char *text = gf_strfmt("#!/bin/sh\n"
                           "# gpuflock diarize --slurm: one task of the array; the run folder\n"
                           "# holds its share (task-K.*.list), its options (args), its log.\n"
                           "exec %s diarize --slurm-task %s \"$SLURM_ARRAY_TASK_ID\"\n", qp, qr);
    char *path = gf_strfmt("%s/job.sh", run);
    int rc = write_text(path, text);
    if (!rc && chmod(path, 0755) != 0) {
        fprintf(stderr, WHO ": %s: %s\n", path, strerror(errno));
        rc = GF_EIO;
    }
    free(path);
    free(text);
    free(qp);
    free(qr);
    free(prog);
    return rc;
}

/* ---- Slurm's commands --------------------------------------------------- */

static bool have_command(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char *copy = gf_strdup(path);
    bool found = false;
    for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && !found;
         d = strtok_r(NULL, ":", &save)) {
        char *p = gf_strfmt("%s/%s", d, name);
        found = access(p, X_OK) == 0;
        free(p);
    }
    free(copy);
    return found;
}

/* sbatch; the job id into id[len]. Returns 0 or GF_EXIT_UNAVAIL (said). */
static int submit(const char *run, const gf_diarize_slurm_opts *o, int tasks, char *id, size_t len)
{
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, WHO ": the current folder: %s\n", strerror(errno));
        return GF_EXIT_UNAVAIL;
    }
    char *qcwd = shq(cwd);
    char *log = gf_strfmt("%s/task-%%a.log", run);
    char *qlog = shq(log);
    char *script = gf_strfmt("%s/job.sh", run);
    char *qscript = shq(script);
    char gres[32] = "";
    if (o->gpus_per_task > 0)
        snprintf(gres, sizeof gres, " --gres=gpu:%d", o->gpus_per_task);
    char *cmd = gf_strfmt("sbatch --parsable --job-name=gpuflock-diarize --array=0-%d "
                          "--ntasks=1 --chdir=%s --output=%s%s%s%s%s%s %s", tasks - 1, qcwd, qlog,
                          gres, o->partition ? " --partition=" : "",
                          o->partition ? o->partition : "", o->time ? " --time=" : "",
                          o->time ? o->time : "", qscript);
    int rc = GF_EXIT_UNAVAIL;
    FILE *p = popen(cmd, "r");
    char line[256] = "";
    if (p) {
        if (!fgets(line, sizeof line, p))
            line[0] = '\0';
        int st = pclose(p);
        line[strcspn(line, ";\n")] = '\0';
        if (st == 0 && only(line, "0123456789") && strlen(line) < len) {
            snprintf(id, len, "%s", line);
            rc = 0;
        }
    }
    if (rc)
        fprintf(stderr, WHO ": sbatch did not take the array (its message is above)\n");
    free(cmd);
    free(qcwd);
    free(log);
    free(qlog);
    free(script);
    free(qscript);
    return rc;
}

typedef struct {
    int pending, running, ended;   /* array tasks in each kind of state */
    char **state;                  /* per task: its last state seen; NULL: not seen */
} array_view;

static bool terminal(const char *s)
{
    return strcmp(s, "PENDING") != 0 && strcmp(s, "RUNNING") != 0 &&
           strcmp(s, "CONFIGURING") != 0 && strcmp(s, "COMPLETING") != 0 &&
           strcmp(s, "SUSPENDED") != 0 && strcmp(s, "REQUEUED") != 0 &&
           strcmp(s, "RESIZING") != 0 && strcmp(s, "SIGNALING") != 0 &&
           strcmp(s, "STAGE_OUT") != 0 && strcmp(s, "STOPPED") != 0;
}

/* squeue's view of the array. Returns the number of tasks listed, or -1. */
static int look(const char *id, int tasks, array_view *v)
{
    char *cmd = gf_strfmt("squeue -h -r -t all -j %s -o '%%K %%T' 2>/dev/null", id);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (!p)
        return -1;
    v->pending = v->running = v->ended = 0;
    int listed = 0;
    char line[128];
    while (fgets(line, sizeof line, p)) {
        int k = -1;
        char st[32];
        if (sscanf(line, "%d %31s", &k, st) != 2 || k < 0 || k >= tasks)
            continue;
        listed++;
        free(v->state[k]);
        v->state[k] = gf_strdup(st);
    }
    pclose(p);
    for (int k = 0; k < tasks; k++) {
        const char *s = v->state[k];
        if (!s)
            v->ended++;   /* gone from squeue: it ended long enough ago */
        else if (strcmp(s, "PENDING") == 0)
            v->pending++;
        else if (terminal(s))
            v->ended++;
        else
            v->running++;
    }
    return listed;
}

/* Why recording 'input' of task k has no RTTM: its line in the task's log,
 * else the task's fate. */
static void reason(const char *run, int k, const char *input, const array_view *v, char *buf,
                   size_t len)
{
    char *abs = absolute(input);
    char *logp = gf_strfmt("%s/task-%d.log", run, k);
    FILE *f = fopen(logp, "re");
    buf[0] = '\0';
    char line[2048];
    while (f && fgets(line, sizeof line, f)) {
        char *at = strstr(line, abs);
        if (!at || !strstr(line, "gpuflock diarize:"))
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *why = at + strlen(abs);
        while (*why == ':' || *why == ' ')
            why++;
        snprintf(buf, len, "%s", why);
    }
    if (f)
        fclose(f);
    if (!buf[0]) {
        char *sp = gf_strfmt("%s/task-%d.status", run, k);
        FILE *s = fopen(sp, "re");
        int st = -1;
        if (s) {
            if (fscanf(s, "%d", &st) != 1)
                st = -1;
            fclose(s);
        }
        free(sp);
        const char *state = v->state[k] ? v->state[k] : "gone from squeue";
        if (st >= 0)
            snprintf(buf, len, "task %d ended with status %d (%s)", k, st, state);
        else
            snprintf(buf, len, "task %d ended without finishing (%s: cancelled, timed out or "
                               "killed)", k, state);
    }
    snprintf(buf + strlen(buf), len - strlen(buf), "; log %s", logp);
    free(logp);
    free(abs);
}

/* Follow the array until every task has ended. Returns 0 or 65. */
static int follow(const char *run, const char *id, const gf_diarout_plan *plan, int tasks)
{
    array_view v = { .state = gf_calloc((size_t)tasks, sizeof(char *)) };
    bool *done = gf_calloc(plan->n ? plan->n : 1, sizeof *done);
    size_t n_done = 0;
    int last_running = -1, last_pending = -1;
    size_t last_done = (size_t)-1;
    int quiet_rounds = 0;
    for (;;) {
        int listed = look(id, tasks, &v);
        for (size_t i = 0; i < plan->n; i++)
            if (!done[i] && access(plan->items[i].rttm, F_OK) == 0) {
                done[i] = true;
                n_done++;
                printf("%s -> %s (%zu/%zu)\n", plan->items[i].input, plan->items[i].rttm, n_done,
                       plan->n);
            }
        if (v.running != last_running || v.pending != last_pending || n_done != last_done) {
            printf("Slurm job %s: %zu/%zu files done (%.0f%%); tasks: %d running, %d pending, "
                   "%d ended\n", id, n_done, plan->n,
                   plan->n ? 100.0 * (double)n_done / (double)plan->n : 100.0, v.running,
                   v.pending, v.ended);
            last_running = v.running;
            last_pending = v.pending;
            last_done = n_done;
        }
        fflush(stdout);
        /* squeue lists nothing for a moment after sbatch at times, and
         * nothing at all once the array is long gone: a few empty looks
         * in a row are the end */
        quiet_rounds = listed <= 0 ? quiet_rounds + 1 : 0;
        if (listed > 0 ? v.ended == tasks : quiet_rounds >= 6)
            break;
        usleep(POLL_US);
    }
    int status = 0;
    for (size_t i = 0; i < plan->n; i++) {
        if (done[i])
            continue;
        char why[1024];
        reason(run, (int)(i % (size_t)tasks), plan->items[i].input, &v, why, sizeof why);
        fprintf(stderr, WHO ": %s: not diarized: %s\n", plan->items[i].input, why);
        status = GF_EXIT_DATAERR;
    }
    if (status)
        fprintf(stderr, WHO ": re-run with --skip-existing to diarize what is missing\n");
    for (int k = 0; k < tasks; k++)
        free(v.state[k]);
    free(v.state);
    free(done);
    return status;
}

int gf_diarize_slurm_run(const gf_diarize_slurm_opts *o, const gf_diarout_plan *plan)
{
    for (size_t i = 0; i < plan->n; i++)
        if (strchr(plan->items[i].input, '\n')) {
            fprintf(stderr, WHO ": a path with a newline cannot travel in a file list: refused\n");
            return GF_EXIT_USAGE;
        }
    if (!have_command("sbatch") || !have_command("squeue")) {
        fprintf(stderr, WHO ": --slurm: Slurm's sbatch and squeue are not in PATH (Debian: "
                        "slurm-client)\n");
        return GF_EXIT_UNAVAIL;
    }
    int tasks = o->tasks ? o->tasks
                         : (int)(plan->n < DEFAULT_TASKS_MAX ? plan->n : DEFAULT_TASKS_MAX);
    if ((size_t)tasks > plan->n)
        tasks = (int)plan->n;   /* no task without a file */
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", gmtime_r(&now, &tm));
    char *run = gf_strfmt("%s/.gpuflock-slurm/run-%s-%d", o->out_dir, stamp, (int)getpid());
    char *abs_run = absolute(run);
    char *failed = NULL;
    int status = 0;
    if (gf_mkdir_p(abs_run, 0755, &failed) != 0) {
        fprintf(stderr, WHO ": cannot make the run folder %s: %s\n", failed ? failed : abs_run,
                strerror(errno));
        status = 73;
        goto out;
    }
    if (write_lists(abs_run, o, plan, tasks) || write_args(abs_run, o) || write_script(abs_run)) {
        status = 73;
        goto out;
    }
    char id[32];
    if ((status = submit(abs_run, o, tasks, id, sizeof id)) != 0)
        goto out;
    printf("Slurm job %s: %zu %s in %d %s (array 0-%d); run folder %s\n", id, plan->n,
           plan->n == 1 ? "file" : "files", tasks, tasks == 1 ? "task" : "tasks", tasks - 1,
           abs_run);
    fflush(stdout);
    if (!o->no_wait)
        status = follow(abs_run, id, plan, tasks);
out:
    free(failed);
    free(run);
    free(abs_run);
    return status;
}

/* ---- one task ----------------------------------------------------------- */

static char *read_small(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = gf_malloc(1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

int gf_diarize_slurm_task(const char *run, const char *task)
{
    if (!only(task, "0123456789") || strlen(task) > 6) {
        fprintf(stderr, WHO ": --slurm-task: '%s' is not an array task id\n", task);
        return GF_EXIT_USAGE;
    }
    char *argsp = gf_strfmt("%s/args", run);
    char *args = read_small(argsp);
    free(argsp);
    if (!args) {
        fprintf(stderr, WHO ": --slurm-task: %s/args: %s\n", run, strerror(errno));
        return GF_EXIT_NOINPUT;
    }
    char *prog = gf_beside_self("gpuflock-cli");
    char *ckdir = gf_strfmt("%s/ckpt", run);
    size_t n_args = 0;
    for (char *p = args; *p; p++)
        n_args += *p == '\n';
    int status = 0;
    for (size_t g = 0;; g++) {
        char *lp = gf_strfmt("%s/task-%s.%zu.list", run, task, g);
        char *op = gf_strfmt("%s/task-%s.%zu.out", run, task, g);
        char *out = access(lp, R_OK) == 0 ? read_small(op) : NULL;
        if (!out) {
            free(lp);
            free(op);
            break;
        }
        out[strcspn(out, "\n")] = '\0';
        char **argv = gf_calloc(n_args + 12, sizeof *argv);
        size_t a = 0;
        argv[a++] = prog ? prog : "gpuflock-cli";
        argv[a++] = "diarize";
        argv[a++] = "--local";
        argv[a++] = "--any";
        char *copy = gf_strdup(args);
        for (char *save = NULL, *p = strtok_r(copy, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
            argv[a++] = p;
        argv[a++] = "--out";
        argv[a++] = out;
        argv[a++] = "--files-from";
        argv[a++] = lp;
        argv[a++] = "--checkpoint-dir";   /* a requeued task goes on from its recordings' */
        argv[a++] = ckdir;
        argv[a] = NULL;
        int st = 0;
        if (gf_spawn_run(argv, NULL, &st) != 0)
            st = GF_EXIT_SOFTWARE;
        if (st && !status)
            status = st;
        free(copy);
        free(argv);
        free(out);
        free(lp);
        free(op);
        if (st > 128)
            break;   /* killed (scancel, the time limit): the task is over */
    }
    char *sp = gf_strfmt("%s/task-%s.status", run, task);
    char text[16];
    snprintf(text, sizeof text, "%d\n", status);
    write_text(sp, text);
    free(sp);
    free(prog);
    free(ckdir);
    free(args);
    return status;
}
