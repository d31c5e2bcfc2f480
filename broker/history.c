/* history.c — what the broker does with jobs that have ended (see
 * server_int.h): the retention of the job store (history.keep_days,
 * history.keep_jobs), `gpuflock purge`, and the notifications of
 * `submit --notify` (broker/notify.h).
 *
 * The retention works a few rows at a time, in passes on the loop's
 * timers (docs/operations.md, "History"): a pass lists one batch of
 * candidates (broker/retention.h decides which listing), leaves out the
 * jobs a live job waits for (--after: its dependencies keep their records
 * until it has ended, so that a restarted broker can still judge them),
 * and hands their spool files to the sweeper's thread
 * (broker/sweeper.h); once that is done, a later pass removes their rows in
 * the turn's transaction. One transaction never removes more than a batch:
 * the WAL stays small, the commit short, and the turn never waits on a long
 * loop of unlinks. */
#include "broker/server_int.h"

#include "broker/notify.h"
#include "broker/retention.h"
#include "broker/sweeper.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 64             /* jobs a pass removes at most */
#define PASS_MS 200          /* between passes while there is work */
#define IDLE_MS 60000        /* between looks once there was none */

struct gf_history {
    gf_sweeper *sweeper;      /* removes the spool files of a batch, on its thread */
    gf_notify *notify;        /* the notifications queued and running */
    bool counted;             /* n_ended was read from the store */
    uint64_t n_ended;         /* ended jobs the store holds (kept up as jobs end and go) */
    uint64_t *batch;          /* the jobs whose files the sweeper has: their rows go next */
    size_t n_batch;
    uint64_t next_pass;       /* monotonic ms */
    unsigned resting;         /* GF_RETAIN_REST_*: listings walked to their end */
    uint64_t cur_id;          /* GF_RETAIN_OLDEST: the last id listed */
    int64_t cur_ms;           /* GF_RETAIN_BEFORE: the last (ended_ms, id) listed */
    uint64_t cur_ms_id;
    int64_t purge_before;     /* a purge under way: jobs ended before this go; 0: none */
    uint64_t purged;          /* ... and how many it removed so far */
    uint64_t removed;         /* rows removed since the last line logged about it */
    gf_retain_how walk_done;  /* the listing the batch came from was walked to its end: said
                               * once the batch's rows are gone; NOTHING: not */
};

static gf_history *history(gf_server *self)
{
    if (!self->history) {
        self->history = gf_calloc(1, sizeof(gf_history));
        self->history->sweeper = gf_sweeper_new();
        self->history->notify = gf_notify_new(GF_NOTIFY_TIMEOUT_S);
    }
    return self->history;
}

void gf_history_destroy(gf_server *self)
{
    gf_history *h = self->history;
    if (!h)
        return;
    gf_sweeper_destroy(&h->sweeper);
    if (gf_notify_running(h->notify) || gf_notify_waiting(h->notify))
        GF_INFO("notify: %zu notifications still running are left to their time limit, %zu "
                "waiting are dropped", gf_notify_running(h->notify),
                gf_notify_waiting(h->notify));
    gf_notify_destroy(&h->notify);
    free(h->batch);
    free(h);
    self->history = NULL;
}

void gf_history_job_ended(gf_server *self, const gf_job *j)
{
    gf_history *h = history(self);
    if (h->counted)
        h->n_ended++;
    /* over history.keep_jobs now: the next pass need not wait out an idle
     * minute, and the oldest are looked at again (this end may have freed a
     * dependency); a working retention keeps its own pace */
    int keep = self->cfg->history_keep_jobs;
    if (j->spec.n_after) {
        /* the jobs it waited for may go now: the listings start over from
         * their oldest, where those are */
        h->cur_id = 0;
        h->cur_ms = 0;
        h->cur_ms_id = 0;
        h->resting = 0;
    }
    if (h->counted && keep > 0 && h->n_ended > (uint64_t)keep) {
        h->resting &= ~(unsigned)GF_RETAIN_REST_OLDEST;
        uint64_t soon = gf_now_ms() + PASS_MS;
        if (h->next_pass > soon)
            h->next_pass = soon;
    }
    if (j->spec.notify)
        gf_notify_queue(h->notify, j->id, j->uid);
}

/* The jobs some live job waits for (--after), unsorted: a new array. */
static uint64_t *depended_on(gf_server *self, size_t *n)
{
    size_t pos = 0, cap = 0;
    *n = 0;
    uint64_t *v = NULL;
    gf_sched_job *sj;
    while ((sj = gf_sched_iter(self->sched, &pos)))
        for (size_t a = 0; a < sj->job.spec.n_after && !gf_jobs_ended(sj->job.state); a++)
            gf_server_push_id(&v, n, &cap, sj->job.spec.after[a]);
    return v;
}

