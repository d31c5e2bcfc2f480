/* test_store.c — the SQLite job store on real files in a fresh folder:
 * insert/get/update, ids, live listing, durability across a process that
 * dies without closing, forward migration from schema 1, refusal of a newer
 * schema, and a damaged row; the history: selections of ended jobs (user,
 * state, name, since, cards) answered by the query, the query plans that
 * keep a user's jobs and the retention off a table scan, the retention's
 * listings in their orders, and removal (ended rows only, environments no
 * job uses any more). */
#include "broker/store.h"
#include "common/error.h"
#include "common/log.h"
#include "net/proto.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    char dir[64];
    char *path;
} fixture;

static int setup(void **state)
{
    fixture *f = gf_calloc(1, sizeof(*f));
    if (gf_test_mkdtemp(f->dir, sizeof(f->dir), "gf-store") != 0)
        return -1;
    f->path = gf_strfmt("%s/jobs.db", f->dir);
    gf_log_init("test_store", GF_LOG_ERROR);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    gf_test_rmtree(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static void make_job(gf_job *j, const char *word, int priority)
{
    gf_job_init(j);
    j->spec.argv = gf_calloc(3, sizeof(char *));
    j->spec.argv[0] = gf_strdup("echo");
    j->spec.argv[1] = gf_strdup(word);
    j->spec.argc = 2;
    j->spec.cwd = gf_strdup("/tmp");
    j->spec.priority = priority;
    j->uid = 1000;
    j->gid = 1000;
    j->submitted_ms = gf_wall_ms();
}

/* One job inserted, or its row rewritten (record_only: the environment
 * column left as it is), in a transaction of its own. */
static void insert_one(gf_store *s, gf_job *j)
{
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(gf_store_insert(s, j), 0);
    assert_int_equal(gf_store_commit(s), 0);
}

static void update_one(gf_store *s, const gf_job *j, bool record_only)
{
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(record_only ? gf_store_update_record(s, j) : gf_store_update(s, j), 0);
    assert_int_equal(gf_store_commit(s), 0);
}

static void test_insert_get_update(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    assert_int_equal(gf_store_schema_version(s), GF_STORE_SCHEMA_VERSION);
    gf_job a, b, got;
    make_job(&a, "alpha", 5);
    make_job(&b, "beta", -1);
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(gf_store_insert(s, &a), 0);
    assert_int_equal(gf_store_insert(s, &b), 0);
    assert_int_equal(gf_store_commit(s), 0);
    assert_int_equal(gf_store_sync(s), 0);
    assert_int_equal(gf_store_sync(s), 0);
    assert_true(a.id > 0);
    assert_true(b.id > a.id);

    assert_int_equal(gf_store_get(s, b.id, &got), 0);
    assert_string_equal(got.spec.argv[1], "beta");
    assert_int_equal(got.spec.priority, -1);
    assert_int_equal(got.state, GF_STATE_PENDING);
    gf_job_clear(&got);

    /* a finished run: state, result, statistics */
    a.state = GF_STATE_DONE;
    a.attempts = 1;
    a.exit_status = 0;
    a.ended_ms = gf_wall_ms();
    a.cpu_user_ms = 12;
    a.stats = gf_calloc(1, sizeof(gf_stat));
    a.stats[0].key = gf_strdup("chunks");
    a.stats[0].i = 42;
    a.n_stats = 1;
    update_one(s, &a, false);
    assert_int_equal(gf_store_get(s, a.id, &got), 0);
    assert_int_equal(got.state, GF_STATE_DONE);
    assert_int_equal(got.stats[0].i, 42);
    assert_int_equal(got.cpu_user_ms, 12);
    gf_job_clear(&got);

    assert_int_equal(gf_store_get(s, 9999, &got), GF_ENOENT);
    gf_job_clear(&got);
    gf_job ghost;
    make_job(&ghost, "ghost", 0);
    ghost.id = 9999;
    assert_int_equal(gf_store_update(s, &ghost), GF_ENOENT);
    gf_job_clear(&ghost);

    gf_job *all;
    size_t n;
    assert_int_equal(gf_store_load(s, true, &all, &n), 0);
    assert_int_equal(n, 1);                 /* only beta is live */
    assert_int_equal(all[0].id, b.id);
    gf_job_clear(&all[0]);
    free(all);
    assert_int_equal(gf_store_load(s, false, &all, &n), 0);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < n; i++)
        gf_job_clear(&all[i]);
    free(all);

    /* a rolled-back insert leaves nothing */
    gf_job c;
    make_job(&c, "gamma", 0);
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(gf_store_insert(s, &c), 0);
    assert_int_equal(gf_store_rollback(s), 0);
    assert_int_equal(gf_store_get(s, c.id, &got), GF_ENOENT);
    gf_job_clear(&got);
    gf_job_clear(&c);

    gf_job_clear(&a);
    gf_job_clear(&b);
    gf_store_destroy(&s);
    gf_store_destroy(&s);
    /* WAL mode: the -wal file is used */
    char *wal = gf_strfmt("%s-wal", f->path);
    struct stat stt;
    s = gf_store_open(f->path);
    assert_int_equal(stat(wal, &stt), 0);
    gf_store_destroy(&s);
    free(wal);
}

/* A child commits jobs and dies with SIGKILL, never closing the database:
 * every committed job is there for the next process. */
/* A diarize job keeps its parameters and last progress in the record blob,
 * across a close and reopen (no schema change: the blob is the protocol's
 * own encoding, where these keys are optional). */
static void set_env(gf_job *j, const char *const *env, size_t n)
{
    j->spec.env = gf_calloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        j->spec.env[i] = gf_strdup(env[i]);
    j->spec.n_env = n;
}

static void assert_env(const gf_job_spec *sp, const char *const *env, size_t n)
{
    assert_int_equal(sp->n_env, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(sp->env[i], env[i]);
}

static int count_rows(const char *path, const char *table)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *sql = gf_strfmt("SELECT count(*) FROM %s", table);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(sql);
    return n;
}

/* Environments are stored once each, shared by the jobs that have them,
 * and come back whole through get, load and update; one added in a
 * rolled-back transaction is added again. */
static void test_env_shared(void **state)
{
    fixture *f = *state;
    static const char *const e1[] = { "HOME=/home/a", "PATH=/usr/bin:/bin", "EMPTY=" };
    static const char *const e2[] = { "HOME=/home/b" };
    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    gf_job j[4];
    assert_int_equal(gf_store_begin(s), 0);
    for (int i = 0; i < 4; i++) {
        make_job(&j[i], "env", 0);
        if (i < 2)
            set_env(&j[i], e1, 3);
        else if (i == 2)
            set_env(&j[i], e2, 1);
        assert_int_equal(gf_store_insert(s, &j[i]), 0);
    }
    assert_int_equal(gf_store_commit(s), 0);
    assert_int_equal(count_rows(f->path, "envs"), 2);
    gf_job got;
    assert_int_equal(gf_store_get(s, j[1].id, &got), 0);
    assert_env(&got.spec, e1, 3);
    got.state = GF_STATE_DONE;
    update_one(s, &got, false);
    gf_job_clear(&got);
    assert_int_equal(gf_store_get(s, j[1].id, &got), 0);
    assert_int_equal(got.state, GF_STATE_DONE);
    assert_env(&got.spec, e1, 3);
    gf_job_clear(&got);
    gf_job *all;
    size_t n;
    assert_int_equal(gf_store_load(s, false, &all, &n), 0);
    assert_int_equal(n, 4);
    assert_env(&all[0].spec, e1, 3);
    assert_env(&all[2].spec, e2, 1);
    assert_int_equal(all[3].spec.n_env, 0);
    for (size_t i = 0; i < n; i++)
        gf_job_clear(&all[i]);
    free(all);
    /* a new environment rolled back with its transaction, then stored again */
    static const char *const e3[] = { "LANG=C" };
    gf_job r;
    make_job(&r, "rolled", 0);
    set_env(&r, e3, 1);
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(gf_store_insert(s, &r), 0);
    assert_int_equal(gf_store_rollback(s), 0);
    assert_int_equal(count_rows(f->path, "envs"), 2);
    insert_one(s, &r);
    assert_int_equal(gf_store_get(s, r.id, &got), 0);
    assert_env(&got.spec, e3, 1);
    gf_job_clear(&got);
    gf_job_clear(&r);
    for (int i = 0; i < 4; i++)
        gf_job_clear(&j[i]);
    gf_store_destroy(&s);
}

/* A job whose environment stays in the store only (the broker's pending
 * jobs): its record is rewritten without touching the environment, which
 * is read back for it on demand. */
static void test_env_kept_in_store(void **state)
{
    fixture *f = *state;
    static const char *const e1[] = { "HOME=/home/a", "LANG=C.UTF-8" };
    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    gf_job j;
    make_job(&j, "kept", 0);
    set_env(&j, e1, 2);
    insert_one(s, &j);
    /* the copy in memory loses its environment; its state changes */
    gf_job_spec_drop_env(&j.spec);
    j.state = GF_STATE_RUNNING;
    update_one(s, &j, true);
    gf_job got;
    assert_int_equal(gf_store_get(s, j.id, &got), 0);
    assert_int_equal(got.state, GF_STATE_RUNNING);
    assert_env(&got.spec, e1, 2);
    gf_job_clear(&got);
    /* read back into a spec, replacing what it holds */
    gf_job_spec sp;
    memset(&sp, 0, sizeof(sp));
    sp.env = gf_calloc(1, sizeof(char *));
    sp.env[0] = gf_strdup("OLD=1");
    sp.n_env = 1;
    assert_int_equal(gf_store_job_env(s, j.id, &sp), 0);
    assert_env(&sp, e1, 2);
    assert_int_equal(gf_store_job_env(s, 9999, &sp), GF_ENOENT);
    gf_job_spec_drop_env(&sp);
    gf_job_clear(&j);
    gf_store_destroy(&s);
}

/* The most recent ended jobs, in id order; live ones are not among them. */
static void test_load_ended(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    assert_int_equal(gf_store_begin(s), 0);
    for (int i = 0; i < 8; i++) {
        gf_job j;
        make_job(&j, "job", 0);
        assert_int_equal(gf_store_insert(s, &j), 0);   /* ids 1..8 */
        j.state = i % 4 == 3 ? GF_STATE_RUNNING : i % 2 ? GF_STATE_FAILED : GF_STATE_DONE;
        assert_int_equal(gf_store_update(s, &j), 0);
        gf_job_clear(&j);
    }
    assert_int_equal(gf_store_commit(s), 0);
    gf_job *jobs;
    size_t n;
    gf_jobfilter every;
    assert_int_equal(gf_jobfilter_init(&every, NULL, NULL, 0), 0);
    assert_int_equal(gf_store_find_ended(s, &every, 3, &jobs, &n), 0);
    assert_int_equal(n, 3);   /* ended: 1 2 3 5 6 7; the newest three */
    assert_int_equal(jobs[0].id, 5);
    assert_int_equal(jobs[1].id, 6);
    assert_int_equal(jobs[2].id, 7);
    for (size_t i = 0; i < n; i++)
        gf_job_clear(&jobs[i]);
    free(jobs);
    assert_int_equal(gf_store_find_ended(s, &every, 100, &jobs, &n), 0);
    assert_int_equal(n, 6);
    assert_int_equal(jobs[0].id, 1);
    for (size_t i = 0; i < n; i++)
        gf_job_clear(&jobs[i]);
    free(jobs);
    assert_int_equal(gf_store_find_ended(s, &every, 0, &jobs, &n), 0);
    assert_int_equal(n, 0);
    gf_store_destroy(&s);
}

/* An ended job of user uid named name (NULL: none) on card (-1: none),
 * ended at ended_ms, inserted. */
static uint64_t add_ended(gf_store *s, uint32_t uid, const char *name, gf_job_state st,
                          int64_t ended_ms, int card)
{
    gf_job j;
    make_job(&j, "job", 0);
    j.uid = uid;
    if (name)
        j.spec.name = gf_strdup(name);
    insert_one(s, &j);
    j.state = st;
    j.ended_ms = ended_ms;
    if (card >= 0) {
        j.cards = gf_calloc(1, sizeof(int32_t));
        j.cards[0] = card;
        j.n_cards = 1;
        j.out_path = gf_strfmt("/spool/%llu.out", (unsigned long long)j.id);
        j.err_path = gf_strfmt("/spool/%llu.err", (unsigned long long)j.id);
    }
    if (st != GF_STATE_PENDING)
        update_one(s, &j, false);
    uint64_t id = j.id;
    gf_job_clear(&j);
    return id;
}

/* The ids find_ended gives for the selection w, as "1,2,3". */
static char *found(gf_store *s, const gf_job_filter *w, size_t limit)
{
    gf_jobfilter f;
    assert_int_equal(gf_jobfilter_init(&f, w, NULL, 0), 0);
    gf_job *jobs;
    size_t n;
    assert_int_equal(gf_store_find_ended(s, &f, limit, &jobs, &n), 0);
    char *out = gf_strdup("");
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(jobs[i].spec.n_env, 0);     /* never the environments */
        char *o = gf_strfmt("%s%s%llu", out, i ? "," : "", (unsigned long long)jobs[i].id);
        free(out);
        out = o;
        gf_job_clear(&jobs[i]);
    }
    free(jobs);
    return out;
}

