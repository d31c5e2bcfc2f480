/* sched.h — the broker's job table, queue and card lease table.
 *
 * Pure bookkeeping, no sockets and no store: the server feeds it jobs and
 * worker events and asks it, again and again, which job may start next on
 * which cards. That keeps every scheduling rule testable on its own
 * (tests/unit/test_sched.c):
 *   - priority (higher first), then submission order (id);
 *   - a job asks for one card, any card or K cards (all or none, the K
 *     lowest free indices), exclusive or shared (up to the card's slots);
 *   - once an exclusive request waits for a card, no new shared job is
 *     admitted there (shared jobs cannot starve an exclusive one);
 *   - --after: a job waits for its dependencies to end done, and fails when
 *     one of them failed or was cancelled;
 *   - an exclusive one-card job may wait "ahead" behind a card's exclusive
 *     holder, on its worker (gf_sched_next_ahead);
 *   - a job ahead never waits there while another card that could run it
 *     is idle, and no lower job takes that card first: it is recalled
 *     (GF_SCHED_RECALL) and the card reserved for it.
 * The cards here are logical leases; the flock(2) lock itself is taken by
 * the job's own process on the worker. */
#ifndef GF_SCHED_H
#define GF_SCHED_H

#include "common/config.h"
#include "net/proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gf_sched gf_sched;

/* Why a pending job is not running (formatted by gf_sched_reason). */
typedef enum {
    GF_WAIT_NONE = 0,
    GF_WAIT_DEPENDENCY,   /* arg: the job id waited for */
    GF_WAIT_CARD,         /* arg: the card index it wants, busy */
    GF_WAIT_ANY_CARD,     /* every card it could use is busy */
    GF_WAIT_NO_WORKER,    /* arg: card without a ready worker */
    GF_WAIT_CARDS,        /* fewer than K cards free */
    GF_WAIT_NO_SUCH_CARD, /* arg: no such card configured (never starts) */
    GF_WAIT_HELD,         /* arg: the uid that holds it */
    GF_WAIT_DRAINED,      /* arg: the card it wants, drained */
} gf_wait;

/* One job as the broker holds it. */
typedef struct {
    gf_job job;           /* the record, as in the store */
    gf_wait wait;         /* pending: why it waits */
    int64_t wait_arg;
    int worker_card;      /* running: card whose worker runs it, -1 */
    uint64_t deadline_ms; /* running: monotonic time limit, 0 none */
    uint64_t kill_at_ms;  /* kill sent: when to give up waiting, 0 none */
    bool cancel_asked;    /* cancelled while running: record it so at the end */
    bool started;         /* the worker reported the process started */
    bool timed_out;       /* killed for its time limit */
    bool unclaimed;       /* running per the store at start-up, no worker has claimed it yet */
    int recall_to;        /* recalled from its place ahead: the card reserved for it, -1 none */
    bool yield_asked;     /* running: asked to yield (or requeue); cleared when it stops */
    bool requeue_asked;   /* ... by `gpuflock requeue`: a job that cannot checkpoint is stopped */
    char yield_why[96];   /* the reason it waits with afterwards: "yielded to job 12" */
    bool hold_after;      /* cancel --checkpoint: held once it has yielded */
    uint32_t hold_by;     /* ... by this uid */
    uint64_t queued_ms;   /* pending: the caller's clock when it joined the queue */
    bool env_stored;      /* its environment is in the store only: read back for its worker
                           * and for its owner's `show` (a queue of thousands would
                           * otherwise hold thousands of copies) */
    bool dirty;           /* changed since the store last committed it (the server keeps
                           * such changes while the store cannot commit, and writes
                           * them again until it can) */
    size_t live_at;       /* its place in the table's list of jobs held */
} gf_sched_job;

/* A decision of gf_sched_next. */
typedef struct {
    enum { GF_SCHED_START, GF_SCHED_FAIL, GF_SCHED_RECALL } action;
    uint64_t id;
    int cards[GF_PROTO_MAX_CARDS];  /* START: ascending */
    size_t n_cards;
    char reason[160];               /* FAIL: why */
    uint64_t after;                 /* START from gf_sched_next_ahead: the job it waits behind */
    int from;                       /* RECALL: the card whose worker has the job (cards[0]:
                                     * the card reserved for it) */
} gf_sched_decision;

/* A table for the configured devices (copied). */
gf_sched *gf_sched_new(const gf_config *cfg);
void gf_sched_destroy(gf_sched **self_p);

/* Take a job into the table (moved: *job is zeroed). A pending job joins the
 * queue; a running one must then be given its cards with gf_sched_hold. */
gf_sched_job *gf_sched_add(gf_sched *self, gf_job *job);

/* The job with this id, or NULL (none, or retired). */
gf_sched_job *gf_sched_get(gf_sched *self, uint64_t id);

/* Every job held (not retired), in no particular order: call with *pos = 0
 * and again while it returns non-NULL. Do not retire jobs while iterating. */
gf_sched_job *gf_sched_iter(gf_sched *self, size_t *pos);

