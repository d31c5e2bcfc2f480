/* sched_impl.h — the inside of the scheduler (broker/sched.h), shared by
 * its two files: sched.c (the rules: where a job may go, and when) and
 * sched_table.c (the job table, the queue, the cards' flags). Nothing else
 * includes it. */
#ifndef GF_SCHED_IMPL_H
#define GF_SCHED_IMPL_H

#include "broker/sched.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One configured card: its leases and the flags the rules read. */
typedef struct {
    int index;        /* configured device index */
    int slots;        /* shared holders admitted at once */
    bool online;      /* a worker is ready for it */
    uint64_t excl;    /* job holding it exclusively, 0 none */
    uint64_t next;    /* exclusive job handed to its worker ahead, to start when excl ends; 0 none */
    int shared;       /* shared holders */
    bool blocked;     /* this pass: an exclusive request waits for it */
    uint64_t blocker;   /* the first exclusive job the last pass saw waiting for it, 0 none */
    uint64_t reserved;  /* only this job may come: one recalled from its place ahead
                         * elsewhere, or the exclusive job its holders yield to */
    bool drained;     /* the operator took it out of service: no new job starts */
} card;

struct gf_sched {
    gf_sched_job **by_id;  /* indexed by job id; NULL where none */
    uint8_t *final;        /* indexed by job id: 1 + final state of a retired job, 0 */
    size_t cap_id;         /* size of by_id and final */
    gf_sched_job **live;   /* the jobs held, each at its live_at */
    size_t n_live;
    size_t cap_live;
    uint64_t *queue;       /* pending ids, in service order */
    size_t n_queue;
    size_t cap_queue;
    card *cards;           /* ascending index */
    size_t n_cards;
    uint64_t epoch;        /* bumped by whatever may change a waiting job's fate */
    uint64_t settled;      /* the epoch at which a pass last decided nothing */
    size_t deps_waiting;   /* jobs with dependencies that pass saw waiting */
    uint64_t now_ms;       /* the caller's clock (gf_sched_set_now), for queued_ms */
};

/* Something may change a waiting job's fate or reason: the next pass runs. */
static inline void changed(gf_sched *self)
{
    self->epoch++;
}

/* A job ended or left the queue: that matters to jobs waiting on it. */
static inline void dependency_moved(gf_sched *self)
{
    if (self->deps_waiting)
        changed(self);
}

/* The card with configured index `index`, NULL: none. */
static inline card *find_card(gf_sched *self, int index)
{
    for (size_t i = 0; i < self->n_cards; i++)
        if (self->cards[i].index == index)
            return &self->cards[i];
    return NULL;
}

/* Service order: higher priority first, then lower id. */
static inline bool before(const gf_sched_job *a, const gf_sched_job *b)
{
    if (a->job.spec.priority != b->job.spec.priority)
        return a->job.spec.priority > b->job.spec.priority;
    return a->job.id < b->job.id;
}

/* Take the queue's entry at pos out (order kept). */
static inline void dequeue_at(gf_sched *self, size_t pos)
{
    memmove(&self->queue[pos], &self->queue[pos + 1],
            (self->n_queue - pos - 1) * sizeof(uint64_t));
    self->n_queue--;
}

/* Put pending job sj into the queue, in its place (priority, then id). */
void gf_sched_enqueue(gf_sched *self, gf_sched_job *sj);

#endif