#define assert_found(s, w, limit, want) do { \
        char *got_ = found((s), (w), (limit)); \
        if (strcmp(got_, (want)) != 0) \
            fail_msg("found '%s', wanted '%s'", got_, (want)); \
        free(got_); \
    } while (0)

static void test_find_ended_selections(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    add_ended(s, 1001, "train", GF_STATE_DONE, 1000, 0);         /* 1 */
    add_ended(s, 1002, "train", GF_STATE_FAILED, 2000, 1);       /* 2 */
    add_ended(s, 1001, "eval, \"x\"", GF_STATE_CANCELLED, 3000, -1); /* 3 */
    add_ended(s, 0, NULL, GF_STATE_DONE, 4000, 1);               /* 4 */
    add_ended(s, 1001, "train", GF_STATE_PENDING, 0, -1);        /* 5: live, never listed */
    add_ended(s, 1001, "train", GF_STATE_FAILED, 5000, 0);       /* 6 */
    assert_found(s, NULL, 100, "1,2,3,4,6");
    assert_found(s, NULL, 2, "4,6");                             /* the most recent */
    uint32_t u1[] = { 1001 }, root[] = { 0 };
    gf_job_filter w = { .users = u1, .n_users = 1 };
    assert_found(s, &w, 100, "1,3,6");
    gf_job_filter r = { .users = root, .n_users = 1 };
    assert_found(s, &r, 100, "4");
    char *failed[] = { "failed" }, *live[] = { "pending", "running" };
    gf_job_filter st = { .states = failed, .n_states = 1 };
    assert_found(s, &st, 100, "2,6");
    gf_job_filter lv = { .states = live, .n_states = 2 };
    assert_found(s, &lv, 100, "");
    gf_job_filter nm = { .name = "eval, \"x\"" };
    assert_found(s, &nm, 100, "3");
    gf_job_filter since = { .since_ms = 3000 };
    assert_found(s, &since, 100, "3,4,6");
    int32_t c1[] = { 1 }, c0[] = { 0 };
    gf_job_filter card = { .cards = c1, .n_cards = 1 };
    assert_found(s, &card, 100, "2,4");
    gf_job_filter all = { .users = u1, .n_users = 1, .states = failed, .n_states = 1,
                          .name = "train", .since_ms = 1, .cards = c0, .n_cards = 1 };
    assert_found(s, &all, 100, "6");
    /* card 1 is not card 10 */
    add_ended(s, 1001, NULL, GF_STATE_DONE, 6000, 10);          /* 7 */
    assert_found(s, &card, 100, "2,4");
    uint64_t n;
    assert_int_equal(gf_store_count_ended(s, &n), 0);
    assert_int_equal(n, 6);
    gf_store_destroy(&s);
}

