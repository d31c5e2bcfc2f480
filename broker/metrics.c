/* metrics.c — gpuflockd's metrics: counters, and the text rendered from
 * them and the broker's state (see metrics.h; the names and labels are
 * listed in docs/operations.md, "Metrics").
 *
 * Everything here runs on the loop's thread: the hooks add to plain
 * counters, gf_metrics_refresh renders the text and hands it to the
 * publisher (broker/metrics_serve.c), whose threads only ever read a copy.
 * Counters count from the broker's start (Prometheus's rate() and
 * increase() expect that; a restart is a reset they handle). */
#include "broker/metrics.h"

#include "broker/metrics_serve.h"
#include "broker/promtext.h"
#include "broker/server_int.h"
#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KINDS = 2, ENDED_STATES = 3, OUTCOMES = 4 };
static const char *const kind_names[KINDS] = { "command", "diarize" };
static const char *const ended_names[ENDED_STATES] = { "done", "failed", "cancelled" };
static const char *const outcome_names[OUTCOMES] = { "success", "failure", "yielded",
                                                     "recalled" };

/* Seconds a job waits in the queue, and runs: from a batch's short jobs to
 * a day's training run. */
static const double wait_bounds[] = { 0.005, 0.025, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600,
                                      14400, 86400 };
static const double run_bounds[] = { 0.01, 0.1, 1, 10, 60, 300, 900, 3600, 14400, 43200,
                                     86400, 259200 };
/* The store's commit and fdatasync: tens of microseconds on tmpfs, tens of
 * milliseconds on a busy disk. */
static const double store_bounds[] = { 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                       0.01, 0.025, 0.05, 0.1, 0.25, 1 };

/* Device time of one (stage, route) on a card, summed over its results. */
typedef struct {
    char stage[GF_DEVSTATS_NAME_MAX];   /* "segmentation", "checkpoint.capture", ... */
    char route[GF_DEVSTATS_NAME_MAX];   /* "library", "own", "cpu" */
    double seconds;                     /* measured device time */
    uint64_t timings;                   /* measured samples */
    uint64_t untimed[3];                /* launches not measured: not_requested, unavailable,
                                         * failed (devstats.h) */
} dev_row;

static const char *const untimed_names[3] = { "not_requested", "unavailable", "failed" };

/* One configured card's counters. */
typedef struct {
    int card;                     /* configured index */
    uint64_t busy_ms;             /* time seen with a job holding it */
    uint64_t lock_waits;          /* jobs that found its lock held */
    uint64_t outside_waits;       /* ... by a holder outside gpuflock */
    uint64_t yields, requeues;    /* its jobs back in the queue: yielded, worker lost */
    uint64_t worker_starts;       /* worker processes this broker started for it */
    uint64_t results[OUTCOMES];   /* results of its running jobs, by outcome */
    dev_row rows[GF_METRICS_MAX_ROWS];
    size_t n_rows;
    uint64_t rows_dropped;        /* device time of pairs past GF_METRICS_MAX_ROWS */
} card_counts;

struct gf_metrics {
    const gf_config *cfg;
    card_counts *cards;           /* one per configured card, in the config's order */
    size_t n_cards;
    uint64_t submitted[KINDS];
    uint64_t ended[ENDED_STATES][KINDS];
    gf_prom_hist wait[KINDS], run[KINDS];
    gf_prom_hist commit, sync;
    uint64_t commit_failures;
    int64_t started_wall_ms;      /* the broker's start, wall clock */
    uint64_t last_render;         /* monotonic ms of the last render, 0: none yet */
    uint64_t next_refresh;        /* monotonic ms */
    gf_metrics_pub *pub;          /* what is served, NULL: nothing */
};

gf_metrics *gf_metrics_new(const gf_config *cfg)
{
    gf_metrics *self = gf_calloc(1, sizeof *self);
    self->cfg = cfg;
    self->n_cards = cfg->n_devices;
    self->cards = gf_calloc(self->n_cards ? self->n_cards : 1, sizeof *self->cards);
    for (size_t i = 0; i < self->n_cards; i++)
        self->cards[i].card = cfg->devices[i].index;
    for (int k = 0; k < KINDS; k++) {
        gf_prom_hist_init(&self->wait[k], wait_bounds, GF_ARRAY_LEN(wait_bounds));
        gf_prom_hist_init(&self->run[k], run_bounds, GF_ARRAY_LEN(run_bounds));
    }
    gf_prom_hist_init(&self->commit, store_bounds, GF_ARRAY_LEN(store_bounds));
    gf_prom_hist_init(&self->sync, store_bounds, GF_ARRAY_LEN(store_bounds));
    self->started_wall_ms = gf_wall_ms();
    return self;
}

