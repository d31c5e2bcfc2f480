/* sched.c — the scheduling rules (see sched.h): where a pending job may
 * go, and when.
 *
 * The queue (broker/sched_table.c) is kept sorted by (priority desc, id
 * asc), so one pass over it visits jobs in the order they deserve a card.
 * Each gf_sched_next call makes one such pass from the front and stops at the
 * first decision; cards an exclusive job waits for are marked during the
 * pass, and later shared jobs are not admitted there. A card held
 * exclusively may also have one exclusive job "ahead": leased behind the
 * holder and already with the worker, which starts it the moment the holder
 * ends (no round trip through the broker between two jobs). A job ahead
 * that could run on another card which has fallen idle, before any pending
 * job it deserves to precede, is recalled: that card is reserved for it
 * while its worker gives it back (gf_sched_recalled).
 *
 * A pass that decides nothing visits every pending job, and the broker
 * asks for one every turn: with thousands queued that was most of its
 * time. So the scheduler remembers when such a pass last ran (`settled` at
 * `epoch`) and skips the next while no card could take any job and nothing
 * that decides a waiting job's fate or reason has changed: no job queued or
 * requeued, no card gone on- or offline and, when a job waits on
 * dependencies, no job ended or left the queue. Waiting reasons depend on
 * nothing else, so they stay true.
 *
 * The job table, the queue and the cards' flags are sched_table.c; the
 * record both files share is sched_impl.h. */
#include "broker/sched_impl.h"

#include "common/error.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fits(const card *c, const gf_sched_job *sj)
{
    gf_job_mode mode = sj->job.spec.mode;
    if (!c->online || c->drained || c->excl || (c->reserved && c->reserved != sj->job.id))
        return false;
    if (mode == GF_MODE_EXCLUSIVE)
        return c->shared == 0;
    return !c->blocked && c->shared < c->slots;
}

static void lease(gf_sched *self, gf_sched_job *sj, card **cs, size_t n, gf_sched_decision *out)
{
    free(sj->job.cards);
    sj->job.cards = gf_calloc(n, sizeof(int32_t));
    sj->job.n_cards = n;
    out->n_cards = n;
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].reserved == sj->job.id)
            self->cards[i].reserved = 0;
    sj->recall_to = -1;
    for (size_t i = 0; i < n; i++) {
        if (sj->job.spec.mode == GF_MODE_EXCLUSIVE)
            cs[i]->excl = sj->job.id;
        else
            cs[i]->shared++;
        sj->job.cards[i] = cs[i]->index;
        out->cards[i] = cs[i]->index;
    }
    sj->job.state = GF_STATE_RUNNING;
    sj->worker_card = cs[0]->index;
    sj->wait = GF_WAIT_NONE;
    sj->started = false;
}

/* An exclusive request waits for card c: no later shared job is admitted
 * there this pass, and the first such request is the card's blocker (the
 * one its yieldable holders may be asked to yield to). */
static void block(card *c, const gf_sched_job *sj)
{
    if (!c->blocked)
        c->blocker = sj->job.id;
    c->blocked = true;
}

/* Mark the card an exclusive request will take when it frees: the one
 * with the fewest holders (lowest index on ties). */
static void block_least_loaded(gf_sched *self, const gf_sched_job *sj)
{
    card *best = NULL;
    for (size_t i = 0; i < self->n_cards; i++) {
        card *c = &self->cards[i];
        if (!c->online || c->drained)
            continue;
        if (!best || (c->shared + (c->excl ? 1 : 0)) < (best->shared + (best->excl ? 1 : 0)))
            best = c;
    }
    if (best)
        block(best, sj);
}