/* Let an ended job go: its record is freed and the table keeps only its
 * final state (one byte per id), which --after dependencies read. The job
 * must have ended; it leaves the queue and holds no card. Keeps a broker's
 * memory and per-turn work to the jobs that are live, however long it runs. */
void gf_sched_retire(gf_sched *self, uint64_t id);
/* Let a job go that never was: its submit did not reach the store (the
 * commit failed), so its id is handed out again. Unlike gf_sched_retire it
 * leaves no final state; the job leaves the queue and its cards. */
void gf_sched_forget(gf_sched *self, uint64_t id);
/* Record the final state of an ended job the table never held (a job of an
 * earlier run, read back from the store for a dependency). */
void gf_sched_note_final(gf_sched *self, uint64_t id, gf_job_state state);
/* Forget the final state of a job that no longer exists (its record was
 * removed from the store, broker/history.c): --after it is refused. */
void gf_sched_forget_final(gf_sched *self, uint64_t id);
/* The final state of a retired (or noted) job: true and *state, else false. */
bool gf_sched_final(const gf_sched *self, uint64_t id, gf_job_state *state);

/* A worker for card `index` became ready (true) or went away (false).
 * Returns GF_ENOENT for an unconfigured card. */
int gf_sched_card_online(gf_sched *self, int index, bool online);

/* The next thing to do, or false when nothing can start now. A START has
 * already leased the cards and marked the job running (the caller bumps
 * attempts, stamps and persists it); a FAIL removed it from the queue (the
 * caller records the failure); a RECALL asks the caller to take a job
 * waiting ahead on card `from` back from that card's worker, cards[0] being
 * reserved for it meanwhile (then gf_sched_recalled). Waiting jobs get their
 * reason updated. */
bool gf_sched_next(gf_sched *self, gf_sched_decision *out);

/* A recall is settled: given_back, the worker had not started the job, which
 * is pending again in its place with the reserved card kept for it; else it
 * started where it was, and the reserved card is free again. */
void gf_sched_recalled(gf_sched *self, uint64_t id, bool given_back);

/* When gf_sched_next has nothing: the first pending exclusive one-card job
 * (queue order; no earlier waiting job wants the card) that may wait
 * "ahead" on a card held exclusively by another job: it is leased behind
 * the holder (out->after), marked running, and takes the card over when
 * the holder is released. One such job per card. The worker gets it at
 * once and starts it the moment the holder's processes end (its lock is
 * the real arbiter). Returns false when there is none. */
bool gf_sched_next_ahead(gf_sched *self, gf_sched_decision *out);

/* Lease cards to a job that is already running (reclaimed after a broker
 * restart); an exclusive one-card job on a card held exclusively by
 * another takes its ahead place. Returns GF_EBUSY when the cards are not
 * free for it. */
int gf_sched_hold(gf_sched *self, uint64_t id, const int *cards, size_t n);

/* The job stopped running: its cards are freed. With requeue, it goes back
 * to the queue as pending (same place: priority, then id). */
void gf_sched_release(gf_sched *self, uint64_t id, bool requeue);

/* Remove a pending job from the queue (cancelled); no-op otherwise. */
void gf_sched_unqueue(gf_sched *self, uint64_t id);

/* Pending jobs in the queue. */
size_t gf_sched_pending(const gf_sched *self);

/* Human text for a waiting job: "waiting for job 12", "card 1 busy", ... */
void gf_sched_reason(const gf_sched_job *sj, char *buf, size_t len);

/* The caller's monotonic clock, read when a job joins the queue. */
void gf_sched_set_now(gf_sched *self, uint64_t now_ms);

/* Hold a pending job (by uid `by`) or release a held one: GF_ENOENT,
 * GF_ESTATE (not pending / not held), else 0. A held job stays in the queue
 * in its place, waits with GF_WAIT_HELD and holds no one back. */
int gf_sched_set_held(gf_sched *self, uint64_t id, bool held, uint32_t by);

/* Take card index out of service (no job starts there, nor waits ahead) or
 * put it back. GF_ENOENT for an unconfigured card. */
int gf_sched_card_drain(gf_sched *self, int index, bool drained);
bool gf_sched_card_drained(const gf_sched *self, int index);

/* May this job be asked to yield its card? Diarize jobs (they checkpoint)
 * and command jobs submitted with --yieldable. */
bool gf_sched_yieldable(const gf_sched_job *sj);

/* Yielding: the first card whose blocker (the first exclusive job waiting
 * for it) has waited after_ms since it was queued and whose holders are all
 * yieldable and started: those not yet asked go into ids (at most max), the
 * blocker into *for_id, and the card is reserved for the blocker (nothing
 * else starts there meanwhile). The caller asks each to yield and sets its
 * yield_asked. Returns how many; 0: nothing to do now. */
size_t gf_sched_yield_due(gf_sched *self, uint64_t now_ms, uint64_t after_ms, uint64_t *for_id,
                          uint64_t *ids, size_t max);

/* Holders of a card now: exclusive (0/1) and shared counts. */
void gf_sched_card_load(const gf_sched *self, int index, int *exclusive, int *shared);

#endif
