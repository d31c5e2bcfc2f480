/* store.c — the SQLite job store (see store.h).
 *
 * Migrations are an ordered list of SQL scripts; the database's
 * user_version says how many have run. A new schema change is a new entry
 * at the end, never an edit of an old one.
 *
 * A job's record is its msgpack "jobs" message. Its environment is kept
 * apart, once per distinct environment (table envs, by SHA-256 of its
 * strings): the jobs of one array, and most of one user's jobs, share it,
 * so it is neither stored nor rewritten (at each start and end) per job.
 * Rows written before schema 3 keep theirs inline (env_id 0). */
#include "broker/store.h"

#include "common/error.h"
#include "common/fsmode.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

struct gf_store {
    sqlite3 *db;              /* the open database */
    char *path;               /* for messages */
    sqlite3_stmt *insert;     /* prepared once, reused */
    sqlite3_stmt *update;
    sqlite3_stmt *update_record;  /* the same, the row's environment left as it is */
    sqlite3_stmt *get;
    sqlite3_stmt *env_find;   /* id of an environment by digest */
    sqlite3_stmt *env_add;
    sqlite3_stmt *env_get;    /* its strings by id */
    sqlite3_stmt *begin, *commit;
    char *env_data;           /* the last environment stored or found, and its id */
    size_t env_len;
    int64_t env_id;
    bool in_tx;               /* between begin and commit/rollback */
    int wal_fd;               /* the -wal file, for gf_store_sync; -1 until used */
    char err[256];            /* the last failure's text; "" after a commit that worked */
};

/* migrations[i] takes the schema from version i to i + 1. */
static const char *const migrations[GF_STORE_SCHEMA_VERSION] = {
    /* 0 → 1: the jobs table */
    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  state TEXT NOT NULL,"
    "  uid INTEGER NOT NULL,"
    "  priority INTEGER NOT NULL,"
    "  submitted_ms INTEGER NOT NULL,"
    "  record BLOB NOT NULL);",
    /* 1 → 2: end times as a column, and an index for the live queue */
    "ALTER TABLE jobs ADD COLUMN ended_ms INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_state ON jobs(state);",
    /* 2 → 3: environments stored once (NUL-terminated strings, end to end) */
    "CREATE TABLE envs ("
    "  id INTEGER PRIMARY KEY,"
    "  digest TEXT NOT NULL UNIQUE,"
    "  data BLOB NOT NULL);"
    "ALTER TABLE jobs ADD COLUMN env_id INTEGER NOT NULL DEFAULT 0;",
    /* 3 → 4: cards the operator took out of service (gpuflock drain) */
    "CREATE TABLE drains ("
    "  card INTEGER PRIMARY KEY,"
    "  reason TEXT NOT NULL);",
};

/* GF_ENOSPC when SQLite's last failure was a full disk, else GF_EIO. */
static int fail_code(gf_store *self)
{
    int c = sqlite3_errcode(self->db) & 0xff;
    return c == SQLITE_FULL || (c == SQLITE_IOERR && sqlite3_system_errno(self->db) == ENOSPC)
               ? GF_ENOSPC
               : GF_EIO;
}

/* Note a failure (what: the step) and log it, unless it repeats the last
 * one: a broker that retries its commit while the disk stays full logs
 * the failure once, not at every retry. Returns GF_ENOSPC or GF_EIO. */
static int fail_text(gf_store *self, const char *what, const char *why, int rc)
{
    char text[sizeof(self->err)];
    snprintf(text, sizeof(text), "%s: %s", what, why);
    if (strcmp(text, self->err) != 0)
        GF_ERROR("job store %s: %s", self->path, text);
    else
        GF_DEBUG("job store %s: %s (again)", self->path, text);
    snprintf(self->err, sizeof(self->err), "%s", text);
    return rc;
}

static int db_fail(gf_store *self, const char *what)
{
    return fail_text(self, what, sqlite3_errmsg(self->db), fail_code(self));
}