int gf_metrics_start(gf_metrics *self, gf_server *srv)
{
    size_t len;
    char *text = gf_metrics_render(self, srv, gf_now_ms(), &len);
    int rc;
    self->pub = gf_metrics_pub_start(self->cfg, &text, len, &rc);
    self->next_refresh = gf_now_ms() + GF_METRICS_REFRESH_MS;
    return rc;
}

void gf_metrics_destroy(gf_metrics **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_metrics *self = *self_p;
    gf_metrics_pub_stop(&self->pub);
    free(self->cards);
    free(self);
    *self_p = NULL;
}

void gf_metrics_refresh(gf_metrics *self, gf_server *srv, uint64_t now)
{
    if (!self->pub || now < self->next_refresh)
        return;
    self->next_refresh = now + GF_METRICS_REFRESH_MS;
    size_t len;
    char *text = gf_metrics_render(self, srv, now, &len);
    gf_metrics_pub_set(self->pub, &text, len);
}

static card_counts *card_of(gf_metrics *self, int card)
{
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].card == card)
            return &self->cards[i];
    return NULL;
}

/* ---- hooks ------------------------------------------------------------- */

static int kind_index(gf_job_kind k)
{
    return k == GF_JOB_DIARIZE ? 1 : 0;
}

void gf_metrics_submitted(gf_metrics *self, gf_job_kind kind)
{
    self->submitted[kind_index(kind)]++;
}

void gf_metrics_ended(gf_metrics *self, const gf_job *job)
{
    int k = kind_index(job->spec.kind);
    int s = job->state == GF_STATE_DONE ? 0 : job->state == GF_STATE_FAILED ? 1
          : job->state == GF_STATE_CANCELLED ? 2 : -1;
    if (s < 0)
        return;
    self->ended[s][k]++;
    if (job->started_ms <= 0)
        return;           /* it never ran: no wait to its start, no run */
    double wait = (double)(job->started_ms - job->submitted_ms) / 1e3;
    double run = (double)(job->ended_ms - job->started_ms) / 1e3;
    gf_prom_hist_observe(&self->wait[k], wait > 0 ? wait : 0);
    if (job->ended_ms >= job->started_ms)
        gf_prom_hist_observe(&self->run[k], run);
}

