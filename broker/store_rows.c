/* store_rows.c — the job store's rows (see store.h): job records, their
 * environments, the drains.
 *
 * A job's record is its msgpack "jobs" message. Its environment is kept
 * apart, once per distinct environment (table envs, by SHA-256 of its
 * strings): the jobs of one array, and most of one user's jobs, share it,
 * so it is neither stored nor rewritten (at each start and end) per job.
 * Rows written before schema 3 keep theirs inline (env_id 0). Beside the
 * record, the columns the history's queries read (state, uid, times,
 * name, cards) are written with every row, so a selection (a user's
 * failed jobs this week) is answered from the table and its indexes, not
 * by decoding every record. The schema these queries read is store.c's. */
#include "broker/store_impl.h"

#include "broker/jobfilter.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_store_prepare_rows(gf_store *self)
{
    if (sqlite3_prepare_v2(self->db,
                           "INSERT INTO jobs(state, uid, priority, submitted_ms, ended_ms, record,"
                           " env_id, name, cards) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                           -1, &self->insert, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db,
                           "UPDATE jobs SET state = ?1, ended_ms = ?2, record = ?3, env_id = ?5,"
                           " cards = ?6 WHERE id = ?4",
                           -1, &self->update, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db,
                           "UPDATE jobs SET state = ?1, ended_ms = ?2, record = ?3, cards = ?6"
                           " WHERE id = ?4",
                           -1, &self->update_record, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "SELECT id, record, env_id FROM jobs WHERE id = ?1", -1,
                           &self->get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "SELECT id FROM envs WHERE digest = ?1", -1,
                           &self->env_find, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "INSERT INTO envs(digest, data) VALUES (?1, ?2)", -1,
                           &self->env_add, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "SELECT data FROM envs WHERE id = ?1", -1, &self->env_get,
                           NULL) != SQLITE_OK)
        return GF_EIO;
    return 0;
}

void gf_store_finish_rows(gf_store *self)
{
    sqlite3_finalize(self->insert);
    sqlite3_finalize(self->update);
    sqlite3_finalize(self->update_record);
    sqlite3_finalize(self->get);
    sqlite3_finalize(self->env_find);
    sqlite3_finalize(self->env_add);
    sqlite3_finalize(self->env_get);
    free(self->env_data);
}

/* The cards column: ",0,1," (each card between commas, so that one is
 * found with instr), "" for none. */
static void cards_text(const gf_job *job, char *buf, size_t len)
{
    size_t l = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < job->n_cards && l + 16 < len; i++)
        l += (size_t)snprintf(buf + l, len - l, "%s%d,", i ? "" : ",", job->cards[i]);
}

/* The record blob: a "jobs" message holding this one job, without its
 * environment (stored apart). */
static int encode_record(const gf_job *job, uint8_t **buf, size_t *len)
{
    gf_job bare = *job;       /* a shallow copy: only read */
    bare.spec.env = NULL;
    bare.spec.n_env = 0;
    gf_msg m;
    memset(&m, 0, sizeof(m));
    m.op = GF_OP_JOBS;
    m.jobs = &bare;           /* borrowed, never freed through m */
    m.n_jobs = 1;
    return gf_proto_encode(&m, buf, len);
}

/* The id of the job's environment in envs (added when new); 0 for none. */
static int store_env(gf_store *self, const gf_job_spec *sp, int64_t *id)
{
    *id = 0;
    if (sp->n_env == 0)
        return 0;
    size_t len = 0;
    for (size_t i = 0; i < sp->n_env; i++)
        len += strlen(sp->env[i]) + 1;
    char *data = gf_malloc(len), *p = data;
    for (size_t i = 0; i < sp->n_env; i++) {
        size_t n = strlen(sp->env[i]) + 1;
        memcpy(p, sp->env[i], n);
        p += n;
    }
    /* The same as last time (a job's start and end, the jobs of one
     * array): no digest, no query. */
    if (self->env_id && len == self->env_len && memcmp(data, self->env_data, len) == 0) {
        free(data);
        *id = self->env_id;
        return 0;
    }
    char digest[GF_SHA256_HEX_LEN];
    gf_sha256_hex(data, len, digest);
    sqlite3_stmt *st = self->env_find;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, digest, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);   /* no statement stays open: it would pin the WAL */
    if (rc == SQLITE_DONE) {
        st = self->env_add;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, digest, -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(st, 2, data, (int)len, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            free(data);
            return gf_store_db_fail(self, "storing an environment");
        }
        *id = sqlite3_last_insert_rowid(self->db);
    } else if (rc != SQLITE_ROW) {
        free(data);
        return gf_store_db_fail(self, "looking up an environment");
    }
    free(self->env_data);
    self->env_data = data;
    self->env_len = len;
    self->env_id = *id;
    return 0;
}