/* How SQLite plans a query on the store's file ("SCAN jobs", "SEARCH jobs
 * USING INDEX jobs_uid ..."), the lines joined. */
static char *plan(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *q = gf_strfmt("EXPLAIN QUERY PLAN %s", sql);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, q, -1, &st, NULL), SQLITE_OK);
    char *out = gf_strdup("");
    while (sqlite3_step(st) == SQLITE_ROW) {
        char *o = gf_strfmt("%s%s; ", out, (const char *)sqlite3_column_text(st, 3));
        free(out);
        out = o;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(q);
    return out;
}

/* How gf_store_find_ended answers the selection w. */
static char *find_plan(gf_store *s, const gf_job_filter *w)
{
    gf_jobfilter f;
    assert_int_equal(gf_jobfilter_init(&f, w, NULL, 0), 0);
    return gf_store_explain_find(s, &f);
}

/* The indexes that keep a user's history and the retention from reading
 * the whole table, or sorting it: the store's own selections, and the
 * retention's queries as store_rows.c writes them. */
static void test_history_query_plans(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    for (int i = 0; i < 50; i++)
        add_ended(s, 1000 + (uint32_t)(i % 5), "j", GF_STATE_DONE, 1000 + i, 0);
    uint32_t u1[] = { 1001 };
    char *failed[] = { "failed" };
    const struct { gf_job_filter w; const char *want; bool sorts; } finds[] = {
        { { .n_users = 0 }, "SCAN jobs", false },                       /* newest first */
        { { .users = u1, .n_users = 1 }, "SEARCH jobs USING INDEX jobs_uid (uid=?)", false },
        { { .users = u1, .n_users = 1, .since_ms = 5 }, "jobs_uid", false },
        { { .states = failed, .n_states = 1 }, "jobs_state (state=?)", false },
        { { .since_ms = 5 }, "SEARCH jobs USING INDEX jobs_ended (ended_ms>?)", true },
    };
    for (size_t i = 0; i < sizeof finds / sizeof finds[0]; i++) {
        char *p = find_plan(s, &finds[i].w);
        if (!strstr(p, finds[i].want) || (strstr(p, "TEMP B-TREE") != NULL) != finds[i].sorts)
            fail_msg("selection %zu: plan '%s', wanted '%s'%s", i, p, finds[i].want,
                     finds[i].sorts ? " and a sort" : " without a sort");
        free(p);
    }
    gf_store_destroy(&s);
    /* want: in the plan; no query here sorts its rows (a temp B-tree) */
    static const struct { const char *sql, *want; } plans[] = {
        /* the index the store names (INDEXED BY) can serve it, in its order */
        { "SELECT id FROM jobs INDEXED BY jobs_ended WHERE state IN ('done', 'failed', "
          "'cancelled') AND ended_ms < ?1 AND (ended_ms, id) > (?2, ?3) ORDER BY ended_ms, id"
          " LIMIT 10", "SEARCH jobs USING INDEX jobs_ended" },
        { "SELECT COUNT(*) FROM jobs INDEXED BY jobs_ended WHERE state IN ('done', 'failed', "
          "'cancelled')", "jobs_ended" },
        { "SELECT 1 FROM jobs WHERE env_id = 3", "USING COVERING INDEX jobs_env" },
        { "SELECT id FROM jobs NOT INDEXED WHERE id > ?1 AND state IN ('done', 'failed', "
          "'cancelled') ORDER BY id LIMIT 10", "USING INTEGER PRIMARY KEY" },
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        char *p = plan(f->path, plans[i].sql);
        if (!strstr(p, plans[i].want) || strstr(p, "TEMP B-TREE"))
            fail_msg("%s: plan '%s' lacks '%s' or sorts", plans[i].sql, p, plans[i].want);
        free(p);
    }
}