/* The rows of the batch whose files are gone: removed in the turn's
 * transaction, but those a live job came to wait for meanwhile (their
 * records stay; their logs are gone with the rest). */
static void remove_rows(gf_server *self, gf_history *h)
{
    size_t n_keep;
    uint64_t *keep = depended_on(self, &n_keep);
    size_t n = 0;
    for (size_t i = 0; i < h->n_batch; i++) {
        bool kept = gf_sched_get(self->sched, h->batch[i]) != NULL;
        for (size_t k = 0; k < n_keep && !kept; k++)
            kept = keep[k] == h->batch[i];
        if (!kept)
            h->batch[n++] = h->batch[i];
    }
    free(keep);
    h->n_batch = 0;
    if (n == 0)
        return;
    gf_server_tx(self);
    if (!self->in_tx || self->turn_failed)
        return;        /* a later pass lists them again */
    size_t removed = 0;
    int rc = gf_store_remove_ended(self->store, h->batch, n, &removed);
    if (rc) {
        gf_server_write_failed(self, rc);
        return;
    }
    for (size_t i = 0; i < n; i++)
        gf_sched_forget_final(self->sched, h->batch[i]);
    h->n_ended = h->n_ended > removed ? h->n_ended - removed : 0;
    h->removed += removed;
    if (h->purge_before)
        h->purged += removed;
    GF_DEBUG("history: %zu ended jobs removed from the job store", removed);
}

/* A listing came back short: it rests until nothing is left to do, and
 * what it removed is said once. */
static void walked(gf_server *self, gf_history *h, gf_retain_how how)
{
    h->resting |= how == GF_RETAIN_OLDEST ? GF_RETAIN_REST_OLDEST : GF_RETAIN_REST_BEFORE;
    if (how == GF_RETAIN_OLDEST) {
        h->cur_id = 0;
    } else {
        h->cur_ms = 0;
        h->cur_ms_id = 0;
    }
    if (how == GF_RETAIN_BEFORE && h->purge_before) {
        GF_INFO("purge: done, %llu ended jobs removed with their spool files",
                (unsigned long long)h->purged);
        h->purge_before = 0;
        h->purged = 0;
    }
    if (h->removed)
        GF_INFO("history: %llu ended jobs removed with their spool files (history.keep_days %d, "
                "history.keep_jobs %d)", (unsigned long long)h->removed,
                self->cfg->history_keep_days, self->cfg->history_keep_jobs);
    h->removed = 0;
    /* the count kept up with the changes may have missed a commit that
     * failed: read it again */
    uint64_t n;
    if (gf_store_count_ended(self->store, &n) == 0)
        h->n_ended = n;
}

static void retention_pass(gf_server *self, gf_history *h, uint64_t now)
{
    if (self->stopping || self->behind || self->turn_failed)
        return;
    if (!h->counted) {
        if (gf_store_count_ended(self->store, &h->n_ended) != 0)
            return;
        h->counted = true;
    }
    if (h->n_batch) {
        if (!gf_sweeper_busy(h->sweeper)) {
            remove_rows(self, h);
            h->next_pass = now + PASS_MS;
            if (h->walk_done != GF_RETAIN_NOTHING)
                walked(self, h, h->walk_done);
            h->walk_done = GF_RETAIN_NOTHING;
        }
        return;
    }
    if (now < h->next_pass)
        return;
    gf_retention_policy p = { .keep_days = self->cfg->history_keep_days,
                              .keep_jobs = self->cfg->history_keep_jobs };
    gf_retention_step step = gf_retention_next(&p, gf_wall_ms(), h->n_ended, h->purge_before,
                                               BATCH, h->resting);
    /* a listing not asked for this pass has finished its round: the next
     * starts from its oldest again (what was waited for may be free now) */
    if (step.how != GF_RETAIN_OLDEST)
        h->cur_id = 0;
    if (step.how != GF_RETAIN_BEFORE) {
        h->cur_ms = 0;
        h->cur_ms_id = 0;
    }
    if (step.how == GF_RETAIN_NOTHING) {
        h->resting = 0;
        h->next_pass = now + IDLE_MS;
        return;
    }
    gf_store_old *rows;
    size_t n;
    int rc = step.how == GF_RETAIN_OLDEST
                 ? gf_store_oldest_ended(self->store, h->cur_id, step.limit, &rows, &n)
                 : gf_store_ended_before(self->store, step.cut_ms, h->cur_ms, h->cur_ms_id,
                                         step.limit, &rows, &n);
    if (rc) {
        h->next_pass = now + IDLE_MS;
        return;
    }
    h->next_pass = now + PASS_MS;
    if (n) {
        h->cur_id = rows[n - 1].id;
        h->cur_ms = rows[n - 1].ended_ms;
        h->cur_ms_id = rows[n - 1].id;
    }
    bool short_list = n < step.limit;
    /* not yet retired from memory (ended this turn), or waited for: not now */
    size_t n_keep;
    uint64_t *keep = depended_on(self, &n_keep);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (gf_sched_get(self->sched, rows[i].id)) {
            free(rows[i].out_path);
            free(rows[i].err_path);
            continue;
        }
        rows[m++] = rows[i];
    }
    m = gf_retention_drop_kept(rows, m, keep, n_keep);
    free(keep);
    if (m) {
        h->batch = gf_realloc(h->batch, m * sizeof(uint64_t));
        for (size_t i = 0; i < m; i++)
            h->batch[i] = rows[i].id;
        h->n_batch = m;
        if (!gf_sweeper_give(h->sweeper, rows, m)) {   /* cannot be: its last batch is done */
            gf_store_old_free(rows, m);
            h->n_batch = 0;
        }
    } else {
        gf_store_old_free(rows, 0);
    }
    if (short_list && h->n_batch)
        h->walk_done = step.how;        /* said once these are gone */
    else if (short_list)
        walked(self, h, step.how);
}

