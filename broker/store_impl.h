/* store_impl.h — the inside of the job store (broker/store.h), shared by
 * its two files: store.c (the database: schema, migrations, transactions,
 * durability) and store_rows.c (job records, environments, drains).
 * Nothing else includes it. */
#ifndef GF_STORE_IMPL_H
#define GF_STORE_IMPL_H

#include "broker/store.h"

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* Note SQLite's last failure at step `what` and log it (once while it
 * repeats). Returns GF_ENOSPC (a full disk) or GF_EIO. */
int gf_store_db_fail(gf_store *self, const char *what);

/* Prepare the rows' statements (insert, update, get, environments) on the
 * open database: 0, or GF_EIO with SQLite's error left for
 * gf_store_db_fail (nothing logged). */
int gf_store_prepare_rows(gf_store *self);

/* Finalize them and free the environment kept; safe on a store whose
 * statements were never (or partly) prepared. */
void gf_store_finish_rows(gf_store *self);

/* Schema 5's name and cards columns, from each row's record (inside the
 * migration's transaction): 0, or GF_EIO / GF_ENOSPC logged. A record
 * that does not decode leaves its row's columns empty. */
int gf_store_fill_columns(gf_store *self);

#endif
