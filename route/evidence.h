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

/* The evidence folder a worker or command plans from when none is named:
 * $GPUFLOCK_EVIDENCE, else the evidence/ folder of the source tree the
 * binary was built from (GF_EVIDENCE_DIR, set by the Makefile). Borrowed. */
const char *gf_evidence_default_dir(void);

#endif
