/* test_jobfilter.c — the selection of `queue` and `cancel` (broker/jobfilter.h):
 * every condition must hold, one left out holds for all; states by name,
 * an unknown one refused; since keeps live jobs and those ended since;
 * cards are those a job runs or ran on, none for a pending job. */
#include "broker/jobfilter.h"
#include "common/error.h"
#include "common/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static void make_job(gf_job *j, uint64_t id, uint32_t uid, gf_job_state st, const char *name,
                     int64_t ended_ms, int card)
{
    gf_job_init(j);
    j->id = id;
    j->uid = uid;
    j->state = st;
    j->spec.name = name ? gf_strdup(name) : NULL;
    j->ended_ms = ended_ms;
    if (card >= 0) {
        j->cards = gf_calloc(1, sizeof(int32_t));
        j->cards[0] = card;
        j->n_cards = 1;
    }
}

static bool matches(const gf_job_filter *w, const gf_job *j)
{
    gf_jobfilter f;
    char why[256];
    assert_int_equal(gf_jobfilter_init(&f, w, why, sizeof why), 0);
    return gf_jobfilter_match(&f, j);
}

static void test_no_selection_takes_every_job(void **state)
{
    (void)state;
    gf_job j;
    make_job(&j, 1, 1000, GF_STATE_CANCELLED, NULL, 5, -1);
    gf_job_filter empty;
    memset(&empty, 0, sizeof empty);
    assert_true(matches(NULL, &j));
    assert_true(matches(&empty, &j));
    gf_jobfilter f;
    assert_int_equal(gf_jobfilter_init(&f, NULL, NULL, 0), 0);
    assert_true(gf_jobfilter_wants_ended(&f));
    for (int s = GF_STATE_PENDING; s <= GF_STATE_CANCELLED; s++)
        assert_true(gf_jobfilter_state(&f, (gf_job_state)s));
    gf_job_clear(&j);
}

static void test_users_any_of_them_root_too(void **state)
{
    (void)state;
    uint32_t users[] = { 0, 1001 };
    gf_job_filter w = { .users = users, .n_users = 2 };
    gf_job a, b, r;
    make_job(&a, 1, 1001, GF_STATE_DONE, NULL, 5, 0);
    make_job(&b, 2, 1002, GF_STATE_DONE, NULL, 5, 0);
    make_job(&r, 3, 0, GF_STATE_RUNNING, NULL, 0, 1);
    assert_true(matches(&w, &a));
    assert_false(matches(&w, &b));
    assert_true(matches(&w, &r));
    gf_job_clear(&a);
    gf_job_clear(&b);
    gf_job_clear(&r);
}

static void test_states_by_name_unknown_refused(void **state)
{
    (void)state;
    char *names[] = { "failed", "pending" };
    gf_job_filter w = { .states = names, .n_states = 2 };
    gf_job p, d, f;
    make_job(&p, 1, 1, GF_STATE_PENDING, NULL, 0, -1);
    make_job(&d, 2, 1, GF_STATE_DONE, NULL, 5, 0);
    make_job(&f, 3, 1, GF_STATE_FAILED, NULL, 5, 0);
    assert_true(matches(&w, &p));
    assert_false(matches(&w, &d));
    assert_true(matches(&w, &f));
    gf_jobfilter jf;
    assert_int_equal(gf_jobfilter_init(&jf, &w, NULL, 0), 0);
    assert_true(gf_jobfilter_wants_ended(&jf));
    assert_false(gf_jobfilter_state(&jf, GF_STATE_RUNNING));
    /* live states only: the store holds none of them */
    char *live[] = { "running" };
    gf_job_filter l = { .states = live, .n_states = 1 };
    assert_int_equal(gf_jobfilter_init(&jf, &l, NULL, 0), 0);
    assert_false(gf_jobfilter_wants_ended(&jf));
    /* an unknown state is refused, named */
    char *bad[] = { "done", "finished" };
    gf_job_filter b = { .states = bad, .n_states = 2 };
    char why[256] = "";
    assert_int_equal(gf_jobfilter_init(&jf, &b, why, sizeof why), GF_EINVAL);
    assert_non_null(strstr(why, "unknown state 'finished'"));
    gf_job_clear(&p);
    gf_job_clear(&d);
    gf_job_clear(&f);
}