static void test_retention_listings_and_removal(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    static const char *const env[] = { "A=1", "B=2" };
    /* 1..4 share one environment; 3 is live; ended out of id order */
    uint64_t ids[4];
    const int64_t ended[] = { 3000, 1000, 0, 2000 };
    for (int i = 0; i < 4; i++) {
        gf_job j;
        make_job(&j, "r", 0);
        set_env(&j, env, 2);
        insert_one(s, &j);
        ids[i] = j.id;
        if (i != 2) {
            j.state = GF_STATE_DONE;
            j.ended_ms = ended[i];
            j.out_path = gf_strfmt("/spool/%llu.out", (unsigned long long)j.id);
            update_one(s, &j, false);
        }
        gf_job_clear(&j);
    }
    gf_store_old *rows;
    size_t n;
    /* by id, from a cursor */
    assert_int_equal(gf_store_oldest_ended(s, 0, 2, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].id, ids[0]);
    assert_int_equal(rows[1].id, ids[1]);
    assert_string_equal(rows[0].out_path, "/spool/1.out");
    assert_null(rows[0].err_path);
    gf_store_old_free(rows, n);
    assert_int_equal(gf_store_oldest_ended(s, ids[1], 10, &rows, &n), 0);
    assert_int_equal(n, 1);                      /* the live job 3 is not listed */
    assert_int_equal(rows[0].id, ids[3]);
    gf_store_old_free(rows, n);
    /* by the time they ended, before a cut, after (ms, id) */
    assert_int_equal(gf_store_ended_before(s, 2500, 0, 0, 10, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].id, ids[1]);        /* ended 1000 */
    assert_int_equal(rows[1].id, ids[3]);        /* ended 2000 */
    assert_int_equal(rows[1].ended_ms, 2000);
    gf_store_old_free(rows, n);
    assert_int_equal(gf_store_ended_before(s, 5000, 1000, ids[1], 10, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].id, ids[3]);
    assert_int_equal(rows[1].id, ids[0]);
    gf_store_old_free(rows, n);
    /* removal: a live job asked for stays; the environment stays while a job uses it */
    size_t removed;
    assert_int_equal(gf_store_begin(s), 0);
    uint64_t some[] = { ids[0], ids[2], 9999 };
    assert_int_equal(gf_store_remove_ended(s, some, 3, &removed), 0);
    assert_int_equal(gf_store_commit(s), 0);
    assert_int_equal(removed, 1);
    gf_job got;
    assert_int_equal(gf_store_get(s, ids[0], &got), GF_ENOENT);
    gf_job_clear(&got);
    assert_int_equal(gf_store_get(s, ids[2], &got), 0);
    assert_env(&got.spec, env, 2);
    gf_job_clear(&got);
    assert_int_equal(count_rows(f->path, "envs"), 1);
    /* the last users of the environment go: it goes with them once the
     * live job has ended and gone too */
    got.id = ids[2];
    assert_int_equal(gf_store_get(s, ids[2], &got), 0);
    got.state = GF_STATE_CANCELLED;
    got.ended_ms = 4000;
    update_one(s, &got, false);
    gf_job_clear(&got);
    uint64_t rest[] = { ids[1], ids[2], ids[3] };
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(gf_store_remove_ended(s, rest, 3, &removed), 0);
    assert_int_equal(gf_store_commit(s), 0);
    assert_int_equal(removed, 3);
    assert_int_equal(count_rows(f->path, "envs"), 0);
    assert_int_equal(count_rows(f->path, "jobs"), 0);
    /* the environment stored last is gone: a new job with it stores it again */
    gf_job j;
    make_job(&j, "again", 0);
    set_env(&j, env, 2);
    insert_one(s, &j);
    assert_int_equal(gf_store_get(s, j.id, &got), 0);
    assert_env(&got.spec, env, 2);
    gf_job_clear(&got);
    gf_job_clear(&j);
    assert_int_equal(count_rows(f->path, "envs"), 1);
    gf_store_destroy(&s);
}