/* A stage or route name as the workers make them: letters, digits, _ . - */
static bool plain_name(const char *s, size_t n)
{
    if (n == 0 || n >= GF_DEVSTATS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

/* devstats.<stage>.<route>.<counter> (the stage may hold dots: the route
 * and the counter are read from the right) into the card's rows. */
static void add_devstat(card_counts *c, const gf_stat *st)
{
    if (strncmp(st->key, "devstats.", 9) != 0 || st->is_float)
        return;
    const char *rest = st->key + 9, *last = strrchr(rest, '.');
    if (!last || last == rest)
        return;
    const char *p = last - 1;
    while (p > rest && *p != '.')
        p--;
    if (p <= rest)
        return;
    const char *counter = last + 1;
    int which = !strcmp(counter, "total_ns") ? 0 : !strcmp(counter, "count") ? 1
              : !strcmp(counter, untimed_names[0]) ? 2 : !strcmp(counter, untimed_names[1]) ? 3
              : !strcmp(counter, untimed_names[2]) ? 4 : -1;
    size_t sl = (size_t)(p - rest), rl = (size_t)(last - p - 1);
    if (which < 0 || st->i < 0 || !plain_name(rest, sl) || !plain_name(p + 1, rl))
        return;
    dev_row *row = NULL;
    for (size_t i = 0; i < c->n_rows && !row; i++)
        if (strlen(c->rows[i].stage) == sl && !strncmp(c->rows[i].stage, rest, sl) &&
            strlen(c->rows[i].route) == rl && !strncmp(c->rows[i].route, p + 1, rl))
            row = &c->rows[i];
    if (!row) {
        if (c->n_rows == GF_METRICS_MAX_ROWS) {
            c->rows_dropped++;
            return;
        }
        row = &c->rows[c->n_rows++];
        memset(row, 0, sizeof *row);
        memcpy(row->stage, rest, sl);
        memcpy(row->route, p + 1, rl);
    }
    if (which == 0)
        row->seconds += (double)st->i * 1e-9;
    else if (which == 1)
        row->timings += (uint64_t)st->i;
    else
        row->untimed[which - 2] += (uint64_t)st->i;
}

void gf_metrics_result(gf_metrics *self, int card, const gf_msg *result)
{
    card_counts *c = card_of(self, card);
    if (!c)
        return;
    int o = result->outcome == GF_OUTCOME_YIELDED ? 2 : result->outcome == GF_OUTCOME_RECALLED ? 3
          : result->exit_status == 0 && result->term_signal == 0 ? 0 : 1;
    c->results[o]++;
    for (size_t i = 0; i < result->n_stats; i++)
        add_devstat(c, &result->stats[i]);
}

void gf_metrics_lock_wait(gf_metrics *self, int card, const char *why)
{
    int n = card;
    if (!why || sscanf(why, "waiting for card %d:", &n) != 1)
        return;   /* the bench lock, or not a wait for a card */
    card_counts *c = card_of(self, n);
    if (!c)
        return;
    c->lock_waits++;
    if (strstr(why, "outside gpuflock") || strstr(why, "outside the broker"))
        c->outside_waits++;
}

void gf_metrics_yielded(gf_metrics *self, int card)
{
    card_counts *c = card_of(self, card);
    if (c)
        c->yields++;
}

void gf_metrics_requeued(gf_metrics *self, int card)
{
    card_counts *c = card_of(self, card);
    if (c)
        c->requeues++;
}

void gf_metrics_worker_started(gf_metrics *self, int card)
{
    card_counts *c = card_of(self, card);
    if (c)
        c->worker_starts++;
}

void gf_metrics_commit(gf_metrics *self, uint64_t ns, bool ok)
{
    if (ok)
        gf_prom_hist_observe(&self->commit, (double)ns * 1e-9);
    else
        self->commit_failures++;
}

void gf_metrics_sync(gf_metrics *self, uint64_t ns)
{
    gf_prom_hist_observe(&self->sync, (double)ns * 1e-9);
}

/* ---- rendering --------------------------------------------------------- */

/* What `gpuflock workers` says of a card, in one word. */
static const char *card_state(const wk *w, int ex, int sh)
{
    if (w->drain_reason)
        return ex || sh ? "draining" : "drained";
    if (!w->ready)
        return w->child > 0 ? "starting" : "offline";
    return ex || sh ? "busy" : "idle";
}

/* A card's summed checkpoint statistic (workers.c folds them), 0 if none. */
static double ckpt_stat(const wk *w, const char *key)
{
    for (size_t i = 0; i < w->n_ckpt; i++)
        if (!strcmp(w->ckpt[i].key, key))
            return w->ckpt[i].is_float ? w->ckpt[i].f : (double)w->ckpt[i].i;
    return 0;
}

static void jobs_by_state(gf_promtext *t, gf_server *srv)
{
    enum { PENDING, HELD, RUNNING, LIVE };
    static const char *const names[LIVE] = { "pending", "held", "running" };
    uint64_t n[LIVE][KINDS] = { { 0 } };
    size_t pos = 0;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(srv->sched, &pos))) {
        int k = kind_index(sj->job.spec.kind);
        if (sj->job.state == GF_STATE_RUNNING)
            n[RUNNING][k]++;
        else if (sj->job.state == GF_STATE_PENDING)
            n[sj->job.held ? HELD : PENDING][k]++;
    }
    gf_promtext_family(t, "gpuflock_jobs", GF_PROM_GAUGE,
                       "Jobs the broker holds, by state (pending, held, running) and kind.");
    for (int s = 0; s < LIVE; s++)
        for (int k = 0; k < KINDS; k++) {
            const char *l[] = { "state", names[s], "kind", kind_names[k], NULL };
            gf_promtext_sample(t, "gpuflock_jobs", l, (double)n[s][k]);
        }
}

