/* evidence_parts.h — what the files of the evidence module share. Everyone
 * else reads evidence.h, the contract; this is its inside:
 *
 *   evidence.c          the evidence set: its directory, problems, bindings
 *   evidence_tables.c   the tables: precedence.yaml and the bindings/ tables read
 *                       into bindings (YAML through common/ydoc.h)
 *   evidence_records.c  the records a proof names: read, hashed, about the
 *                       proof's tuple, module, configuration and card
 *   evidence_rules.c    the rules on bindings, alone and against each other
 *   evidence_orphans.c  the records no proof cites (evidence.h alone) */
#ifndef GF_EVIDENCE_PARTS_H
#define GF_EVIDENCE_PARTS_H

#include "route/evidence.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

struct gf_evidence {
    char *dir;                 /* the directory read, without trailing slashes */
    char **problems;           /* one line per problem found */
    size_t n_problems;
    gf_binding *bindings;      /* well-formed bindings, in file order */
    size_t n_bindings;
    char **precedence;         /* areas, first wins */
    size_t n_precedence;
    bool loaded;               /* gf_evidence_load ran */
};

/* Parsing state for one binding (or one file, with id NULL). */
typedef struct {
    gf_evidence *ev;
    yaml_document_t *doc;
    const char *file;          /* as shown in messages */
    const char *id;            /* binding id, "#N" before it is known, NULL for file-level */
    bool bad;                  /* a problem was found in this binding */
} pctx;

/* ---- problems (evidence.c) ----------------------------------------------- */

/* Add one problem line to the set (taking the string). */
void gf_evidence_add_problem(gf_evidence *ev, char *line);
/* A problem of what c reads: "FILE:LINE: binding 'ID': problem" (line 0:
 * "FILE: problem"); marks c bad. */
void gf_evidence_vbad(pctx *c, size_t line, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The files' short name for gf_evidence_vbad. */
static inline void bad(pctx *c, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void bad(pctx *c, size_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gf_evidence_vbad(c, line, fmt, ap);
    va_end(ap);
}

/* ---- the tables (evidence_tables.c) -------------------------------------- */

/* Read DIR/precedence.yaml into the set's precedence list. */
void gf_evidence_read_precedence(gf_evidence *ev);
/* Read one table of bindings; the well-formed ones join the set. */
void gf_evidence_read_table(gf_evidence *ev, const char *path);
void gf_evidence_binding_free(gf_binding *b);
/* "sm90" -> 90, "sm120" -> 120; -1 otherwise. */
int gf_evidence_parse_arch(const char *s);

/* ---- the records (evidence_records.c) ------------------------------------ */

/* A whole file as a NUL-terminated string (length in *len), or NULL with
 * errno set. The caller frees. */
char *gf_evidence_read_file(const char *path, size_t *len);
/* The records of one proof: its accuracy record, and for measured speed its
 * speed and end-to-end records (rules 12 to 14 of docs/evidence.md). */
void gf_evidence_check_records(pctx *c, const gf_binding *b, const gf_proof *p);

/* ---- the rules (evidence_rules.c) ---------------------------------------- */

/* Every binding of the set on its own, then against the ones before it. */
void gf_evidence_check_bindings(gf_evidence *ev);

#endif
