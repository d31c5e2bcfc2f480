/* store_rows.c — the job store's rows (see store.h): job records, their
 * environments, the drains.
 *
 * A job's record is its msgpack "jobs" message. Its environment is kept
 * apart, once per distinct environment (table envs, by SHA-256 of its
 * strings): the jobs of one array, and most of one user's jobs, share it,
 * so it is neither stored nor rewritten (at each start and end) per job.
 * Rows written before schema 3 keep theirs inline (env_id 0). The schema
 * these queries read is store.c's. */
#include "broker/store_impl.h"

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
                           " env_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                           -1, &self->insert, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db,
                           "UPDATE jobs SET state = ?1, ended_ms = ?2, record = ?3, env_id = ?5"
                           " WHERE id = ?4",
                           -1, &self->update, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db,
                           "UPDATE jobs SET state = ?1, ended_ms = ?2, record = ?3 WHERE id = ?4",
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

int gf_store_load_ended(gf_store *self, size_t limit, gf_job **jobs, size_t *n)
{
    if (limit == 0) {
        *jobs = NULL;
        *n = 0;
        return 0;
    }
    return load_rows(self,
                     "SELECT id, record, env_id FROM (SELECT id, record, env_id FROM jobs WHERE "
                     "state NOT IN ('pending', 'running') ORDER BY id DESC LIMIT ?1) ORDER BY id",
                     limit, jobs, n);
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