/* The environment env_id into job job_id's spec (replacing any inline one). */
static int load_env(gf_store *self, uint64_t job_id, int64_t env_id, gf_job_spec *spec)
{
    if (env_id == 0)
        return 0;
    sqlite3_stmt *st = self->env_get;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, env_id);
    if (sqlite3_step(st) != SQLITE_ROW) {
        sqlite3_reset(st);
        GF_ERROR("job store %s: job %llu: its environment (%lld) is missing", self->path,
                 (unsigned long long)job_id, (long long)env_id);
        return GF_EIO;
    }
    const char *data = sqlite3_column_blob(st, 0);
    size_t len = (size_t)sqlite3_column_bytes(st, 0), n = 0;
    if (len == 0 || data[len - 1] != '\0') {
        sqlite3_reset(st);
        GF_ERROR("job store %s: job %llu: its environment (%lld) is damaged", self->path,
                 (unsigned long long)job_id, (long long)env_id);
        return GF_EIO;
    }
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\0';
    gf_job_spec_drop_env(spec);
    spec->env = gf_calloc(n, sizeof(char *));
    spec->n_env = n;
    for (size_t i = 0, off = 0; i < n; i++) {
        spec->env[i] = gf_strdup(data + off);
        off += strlen(data + off) + 1;
    }
    sqlite3_reset(st);   /* data is the statement's until here */
    return 0;
}

static int decode_record(gf_store *self, uint64_t id, const void *blob, int len, gf_job *out)
{
    gf_msg m;
    char err[256];
    if (!blob || len <= 0 || gf_proto_decode(blob, (size_t)len, &m, err, sizeof(err)) != 0 ||
        m.op != GF_OP_JOBS || m.n_jobs != 1) {
        GF_ERROR("job store %s: job %llu: record does not decode%s%s", self->path,
                 (unsigned long long)id, blob ? ": " : "", blob ? err : "");
        if (blob)
            gf_msg_clear(&m);
        return GF_EIO;
    }
    *out = m.jobs[0];             /* move the one job out of the message */
    free(m.jobs);
    m.jobs = NULL;
    m.n_jobs = 0;
    gf_msg_clear(&m);
    out->id = id;
    return 0;
}

/* A row of (id, record, env_id) into *out. */
static int row_job(gf_store *self, sqlite3_stmt *st, gf_job *out)
{
    uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
    int rc = decode_record(self, id, sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1), out);
    if (rc == 0 && (rc = load_env(self, id, sqlite3_column_int64(st, 2), &out->spec)) != 0) {
        gf_job_clear(out);
        gf_job_init(out);
    }
    return rc;
}

