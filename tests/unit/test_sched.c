/* test_sched.c — the scheduling rules, on the job table alone: priority
 * then submission order, named/any/K cards, exclusive vs shared slots, the
 * exclusive waiter blocking new shared jobs, --after, requeue, reclaim,
 * exclusive jobs handed to a busy card's worker ahead of time, ended
 * jobs retired from the table (their final state kept for --after), and
 * jobs forgotten whose submit never reached the store. */
#include "broker/sched.h"
#include "common/config.h"
#include "common/error.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static const char yaml[] =
    "run_dir: /tmp/gf-sched-test/run\n"
    "state_dir: /tmp/gf-sched-test/state\n"
    "devices:\n"
    "  - {index: 0, kind: cpu, lock: /tmp/gf-sched-test/gpu0.lock, shared_slots: 2}\n"
    "  - {index: 1, kind: cpu, lock: /tmp/gf-sched-test/gpu1.lock, shared_slots: 2}\n"
    "  - {index: 2, kind: cpu, lock: /tmp/gf-sched-test/gpu2.lock, shared_slots: 2}\n";

static gf_sched *make(int online_cards)
{
    gf_config *cfg = NULL;
    assert_int_equal(gf_config_parse("test.yaml", yaml, strlen(yaml), &cfg), 0);
    gf_sched *s = gf_sched_new(cfg);
    gf_config_destroy(&cfg);
    for (int i = 0; i < online_cards; i++)
        assert_int_equal(gf_sched_card_online(s, i, true), 0);
    return s;
}

static uint64_t add(gf_sched *s, uint64_t id, gf_req_kind req, int n, gf_job_mode mode, int prio)
{
    gf_job j;
    gf_job_init(&j);
    j.id = id;
    j.spec.argv = gf_calloc(2, sizeof(char *));
    j.spec.argv[0] = gf_strdup("true");
    j.spec.argc = 1;
    j.spec.req = req;
    if (req == GF_REQ_GPU)
        j.spec.gpu = n;
    if (req == GF_REQ_GPUS)
        j.spec.gpus = n;
    j.spec.mode = mode;
    j.spec.priority = prio;
    gf_sched_add(s, &j);
    return id;
}

/* The next start, or 0 when nothing starts. */
static uint64_t next(gf_sched *s, int *card0)
{
    gf_sched_decision d;
    if (!gf_sched_next(s, &d))
        return 0;
    assert_int_equal(d.action, GF_SCHED_START);
    if (card0)
        *card0 = d.cards[0];
    return d.id;
}

static void test_priority_then_order(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 2, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 5);
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 5);
    add(s, 4, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, -1);
    uint64_t order[4];
    for (int i = 0; i < 4; i++) {
        order[i] = next(s, NULL);
        assert_int_equal(next(s, NULL), 0);   /* one card, exclusive: one at a time */
        gf_sched_get(s, order[i])->job.state = GF_STATE_DONE;
        gf_sched_release(s, order[i], false);
    }
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 3);
    assert_int_equal(order[2], 1);
    assert_int_equal(order[3], 4);
    gf_sched_destroy(&s);
}

