/* evidence.h — the evidence tables under evidence/ and their validator.
 *
 * A binding ties a speed scope (which cards) to a module (area, PTX tier,
 * artifact hash) and lists its proofs: per (boundary, batch, math) the
 * pinned kernel configuration, the accuracy record and the speed evidence.
 * Records are JSON files addressed by their SHA-256 (records/<sha256>.json).
 * The schema and the rules are in docs/evidence.md.
 *
 * gf_evidence_load reads a directory (precedence.yaml, the .yaml tables of
 * bindings/, records/) and validates all of it; every problem is collected
 * as one line "FILE:LINE: binding 'ID': what is wrong". Only an evidence set with no
 * problem may be planned from. */
#ifndef GF_EVIDENCE_H
#define GF_EVIDENCE_H

#include "common/card.h"
#include "common/sha256.h"
#include "route/boundary.h"

#include <stdbool.h>
#include <stddef.h>

/* Minimum per-architecture speedup of an all-devices scope. */
#define GF_EVIDENCE_MIN_BROAD_SPEEDUP 1.05

typedef enum {
    GF_SCOPE_POINT = 0,        /* one card model: cc + multiprocessor count + exact name */
    GF_SCOPE_CAPABILITY = 1,   /* every card of one compute capability */
    GF_SCOPE_ALL_DEVICES = 2,  /* every CUDA card, backed by per-architecture speedups */
} gf_scope_kind;

typedef struct {
    int arch;                  /* 80 for sm80 */
    double min_speedup;        /* smallest library/candidate median ratio seen there */
} gf_arch_speedup;

typedef struct {
    gf_scope_kind kind;
    int cc_major, cc_minor;    /* point and capability */
    int sms;                   /* point: multiprocessor count */
    char *name;                /* point: exact device name; NULL otherwise */
    gf_arch_speedup *speedups; /* all-devices: one per architecture */
    size_t n_speedups;
} gf_scope;

typedef enum {
    GF_ARTIFACT_PTX_JIT = 0,   /* PTX text, JIT-compiled by the driver */
    GF_ARTIFACT_CUBIN = 1,     /* a cubin for one architecture */
} gf_artifact_kind;

/* What identifies a module byte for byte. */
typedef struct {
    char area[32];                  /* "lstm" */
    int tier;                       /* PTX tier: 90 for sm90 */
    gf_artifact_kind artifact;      /* ptx-jit | cubin */
    int cubin_arch;                 /* cubin: its architecture; 0 for PTX */
    char sha256[GF_SHA256_HEX_LEN]; /* of the PTX text or the cubin */
} gf_module_id;

typedef struct {
    char *key;                 /* "tile_m" */
    char *value;               /* "128", as written */
} gf_pin;

typedef struct {
    int line;                       /* where the proof starts in its file */
    char *boundary;                 /* "lstm.stack" */
    int batch;                      /* a production batch */
    gf_math math;
    gf_pin *config;                 /* the pinned kernel configuration */
    size_t n_config;
    char accuracy[GF_SHA256_HEX_LEN];   /* accuracy record */
    bool measured;                  /* false: `unmeasured`, never selects */
    gf_scope speed_scope;           /* measured: the scope the speed was measured for */
    char (*speed)[GF_SHA256_HEX_LEN];   /* measured: speed records (all-devices: one per arch) */
    size_t n_speed;
    char end_to_end[GF_SHA256_HEX_LEN]; /* measured: end-to-end record */
} gf_proof;

typedef struct {
    char *file;                /* the table it was read from */
    int line;                  /* where the binding starts */
    char *id;                  /* unique binding id */
    gf_scope scope;
    gf_module_id module;
    gf_proof *proofs;
    size_t n_proofs;
} gf_binding;

typedef struct gf_evidence gf_evidence;

gf_evidence *gf_evidence_new(void);
void gf_evidence_destroy(gf_evidence **self_p);

/* Read and validate an evidence directory. Returns 0 when it is valid;
 * GF_EINVAL when any problem was found (see gf_evidence_problem); GF_ENOENT
 * when the directory does not exist. Nothing is logged. Load once per
 * object. */
int gf_evidence_load(gf_evidence *self, const char *dir);