static void test_diarize_record(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    gf_job j, got;
    make_job(&j, "ignored", 0);
    j.spec.kind = GF_JOB_DIARIZE;
    j.spec.mode = GF_MODE_SHARED;
    j.spec.diar = gf_calloc(1, sizeof(gf_diar_spec));
    j.spec.diar->audio = gf_strdup("/data/a.wav");
    j.spec.diar->rttm = gf_strdup("/out/a.rttm");
    j.spec.diar->json = true;
    j.spec.diar->min_speakers = 2;
    j.spec.diar->max_speakers = 4;
    assert_int_equal(gf_store_begin(s), 0);
    assert_int_equal(gf_store_insert(s, &j), 0);
    j.state = GF_STATE_DONE;
    j.progress_done = j.progress_total = 21;
    assert_int_equal(gf_store_update(s, &j), 0);
    assert_int_equal(gf_store_commit(s), 0);
    gf_store_destroy(&s);
    s = gf_store_open(f->path);
    assert_non_null(s);
    assert_int_equal(gf_store_get(s, j.id, &got), 0);
    assert_int_equal(got.spec.kind, GF_JOB_DIARIZE);
    assert_int_equal(got.spec.mode, GF_MODE_SHARED);
    assert_non_null(got.spec.diar);
    assert_string_equal(got.spec.diar->audio, "/data/a.wav");
    assert_string_equal(got.spec.diar->rttm, "/out/a.rttm");
    assert_true(got.spec.diar->json);
    assert_null(got.spec.diar->models);
    assert_int_equal(got.spec.diar->max_speakers, 4);
    assert_int_equal(got.progress_done, 21);
    assert_int_equal(got.progress_total, 21);
    gf_job_clear(&got);
    gf_job_clear(&j);
    gf_store_destroy(&s);
}