static void test_shared_slots_and_exclusive(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
    add(s, 2, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
    add(s, 3, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 2);
    assert_int_equal(next(s, NULL), 0);     /* two slots */
    int ex, sh;
    gf_sched_card_load(s, 0, &ex, &sh);
    assert_int_equal(sh, 2);
    char why[80];
    gf_sched_reason(gf_sched_get(s, 3), why, sizeof(why));
    assert_string_equal(why, "card 0 busy");
    gf_sched_release(s, 1, false);
    assert_int_equal(next(s, NULL), 3);
    /* an exclusive job waits for both shared holders */
    add(s, 4, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_release(s, 2, false);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_release(s, 3, false);
    assert_int_equal(next(s, NULL), 4);
    gf_sched_card_load(s, 0, &ex, &sh);
    assert_int_equal(ex, 1);
    gf_sched_destroy(&s);
}

/* Shared jobs keep arriving while an exclusive one waits: none of those
 * that came after it starts on its card before it. */
static void test_exclusive_not_starved(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
    assert_int_equal(next(s, NULL), 1);
    add(s, 2, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    uint64_t id = 3;
    for (int round = 0; round < 5; round++) {
        add(s, id++, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
        assert_int_equal(next(s, NULL), 0);   /* a free shared slot, but 2 waits */
    }
    gf_sched_release(s, 1, false);
    assert_int_equal(next(s, NULL), 2);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_release(s, 2, false);
    assert_int_equal(next(s, NULL), 3);
    assert_int_equal(next(s, NULL), 4);
    gf_sched_destroy(&s);
}

static void test_any_and_gpus(void **state)
{
    (void)state;
    gf_sched *s = make(3);
    int c;
    add(s, 1, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, &c), 1);
    assert_int_equal(c, 0);
    add(s, 2, GF_REQ_GPUS, 2, GF_MODE_EXCLUSIVE, 0);
    gf_sched_decision d;
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.id, 2);
    assert_int_equal(d.n_cards, 2);
    assert_int_equal(d.cards[0], 1);
    assert_int_equal(d.cards[1], 2);
    /* K cards all or none: 2 cards wanted, one free after job 1 ends */
    add(s, 3, GF_REQ_GPUS, 2, GF_MODE_EXCLUSIVE, 0);
    gf_sched_release(s, 1, false);
    assert_int_equal(next(s, NULL), 0);
    char why[80];
    gf_sched_reason(gf_sched_get(s, 3), why, sizeof(why));
    assert_string_equal(why, "fewer than 2 cards free");
    gf_sched_release(s, 2, false);
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.id, 3);
    assert_int_equal(d.cards[0], 0);
    assert_int_equal(d.cards[1], 1);
    /* more cards than configured, or an unknown card: fail at once */
    add(s, 4, GF_REQ_GPUS, 4, GF_MODE_EXCLUSIVE, 0);
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.action, GF_SCHED_FAIL);
    add(s, 5, GF_REQ_GPU, 9, GF_MODE_EXCLUSIVE, 0);
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.action, GF_SCHED_FAIL);
    assert_non_null(strstr(d.reason, "no card 9"));
    gf_sched_destroy(&s);
}

static void test_offline_cards(void **state)
{
    (void)state;
    gf_sched *s = make(0);
    add(s, 1, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    char why[80];
    gf_sched_reason(gf_sched_get(s, 1), why, sizeof(why));
    assert_string_equal(why, "no worker for card 1");
    gf_sched_card_online(s, 0, true);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_card_online(s, 1, true);
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(gf_sched_card_online(s, 7, true), GF_ENOENT);
    gf_sched_destroy(&s);
}

static void test_after(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    add(s, 1, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 2, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    gf_sched_job *sj = gf_sched_get(s, 2);
    sj->job.spec.after = gf_calloc(1, sizeof(uint64_t));
    sj->job.spec.after[0] = 1;
    sj->job.spec.n_after = 1;
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    sj = gf_sched_get(s, 3);
    sj->job.spec.after = gf_calloc(1, sizeof(uint64_t));
    sj->job.spec.after[0] = 2;
    sj->job.spec.n_after = 1;
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 0);   /* a free card, but 2 waits for 1 */
    char why[80];
    gf_sched_reason(gf_sched_get(s, 2), why, sizeof(why));
    assert_string_equal(why, "waiting for job 1");
    gf_sched_get(s, 1)->job.state = GF_STATE_DONE;
    gf_sched_release(s, 1, false);
    assert_int_equal(next(s, NULL), 2);
    gf_sched_get(s, 2)->job.state = GF_STATE_FAILED;
    gf_sched_release(s, 2, false);
    gf_sched_decision d;
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.id, 3);
    assert_int_equal(d.action, GF_SCHED_FAIL);
    assert_string_equal(d.reason, "dependency 2 failed");
    assert_int_equal(gf_sched_pending(s), 0);
    gf_sched_destroy(&s);
}

static void set_after(gf_sched *s, uint64_t id, uint64_t dep)
{
    gf_sched_job *sj = gf_sched_get(s, id);
    sj->job.spec.after = gf_calloc(1, sizeof(uint64_t));
    sj->job.spec.after[0] = dep;
    sj->job.spec.n_after = 1;
}

static size_t held(gf_sched *s)
{
    size_t pos = 0, n = 0;
    while (gf_sched_iter(s, &pos))
        n++;
    return n;
}

