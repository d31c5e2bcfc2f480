/* config_impl.h — the inside of the configuration loader (common/config.h),
 * shared by its three files: config.c (defaults, derived values, the YAML
 * document, files), config_read.c (the table-driven reader of the
 * document) and config_locks.c (lock paths as written and on disk).
 * Nothing else includes it. */
#ifndef GF_CONFIG_IMPL_H
#define GF_CONFIG_IMPL_H

#include "common/config.h"

#include <stddef.h>
#include <yaml.h>

#define DEFAULT_LOCK_DIR "/run/lock/gpuflock"
#define DEFAULT_SHARED_SLOTS 4
#define MAX_DEVICES 1024

/* One load in progress: the document and the record it fills. */
typedef struct parse_ctx parse_ctx;
struct parse_ctx {
    const char *file;     /* name used in messages */
    yaml_document_t *doc; /* the loaded document */
    gf_config *cfg;       /* being filled */
    size_t *device_line;  /* line of each parsed device, for duplicate messages */
    size_t bench_line;    /* line of bench_lock, 0 when it is the default */
    size_t listen_line;   /* line of metrics.listen, 0 when it is not set */
};

/* Log "FILE:LINE: key 'K': problem" (line 0: "FILE: key 'K' (default):
 * problem", the key kept its default) and return GF_ECONFIG. */
int gf_config_fail_at(parse_ctx *ctx, size_t line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Read the document's root into ctx->cfg, every key against its table
 * (NULL or a null root: nothing to read). 0, or GF_ECONFIG logged. */
int gf_config_read_root(parse_ctx *ctx, yaml_node_t *root);

/* What is wrong with a lock path as written, or NULL: it must be absolute
 * and canonical (no empty, "." or ".." component, no trailing slash), so that
 * every program, whatever its working folder, names the same file by the
 * same string. */
const char *gf_config_lock_path_problem(const char *p);

/* Two lock paths naming one file (a hard link, or a card's lock that is also
 * the bench lock) would make a job wait on itself, so every lock path is
 * compared with the others: as written (the devices among themselves are
 * compared as they are parsed) and, where the files exist, by device and
 * inode; each also on disk: its folder names itself (no symlink on the
 * way) and the file is not a symlink. 0, or GF_ECONFIG logged. */
int gf_config_check_lock_files(parse_ctx *ctx);

/* Free a list of strings, or the devices, leaving it empty. */
void gf_config_free_strings(char ***list, size_t *n);
void gf_config_free_devices(gf_config *cfg);

#endif