static void test_durable_across_crash(void **state)
{
    fixture *f = *state;
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gf_store *s = gf_store_open(f->path);
        if (!s)
            _exit(1);
        for (int i = 0; i < 50; i++) {
            gf_job j;
            make_job(&j, "crash", i);
            if (gf_store_begin(s) || gf_store_insert(s, &j) || gf_store_commit(s))
                _exit(2);
            gf_job_clear(&j);
        }
        /* an uncommitted one, lost with the process */
        gf_job j;
        make_job(&j, "uncommitted", 0);
        if (gf_store_begin(s) || gf_store_insert(s, &j))
            _exit(3);
        if (write(pipefd[1], "x", 1) != 1)
            _exit(4);
        pause();
        _exit(0);
    }
    close(pipefd[1]);
    char c;
    assert_int_equal(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    kill(pid, SIGKILL);
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFSIGNALED(st));

    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    gf_job *all;
    size_t n;
    assert_int_equal(gf_store_load(s, false, &all, &n), 0);
    assert_int_equal(n, 50);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(all[i].spec.argv[1], "crash");
        assert_int_equal(all[i].spec.priority, (int)i);
        gf_job_clear(&all[i]);
    }
    free(all);
    /* ids keep growing after the lost insert */
    gf_job j;
    make_job(&j, "after", 0);
    insert_one(s, &j);
    assert_true(j.id >= 51);
    gf_job_clear(&j);
    gf_store_destroy(&s);
}