int gf_store_insert(gf_store *self, gf_job *job)
{
    int64_t env_id;
    int rc = store_env(self, &job->spec, &env_id);
    if (rc)
        return rc;
    uint8_t *buf;
    size_t len;
    rc = encode_record(job, &buf, &len);
    if (rc) {
        GF_ERROR("job store %s: job record over the protocol limits", self->path);
        return rc;
    }
    sqlite3_stmt *st = self->insert;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, gf_job_state_name(job->state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, job->uid);
    sqlite3_bind_int64(st, 3, job->spec.priority);
    sqlite3_bind_int64(st, 4, job->submitted_ms);
    sqlite3_bind_int64(st, 5, job->ended_ms);
    sqlite3_bind_blob(st, 6, buf, (int)len, free);
    sqlite3_bind_int64(st, 7, env_id);
    char cards[GF_PROTO_MAX_CARDS * 8];
    cards_text(job, cards, sizeof cards);
    if (job->spec.name)
        sqlite3_bind_text(st, 8, job->spec.name, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 8);
    sqlite3_bind_text(st, 9, cards, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        return gf_store_db_fail(self, "inserting a job");
    job->id = (uint64_t)sqlite3_last_insert_rowid(self->db);
    return 0;
}

/* Rewrite the row of job: with keep_env its environment column stays. */
static int update_row(gf_store *self, const gf_job *job, bool keep_env)
{
    int64_t env_id = 0;
    int rc = keep_env ? 0 : store_env(self, &job->spec, &env_id);  /* an old row's inline one moves out */
    if (rc)
        return rc;
    uint8_t *buf;
    size_t len;
    rc = encode_record(job, &buf, &len);
    if (rc) {
        GF_ERROR("job store %s: job %llu: record over the protocol limits", self->path,
                 (unsigned long long)job->id);
        return rc;
    }
    sqlite3_stmt *st = keep_env ? self->update_record : self->update;
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, gf_job_state_name(job->state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, job->ended_ms);
    sqlite3_bind_blob(st, 3, buf, (int)len, free);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)job->id);
    if (!keep_env)
        sqlite3_bind_int64(st, 5, env_id);
    char cards[GF_PROTO_MAX_CARDS * 8];
    cards_text(job, cards, sizeof cards);
    sqlite3_bind_text(st, 6, cards, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        return gf_store_db_fail(self, "updating a job");
    if (sqlite3_changes(self->db) == 0)
        return GF_ENOENT;
    return 0;
}

int gf_store_update(gf_store *self, const gf_job *job)
{
    return update_row(self, job, false);
}

int gf_store_update_record(gf_store *self, const gf_job *job)
{
    return update_row(self, job, true);
}

int gf_store_job_env(gf_store *self, uint64_t id, gf_job_spec *spec)
{
    sqlite3_stmt *st = self->get;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return GF_ENOENT;
    }
    if (rc != SQLITE_ROW) {
        sqlite3_reset(st);
        return gf_store_db_fail(self, "reading a job");
    }
    int64_t env_id = sqlite3_column_int64(st, 2);
    sqlite3_reset(st);
    return load_env(self, id, env_id, spec);
}

int gf_store_get(gf_store *self, uint64_t id, gf_job *out)
{
    gf_job_init(out);
    sqlite3_stmt *st = self->get;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return GF_ENOENT;
    if (rc != SQLITE_ROW)
        return gf_store_db_fail(self, "reading a job");
    rc = row_job(self, st, out);
    sqlite3_reset(st);
    return rc;
}

/* The rows of a SELECT id, record, env_id query (limit bound to ?1 when
 * not 0). */
static int load_rows(gf_store *self, const char *sql, size_t limit, gf_job **jobs, size_t *n)
{
    *jobs = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "listing jobs");
    if (limit && sqlite3_bind_int64(st, 1, (sqlite3_int64)limit) != SQLITE_OK) {
        sqlite3_finalize(st);
        return gf_store_db_fail(self, "listing jobs");
    }
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *jobs = gf_realloc(*jobs, cap * sizeof(gf_job));
        }
        gf_job *j = &(*jobs)[*n];
        gf_job_init(j);
        if (row_job(self, st, j)) {
            /* a row that does not decode is reported and skipped, not fatal */
            continue;
        }
        (*n)++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return gf_store_db_fail(self, "listing jobs");
    return 0;
}

int gf_store_load(gf_store *self, bool only_live, gf_job **jobs, size_t *n)
{
    return load_rows(self,
                     only_live ? "SELECT id, record, env_id FROM jobs WHERE state IN "
                                 "('pending', 'running') ORDER BY id"
                               : "SELECT id, record, env_id FROM jobs ORDER BY id",
                     0, jobs, n);
}