/* The problems found, one line each ("FILE:LINE: binding 'ID': ..."). */
size_t gf_evidence_problem_count(const gf_evidence *self);
const char *gf_evidence_problem(const gf_evidence *self, size_t i);

/* The bindings read (only well-formed ones are kept). */
size_t gf_evidence_binding_count(const gf_evidence *self);
const gf_binding *gf_evidence_binding(const gf_evidence *self, size_t i);

/* Position of an area in the route precedence list (0 first), or -1. */
int gf_evidence_precedence(const gf_evidence *self, const char *area);

/* For worker start-up: load and validate 'dir', logging every problem.
 * Returns 0 and a new evidence set in *out, or GF_EINVAL / GF_ENOENT (and
 * *out NULL). */
int gf_evidence_open(const char *dir, gf_evidence **out);

/* Whether a scope contains this exact card (CPU cards: never). */
bool gf_scope_contains(const gf_scope *scope, const gf_card_identity *card);
/* "point NVIDIA H200 cc 9.0 132 SMs", "capability cc 9.0", "all-devices sm80,sm90". */
void gf_scope_describe(const gf_scope *scope, char *buf, size_t len);
/* "lstm sm90 ptx-jit 3f2a...". */
void gf_module_describe(const gf_module_id *m, char *buf, size_t len);
bool gf_module_equal(const gf_module_id *a, const gf_module_id *b);

/* The directory loaded, without trailing slashes (borrowed; NULL before
 * gf_evidence_load). */
const char *gf_evidence_dir(const gf_evidence *self);

/* ---- orphan records (route/evidence_orphans.c) ----------------------- */

/* An orphan is an entry of DIR/records/ that no proof of the tables cites.
 * Orphans are a warning, never a reason to reject the tables: qualification
 * writes its records before a binding is promoted, and a record of a kernel
 * that lost is an orphan until it is pruned (docs/evidence.md). */
typedef enum {
    GF_ORPHAN_UNBOUND = 0,     /* a record of a module that no binding names */
    GF_ORPHAN_UNCITED = 1,     /* a record of a bound module that no proof cites */
    GF_ORPHAN_STRAY = 2,       /* not a record: not a regular <sha256>.json file holding a
                                * record's module (a link, a folder, another name, bad JSON) */
} gf_orphan_kind;

typedef struct {
    char *name;                /* the entry's name in records/ */
    gf_orphan_kind kind;
    bool removable;            /* a regular file named <sha256>.json: what prune removes */
    const char *why_kept;      /* not removable: why (static text); NULL otherwise */
    unsigned long long bytes;  /* its size (of the link itself for a link) */
} gf_orphan;

/* The orphans of a loaded evidence set, in name order: 0 and a new array in
 * *out (*n entries; free with gf_evidence_orphans_free), GF_ESTATE when the
 * set did not load without problems (its citations are then not known), or
 * GF_EIO when records/ cannot be listed (logged). No records/ folder: no
 * orphans. Hidden entries (".name") are not looked at. */
int gf_evidence_orphans(const gf_evidence *self, gf_orphan **out, size_t *n);
void gf_evidence_orphans_free(gf_orphan **list_p, size_t n);
/* Remove one orphan of this set from DIR/records/: only a removable one,
 * only while no proof cites its name, only a regular file (a link is never
 * followed, nor is a records/ folder that is a link), and only that name
 * inside records/. Returns 0; GF_EINVAL when it is not a removable orphan
 * now (cited, not a regular file, or records/ is not a real folder); GF_EIO
 * when the removal fails (errno says why). Logs nothing. */
int gf_evidence_orphan_remove(const gf_evidence *self, const gf_orphan *orphan);
/* "a record of a module no binding names", "a record of a bound module,
 * cited by no proof", "not a record". */
const char *gf_orphan_kind_describe(gf_orphan_kind kind);

/* The evidence folder a worker or command plans from when none is named:
 * $GPUFLOCK_EVIDENCE, else the evidence folder installed with the program
 * (an `evidence` link in the program's own folder, made by make install),
 * else the evidence/ folder of the source tree the binary was built from
 * (GF_EVIDENCE_DIR, set by the Makefile). Borrowed. */
const char *gf_evidence_default_dir(void);

#endif