/* Try to place one pending job. Returns 1 (decision made), 0 (it waits). */
static int place(gf_sched *self, gf_sched_job *sj, gf_sched_decision *out)
{
    const gf_job_spec *sp = &sj->job.spec;
    if (sj->job.held) {
        sj->wait = GF_WAIT_HELD;
        sj->wait_arg = sj->job.held_by;
        return 0;
    }
    for (size_t i = 0; i < sp->n_after; i++) {
        gf_sched_job *dep = gf_sched_get(self, sp->after[i]);
        gf_job_state ds;
        bool known = dep || gf_sched_final(self, sp->after[i], &ds);
        if (dep)
            ds = dep->job.state;
        if (!known || ds == GF_STATE_FAILED || ds == GF_STATE_CANCELLED) {
            out->action = GF_SCHED_FAIL;
            snprintf(out->reason, sizeof(out->reason), "dependency %llu %s",
                     (unsigned long long)sp->after[i],
                     !known ? "does not exist"
                            : ds == GF_STATE_FAILED ? "failed" : "was cancelled");
            return 1;
        }
        if (ds != GF_STATE_DONE) {
            sj->wait = GF_WAIT_DEPENDENCY;
            sj->wait_arg = (int64_t)sp->after[i];
            return 0;
        }
    }
    card *cs[GF_PROTO_MAX_CARDS];
    bool excl = sp->mode == GF_MODE_EXCLUSIVE;
    switch (sp->req) {
    case GF_REQ_GPU: {
        card *c = find_card(self, sp->gpu);
        if (!c) {
            out->action = GF_SCHED_FAIL;
            snprintf(out->reason, sizeof(out->reason), "no card %d is configured", sp->gpu);
            return 1;
        }
        if (fits(c, sj)) {
            cs[0] = c;
            lease(self, sj, cs, 1, out);
            return 1;
        }
        sj->wait = !c->online ? GF_WAIT_NO_WORKER : c->drained ? GF_WAIT_DRAINED : GF_WAIT_CARD;
        sj->wait_arg = c->index;
        if (excl)
            block(c, sj);
        return 0;
    }
    case GF_REQ_ANY: {
        card *best = NULL;
        bool any_online = false;
        for (size_t i = 0; i < self->n_cards; i++) {
            card *c = &self->cards[i];
            any_online |= c->online;
            if (fits(c, sj) && (!best || c->reserved == sj->job.id ||
                                (best->reserved != sj->job.id && c->shared < best->shared)))
                best = c;
        }
        if (best) {
            cs[0] = best;
            lease(self, sj, cs, 1, out);
            return 1;
        }
        sj->wait = any_online ? GF_WAIT_ANY_CARD : GF_WAIT_NO_WORKER;
        sj->wait_arg = -1;
        if (excl)
            block_least_loaded(self, sj);
        return 0;
    }
    case GF_REQ_GPUS: {
        if (sp->gpus < 1 || (size_t)sp->gpus > self->n_cards) {
            out->action = GF_SCHED_FAIL;
            snprintf(out->reason, sizeof(out->reason), "asks for %d cards, %zu configured",
                     sp->gpus, self->n_cards);
            return 1;
        }
        size_t n = 0;
        for (size_t i = 0; i < self->n_cards && n < (size_t)sp->gpus; i++)
            if (fits(&self->cards[i], sj))
                cs[n++] = &self->cards[i];
        if (n == (size_t)sp->gpus) {
            lease(self, sj, cs, n, out);
            return 1;
        }
        sj->wait = GF_WAIT_CARDS;
        sj->wait_arg = sp->gpus;
        if (excl) {
            size_t k = 0;
            for (size_t i = 0; i < self->n_cards && k < (size_t)sp->gpus; i++)
                if (self->cards[i].online && !self->cards[i].drained) {
                    block(&self->cards[i], sj);
                    k++;
                }
        }
        return 0;
    }
    }
    return 0;
}

/* Could some card take some job now? */
static bool any_room(const gf_sched *self)
{
    for (size_t i = 0; i < self->n_cards; i++) {
        const card *c = &self->cards[i];
        if (c->online && !c->drained && !c->excl && c->shared < c->slots)
            return true;
    }
    return false;
}

/* The job waiting ahead on a busy card that most deserves a card which is
 * free now (an --any job: one named card has nowhere else to go), and that
 * card in *to; NULL when there is none. */
static gf_sched_job *recall_candidate(gf_sched *self, card **to)
{
    gf_sched_job *best = NULL;
    for (size_t i = 0; i < self->n_cards; i++) {
        uint64_t id = self->cards[i].next;
        gf_sched_job *sj = id ? gf_sched_get(self, id) : NULL;
        if (!sj || sj->recall_to >= 0 || sj->started || sj->job.spec.req != GF_REQ_ANY ||
            (best && !before(sj, best)))
            continue;
        for (size_t k = 0; k < self->n_cards; k++) {
            card *c = &self->cards[k];
            if (k != i && !c->blocked && fits(c, sj)) {
                best = sj;
                *to = c;
                break;
            }
        }
    }
    return best;
}

static void recall(gf_sched *self, gf_sched_job *sj, card *to, gf_sched_decision *out)
{
    out->action = GF_SCHED_RECALL;
    out->id = sj->job.id;
    out->n_cards = 1;
    out->cards[0] = to->index;
    out->from = sj->worker_card;
    to->reserved = sj->job.id;
    sj->recall_to = to->index;
    changed(self);
}

