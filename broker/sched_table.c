/* sched_table.c — the scheduler's job table, queue and cards' flags (see
 * sched.h).
 *
 * Jobs live in an array indexed by id (the store hands out dense ids), and
 * in a list of the jobs held for iteration. An ended job is retired: its
 * record is freed and one byte keeps its final state. The queue is an
 * array of pending ids kept sorted by (priority desc, id asc); the rules
 * that read it, and the settled pass whose epoch every change here bumps,
 * are sched.c. */
#include "broker/sched_impl.h"

#include "common/error.h"
#include "common/util.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gf_sched *gf_sched_new(const gf_config *cfg)
{
    gf_sched *self = gf_calloc(1, sizeof(*self));
    self->n_cards = cfg->n_devices;
    self->cards = gf_calloc(cfg->n_devices ? cfg->n_devices : 1, sizeof(card));
    for (size_t i = 0; i < cfg->n_devices; i++) {
        self->cards[i].index = cfg->devices[i].index;
        self->cards[i].slots = cfg->devices[i].shared_slots > 0 ? cfg->devices[i].shared_slots : 1;
    }
    return self;
}

void gf_sched_destroy(gf_sched **self_p)
{
    gf_sched *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->cap_id; i++)
        if (self->by_id[i]) {
            gf_job_clear(&self->by_id[i]->job);
            free(self->by_id[i]);
        }
    free(self->by_id);
    free(self->final);
    free(self->live);
    free(self->queue);
    free(self->cards);
    free(self);
    *self_p = NULL;
}

gf_sched_job *gf_sched_get(gf_sched *self, uint64_t id)
{
    return id < self->cap_id ? self->by_id[id] : NULL;
}

gf_sched_job *gf_sched_iter(gf_sched *self, size_t *pos)
{
    return *pos < self->n_live ? self->live[(*pos)++] : NULL;
}

/* by_id and final cover ids up to id. */
static void grow_ids(gf_sched *self, uint64_t id)
{
    if (id < self->cap_id)
        return;
    size_t nc = self->cap_id ? self->cap_id : 1024;
    while (nc <= id)
        nc *= 2;
    self->by_id = gf_realloc(self->by_id, nc * sizeof(gf_sched_job *));
    memset(self->by_id + self->cap_id, 0, (nc - self->cap_id) * sizeof(gf_sched_job *));
    self->final = gf_realloc(self->final, nc);
    memset(self->final + self->cap_id, 0, nc - self->cap_id);
    self->cap_id = nc;
}

void gf_sched_retire(gf_sched *self, uint64_t id)
{
    gf_sched_job *sj = gf_sched_get(self, id);
    if (!sj)
        return;
    assert(sj->job.state == GF_STATE_DONE || sj->job.state == GF_STATE_FAILED ||
           sj->job.state == GF_STATE_CANCELLED);
    gf_sched_unqueue(self, id);
    dependency_moved(self);
    self->final[id] = (uint8_t)(1 + sj->job.state);
    gf_sched_job *last = self->live[--self->n_live];
    self->live[sj->live_at] = last;
    last->live_at = sj->live_at;
    self->by_id[id] = NULL;
    gf_job_clear(&sj->job);
    free(sj);
}

void gf_sched_forget(gf_sched *self, uint64_t id)
{
    gf_sched_job *sj = gf_sched_get(self, id);
    if (!sj)
        return;
    gf_sched_release(self, id, false);
    gf_sched_unqueue(self, id);
    dependency_moved(self);
    self->final[id] = 0;
    gf_sched_job *last = self->live[--self->n_live];
    self->live[sj->live_at] = last;
    last->live_at = sj->live_at;
    self->by_id[id] = NULL;
    gf_job_clear(&sj->job);
    free(sj);
}

void gf_sched_note_final(gf_sched *self, uint64_t id, gf_job_state state)
{
    if (id == 0 || gf_sched_get(self, id))
        return;
    grow_ids(self, id);
    self->final[id] = (uint8_t)(1 + state);
    dependency_moved(self);
}

void gf_sched_forget_final(gf_sched *self, uint64_t id)
{
    if (id < self->cap_id && !gf_sched_get(self, id))
        self->final[id] = 0;
}

bool gf_sched_final(const gf_sched *self, uint64_t id, gf_job_state *state)
{
    if (id >= self->cap_id || !self->final[id])
        return false;
    *state = (gf_job_state)(self->final[id] - 1);
    return true;
}

void gf_sched_enqueue(gf_sched *self, gf_sched_job *sj)
{
    sj->queued_ms = self->now_ms ? self->now_ms : 1;
    size_t lo = 0, hi = self->n_queue;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (before(self->by_id[self->queue[mid]], sj))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (self->n_queue == self->cap_queue) {
        self->cap_queue = self->cap_queue ? self->cap_queue * 2 : 256;
        self->queue = gf_realloc(self->queue, self->cap_queue * sizeof(uint64_t));
    }
    memmove(&self->queue[lo + 1], &self->queue[lo], (self->n_queue - lo) * sizeof(uint64_t));
    self->queue[lo] = sj->job.id;
    self->n_queue++;
    changed(self);
}