/* A database written by schema 1 (by hand here) opens, migrates to the
 * current schema, and keeps its jobs. */
static void test_migration(void **state)
{
    fixture *f = *state;
    static const char *const old_env[] = { "OLD=inline", "PATH=/bin" };
    gf_job j;
    make_job(&j, "old", 3);
    set_env(&j, old_env, 2);   /* before schema 3 the environment was in the record */
    j.id = 7;
    j.spec.name = gf_strdup("old-name");   /* before schema 5 only in the record */
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = &j;
    m.n_jobs = 1;
    uint8_t *buf;
    size_t len;
    assert_int_equal(gf_proto_encode(&m, &buf, &len), 0);

    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT,"
                                  " state TEXT NOT NULL, uid INTEGER NOT NULL,"
                                  " priority INTEGER NOT NULL, submitted_ms INTEGER NOT NULL,"
                                  " record BLOB NOT NULL); PRAGMA user_version = 1;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO jobs VALUES (7, 'pending', 1000, 3, 1, ?1)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(st, 1, buf, (int)len, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    /* an ended job of schema 1: no end time column yet */
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO jobs VALUES (8, 'done', 1000, 3, 5555, ?1)",
                                        -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(st, 1, buf, (int)len, SQLITE_TRANSIENT);
    assert_int_equal(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(buf);
    gf_job_clear(&j);

    gf_store *s = gf_store_open(f->path);
    assert_non_null(s);
    assert_int_equal(gf_store_schema_version(s), GF_STORE_SCHEMA_VERSION);
    gf_job got;
    assert_int_equal(gf_store_get(s, 7, &got), 0);
    assert_string_equal(got.spec.argv[1], "old");
    assert_env(&got.spec, old_env, 2);
    got.state = GF_STATE_DONE;
    got.ended_ms = 99;
    update_one(s, &got, false); /* the v2 and v3 columns exist */
    gf_job_clear(&got);
    assert_int_equal(count_rows(f->path, "envs"), 1);   /* moved out at the update */
    assert_int_equal(gf_store_get(s, 7, &got), 0);
    assert_env(&got.spec, old_env, 2);
    gf_job_clear(&got);
    gf_job_filter w = { .name = "old-name" };     /* filled from the record at the migration */
    assert_found(s, &w, 10, "7,8");
    /* the ended one is as old as its submission */
    gf_store_old *rows;
    size_t n;
    assert_int_equal(gf_store_ended_before(s, 6000, 0, 0, 10, &rows, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rows[0].id, 7);            /* ended at 99 (above) */
    assert_int_equal(rows[1].id, 8);
    assert_int_equal(rows[1].ended_ms, 5555);
    gf_store_old_free(rows, n);
    gf_store_destroy(&s);
}

static void test_newer_schema_refused(void **state)
{
    fixture *f = *state;
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    char *sql = gf_strfmt("PRAGMA user_version = %d;", GF_STORE_SCHEMA_VERSION + 1);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    free(sql);
    sqlite3_close(db);
    assert_null(gf_store_open(f->path));
    /* and a folder that is not there */
    char *bad = gf_strfmt("%s/no/such/dir/jobs.db", f->dir);
    assert_null(gf_store_open(bad));
    free(bad);
}

static void test_damaged_row_skipped(void **state)
{
    fixture *f = *state;
    gf_store *s = gf_store_open(f->path);
    gf_job a;
    make_job(&a, "fine", 0);
    insert_one(s, &a);
    gf_store_destroy(&s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO jobs(state, uid, priority, submitted_ms, record)"
                                  " VALUES ('pending', 0, 0, 0, x'c1c1c1')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    s = gf_store_open(f->path);
    gf_job *all;
    size_t n;
    assert_int_equal(gf_store_load(s, false, &all, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(all[0].id, a.id);
    gf_job_clear(&all[0]);
    free(all);
    gf_job got;
    assert_int_equal(gf_store_get(s, a.id + 1, &got), GF_EIO);
    gf_job_clear(&got);
    gf_job_clear(&a);
    gf_store_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insert_get_update, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_ended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_ended_selections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_history_query_plans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retention_listings_and_removal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_shared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_kept_in_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diarize_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_durable_across_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_row_skipped, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