static int exec_sql(gf_store *self, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(self->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        int rc = fail_text(self, "SQL", msg ? msg : "error", fail_code(self));
        sqlite3_free(msg);
        return rc;
    }
    return 0;
}

static int user_version(gf_store *self, int *v)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return db_fail(self, "reading the schema version");
    int rc = sqlite3_step(st);
    *v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return *v < 0 ? db_fail(self, "reading the schema version") : 0;
}

static int migrate(gf_store *self)
{
    int v;
    if (user_version(self, &v))
        return GF_EIO;
    if (v > GF_STORE_SCHEMA_VERSION) {
        GF_ERROR("job store %s: schema version %d is newer than this gpuflockd (%d)", self->path,
                 v, GF_STORE_SCHEMA_VERSION);
        return GF_EUNSUP;
    }
    int from = v;
    for (; v < GF_STORE_SCHEMA_VERSION; v++) {
        char *sql = gf_strfmt("BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;",
                              migrations[v], v + 1);
        int rc = exec_sql(self, sql);
        free(sql);
        if (rc) {
            exec_sql(self, "ROLLBACK");
            return rc;
        }
        if (from > 0)
            GF_INFO("job store %s: schema migrated to version %d", self->path, v + 1);
    }
    return 0;
}

/* The store holds every user's commands and environments: its files are
 * the broker's alone. The main file is made 0600 before SQLite opens it
 * (SQLite gives its -wal and -shm the main file's mode and owner), and
 * files an older gpuflock made 0644 are tightened. Opening it for writing
 * here also names a store that cannot be written (a read-only file system,
 * a folder or file of another user) before the broker serves anything:
 * SQLite would open it read-only and fail at the first commit. */
static int private_files(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        GF_ERROR("job store %s cannot be opened for writing by uid %u: %s", path,
                 (unsigned)geteuid(), strerror(errno));
        return GF_EIO;
    }
    int rc = gf_fsmode_fd(fd, path, 0600, "job store");
    close(fd);
    static const char *const sides[] = { "-wal", "-shm" };
    for (size_t i = 0; i < 2 && rc == 0; i++) {
        char *p = gf_strfmt("%s%s", path, sides[i]);
        rc = gf_fsmode_file(p, 0600, "job store");
        free(p);
    }
    return rc;
}