static void test_too_many_users_refused(void **state)
{
    (void)state;
    uint32_t *many = gf_calloc(GF_JOBFILTER_MAX_USERS + 1, sizeof(uint32_t));
    gf_job_filter w = { .users = many, .n_users = GF_JOBFILTER_MAX_USERS + 1 };
    gf_jobfilter f;
    char why[256] = "";
    assert_int_equal(gf_jobfilter_init(&f, &w, why, sizeof why), GF_EINVAL);
    assert_non_null(strstr(why, "users"));
    w.n_users = GF_JOBFILTER_MAX_USERS;
    assert_int_equal(gf_jobfilter_init(&f, &w, why, sizeof why), 0);
    free(many);
}

static void test_name_is_exact(void **state)
{
    (void)state;
    gf_job_filter w = { .name = "train, \"v2\"" };
    gf_job a, b, none;
    make_job(&a, 1, 1, GF_STATE_DONE, "train, \"v2\"", 5, 0);
    make_job(&b, 2, 1, GF_STATE_DONE, "train", 5, 0);
    make_job(&none, 3, 1, GF_STATE_DONE, NULL, 5, 0);
    assert_true(matches(&w, &a));
    assert_false(matches(&w, &b));      /* no prefix, no pattern */
    assert_false(matches(&w, &none));
    gf_job_clear(&a);
    gf_job_clear(&b);
    gf_job_clear(&none);
}

static void test_since_keeps_live_and_recent(void **state)
{
    (void)state;
    gf_job_filter w = { .since_ms = 1000 };
    gf_job old, edge, recent, pending, running;
    make_job(&old, 1, 1, GF_STATE_DONE, NULL, 999, 0);
    make_job(&edge, 2, 1, GF_STATE_FAILED, NULL, 1000, 0);
    make_job(&recent, 3, 1, GF_STATE_CANCELLED, NULL, 5000, -1);
    make_job(&pending, 4, 1, GF_STATE_PENDING, NULL, 0, -1);
    make_job(&running, 5, 1, GF_STATE_RUNNING, NULL, 0, 1);
    assert_false(matches(&w, &old));
    assert_true(matches(&w, &edge));    /* at DATE counts */
    assert_true(matches(&w, &recent));
    assert_true(matches(&w, &pending));
    assert_true(matches(&w, &running));
    gf_job_clear(&old);
    gf_job_clear(&edge);
    gf_job_clear(&recent);
    gf_job_clear(&pending);
    gf_job_clear(&running);
}

static void test_cards_run_on_not_pending(void **state)
{
    (void)state;
    int32_t cards[] = { 0 };
    gf_job_filter w = { .cards = cards, .n_cards = 1 };
    gf_job on0, on1, never, requeued;
    make_job(&on0, 1, 1, GF_STATE_DONE, NULL, 5, 0);
    make_job(&on1, 2, 1, GF_STATE_RUNNING, NULL, 0, 1);
    make_job(&never, 3, 1, GF_STATE_CANCELLED, NULL, 5, -1);
    make_job(&requeued, 4, 1, GF_STATE_PENDING, NULL, 0, 0);   /* its last run's card */
    assert_true(matches(&w, &on0));
    assert_false(matches(&w, &on1));
    assert_false(matches(&w, &never));
    assert_false(matches(&w, &requeued));
    gf_job_clear(&on0);
    gf_job_clear(&on1);
    gf_job_clear(&never);
    gf_job_clear(&requeued);
}

static void test_every_condition_must_hold(void **state)
{
    (void)state;
    uint32_t users[] = { 1001 };
    char *states[] = { "done" };
    int32_t cards[] = { 1 };
    gf_job_filter w = { .users = users, .n_users = 1, .states = states, .n_states = 1,
                        .name = "eval", .since_ms = 100, .cards = cards, .n_cards = 1 };
    gf_job j;
    make_job(&j, 1, 1001, GF_STATE_DONE, "eval", 200, 1);
    assert_true(matches(&w, &j));
    j.uid = 1002;
    assert_false(matches(&w, &j));
    j.uid = 1001;
    j.ended_ms = 50;
    assert_false(matches(&w, &j));
    j.ended_ms = 200;
    j.cards[0] = 0;
    assert_false(matches(&w, &j));
    j.cards[0] = 1;
    j.state = GF_STATE_FAILED;
    assert_false(matches(&w, &j));
    gf_job_clear(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_selection_takes_every_job),
        cmocka_unit_test(test_users_any_of_them_root_too),
        cmocka_unit_test(test_states_by_name_unknown_refused),
        cmocka_unit_test(test_too_many_users_refused),
        cmocka_unit_test(test_name_is_exact),
        cmocka_unit_test(test_since_keeps_live_and_recent),
        cmocka_unit_test(test_cards_run_on_not_pending),
        cmocka_unit_test(test_every_condition_must_hold),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