int gf_store_set_drain(gf_store *self, int card, const char *reason)
{
    sqlite3_stmt *st;
    const char *sql = reason ? "INSERT OR REPLACE INTO drains (card, reason) VALUES (?1, ?2)"
                             : "DELETE FROM drains WHERE card = ?1";
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "recording a drain");
    sqlite3_bind_int(st, 1, card);
    if (reason)
        sqlite3_bind_text(st, 2, reason, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : gf_store_db_fail(self, "recording a drain");
    sqlite3_finalize(st);
    return rc;
}

int gf_store_drains(gf_store *self, int **cards, char ***reasons, size_t *n)
{
    *cards = NULL;
    *reasons = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, "SELECT card, reason FROM drains ORDER BY card", -1, &st,
                           NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "listing drains");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *cards = gf_realloc(*cards, (*n + 1) * sizeof(int));
        *reasons = gf_realloc(*reasons, (*n + 1) * sizeof(char *));
        (*cards)[*n] = sqlite3_column_int(st, 0);
        const unsigned char *t = sqlite3_column_text(st, 1);
        (*reasons)[*n] = gf_strdup(t ? (const char *)t : "");
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : gf_store_db_fail(self, "listing drains");
}

/* ---- the history: columns, selections, retention ---------------------- */

#define ENDED_SQL "state IN ('done', 'failed', 'cancelled')"   /* as the jobs_ended index */

int gf_store_fill_columns(gf_store *self)
{
    sqlite3_stmt *sel = NULL, *upd = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(self->db,
                           "SELECT id, record FROM jobs WHERE id > ?1 ORDER BY id LIMIT 1000", -1,
                           &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "UPDATE jobs SET name = ?1, cards = ?2 WHERE id = ?3", -1,
                           &upd, NULL) != SQLITE_OK) {
        rc = gf_store_db_fail(self, "preparing the name and cards columns");
        goto out;
    }
    /* in chunks, by id: no statement updates the rows another still walks */
    uint64_t after = 0, filled = 0;
    for (bool more = true; more && !rc;) {
        size_t n = 0, cap = 0, seen = 0;
        gf_job *jobs = NULL;
        sqlite3_reset(sel);
        sqlite3_bind_int64(sel, 1, (sqlite3_int64)after);
        int step;
        while ((step = sqlite3_step(sel)) == SQLITE_ROW) {
            uint64_t id = (uint64_t)sqlite3_column_int64(sel, 0);
            after = id;
            seen++;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                jobs = gf_realloc(jobs, cap * sizeof(gf_job));
            }
            if (decode_record(self, id, sqlite3_column_blob(sel, 1), sqlite3_column_bytes(sel, 1),
                              &jobs[n]) == 0)
                n++;
        }
        if (step != SQLITE_DONE)
            rc = gf_store_db_fail(self, "reading records for the name and cards columns");
        sqlite3_reset(sel);
        for (size_t i = 0; i < n; i++) {
            char cards[GF_PROTO_MAX_CARDS * 8];
            cards_text(&jobs[i], cards, sizeof cards);
            sqlite3_reset(upd);
            if (jobs[i].spec.name)
                sqlite3_bind_text(upd, 1, jobs[i].spec.name, -1, SQLITE_STATIC);
            else
                sqlite3_bind_null(upd, 1);
            sqlite3_bind_text(upd, 2, cards, -1, SQLITE_STATIC);
            sqlite3_bind_int64(upd, 3, (sqlite3_int64)jobs[i].id);
            if (!rc && sqlite3_step(upd) != SQLITE_DONE)
                rc = gf_store_db_fail(self, "filling the name and cards columns");
            gf_job_clear(&jobs[i]);
        }
        filled += n;
        free(jobs);
        more = !rc && seen > 0;
    }
    if (!rc && filled)
        GF_INFO("job store %s: names and cards of %llu jobs copied into their columns",
                self->path, (unsigned long long)filled);
out:
    sqlite3_finalize(sel);
    sqlite3_finalize(upd);
    return rc;
}

/* One value a query binds. */
typedef struct {
    bool text;
    int64_t i;
    const char *s;
} bindv;

/* The rows (id, record, env_id) of sql with its values bound (?1.. in
 * order), appended to *jobs: with_env reads each job's environment back,
 * else none is read. A row that does not decode is reported and skipped. */