/* One counter family with a sample per card. */
static void per_card(gf_promtext *t, gf_metrics *self, const char *name, const char *help,
                     size_t offset)
{
    gf_promtext_family(t, name, GF_PROM_COUNTER, help);
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        const char *l[] = { "card", card, NULL };
        uint64_t v;
        memcpy(&v, (const char *)&self->cards[i] + offset, sizeof v);
        gf_promtext_sample(t, name, l, (double)v);
    }
}

static void cards(gf_promtext *t, gf_metrics *self, gf_server *srv, uint64_t now)
{
    static const char *const states[] = { "offline", "starting", "idle", "busy", "draining",
                                          "drained" };
    uint64_t dt = self->last_render && now > self->last_render ? now - self->last_render : 0;
    gf_promtext_family(t, "gpuflock_card_state", GF_PROM_GAUGE,
                       "1 for the state each card is in (as gpuflock workers shows it), 0 for "
                       "the others.");
    int *load = gf_calloc(self->n_cards ? self->n_cards : 1, sizeof *load);
    for (size_t i = 0; i < self->n_cards; i++) {
        card_counts *c = &self->cards[i];
        wk *w = gf_workers_by_device(srv, c->card);
        int ex = 0, sh = 0;
        gf_sched_card_load(srv->sched, c->card, &ex, &sh);
        load[i] = ex + sh;
        if (load[i] > 0)
            c->busy_ms += dt;
        const char *now_in = w ? card_state(w, ex, sh) : "offline";
        char card[16];
        snprintf(card, sizeof card, "%d", c->card);
        for (size_t s = 0; s < GF_ARRAY_LEN(states); s++) {
            const char *l[] = { "card", card, "state", states[s], NULL };
            gf_promtext_sample(t, "gpuflock_card_state", l, !strcmp(states[s], now_in));
        }
    }
    gf_promtext_family(t, "gpuflock_card_jobs_running", GF_PROM_GAUGE,
                       "Jobs holding each card now (exclusive or shared).");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        const char *l[] = { "card", card, NULL };
        gf_promtext_sample(t, "gpuflock_card_jobs_running", l, load[i]);
    }
    free(load);
    gf_promtext_family(t, "gpuflock_card_busy_seconds_total", GF_PROM_COUNTER,
                       "Seconds each card was held by at least one job (sampled every second).");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        const char *l[] = { "card", card, NULL };
        gf_promtext_sample(t, "gpuflock_card_busy_seconds_total", l,
                           (double)self->cards[i].busy_ms / 1e3);
    }
    per_card(t, self, "gpuflock_card_lock_waits_total",
             "Times a job on the card found its lock held and waited (as its worker reports).",
             offsetof(card_counts, lock_waits));
    per_card(t, self, "gpuflock_card_outside_holder_waits_total",
             "Of those, times the holder was outside gpuflock (flock, gpuflock exec, a gate).",
             offsetof(card_counts, outside_waits));
    per_card(t, self, "gpuflock_card_yields_total",
             "Runs on the card that went back to the queue by a yield, requeue or recall.",
             offsetof(card_counts, yields));
    per_card(t, self, "gpuflock_card_requeues_total",
             "Runs on the card requeued because its worker was lost.",
             offsetof(card_counts, requeues));
    gf_promtext_family(t, "gpuflock_card_worker_restarts_total", GF_PROM_COUNTER,
                       "Worker processes the broker started for the card after its first.");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        const char *l[] = { "card", card, NULL };
        uint64_t s = self->cards[i].worker_starts;
        gf_promtext_sample(t, "gpuflock_card_worker_restarts_total", l, s ? (double)(s - 1) : 0);
    }
    gf_promtext_family(t, "gpuflock_card_results_total", GF_PROM_COUNTER,
                       "Results of runs on the card: success (exit 0), failure, yielded, "
                       "recalled.");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        for (int o = 0; o < OUTCOMES; o++) {
            const char *l[] = { "card", card, "outcome", outcome_names[o], NULL };
            gf_promtext_sample(t, "gpuflock_card_results_total", l,
                               (double)self->cards[i].results[o]);
        }
    }
}