bool gf_sched_next(gf_sched *self, gf_sched_decision *out)
{
    memset(out, 0, sizeof(*out));
    if (self->settled == self->epoch && !any_room(self))
        return false;                 /* the last pass's verdicts all stand */
    for (size_t i = 0; i < self->n_cards; i++) {
        self->cards[i].blocked = false;
        self->cards[i].blocker = 0;
    }
    card *to = NULL;
    gf_sched_job *back = recall_candidate(self, &to);
    /* Every pending job is visited even when no card is free, so that each
     * gets its waiting reason and a failed dependency fails it now. */
    size_t deps = 0;
    for (size_t q = 0; q < self->n_queue; q++) {
        gf_sched_job *sj = self->by_id[self->queue[q]];
        if (back && before(back, sj) && fits(to, back)) {
            recall(self, back, to, out);
            return true;
        }
        if (place(self, sj, out)) {
            out->id = sj->job.id;
            dequeue_at(self, q);
            return true;
        }
        deps += sj->job.spec.n_after > 0;
    }
    if (back && fits(to, back)) {
        recall(self, back, to, out);
        return true;
    }
    self->settled = self->epoch;
    self->deps_waiting = deps;
    return false;
}

void gf_sched_recalled(gf_sched *self, uint64_t id, bool given_back)
{
    gf_sched_job *sj = gf_sched_get(self, id);
    if (!sj || sj->recall_to < 0)
        return;
    if (!given_back) {                /* it started where it was: the other card is free again */
        card *c = find_card(self, sj->recall_to);
        if (c && c->reserved == id)
            c->reserved = 0;
        sj->recall_to = -1;
        changed(self);
        return;
    }
    int to = sj->recall_to;
    gf_sched_release(self, id, true);   /* back in the queue, in its place */
    card *c = find_card(self, to);
    if (c)
        c->reserved = id;               /* still waiting for it */
    sj->recall_to = to;
}

static void lease_ahead(gf_sched_job *sj, card *c)
{
    free(sj->job.cards);
    sj->job.cards = gf_calloc(1, sizeof(int32_t));
    sj->job.cards[0] = c->index;
    sj->job.n_cards = 1;
    c->next = sj->job.id;
    sj->job.state = GF_STATE_RUNNING;
    sj->worker_card = c->index;
    sj->wait = GF_WAIT_NONE;
    sj->started = false;
}

/* May job sj wait ahead on card c? */
static bool ahead_fits(const card *c, const bool *taken, size_t ci)
{
    return c->online && !c->drained && !c->reserved && c->excl && !c->next && c->shared == 0 &&
           !taken[ci];
}

bool gf_sched_next_ahead(gf_sched *self, gf_sched_decision *out)
{
    memset(out, 0, sizeof(*out));
    bool taken[GF_PROTO_MAX_CARDS + 1];     /* an earlier waiting job wants this card */
    size_t nc = self->n_cards < GF_PROTO_MAX_CARDS ? self->n_cards : GF_PROTO_MAX_CARDS;
    memset(taken, 0, sizeof(taken));
    /* most turns of a long queue find every place ahead taken: no pass then */
    bool any_place = false;
    for (size_t i = 0; i < nc && !any_place; i++)
        any_place = ahead_fits(&self->cards[i], taken, i);
    if (!any_place)
        return false;
    for (size_t q = 0; q < self->n_queue; q++) {
        gf_sched_job *sj = self->by_id[self->queue[q]];
        const gf_job_spec *sp = &sj->job.spec;
        if (sj->wait == GF_WAIT_DEPENDENCY || sj->wait == GF_WAIT_NO_WORKER ||
            sj->wait == GF_WAIT_HELD)
            continue;                       /* it could not take a card anyway */
        bool single = sp->req == GF_REQ_GPU || sp->req == GF_REQ_ANY;
        bool eligible = single && sp->mode == GF_MODE_EXCLUSIVE;
        size_t pick = nc;
        for (size_t i = 0; i < nc; i++) {
            card *c = &self->cards[i];
            bool wanted = sp->req != GF_REQ_GPU || c->index == sp->gpu;
            if (!wanted)
                continue;
            if (eligible && pick == nc && ahead_fits(c, taken, i))
                pick = i;
        }
        if (pick < nc) {
            card *c = &self->cards[pick];
            out->action = GF_SCHED_START;
            out->id = sj->job.id;
            out->n_cards = 1;
            out->cards[0] = c->index;
            out->after = c->excl;
            lease_ahead(sj, c);
            dequeue_at(self, q);
            return true;
        }
        /* it waits: no later job may pass it on the cards it wants */
        for (size_t i = 0; i < nc; i++)
            if (sp->req != GF_REQ_GPU || self->cards[i].index == sp->gpu)
                taken[i] = true;
    }
    return false;
}

