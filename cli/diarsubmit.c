/* diarsubmit.c — `gpuflock diarize` through the broker (see diarsubmit.h). */
#include "cli/diarsubmit.h"

#include "cli/client.h"
#include "common/error.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TICK_MS 250          /* how often the followers ask for news */
#define BAR 24               /* width of a progress bar */

/* One recording and its job. */
typedef struct {
    const char *input;       /* as given (or found in a DIR) */
    char *audio;             /* absolute */
    char *rttm;              /* absolute */
    char *save;              /* absolute intermediates folder, or NULL */
    uint64_t id;             /* its job, 0: not submitted */
    gf_job job;              /* the latest record from the broker */
    bool have_job;           /* job holds a record */
    int said_state;          /* plain mode: state last printed, -1 none */
    int said_quarter;        /* plain mode: progress quarter last printed */
} item;

/* An absolute form of p: resolved when it exists, else joined to the cwd. */
static char *absolute(const char *p)
{
    char *r = realpath(p, NULL);
    if (r)
        return r;
    if (p[0] == '/')
        return gf_strdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof(cwd)))
        return gf_strdup(p);
    return gf_strfmt("%s/%s", cwd, p);
}

static const char *base(const char *path)
{
    const char *b = strrchr(path, '/');
    return b && b[1] ? b + 1 : path;
}

static bool ended(const item *it)
{
    return it->have_job && it->job.state != GF_STATE_PENDING &&
           it->job.state != GF_STATE_RUNNING;
}

/* Fraction of one recording done: 1 once done, windows while running or
 * where it stopped (a failed recording is not shown as complete). */
static double fraction(const item *it)
{
    if (ended(it) && it->job.state == GF_STATE_DONE)
        return 1.0;
    /* all windows done is not done yet: clustering and the RTTM follow */
    if (it->have_job && it->job.progress_total > 0)
        return 0.99 * (double)it->job.progress_done / (double)it->job.progress_total;
    return 0.0;
}

static const gf_stat *stat_of(const gf_job *j, const char *key)
{
    for (size_t i = 0; i < j->n_stats; i++)
        if (strcmp(j->stats[i].key, key) == 0)
            return &j->stats[i];
    return NULL;
}

static double stat_num(const gf_job *j, const char *key)
{
    const gf_stat *s = stat_of(j, key);
    return !s ? 0.0 : s->is_float ? s->f : (double)s->i;
}

static void bar(char *buf, double f)
{
    int fill = (int)(f * BAR + 0.5);
    for (int i = 0; i < BAR; i++)
        buf[i] = i < fill ? '#' : '.';
    buf[BAR] = 0;
}

static void state_text(const item *it, char *buf, size_t len)
{
    if (!it->have_job) {
        snprintf(buf, len, "submitted");
        return;
    }
    const gf_job *j = &it->job;
    if (j->state == GF_STATE_RUNNING && j->n_cards)
        snprintf(buf, len, "running on card %d", j->cards[0]);
    else
        snprintf(buf, len, "%s", gf_job_state_name(j->state));
}

/* Terminal: one line per recording and one for all, redrawn in place. */
static void draw_tty(item *items, size_t n, bool first)
{
    if (!first)
        fprintf(stderr, "\033[%zuA", n + 1);
    double sum = 0.0;
    size_t n_ended = 0, n_failed = 0;
    for (size_t i = 0; i < n; i++) {
        item *it = &items[i];
        if (!it->id)
            continue;
        char b[BAR + 1], st[64], win[48] = "";
        double f = fraction(it);
        sum += ended(it) ? 1.0 : f;   /* all: how much of the batch has ended */
        n_ended += ended(it);
        n_failed += ended(it) && it->job.state != GF_STATE_DONE;
        bar(b, f);
        state_text(it, st, sizeof(st));
        if (it->have_job && it->job.progress_total > 0)
            snprintf(win, sizeof(win), "%lld/%lld windows", (long long)it->job.progress_done,
                     (long long)it->job.progress_total);
        fprintf(stderr, "\r\033[K%-28.28s [%s] %3.0f%% %-20s %s\n", base(it->input), b,
                100.0 * f, win, st);
    }
    size_t n_jobs = 0;
    for (size_t i = 0; i < n; i++)
        n_jobs += items[i].id != 0;
    char b[BAR + 1];
    double all = n_jobs ? sum / (double)n_jobs : 1.0;
    bar(b, all);
    fprintf(stderr, "\r\033[K%-28s [%s] %3.0f%% %zu of %zu ended%s\n", "all recordings", b,
            100.0 * all, n_ended, n_jobs, n_failed ? " (some failed)" : "");
    fflush(stderr);
}