static void checkpoints(gf_promtext *t, gf_metrics *self, gf_server *srv)
{
    static const char *const outcomes[] = { "written", "failed", "skipped" };
    static const char *const phases[] = { "capture", "write", "fsync", "restore" };
    gf_promtext_family(t, "gpuflock_card_checkpoints_total", GF_PROM_COUNTER,
                       "Checkpoints of the diarize jobs on the card, by outcome.");
    for (size_t i = 0; i < self->n_cards; i++) {
        wk *w = gf_workers_by_device(srv, self->cards[i].card);
        char card[16], key[64];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        for (size_t o = 0; o < GF_ARRAY_LEN(outcomes); o++) {
            snprintf(key, sizeof key, "checkpoint.%s", outcomes[o]);
            const char *l[] = { "card", card, "outcome", outcomes[o], NULL };
            gf_promtext_sample(t, "gpuflock_card_checkpoints_total", l, w ? ckpt_stat(w, key) : 0);
        }
    }
    gf_promtext_family(t, "gpuflock_card_checkpoint_bytes_total", GF_PROM_COUNTER,
                       "Bytes of the checkpoints written by the diarize jobs on the card.");
    for (size_t i = 0; i < self->n_cards; i++) {
        wk *w = gf_workers_by_device(srv, self->cards[i].card);
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        const char *l[] = { "card", card, NULL };
        gf_promtext_sample(t, "gpuflock_card_checkpoint_bytes_total", l,
                           w ? ckpt_stat(w, "checkpoint.bytes") : 0);
    }
    gf_promtext_family(t, "gpuflock_card_checkpoint_seconds_total", GF_PROM_COUNTER,
                       "Seconds the diarize jobs on the card spent on checkpoints, by phase.");
    for (size_t i = 0; i < self->n_cards; i++) {
        wk *w = gf_workers_by_device(srv, self->cards[i].card);
        char card[16], key[64];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        for (size_t p = 0; p < GF_ARRAY_LEN(phases); p++) {
            snprintf(key, sizeof key, "checkpoint.%s_s", phases[p]);
            const char *l[] = { "card", card, "phase", phases[p], NULL };
            gf_promtext_sample(t, "gpuflock_card_checkpoint_seconds_total", l,
                               w ? ckpt_stat(w, key) : 0);
        }
    }
}

static void device_time(gf_promtext *t, gf_metrics *self)
{
    gf_promtext_family(t, "gpuflock_card_device_seconds_total", GF_PROM_COUNTER,
                       "Measured device time of the jobs on the card, by stage and route "
                       "(from the devstats of their results).");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        for (size_t r = 0; r < self->cards[i].n_rows; r++) {
            const dev_row *row = &self->cards[i].rows[r];
            const char *l[] = { "card", card, "stage", row->stage, "route", row->route, NULL };
            gf_promtext_sample(t, "gpuflock_card_device_seconds_total", l, row->seconds);
        }
    }
    gf_promtext_family(t, "gpuflock_card_device_timings_total", GF_PROM_COUNTER,
                       "Measured device timings (samples) behind those seconds.");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        for (size_t r = 0; r < self->cards[i].n_rows; r++) {
            const dev_row *row = &self->cards[i].rows[r];
            const char *l[] = { "card", card, "stage", row->stage, "route", row->route, NULL };
            gf_promtext_sample(t, "gpuflock_card_device_timings_total", l,
                               (double)row->timings);
        }
    }
    gf_promtext_family(t, "gpuflock_card_device_untimed_total", GF_PROM_COUNTER,
                       "Launches of the jobs on the card whose device time was not measured: "
                       "not requested, unavailable (a CPU card), failed or unproven.");
    for (size_t i = 0; i < self->n_cards; i++) {
        char card[16];
        snprintf(card, sizeof card, "%d", self->cards[i].card);
        for (size_t r = 0; r < self->cards[i].n_rows; r++) {
            const dev_row *row = &self->cards[i].rows[r];
            for (int u = 0; u < 3; u++) {
                const char *l[] = { "card", card, "stage", row->stage, "route", row->route,
                                    "why", untimed_names[u], NULL };
                gf_promtext_sample(t, "gpuflock_card_device_untimed_total", l,
                                   (double)row->untimed[u]);
            }
        }
    }
    per_card(t, self, "gpuflock_card_device_rows_dropped_total",
             "Device time left out: (stage, route) pairs past the per-card bound.",
             offsetof(card_counts, rows_dropped));
}

