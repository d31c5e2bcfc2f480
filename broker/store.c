/* store.c — the SQLite job store (see store.h): the database itself, its
 * schema and migrations, its files, transactions and durability.
 *
 * Migrations are an ordered list of SQL scripts; the database's
 * user_version says how many have run. A new schema change is a new entry
 * at the end, never an edit of an old one. The rows (job records, their
 * environments, the drains) are read and written by store_rows.c; the
 * record both files share is store_impl.h. */
#include "broker/store_impl.h"

#include "common/error.h"
#include "common/fsmode.h"
#include "common/log.h"
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
    /* 4 → 5: the history's queries (docs/operations.md, "History"): a job's
     * name and cards as columns (",0,1,", '' for none; filled from each
     * record by fill_columns below), a user's jobs by uid, the ended jobs
     * by the time they ended (retention, --since), and the jobs of an
     * environment (an environment no job uses any more goes with the last) */
    "ALTER TABLE jobs ADD COLUMN name TEXT;"
    "ALTER TABLE jobs ADD COLUMN cards TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX jobs_uid ON jobs(uid, id);"
    "CREATE INDEX jobs_ended ON jobs(ended_ms) WHERE state IN ('done', 'failed', 'cancelled');"
    "CREATE INDEX jobs_env ON jobs(env_id);"
    /* an ended job without an end time (stored before schema 2) is as old
     * as its submission, for history.keep_days */
    "UPDATE jobs SET ended_ms = submitted_ms"
    "  WHERE state IN ('done', 'failed', 'cancelled') AND ended_ms = 0;",
};

/* What a migration needs beyond its SQL (the values inside the records),
 * run in the same transaction: fill[i] after migrations[i]. */
static int (*const fill[GF_STORE_SCHEMA_VERSION])(gf_store *) = {
    [4] = gf_store_fill_columns,
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

int gf_store_db_fail(gf_store *self, const char *what)
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
        return gf_store_db_fail(self, "reading the schema version");
    int rc = sqlite3_step(st);
    *v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return *v < 0 ? gf_store_db_fail(self, "reading the schema version") : 0;
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
        char *sql = gf_strfmt("BEGIN IMMEDIATE; %s", migrations[v]);
        char *done = gf_strfmt("PRAGMA user_version = %d; COMMIT;", v + 1);
        int rc = exec_sql(self, sql);
        if (!rc && fill[v])
            rc = fill[v](self);
        if (!rc)
            rc = exec_sql(self, done);
        free(sql);
        free(done);
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
        gf_store_db_fail(self, "open");
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
        gf_store_db_fail(self, "setting WAL mode");
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
    if (gf_store_prepare_rows(self) != 0 ||
        sqlite3_prepare_v2(self->db, "BEGIN IMMEDIATE", -1, &self->begin, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(self->db, "COMMIT", -1, &self->commit, NULL) != SQLITE_OK) {
        gf_store_db_fail(self, "preparing statements");
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
    gf_store_finish_rows(self);
    sqlite3_finalize(self->begin);
    sqlite3_finalize(self->commit);
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
    int err = rc == SQLITE_DONE ? 0 : gf_store_db_fail(self, what);
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