/* Retired jobs leave the table and its iteration; --after reads their final
 * state, and that of jobs noted from the store; unknown ids still fail. */
static void test_retire(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    for (uint64_t id = 1; id <= 6; id++)
        add(s, id, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    set_after(s, 3, 1);     /* 1 done, retired */
    set_after(s, 4, 2);     /* 2 failed, retired */
    set_after(s, 5, 40);    /* 40: ended before this table, noted done */
    set_after(s, 6, 41);    /* 41: never existed */
    gf_sched_note_final(s, 40, GF_STATE_DONE);
    assert_int_equal(next(s, NULL), 1);
    gf_sched_get(s, 1)->job.state = GF_STATE_DONE;
    gf_sched_release(s, 1, false);
    gf_sched_retire(s, 1);
    assert_null(gf_sched_get(s, 1));
    gf_job_state st;
    assert_true(gf_sched_final(s, 1, &st));
    assert_int_equal(st, GF_STATE_DONE);
    assert_false(gf_sched_final(s, 3, &st));   /* held, not retired */
    assert_int_equal(held(s), 5);
    /* 2 fails without ever running (cancelled while pending) */
    gf_sched_unqueue(s, 2);
    gf_sched_get(s, 2)->job.state = GF_STATE_FAILED;
    gf_sched_retire(s, 2);
    assert_int_equal(held(s), 4);
    gf_sched_decision d;
    int started = 0, failed = 0;
    while (gf_sched_next(s, &d)) {
        if (d.action == GF_SCHED_START) {
            started++;
            assert_true(d.id == 3 || d.id == 5);
            gf_sched_get(s, d.id)->job.state = GF_STATE_DONE;
            gf_sched_release(s, d.id, false);
            gf_sched_retire(s, d.id);
        } else {
            failed++;
            assert_true(d.id == 4 || d.id == 6);
            assert_string_equal(d.reason, d.id == 4 ? "dependency 2 failed"
                                                    : "dependency 41 does not exist");
            gf_sched_get(s, d.id)->job.state = GF_STATE_FAILED;
            gf_sched_retire(s, d.id);
        }
    }
    assert_int_equal(started, 2);
    assert_int_equal(failed, 2);
    assert_int_equal(held(s), 0);
    assert_int_equal(gf_sched_pending(s), 0);
    /* ids go on; a new job after retirements is held and iterated */
    add(s, 7, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(held(s), 1);
    assert_int_equal(next(s, NULL), 7);
    gf_sched_destroy(&s);
}

/* A submit whose commit failed: its jobs go, started or not, and leave no
 * trace; their ids come again with the next submit. */
static void test_forget(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 1);          /* 1 runs on card 0 */
    add(s, 2, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 3, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    gf_sched_decision d;
    assert_true(gf_sched_next_ahead(s, &d));     /* 2 waits ahead behind 1 */
    assert_int_equal(d.id, 2);
    /* the turn that took 2 and 3 (and sent 2 ahead) failed to commit */
    gf_sched_forget(s, 2);
    gf_sched_forget(s, 3);
    assert_null(gf_sched_get(s, 2));
    assert_null(gf_sched_get(s, 3));
    gf_job_state st;
    assert_false(gf_sched_final(s, 2, &st));     /* never was: no final state */
    assert_int_equal(gf_sched_pending(s), 0);
    assert_int_equal(held(s), 1);
    /* the same ids again, from the next submit: 2 is ahead of 3 as before */
    add(s, 2, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 3, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    assert_true(gf_sched_next_ahead(s, &d));
    assert_int_equal(d.id, 2);
    gf_sched_get(s, 1)->job.state = GF_STATE_DONE;
    gf_sched_release(s, 1, false);               /* 2 takes the card over */
    gf_sched_retire(s, 1);
    int ex, sh;
    gf_sched_card_load(s, 0, &ex, &sh);
    assert_int_equal(ex, 1);
    gf_sched_forget(s, 2);                       /* a holder forgotten frees its card */
    gf_sched_card_load(s, 0, &ex, &sh);
    assert_int_equal(ex, 0);
    assert_int_equal(next(s, NULL), 3);
    gf_sched_destroy(&s);
}

static void test_requeue_and_hold(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 2, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 1);
    gf_sched_release(s, 1, true);           /* its worker died */
    assert_int_equal(gf_sched_get(s, 1)->job.state, GF_STATE_PENDING);
    assert_int_equal(next(s, NULL), 1);     /* back in its place, before 2 */
    gf_sched_release(s, 1, false);
    /* a reclaimed running job holds its card: 2 cannot start */
    int cards[1] = { 0 };
    assert_int_equal(gf_sched_hold(s, 1, cards, 1), 0);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_unqueue(s, 2);
    assert_int_equal(gf_sched_pending(s), 0);
    /* a second reclaimed exclusive job takes the place ahead, a third none */
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(gf_sched_hold(s, 3, cards, 1), 0);
    add(s, 4, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(gf_sched_hold(s, 4, cards, 1), GF_EBUSY);
    add(s, 5, GF_REQ_ANY, 0, GF_MODE_SHARED, 0);
    assert_int_equal(gf_sched_hold(s, 5, cards, 1), GF_EBUSY);
    size_t pos = 0, n = 0;
    while (gf_sched_iter(s, &pos))
        n++;
    assert_int_equal(n, 5);
    gf_sched_destroy(&s);
}

/* The one start of gf_sched_next_ahead, or 0; *after: the job it waits behind. */
static uint64_t ahead(gf_sched *s, int *card0, uint64_t *after)
{
    gf_sched_decision d;
    if (!gf_sched_next_ahead(s, &d))
        return 0;
    assert_int_equal(d.action, GF_SCHED_START);
    assert_int_equal(d.n_cards, 1);
    if (card0)
        *card0 = d.cards[0];
    if (after)
        *after = d.after;
    return d.id;
}

static void test_ahead(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    for (uint64_t id = 1; id <= 6; id++)
        add(s, id, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    int c;
    uint64_t after;
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 2);
    assert_int_equal(next(s, NULL), 0);
    /* nothing free: one job waits ahead on each busy card, in queue order */
    assert_int_equal(ahead(s, &c, &after), 3);
    assert_int_equal(c, 0);
    assert_int_equal(after, 1);
    assert_int_equal(ahead(s, &c, &after), 4);
    assert_int_equal(c, 1);
    assert_int_equal(after, 2);
    assert_int_equal(ahead(s, NULL, NULL), 0);
    assert_int_equal(gf_sched_get(s, 3)->job.state, GF_STATE_RUNNING);
    assert_int_equal(gf_sched_get(s, 3)->worker_card, 0);
    /* the holder ends: the job ahead holds the card, and 5 goes ahead of it */
    gf_sched_release(s, 1, false);
    assert_int_equal(next(s, NULL), 0);
    int excl, shared;
    gf_sched_card_load(s, 0, &excl, &shared);
    assert_int_equal(excl, 1);
    assert_int_equal(ahead(s, &c, &after), 5);
    assert_int_equal(c, 0);
    assert_int_equal(after, 3);
    /* the job ahead is cancelled before it starts: its place is free again */
    gf_sched_release(s, 5, false);
    assert_int_equal(ahead(s, &c, NULL), 6);
    assert_int_equal(c, 0);
    /* a worker death requeues holder and job ahead, holder first */
    gf_sched_release(s, 3, true);
    gf_sched_release(s, 6, true);
    gf_sched_card_load(s, 0, &excl, &shared);
    assert_int_equal(excl, 0);
    assert_int_equal(next(s, &c), 3);
    assert_int_equal(c, 0);
    gf_sched_destroy(&s);
}

static void test_ahead_keeps_order(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 2, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 2);
    /* an earlier shared job waits for card 0, a multi-card job for both:
     * no later exclusive job may pass them */
    add(s, 3, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
    add(s, 4, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(ahead(s, NULL, NULL), 0);
    add(s, 5, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);
    int c;
    assert_int_equal(ahead(s, &c, NULL), 5);     /* card 1: nobody earlier wants it */
    assert_int_equal(c, 1);
    add(s, 6, GF_REQ_GPUS, 2, GF_MODE_EXCLUSIVE, 9);
    add(s, 7, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    gf_sched_release(s, 2, false);               /* 5 holds card 1 now */
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(ahead(s, NULL, NULL), 0);   /* 6 (priority 9) wants both cards */
    /* a job waiting for a dependency does not hold anyone back */
    gf_sched_unqueue(s, 6);
    gf_sched_unqueue(s, 3);
    gf_sched_unqueue(s, 4);
    gf_job j;
    gf_job_init(&j);
    j.id = 8;
    j.spec.argv = gf_calloc(2, sizeof(char *));
    j.spec.argv[0] = gf_strdup("true");
    j.spec.argc = 1;
    j.spec.req = GF_REQ_ANY;
    j.spec.mode = GF_MODE_EXCLUSIVE;
    j.spec.priority = 5;
    j.spec.after = gf_calloc(1, sizeof(uint64_t));
    j.spec.after[0] = 7;
    j.spec.n_after = 1;
    gf_sched_add(s, &j);
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(ahead(s, &c, NULL), 7);
    assert_int_equal(c, 0);
    gf_sched_destroy(&s);
}

/* The decision of one gf_sched_next call: its action, id and card. */
static int decide(gf_sched *s, uint64_t *id, int *card0, int *from)
{
    gf_sched_decision d;
    if (!gf_sched_next(s, &d))
        return -1;
    *id = d.id;
    if (card0)
        *card0 = d.cards[0];
    if (from)
        *from = d.from;
    return d.action;
}

/* Rule: a job handed ahead to a busy card never waits there while another
 * card that could run it is idle, and no lower-priority job starts before
 * it. (Seen: a --priority 10 job ahead on card 1 behind a 20 s job while
 * card 0 freed, ran two priority-0 jobs and sat idle.) */
static void test_ahead_job_recalled_to_idle_card(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);       /* short, on card 0 */
    add(s, 2, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);    /* long, on card 1 */
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 2);
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 10);
    int c;
    uint64_t after, id;
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(ahead(s, &c, &after), 3);          /* ahead on card 1, behind job 2 */
    assert_int_equal(c, 1);
    add(s, 4, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 5, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    /* card 0 frees: job 3 is recalled to it, before 4 and 5 */
    gf_sched_get(s, 1)->job.state = GF_STATE_DONE;
    gf_sched_release(s, 1, false);
    int from;
    assert_int_equal(decide(s, &id, &c, &from), GF_SCHED_RECALL);
    assert_int_equal(id, 3);
    assert_int_equal(c, 0);
    assert_int_equal(from, 1);
    assert_int_equal(next(s, NULL), 0);                 /* card 0 is kept for it */
    gf_sched_recalled(s, 3, true);                      /* its worker gave it back */
    assert_int_equal(next(s, &c), 3);
    assert_int_equal(c, 0);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_destroy(&s);
}

/* The recall lost the race (the job started on its busy card as that card's
 * holder ended): the reserved card goes to the next job. */
static void test_recall_lost_race(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_SHARED, 0);
    add(s, 2, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 2);
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(ahead(s, NULL, NULL), 3);
    add(s, 4, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    gf_sched_release(s, 1, false);
    uint64_t id;
    int c;
    assert_int_equal(decide(s, &id, &c, NULL), GF_SCHED_RECALL);   /* 3 precedes 4 */
    assert_int_equal(id, 3);
    gf_sched_release(s, 2, false);        /* 2 ends: 3 holds card 1 and starts there */
    gf_sched_get(s, 3)->started = true;
    gf_sched_recalled(s, 3, false);
    assert_int_equal(next(s, &c), 4);
    assert_int_equal(c, 0);
    /* a job named for one card is never recalled */
    add(s, 5, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(ahead(s, NULL, NULL), 5);
    gf_sched_release(s, 4, false);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_destroy(&s);
}

/* Rule: a held job stays pending in its place, holds no one back, and runs
 * once released. */
static void test_hold_and_release(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 5);
    add(s, 2, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(gf_sched_set_held(s, 1, true, 1001), 0);
    assert_int_equal(next(s, NULL), 2);                  /* 1 is held: 2 passes it */
    char why[80];
    gf_sched_reason(gf_sched_get(s, 1), why, sizeof why);
    assert_string_equal(why, "held by uid 1001");
    assert_int_equal(gf_sched_set_held(s, 2, true, 0), GF_ESTATE);   /* running */
    assert_int_equal(gf_sched_set_held(s, 9, true, 0), GF_ENOENT);
    gf_sched_release(s, 2, false);
    assert_int_equal(next(s, NULL), 0);                  /* still held */
    assert_int_equal(gf_sched_set_held(s, 1, false, 0), 0);
    assert_int_equal(gf_sched_set_held(s, 1, false, 0), GF_ESTATE);  /* not held */
    assert_int_equal(next(s, NULL), 1);
    gf_sched_destroy(&s);
}

/* Rule: nothing starts on a drained card, nor waits ahead there; jobs for
 * it say so; --any jobs go elsewhere; resumed, it serves again. */
static void test_drain(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    assert_int_equal(gf_sched_card_drain(s, 0, true), 0);
    assert_int_equal(gf_sched_card_drain(s, 7, true), GF_ENOENT);
    assert_true(gf_sched_card_drained(s, 0));
    add(s, 1, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 2, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    int c;
    assert_int_equal(next(s, &c), 2);
    assert_int_equal(c, 1);
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(ahead(s, &c, NULL), 3);             /* ahead on card 1, not 0 */
    assert_int_equal(c, 1);
    char why[80];
    gf_sched_reason(gf_sched_get(s, 1), why, sizeof why);
    assert_string_equal(why, "card 0 drained");
    assert_int_equal(gf_sched_card_drain(s, 0, false), 0);
    assert_int_equal(next(s, &c), 1);
    assert_int_equal(c, 0);
    gf_sched_destroy(&s);
}

static uint64_t add_diarize(gf_sched *s, uint64_t id, int gpu)
{
    add(s, id, GF_REQ_GPU, gpu, GF_MODE_SHARED, 0);
    gf_sched_get(s, id)->job.spec.kind = GF_JOB_DIARIZE;
    return id;
}

/* Rule: an exclusive job that has waited yield_after for a card held by
 * yieldable jobs makes them yield (once); the card is kept for it, so the
 * yielded jobs, back in the queue ahead of it, do not take it again; a
 * job that is not yieldable is never asked. */
static void test_yield(void **state)
{
    (void)state;
    gf_sched *s = make(2);
    gf_sched_set_now(s, 1000);
    for (uint64_t id = 1; id <= 2; id++) {
        add_diarize(s, id, 0);
        assert_int_equal(next(s, NULL), id);
        gf_sched_get(s, id)->started = true;
    }
    add(s, 3, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);      /* a proof suite, say */
    assert_int_equal(next(s, NULL), 0);
    uint64_t ids[8], w = 0;
    assert_int_equal(gf_sched_yield_due(s, 5999, 5000, &w, ids, 8), 0);   /* not yet */
    size_t n = gf_sched_yield_due(s, 6000, 5000, &w, ids, 8);
    assert_int_equal(n, 2);
    assert_int_equal(w, 3);
    gf_sched_get(s, ids[0])->yield_asked = true;
    gf_sched_get(s, ids[1])->yield_asked = true;
    assert_int_equal(gf_sched_yield_due(s, 7000, 5000, &w, ids, 8), 0);   /* asked once */
    /* they yield: back in the queue, ahead of 3, but card 0 is kept for 3 */
    gf_sched_release(s, 1, true);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_release(s, 2, true);
    assert_int_equal(next(s, NULL), 3);
    assert_int_equal(next(s, NULL), 0);
    /* 3 ends: they resume */
    gf_sched_release(s, 3, false);
    assert_int_equal(next(s, NULL), 1);
    assert_int_equal(next(s, NULL), 2);
    /* the job a card is kept for is held: the card is free for others */
    gf_sched_release(s, 1, false);
    gf_sched_release(s, 2, false);
    add_diarize(s, 7, 0);
    assert_int_equal(next(s, NULL), 7);
    gf_sched_get(s, 7)->started = true;
    add(s, 8, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(gf_sched_yield_due(s, 99000, 5000, &w, ids, 8), 1);
    gf_sched_get(s, 7)->yield_asked = true;
    gf_sched_release(s, 7, true);                       /* it yielded */
    assert_int_equal(gf_sched_set_held(s, 8, true, 0), 0);
    assert_int_equal(next(s, NULL), 7);                 /* not kept for the held job */
    gf_sched_release(s, 7, false);
    gf_sched_unqueue(s, 8);
    /* a command job that is not yieldable beside them: nobody is asked */
    add(s, 4, GF_REQ_GPU, 1, GF_MODE_SHARED, 0);
    assert_int_equal(next(s, NULL), 4);
    gf_sched_get(s, 4)->started = true;
    add_diarize(s, 5, 1);
    assert_int_equal(next(s, NULL), 5);
    gf_sched_get(s, 5)->started = true;
    add(s, 6, GF_REQ_GPU, 1, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 0);
    assert_int_equal(gf_sched_yield_due(s, 99000, 5000, &w, ids, 8), 0);
    /* --yieldable makes it one */
    gf_sched_get(s, 4)->job.spec.yield_sig = 10;
    assert_int_equal(gf_sched_yield_due(s, 99000, 5000, &w, ids, 8), 2);
    assert_int_equal(w, 6);
    gf_sched_destroy(&s);
}

/* While no card has room the scheduler skips its passes over the queue,
 * but not past anything that changes a waiting job's fate or reason: a
 * dependency cancelled, a card gone offline, a new job that cannot run. */
static void test_passes_skipped_only_when_idle(void **state)
{
    (void)state;
    gf_sched *s = make(1);
    add(s, 1, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    assert_int_equal(next(s, NULL), 1);            /* card 0 is now full */
    add(s, 2, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    add(s, 3, GF_REQ_ANY, 0, GF_MODE_EXCLUSIVE, 0);
    set_after(s, 3, 2);
    add(s, 4, GF_REQ_GPU, 0, GF_MODE_EXCLUSIVE, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(next(s, NULL), 0);        /* nothing fits, again and again */
    char why[80];
    gf_sched_reason(gf_sched_get(s, 3), why, sizeof(why));
    assert_string_equal(why, "waiting for job 2");

    /* 2 is cancelled while it waits: 3 fails now, though no card is free */
    gf_sched_get(s, 2)->job.state = GF_STATE_CANCELLED;
    gf_sched_retire(s, 2);
    gf_sched_decision d;
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.action, GF_SCHED_FAIL);
    assert_int_equal(d.id, 3);
    assert_string_equal(d.reason, "dependency 2 was cancelled");
    assert_int_equal(next(s, NULL), 0);

    /* the card goes offline: the reason follows */
    gf_sched_reason(gf_sched_get(s, 4), why, sizeof(why));
    assert_string_equal(why, "card 0 busy");
    assert_int_equal(gf_sched_card_online(s, 0, false), 0);
    assert_int_equal(next(s, NULL), 0);
    gf_sched_reason(gf_sched_get(s, 4), why, sizeof(why));
    assert_string_equal(why, "no worker for card 0");

    /* a job for a card that does not exist fails at once */
    add(s, 5, GF_REQ_GPU, 7, GF_MODE_EXCLUSIVE, 0);
    assert_true(gf_sched_next(s, &d));
    assert_int_equal(d.action, GF_SCHED_FAIL);
    assert_int_equal(d.id, 5);

    /* back online and the holder gone: 4 starts */
    assert_int_equal(gf_sched_card_online(s, 0, true), 0);
    gf_sched_get(s, 1)->job.state = GF_STATE_DONE;
    gf_sched_release(s, 1, false);
    assert_int_equal(next(s, NULL), 4);
    gf_sched_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_then_order),
        cmocka_unit_test(test_shared_slots_and_exclusive),
        cmocka_unit_test(test_exclusive_not_starved),
        cmocka_unit_test(test_any_and_gpus),
        cmocka_unit_test(test_offline_cards),
        cmocka_unit_test(test_after),
        cmocka_unit_test(test_retire),
        cmocka_unit_test(test_forget),
        cmocka_unit_test(test_requeue_and_hold),
        cmocka_unit_test(test_ahead),
        cmocka_unit_test(test_ahead_keeps_order),
        cmocka_unit_test(test_ahead_job_recalled_to_idle_card),
        cmocka_unit_test(test_recall_lost_race),
        cmocka_unit_test(test_hold_and_release),
        cmocka_unit_test(test_drain),
        cmocka_unit_test(test_yield),
        cmocka_unit_test(test_passes_skipped_only_when_idle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