/* Not a terminal: a line when a job changes state or passes a quarter. */
static void say_plain(item *items, size_t n)
{
    size_t n_jobs = 0, n_ended = 0;
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        item *it = &items[i];
        if (!it->id || !it->have_job)
            continue;
        n_jobs++;
        n_ended += ended(it);
        const gf_job *j = &it->job;
        int quarter = j->progress_total > 0
                          ? (int)(4 * j->progress_done / j->progress_total) : 0;
        if ((int)j->state != it->said_state) {
            char st[64];
            state_text(it, st, sizeof(st));
            fprintf(stderr, "%s: job %llu %s\n", it->input, (unsigned long long)it->id, st);
            it->said_state = (int)j->state;
            any = true;
        }
        if (j->state == GF_STATE_RUNNING && quarter > it->said_quarter) {
            fprintf(stderr, "%s: %d%% (%lld/%lld windows)\n", it->input, 25 * quarter,
                    (long long)j->progress_done, (long long)j->progress_total);
            it->said_quarter = quarter;
            any = true;
        }
    }
    if (any) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            if (items[i].id)
                sum += ended(&items[i]) ? 1.0 : fraction(&items[i]);
        fprintf(stderr, "all recordings: %.0f%% (%zu of %zu ended)\n",
                n_jobs ? 100.0 * sum / (double)n_jobs : 100.0, n_ended, n_jobs);
    }
}

static int submit_one(gf_client *cl, const gf_diarsubmit_opts *o, item *it, const char *models)
{
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_SUBMIT;
    gf_job_spec *sp = &req.spec;
    gf_job_spec_init(sp);
    sp->kind = GF_JOB_DIARIZE;
    sp->mode = GF_MODE_SHARED;
    sp->argv = gf_calloc(3, sizeof(char *));
    sp->argv[0] = gf_strdup("diarize");
    sp->argv[1] = gf_strdup(it->audio);
    sp->argc = 2;
    char cwd[PATH_MAX];
    sp->cwd = getcwd(cwd, sizeof(cwd)) ? gf_strdup(cwd) : NULL;
    sp->name = gf_strdup(base(it->audio));
    if (strlen(sp->name) > GF_PROTO_MAX_NAME)
        sp->name[GF_PROTO_MAX_NAME] = 0;
    if (o->gpu >= 0) {
        sp->req = GF_REQ_GPU;
        sp->gpu = o->gpu;
    }
    sp->diar = gf_calloc(1, sizeof(gf_diar_spec));
    sp->diar->audio = gf_strdup(it->audio);
    sp->diar->rttm = gf_strdup(it->rttm);
    sp->diar->json = o->json;
    sp->diar->intermediates = it->save ? gf_strdup(it->save) : NULL;
    sp->diar->overwrite = o->overwrite;
    sp->diar->exclusive = o->exclusive;
    sp->diar->speakers = o->speakers;
    sp->diar->models = models ? gf_strdup(models) : NULL;
    sp->diar->num_speakers = o->num_speakers;
    sp->diar->min_speakers = o->min_speakers;
    sp->diar->max_speakers = o->max_speakers;
    sp->diar->threshold = o->threshold;
    sp->diar->fa = o->fa;
    sp->diar->fb = o->fb;
    sp->diar->min_duration_off = o->min_duration_off;
    sp->diar->segmentation_step = o->segmentation_step;
    sp->diar->keep_overlap = !o->exclude_overlap;
    int rc = 0;
    if (gf_client_call(cl, &req, &rep, 60000) != 0) {
        rc = GF_EXIT_UNAVAIL;
    } else if (rep.op != GF_OP_IDS || rep.n_ids != 1) {
        char *cmd = gf_strfmt("diarize: %s", it->input);
        rc = gf_client_report(cmd, &rep);
        free(cmd);
    } else {
        it->id = rep.ids[0];
    }
    gf_msg_clear(&rep);
    gf_msg_clear(&req);
    return rc;
}