gf_store *gf_store_open(const char *path)
{
    gf_store *self = gf_calloc(1, sizeof(*self));
    self->path = gf_strdup(path);
    self->wal_fd = -1;
    if (private_files(path) != 0)
        goto fail;
    if (sqlite3_open_v2(path, &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        db_fail(self, "open");
        goto fail;
    }
    if (sqlite3_db_readonly(self->db, "main") == 1) {
        GF_ERROR("job store %s: SQLite opened it read-only (its file or folder is not "
                 "writable by uid %u)", path, (unsigned)geteuid());
        goto fail;
    }
    sqlite3_busy_timeout(self->db, 5000);
    /* journal_mode answers with the mode in force: check it took */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(self->db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK) {
        db_fail(self, "setting WAL mode");
        goto fail;
    }
    bool wal = sqlite3_step(st) == SQLITE_ROW &&
               strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
    sqlite3_finalize(st);
    if (!wal) {
        GF_ERROR("job store %s: cannot use WAL mode (a network file system?)", path);
        goto fail;
    }
    if (exec_sql(self, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;"))
        goto fail;
    if (migrate(self))
        goto fail;
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
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "BEGIN IMMEDIATE", -1, &self->begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "COMMIT", -1, &self->commit, NULL) != SQLITE_OK) {
        db_fail(self, "preparing statements");
        goto fail;
    }
    return self;
fail:
    gf_store_destroy(&self);
    return NULL;
}

void gf_store_destroy(gf_store **self_p)
{
    gf_store *self = *self_p;
    if (!self)
        return;
    sqlite3_finalize(self->insert);
    sqlite3_finalize(self->update);
    sqlite3_finalize(self->update_record);
    sqlite3_finalize(self->get);
    sqlite3_finalize(self->env_find);
    sqlite3_finalize(self->env_add);
    sqlite3_finalize(self->env_get);
    sqlite3_finalize(self->begin);
    sqlite3_finalize(self->commit);
    free(self->env_data);
    if (self->db)
        sqlite3_close(self->db);
    if (self->wal_fd >= 0)
        close(self->wal_fd);
    free(self->path);
    free(self);
    *self_p = NULL;
}

int gf_store_schema_version(gf_store *self)
{
    int v;
    return user_version(self, &v) ? -1 : v;
}

/* Run a prepared statement that returns no rows (BEGIN, COMMIT). */
static int step_done(gf_store *self, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    int err = rc == SQLITE_DONE ? 0 : db_fail(self, what);
    sqlite3_reset(st);
    return err;
}

int gf_store_begin(gf_store *self)
{
    assert(!self->in_tx);
    int rc = step_done(self, self->begin, "BEGIN");
    if (rc)
        return rc;
    self->in_tx = true;
    return 0;
}

int gf_store_commit(gf_store *self)
{
    assert(self->in_tx);
    int rc = step_done(self, self->commit, "COMMIT");
    if (rc) {
        /* SQLite may have rolled back already (SQLITE_FULL, IOERR): the
         * ROLLBACK then finds no transaction, which is no news */
        if (!sqlite3_get_autocommit(self->db))
            exec_sql(self, "ROLLBACK");
        self->in_tx = false;
        self->env_id = 0;
        return rc;
    }
    self->in_tx = false;
    self->err[0] = '\0';
    return 0;
}

int gf_store_rollback(gf_store *self)
{
    self->env_id = 0;   /* an environment added in the transaction is gone with it */
    if (!self->in_tx)
        return 0;
    self->in_tx = false;
    if (sqlite3_get_autocommit(self->db))   /* rolled back by SQLite after a failure */
        return 0;
    return exec_sql(self, "ROLLBACK");
}

const char *gf_store_error(const gf_store *self)
{
    return self->err;
}

void gf_store_checkpoint(gf_store *self)
{
    assert(!self->in_tx);
    int rc = sqlite3_wal_checkpoint_v2(self->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if (rc != SQLITE_OK)
        GF_DEBUG("job store %s: checkpoint: %s", self->path, sqlite3_errmsg(self->db));
}

int gf_store_sync(gf_store *self)
{
    if (self->wal_fd < 0) {
        char *wal = gf_strfmt("%s-wal", self->path);
        self->wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
        free(wal);
        if (self->wal_fd < 0) {
            GF_ERROR("job store %s: opening its WAL: %s", self->path, strerror(errno));
            return GF_EIO;
        }
    }
    if (fdatasync(self->wal_fd) != 0) {
        GF_ERROR("job store %s: fdatasync of its WAL: %s", self->path, strerror(errno));
        return GF_EIO;
    }
    return 0;
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
            return db_fail(self, "storing an environment");
        }
        *id = sqlite3_last_insert_rowid(self->db);
    } else if (rc != SQLITE_ROW) {
        free(data);
        return db_fail(self, "looking up an environment");
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
        return db_fail(self, "inserting a job");
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
        return db_fail(self, "updating a job");
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
        return db_fail(self, "reading a job");
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
        return db_fail(self, "reading a job");
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
        return db_fail(self, "listing jobs");
    if (limit && sqlite3_bind_int64(st, 1, (sqlite3_int64)limit) != SQLITE_OK) {
        sqlite3_finalize(st);
        return db_fail(self, "listing jobs");
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
        return db_fail(self, "listing jobs");
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
        return db_fail(self, "recording a drain");
    sqlite3_bind_int(st, 1, card);
    if (reason)
        sqlite3_bind_text(st, 2, reason, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(self, "recording a drain");
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
        return db_fail(self, "listing drains");
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
    return rc == SQLITE_DONE ? 0 : db_fail(self, "listing drains");
}