void gf_sched_set_now(gf_sched *self, uint64_t now_ms)
{
    self->now_ms = now_ms;
}

gf_sched_job *gf_sched_add(gf_sched *self, gf_job *job)
{
    assert(job->id > 0 && !gf_sched_get(self, job->id));
    grow_ids(self, job->id);
    gf_sched_job *sj = gf_calloc(1, sizeof(*sj));
    sj->job = *job;
    memset(job, 0, sizeof(*job));
    sj->worker_card = -1;
    sj->recall_to = -1;
    self->by_id[sj->job.id] = sj;
    self->final[sj->job.id] = 0;
    if (self->n_live == self->cap_live) {
        self->cap_live = self->cap_live ? self->cap_live * 2 : 256;
        self->live = gf_realloc(self->live, self->cap_live * sizeof(gf_sched_job *));
    }
    sj->live_at = self->n_live;
    self->live[self->n_live++] = sj;
    if (sj->job.state == GF_STATE_PENDING)
        gf_sched_enqueue(self, sj);
    return sj;
}

/* Set one of card index's flags (its offset in card): a change is news for
 * waiting jobs. GF_ENOENT for an unconfigured card. */
static int set_card_flag(gf_sched *self, int index, size_t flag, bool on)
{
    card *c = find_card(self, index);
    if (!c)
        return GF_ENOENT;
    bool *f = (bool *)((char *)c + flag);
    if (*f != on)
        changed(self);
    *f = on;
    return 0;
}

int gf_sched_card_online(gf_sched *self, int index, bool online)
{
    return set_card_flag(self, index, offsetof(card, online), online);
}

/* Cards kept for job id are free for others again. */
static void unreserve(gf_sched *self, uint64_t id)
{
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].reserved == id) {
            self->cards[i].reserved = 0;
            changed(self);
        }
}

void gf_sched_unqueue(gf_sched *self, uint64_t id)
{
    unreserve(self, id);
    for (size_t q = 0; q < self->n_queue; q++)
        if (self->queue[q] == id) {
            dequeue_at(self, q);
            dependency_moved(self);
            return;
        }
}

size_t gf_sched_pending(const gf_sched *self)
{
    return self->n_queue;
}

void gf_sched_reason(const gf_sched_job *sj, char *buf, size_t len)
{
    switch (sj->wait) {
    case GF_WAIT_DEPENDENCY:
        snprintf(buf, len, "waiting for job %lld", (long long)sj->wait_arg);
        break;
    case GF_WAIT_CARD:
        snprintf(buf, len, "card %lld busy", (long long)sj->wait_arg);
        break;
    case GF_WAIT_ANY_CARD:
        snprintf(buf, len, "all cards busy");
        break;
    case GF_WAIT_NO_WORKER:
        if (sj->wait_arg >= 0)
            snprintf(buf, len, "no worker for card %lld", (long long)sj->wait_arg);
        else
            snprintf(buf, len, "no worker ready");
        break;
    case GF_WAIT_CARDS:
        snprintf(buf, len, "fewer than %lld cards free", (long long)sj->wait_arg);
        break;
    case GF_WAIT_NO_SUCH_CARD:
        snprintf(buf, len, "no card %lld", (long long)sj->wait_arg);
        break;
    case GF_WAIT_HELD:
        snprintf(buf, len, "held by uid %lld", (long long)sj->wait_arg);
        break;
    case GF_WAIT_DRAINED:
        snprintf(buf, len, "card %lld drained", (long long)sj->wait_arg);
        break;
    default:
        snprintf(buf, len, "queued");
        break;
    }
}

void gf_sched_card_load(const gf_sched *self, int index, int *exclusive, int *shared)
{
    *exclusive = 0;
    *shared = 0;
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].index == index) {
            *exclusive = self->cards[i].excl ? 1 : 0;
            *shared = self->cards[i].shared;
        }
}

int gf_sched_set_held(gf_sched *self, uint64_t id, bool held, uint32_t by)
{
    gf_sched_job *sj = gf_sched_get(self, id);
    if (!sj)
        return GF_ENOENT;
    if (held && sj->job.state != GF_STATE_PENDING)
        return GF_ESTATE;
    if (!held && !sj->job.held)
        return GF_ESTATE;
    sj->job.held = held;
    sj->job.held_by = held ? by : 0;
    if (held)
        unreserve(self, id);          /* a card kept for it would sit idle */
    if (!held && sj->wait == GF_WAIT_HELD)
        sj->wait = GF_WAIT_NONE;
    changed(self);
    return 0;
}

int gf_sched_card_drain(gf_sched *self, int index, bool drained)
{
    return set_card_flag(self, index, offsetof(card, drained), drained);
}

bool gf_sched_card_drained(const gf_sched *self, int index)
{
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].index == index)
            return self->cards[i].drained;
    return false;
}