char *gf_metrics_render(gf_metrics *self, gf_server *srv, uint64_t now, size_t *len)
{
    gf_promtext *t = gf_promtext_new();
    const char *ver[] = { "version", GF_VERSION, NULL };
    gf_promtext_family(t, "gpuflock_build_info", GF_PROM_GAUGE, "The broker's version, as a label.");
    gf_promtext_sample(t, "gpuflock_build_info", ver, 1);
    gf_promtext_family(t, "gpuflock_start_time_seconds", GF_PROM_GAUGE,
                       "When the broker started, seconds since the epoch.");
    gf_promtext_sample(t, "gpuflock_start_time_seconds", NULL, (double)self->started_wall_ms / 1e3);

    jobs_by_state(t, srv);
    gf_promtext_family(t, "gpuflock_jobs_submitted_total", GF_PROM_COUNTER,
                       "Jobs submitted (recorded in the job store), by kind.");
    for (int k = 0; k < KINDS; k++) {
        const char *l[] = { "kind", kind_names[k], NULL };
        gf_promtext_sample(t, "gpuflock_jobs_submitted_total", l, (double)self->submitted[k]);
    }
    gf_promtext_family(t, "gpuflock_jobs_ended_total", GF_PROM_COUNTER,
                       "Jobs that ended (recorded in the job store), by final state and kind.");
    for (int s = 0; s < ENDED_STATES; s++)
        for (int k = 0; k < KINDS; k++) {
            const char *l[] = { "state", ended_names[s], "kind", kind_names[k], NULL };
            gf_promtext_sample(t, "gpuflock_jobs_ended_total", l, (double)self->ended[s][k]);
        }
    gf_promtext_family(t, "gpuflock_job_queue_wait_seconds", GF_PROM_HISTOGRAM,
                       "Of each ended job that ran: seconds from its submit to the start of its "
                       "last run.");
    for (int k = 0; k < KINDS; k++) {
        const char *l[] = { "kind", kind_names[k], NULL };
        gf_promtext_histogram(t, "gpuflock_job_queue_wait_seconds", l, &self->wait[k]);
    }
    gf_promtext_family(t, "gpuflock_job_run_seconds", GF_PROM_HISTOGRAM,
                       "Of each ended job that ran: seconds its last run took.");
    for (int k = 0; k < KINDS; k++) {
        const char *l[] = { "kind", kind_names[k], NULL };
        gf_promtext_histogram(t, "gpuflock_job_run_seconds", l, &self->run[k]);
    }

    cards(t, self, srv, now);
    checkpoints(t, self, srv);
    device_time(t, self);

    gf_promtext_family(t, "gpuflock_store_commit_seconds", GF_PROM_HISTOGRAM,
                       "Seconds the job store took to commit a turn's changes.");
    gf_promtext_histogram(t, "gpuflock_store_commit_seconds", NULL, &self->commit);
    gf_promtext_family(t, "gpuflock_store_commit_failures_total", GF_PROM_COUNTER,
                       "Turns whose commit failed (a full disk: the changes wait in memory).");
    gf_promtext_sample(t, "gpuflock_store_commit_failures_total", NULL,
                       (double)self->commit_failures);
    gf_promtext_family(t, "gpuflock_store_sync_seconds", GF_PROM_HISTOGRAM,
                       "Seconds the fdatasync of the job store's WAL took.");
    gf_promtext_histogram(t, "gpuflock_store_sync_seconds", NULL, &self->sync);
    gf_promtext_family(t, "gpuflock_store_behind", GF_PROM_GAUGE,
                       "1 while the job store cannot commit and memory holds changes it lacks.");
    gf_promtext_sample(t, "gpuflock_store_behind", NULL, srv->behind ? 1 : 0);

    self->last_render = now;
    char *text = gf_promtext_take(t, len);
    gf_promtext_destroy(&t);
    return text;
}