static int query_jobs(gf_store *self, const char *sql, const bindv *b, size_t nb, bool with_env,
                      gf_job **jobs, size_t *n)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "listing jobs");
    for (size_t i = 0; i < nb; i++)
        if ((b[i].text ? sqlite3_bind_text(st, (int)i + 1, b[i].s, -1, SQLITE_STATIC)
                       : sqlite3_bind_int64(st, (int)i + 1, b[i].i)) != SQLITE_OK) {
            sqlite3_finalize(st);
            return gf_store_db_fail(self, "listing jobs");
        }
    size_t cap = *n;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *jobs = gf_realloc(*jobs, cap * sizeof(gf_job));
        }
        gf_job *j = &(*jobs)[*n];
        uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
        if (decode_record(self, id, sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1), j))
            continue;
        if (with_env && load_env(self, id, sqlite3_column_int64(st, 2), &j->spec) != 0) {
            gf_job_clear(j);
            continue;
        }
        if (!with_env)
            gf_job_spec_drop_env(&j->spec);   /* a row from before schema 3 keeps it inline */
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : gf_store_db_fail(self, "listing jobs");
}

/* The query of gf_store_find_ended for f: its SQL (the caller frees) and
 * what it binds, into b (room for users + cards + 4) and card_words (room
 * for cards). Every condition is a term of the WHERE clause: state names
 * are ours (the filter took only known ones), the client's values are
 * bound. The plan it gets: a user's jobs from jobs_uid (uid, id), in id
 * order; --since without users from jobs_ended, the rows ended since
 * sorted; else the table backwards from its newest row, as far as it
 * takes to fill the limit (test_store.c holds the plans). */
static char *find_sql(const gf_jobfilter *f, size_t limit, bindv *b, size_t *nb,
                      char (*card_words)[16])
{
    const gf_job_filter *w = f->wire;
    size_t users = w ? w->n_users : 0, cards = w ? w->n_cards : 0;
    bool since = w && w->since_ms;
    size_t cap = 640 + 4 * users + 24 * cards, l = 0;
    char *sql = gf_malloc(cap);
    *nb = 0;
    l += (size_t)snprintf(sql + l, cap - l,
                          "SELECT id, record, env_id FROM jobs %s",
                          since && !users ? "INDEXED BY jobs_ended WHERE " ENDED_SQL
                                          : "WHERE state NOT IN ('pending', 'running')");
    static const gf_job_state ended[] = { GF_STATE_DONE, GF_STATE_FAILED, GF_STATE_CANCELLED };
    size_t asked = 0;
    for (size_t i = 0; i < 3; i++)
        asked += gf_jobfilter_state(f, ended[i]);
    if (asked < 3) {
        l += (size_t)snprintf(sql + l, cap - l, " AND state IN (");
        for (size_t i = 0, k = 0; i < 3; i++)
            if (gf_jobfilter_state(f, ended[i]))
                l += (size_t)snprintf(sql + l, cap - l, "%s'%s'", k++ ? ", " : "",
                                      gf_job_state_name(ended[i]));
        l += (size_t)snprintf(sql + l, cap - l, ")");
    }
    if (users) {
        l += (size_t)snprintf(sql + l, cap - l, " AND uid IN (");
        for (size_t i = 0; i < users; i++) {
            l += (size_t)snprintf(sql + l, cap - l, "%s?", i ? ", " : "");
            b[(*nb)++] = (bindv){ .i = w->users[i] };
        }
        l += (size_t)snprintf(sql + l, cap - l, ")");
    }
    if (w && w->name) {
        l += (size_t)snprintf(sql + l, cap - l, " AND name = ?");
        b[(*nb)++] = (bindv){ .text = true, .s = w->name };
    }
    if (since) {
        l += (size_t)snprintf(sql + l, cap - l, " AND ended_ms >= ?");
        b[(*nb)++] = (bindv){ .i = w->since_ms };
    }
    if (cards) {
        l += (size_t)snprintf(sql + l, cap - l, " AND (");
        for (size_t i = 0; i < cards; i++) {
            snprintf(card_words[i], sizeof card_words[i], ",%d,", w->cards[i]);
            l += (size_t)snprintf(sql + l, cap - l, "%sinstr(cards, ?) > 0", i ? " OR " : "");
            b[(*nb)++] = (bindv){ .text = true, .s = card_words[i] };
        }
        l += (size_t)snprintf(sql + l, cap - l, ")");
    }
    snprintf(sql + l, cap - l, " ORDER BY id DESC LIMIT ?");   /* reversed by the caller */
    b[(*nb)++] = (bindv){ .i = (int64_t)limit };
    return sql;
}