int gf_sched_hold(gf_sched *self, uint64_t id, const int *cards, size_t n)
{
    gf_sched_job *sj = gf_sched_get(self, id);
    if (!sj || n == 0 || n > GF_PROTO_MAX_CARDS)
        return GF_EINVAL;
    card *cs[GF_PROTO_MAX_CARDS];
    for (size_t i = 0; i < n; i++) {
        cs[i] = find_card(self, cards[i]);
        if (!cs[i])
            return GF_ENOENT;
        bool ok = !cs[i]->excl && (sj->job.spec.mode == GF_MODE_SHARED
                                       ? cs[i]->shared < cs[i]->slots
                                       : cs[i]->shared == 0);
        /* one exclusive job may wait ahead behind another (gf_sched_next_ahead) */
        bool behind = n == 1 && sj->job.spec.mode == GF_MODE_EXCLUSIVE && cs[i]->excl &&
                      !cs[i]->next && cs[i]->shared == 0;
        if (behind) {
            for (size_t q = 0; q < self->n_queue; q++)
                if (self->queue[q] == id) {
                    dequeue_at(self, q);
                    break;
                }
            lease_ahead(sj, cs[i]);
            return 0;
        }
        if (!ok)
            return GF_EBUSY;
    }
    /* a pending job that is reclaimed leaves the queue */
    for (size_t q = 0; q < self->n_queue; q++)
        if (self->queue[q] == id) {
            dequeue_at(self, q);
            break;
        }
    gf_sched_decision d;
    lease(self, sj, cs, n, &d);
    return 0;
}

void gf_sched_release(gf_sched *self, uint64_t id, bool requeue)
{
    gf_sched_job *sj = gf_sched_get(self, id);
    if (!sj)
        return;
    for (size_t i = 0; i < sj->job.n_cards && sj->worker_card >= 0; i++) {
        card *c = find_card(self, sj->job.cards[i]);
        if (!c)
            continue;
        if (c->excl == id) {
            c->excl = c->next;       /* the job waiting ahead holds it now */
            c->next = 0;
        } else if (c->next == id) {
            c->next = 0;
        } else if (sj->job.spec.mode == GF_MODE_SHARED && c->shared > 0) {
            c->shared--;
        }
    }
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].reserved == id)
            self->cards[i].reserved = 0;
    sj->recall_to = -1;
    sj->yield_asked = false;
    sj->requeue_asked = false;
    if (sj->hold_after && requeue) {
        sj->job.held = true;
        sj->job.held_by = sj->hold_by;
    }
    sj->hold_after = false;
    sj->worker_card = -1;
    sj->deadline_ms = 0;
    sj->kill_at_ms = 0;
    sj->started = false;
    sj->timed_out = false;
    sj->cancel_asked = false;
    sj->unclaimed = false;
    dependency_moved(self);
    if (requeue) {
        sj->job.state = GF_STATE_PENDING;
        gf_sched_enqueue(self, sj);
    }
}

bool gf_sched_yieldable(const gf_sched_job *sj)
{
    return sj->job.spec.kind == GF_JOB_DIARIZE || sj->job.spec.yield_sig > 0;
}

/* Does running job sj hold card index? */
static bool holds_card(const gf_sched_job *sj, int index)
{
    for (size_t i = 0; i < sj->job.n_cards; i++)
        if (sj->job.cards[i] == index)
            return true;
    return false;
}

size_t gf_sched_yield_due(gf_sched *self, uint64_t now_ms, uint64_t after_ms, uint64_t *for_id,
                          uint64_t *ids, size_t max)
{
    for (size_t i = 0; i < self->n_cards; i++) {
        card *c = &self->cards[i];
        gf_sched_job *w = c->blocker ? gf_sched_get(self, c->blocker) : NULL;
        if (!w || w->job.state != GF_STATE_PENDING || !w->queued_ms ||
            now_ms < w->queued_ms + after_ms || (c->reserved && c->reserved != w->job.id))
            continue;
        /* every holder must be yieldable, and none asked yet */
        size_t n = 0;
        bool all = true, any = false;
        for (size_t k = 0; k < self->n_live && all; k++) {
            gf_sched_job *h = self->live[k];
            if (h->job.state != GF_STATE_RUNNING || h->worker_card < 0 ||
                !holds_card(h, c->index) || h == w)
                continue;
            any = true;
            if (h->yield_asked)
                continue;
            if (!gf_sched_yieldable(h) || !h->started || n == max)
                all = false;
            else
                ids[n++] = h->job.id;
        }
        if (!all || !any)
            continue;
        c->reserved = w->job.id;     /* no one else takes what they give back */
        changed(self);
        if (n == 0)
            continue;                /* all asked already: it waits for them */
        *for_id = w->job.id;
        return n;
    }
    return 0;
}