/* Is job id's end in the store (it has left memory: retired after the
 * commit that recorded it)? */
static bool end_recorded(void *arg, uint64_t id)
{
    gf_server *self = arg;
    return gf_sched_get(self->sched, id) == NULL;
}

static void notify_one(gf_server *self, gf_history *h, uint64_t id, uint64_t now)
{
    gf_job j;
    if (gf_store_get(self->store, id, &j) != 0 || !gf_jobs_ended(j.state) || !j.spec.notify) {
        gf_job_clear(&j);
        return;     /* gone meanwhile (purged): nothing to say */
    }
    gf_jobs_stored_reason(&j);
    char *user = j.user ? gf_strdup(j.user) : gf_users_name(self->users, j.uid, j.gid);
    /* the home folder, as the passwd entry has it (NSS, like the groups) */
    char buf[4096];
    struct passwd pw, *pp = NULL;
    const char *home = getpwuid_r(j.uid, &pw, buf, sizeof buf, &pp) == 0 && pp ? pw.pw_dir : NULL;
    uint32_t *groups = NULL;
    size_t n_groups = 0;
    gf_users_groups(self->users, j.uid, j.gid, &groups, &n_groups);
    gf_notify_run r = { .job = &j, .user = user, .home = home, .groups = groups,
                        .n_groups = n_groups };
    gf_notify_spawn(h->notify, &r, self->nofile_soft, now);
    free(groups);
    free(user);
    gf_job_clear(&j);
}

void gf_history_timers(gf_server *self, uint64_t now)
{
    gf_history *h = history(self);
    retention_pass(self, h, now);
    gf_notify_tick(h->notify, now);
    for (int k = 0; k < GF_NOTIFY_SPAWNS_PER_TURN; k++) {
        uint64_t id = gf_notify_next(h->notify, end_recorded, self);
        if (!id)
            break;
        notify_one(self, h, id, now);
    }
}

/* purge [before]: root only. The jobs go in the passes above; the reply
 * says how many there are to go. */
void gf_history_on_purge(gf_server *self, const gf_peer *peer, gf_msg *req)
{
    if (!peer->has_cred || peer->uid != 0) {
        gf_server_post_error(self, self->clients, peer, GF_EPERM,
                             "purge: only root may remove jobs from the job store");
        return;
    }
    int64_t now = gf_wall_ms();
    int64_t before = req->before_ms > 0 && req->before_ms <= now ? req->before_ms : now + 1;
    uint64_t n = 0;
    if (gf_store_count_ended_before(self->store, before, &n) != 0) {
        gf_server_post_error(self, self->clients, peer, GF_EIO, "purge: the job store failed");
        return;
    }
    gf_history *h = history(self);
    if (before > h->purge_before)
        h->purge_before = before;
    h->resting = 0;
    h->cur_ms = 0;
    h->cur_ms_id = 0;
    h->next_pass = 0;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_CODES;
    m.codes = gf_calloc(1, sizeof(int32_t));
    m.n_codes = 1;
    m.message = gf_strfmt("%llu ended job%s to remove with %s spool files, a few at a time in "
                          "the background (jobs a pending or running job waits for stay)",
                          (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "its" : "their");
    GF_INFO("purge: %llu ended jobs that ended before %lld (ms since the epoch), asked by root",
            (unsigned long long)n, (long long)before);
    gf_server_post_free(self, self->clients, peer, &m);
}