/* Ask for every job still live; update items. Returns 0 or 69. */
static int poll_jobs(gf_client *cl, item *items, size_t n, int timeout_ms)
{
    gf_msg req, rep;
    memset(&req, 0, sizeof(req));
    req.op = GF_OP_WAIT;
    req.ids = gf_calloc(n ? n : 1, sizeof(uint64_t));
    for (size_t i = 0; i < n; i++)
        if (items[i].id && !ended(&items[i]))
            req.ids[req.n_ids++] = items[i].id;
    req.timeout_ms = timeout_ms;
    int rc = 0;
    if (req.n_ids == 0)
        goto out_clear;
    if (gf_client_call(cl, &req, &rep, timeout_ms + 60000) != 0) {
        fprintf(stderr, "gpuflock diarize: lost the broker; the jobs may still run "
                        "(gpuflock queue)\n");
        rc = GF_EXIT_UNAVAIL;
        goto out_clear;
    }
    if (rep.op != GF_OP_JOBS) {
        rc = gf_client_report("diarize", &rep);
        gf_msg_clear(&rep);
        goto out_clear;
    }
    for (size_t k = 0; k < rep.n_jobs; k++)
        for (size_t i = 0; i < n; i++)
            if (items[i].id == rep.jobs[k].id) {
                gf_job_clear(&items[i].job);
                gf_job_copy(&items[i].job, &rep.jobs[k]);
                items[i].have_job = true;
            }
    gf_msg_clear(&rep);
out_clear:
    gf_msg_clear(&req);
    return rc;
}

int gf_diarsubmit_run(const gf_diarsubmit_opts *o)
{
    int status = 0;
    gf_client *cl = gf_client_open(o->config, o->ctx, &status);
    if (!cl) {
        if (status == GF_EXIT_UNAVAIL)
            fprintf(stderr, "gpuflock diarize: or diarize in this process, without a broker: "
                            "gpuflock diarize --local ...\n");
        return status;
    }
    item *items = gf_calloc(o->n_items ? o->n_items : 1, sizeof(item));
    char *models = o->models ? absolute(o->models) : NULL;
    size_t n = o->n_items, n_jobs = 0;
    for (size_t i = 0; i < n; i++) {
        item *it = &items[i];
        const gf_diarout *d = &o->items[i];
        it->input = d->input;
        it->said_state = -1;
        gf_job_init(&it->job);
        it->audio = absolute(d->input);
        it->rttm = absolute(d->rttm);
        it->save = d->save ? absolute(d->save) : NULL;
        int rc = submit_one(cl, o, it, models);
        if (rc == GF_EXIT_UNAVAIL) {
            status = rc;
            goto out_free;
        }
        if (rc && !status)
            status = rc;
        if (it->id) {
            n_jobs++;
            fprintf(stderr, "%s: job %llu\n", it->input, (unsigned long long)it->id);
        }
    }
    if (n_jobs == 0)
        goto out_free;

    bool tty = isatty(STDERR_FILENO) == 1;
    bool first = true;
    for (;;) {
        /* timeout 0 would mean "until they end": 1 ms answers at once */
        int rc = poll_jobs(cl, items, n, first ? 1 : TICK_MS);
        if (rc) {
            status = rc;
            goto out_free;
        }
        if (tty)
            draw_tty(items, n, first);
        else
            say_plain(items, n);
        first = false;
        bool live = false;
        for (size_t i = 0; i < n; i++)
            live |= items[i].id && !ended(&items[i]);
        if (!live)
            break;
    }

    bool weight_free = false, energy = false;
    for (size_t i = 0; i < n; i++) {
        item *it = &items[i];
        if (!it->id)
            continue;
        const gf_job *j = &it->job;
        if (j->state == GF_STATE_DONE) {
            bool wf = stat_num(j, "diarize.weight_free") != 0;
            weight_free |= wf;
            energy |= wf && stat_num(j, "diarize.trained_vad") == 0;
            double turns = stat_num(j, "diarize.turns"), spk = stat_num(j, "diarize.speakers");
            printf("%s: %.0f turn%s, %.0f speaker%s, %.1f s of audio in %.1f s -> %s%s%s\n",
                   it->input, turns, turns == 1 ? "" : "s", spk, spk == 1 ? "" : "s",
                   stat_num(j, "diarize.duration_s"), stat_num(j, "diarize.total_s"), it->rttm,
                   o->json ? " (+ .json)" : "", wf ? " (weight-free mode)" : "");
        } else {
            fflush(stdout);   /* in the order a terminal shows them */
            fprintf(stderr, "gpuflock diarize: %s: %s (job %llu): %s\n", it->input,
                    gf_job_state_name(j->state), (unsigned long long)it->id,
                    j->reason ? j->reason : "no reason given");
            if (!status)
                status = gf_job_exit_status(j);
        }
    }
    fflush(stdout);
    if (weight_free)
        fprintf(stderr, "gpuflock diarize: weight-free mode: the worker found no model files "
                        "(%s voice activity and filterbank statistics; expect a much "
                        "higher DER)\n", energy ? "energy" : "trained");
out_free:
    for (size_t i = 0; i < o->n_items; i++) {
        free(items[i].audio);
        free(items[i].rttm);
        free(items[i].save);
        gf_job_clear(&items[i].job);
    }
    free(items);
    free(models);
    gf_client_destroy(&cl);
    return status;
}