int gf_store_find_ended(gf_store *self, const gf_jobfilter *f, size_t limit, gf_job **jobs,
                        size_t *n)
{
    *jobs = NULL;
    *n = 0;
    if (limit == 0 || !gf_jobfilter_wants_ended(f))
        return 0;
    size_t users = f->wire ? f->wire->n_users : 0, cards = f->wire ? f->wire->n_cards : 0, nb;
    bindv *b = gf_calloc(users + cards + 4, sizeof(bindv));
    char (*card_words)[16] = gf_calloc(cards ? cards : 1, sizeof *card_words);
    char *sql = find_sql(f, limit, b, &nb, card_words);
    int rc = query_jobs(self, sql, b, nb, false, jobs, n);
    /* the columns narrowed it down; the selection's own rules decide; the
     * newest came first, the caller wants id order */
    gf_job *v = *jobs;
    for (size_t i = 0; i < *n / 2; i++) {
        gf_job t = v[i];
        v[i] = v[*n - 1 - i];
        v[*n - 1 - i] = t;
    }
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++) {
        if (gf_jobfilter_match(f, &v[i]))
            v[kept++] = v[i];
        else
            gf_job_clear(&v[i]);
    }
    *n = kept;
    free(sql);
    free(card_words);
    free(b);
    return rc;
}

char *gf_store_explain_find(gf_store *self, const gf_jobfilter *f)
{
    size_t users = f->wire ? f->wire->n_users : 0, cards = f->wire ? f->wire->n_cards : 0, nb;
    bindv *b = gf_calloc(users + cards + 4, sizeof(bindv));
    char (*card_words)[16] = gf_calloc(cards ? cards : 1, sizeof *card_words);
    char *sql = find_sql(f, 10000, b, &nb, card_words);
    char *q = gf_strfmt("EXPLAIN QUERY PLAN %s", sql);
    char *out = gf_strdup("");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, q, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char *t = sqlite3_column_text(st, 3);
            char *o = gf_strfmt("%s%s%s", out, *out ? "; " : "", t ? (const char *)t : "");
            free(out);
            out = o;
        }
        sqlite3_finalize(st);
    }
    free(q);
    free(sql);
    free(card_words);
    free(b);
    return out;
}

int gf_store_count_ended(gf_store *self, uint64_t *n)
{
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, "SELECT COUNT(*) FROM jobs INDEXED BY jobs_ended WHERE " ENDED_SQL, -1, &st,
                           NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "counting ended jobs");
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : gf_store_db_fail(self, "counting ended jobs");
}

int gf_store_count_ended_before(gf_store *self, int64_t cut_ms, uint64_t *n)
{
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db,
                           "SELECT COUNT(*) FROM jobs INDEXED BY jobs_ended WHERE " ENDED_SQL
                           " AND ended_ms < ?1", -1, &st, NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "counting old jobs");
    sqlite3_bind_int64(st, 1, cut_ms);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : gf_store_db_fail(self, "counting old jobs");
}

void gf_store_old_free(gf_store_old *rows, size_t n)
{
    for (size_t i = 0; rows && i < n; i++) {
        free(rows[i].out_path);
        free(rows[i].err_path);
    }
    free(rows);
}

/* The rows (id, ended_ms, record) of sql, with its integers bound. */
static int query_old(gf_store *self, const char *sql, const int64_t *b, size_t nb,
                     gf_store_old **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, sql, -1, &st, NULL) != SQLITE_OK)
        return gf_store_db_fail(self, "listing old jobs");
    for (size_t i = 0; i < nb; i++)
        sqlite3_bind_int64(st, (int)i + 1, b[i]);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *rows = gf_realloc(*rows, cap * sizeof(gf_store_old));
        }
        gf_store_old *o = &(*rows)[(*n)++];
        memset(o, 0, sizeof(*o));
        o->id = (uint64_t)sqlite3_column_int64(st, 0);
        o->ended_ms = sqlite3_column_int64(st, 1);
        gf_job j;
        /* a record that does not decode still goes (its files unknown) */
        if (decode_record(self, o->id, sqlite3_column_blob(st, 2), sqlite3_column_bytes(st, 2),
                          &j) == 0) {
            o->out_path = j.out_path;
            o->err_path = j.err_path;
            j.out_path = j.err_path = NULL;
            gf_job_clear(&j);
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        gf_store_old_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return gf_store_db_fail(self, "listing old jobs");
    }
    return 0;
}

int gf_store_oldest_ended(gf_store *self, uint64_t after_id, size_t limit, gf_store_old **rows,
                          size_t *n)
{
    const int64_t b[] = { (int64_t)after_id, (int64_t)limit };
    return query_old(self,
                     /* by rowid: jobs_state would sort every ended row */
                     "SELECT id, ended_ms, record FROM jobs NOT INDEXED WHERE id > ?1 AND "
                     ENDED_SQL " ORDER BY id LIMIT ?2", b, 2, rows, n);
}

int gf_store_ended_before(gf_store *self, int64_t cut_ms, int64_t after_ms, uint64_t after_id,
                          size_t limit, gf_store_old **rows, size_t *n)
{
    const int64_t b[] = { cut_ms, after_ms, (int64_t)after_id, (int64_t)limit };
    return query_old(self,
                     /* without statistics SQLite would take jobs_state and sort
                      * every ended row; the end times' index is in that order */
                     "SELECT id, ended_ms, record FROM jobs INDEXED BY jobs_ended WHERE "
                     ENDED_SQL " AND ended_ms < ?1 AND (ended_ms, id) > (?2, ?3)"
                     " ORDER BY ended_ms, id LIMIT ?4", b, 4, rows, n);
}

int gf_store_remove_ended(gf_store *self, const uint64_t *ids, size_t n, size_t *removed)
{
    *removed = 0;
    sqlite3_stmt *env = NULL, *del = NULL, *orphan = NULL;
    int rc = 0;
    if (sqlite3_prepare_v2(self->db, "SELECT env_id FROM jobs WHERE id = ?1 AND " ENDED_SQL, -1,
                           &env, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "DELETE FROM jobs WHERE id = ?1 AND " ENDED_SQL, -1, &del,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db,
                           "DELETE FROM envs WHERE id = ?1 AND NOT EXISTS "
                           "(SELECT 1 FROM jobs WHERE env_id = ?1)",
                           -1, &orphan, NULL) != SQLITE_OK) {
        rc = gf_store_db_fail(self, "removing ended jobs");
        goto out;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        sqlite3_reset(env);
        sqlite3_bind_int64(env, 1, (sqlite3_int64)ids[i]);
        int step = sqlite3_step(env);
        if (step == SQLITE_DONE)
            continue;                  /* gone already, or not ended: never removed */
        if (step != SQLITE_ROW) {
            rc = gf_store_db_fail(self, "removing ended jobs");
            break;
        }
        int64_t env_id = sqlite3_column_int64(env, 0);
        sqlite3_reset(env);
        sqlite3_reset(del);
        sqlite3_bind_int64(del, 1, (sqlite3_int64)ids[i]);
        if (sqlite3_step(del) != SQLITE_DONE) {
            rc = gf_store_db_fail(self, "removing ended jobs");
            break;
        }
        *removed += (size_t)sqlite3_changes(self->db);
        if (env_id == 0)
            continue;
        sqlite3_reset(orphan);
        sqlite3_bind_int64(orphan, 1, env_id);
        if (sqlite3_step(orphan) != SQLITE_DONE)
            rc = gf_store_db_fail(self, "removing an environment no job uses");
    }
    /* the environment last stored may be gone: the next insert looks again */
    self->env_id = 0;
out:
    sqlite3_finalize(env);
    sqlite3_finalize(del);
    sqlite3_finalize(orphan);
    return rc;
}
