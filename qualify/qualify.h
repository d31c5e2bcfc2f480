/* qualify.h — qualification of the project's own kernels on one card: the
 * measurements that evidence bindings stand on (docs/evidence.md).
 *
 * For a candidate (area, boundary, pinned configuration) and a tuple (batch,
 * math) it writes three records, each named by its SHA-256, into a records
 * folder: accuracy against a float64 CPU reference on fresh random inputs
 * (never zeros; every output poisoned first), speed against the library route
 * in interleaved A/B/A/B rounds timed by device events after warm-up, and the
 * end-to-end segmentation network with and without the route. A speed win is
 * claimed only outside the noise: the candidate's slowest round must beat the
 * library's fastest. */
#ifndef GF_QUALIFY_H
#define GF_QUALIFY_H

#include "common/card.h"
#include "gpu/blas.h"
#include "route/evidence.h"
#include "kernels/resnet/resnet_gpu.h"
#include "gpu/device.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    gf_gpu *gpu;                      /* the card, open (borrowed) */
    gf_blas_gpu *blas;                /* the library route (borrowed) */
    const gf_card_identity *card;     /* written into every record */
    const char *records_dir;          /* where records go (created if missing) */
    const char *segmentation_model;   /* end-to-end record of the LSTM; NULL: none made */
    const char *embedding_model;      /* end-to-end record of the ResNet convs; NULL: none */
    int rounds;                       /* A/B rounds, at least 2 */
    uint64_t seed;                    /* random inputs; recorded */
    FILE *report;                     /* progress and results, for people */
} gf_qualify_ctx;

typedef struct {
    const char *area;                 /* "lstm" */
    const char *boundary;             /* "lstm.stack" */
    const gf_pin *config;             /* the configuration it pins */
    size_t n_config;
} gf_candidate;

typedef struct {
    bool accurate;                        /* no element outside the tolerance */
    bool win;                             /* faster than the library outside the noise */
    double speedup;                       /* library median / candidate median */
    double e2e_speedup;                   /* the same for the whole network; 0: not measured */
    gf_module_id module;                  /* what was measured */
    char accuracy[GF_SHA256_HEX_LEN];     /* record names; "" when not written */
    char speed[GF_SHA256_HEX_LEN];
    char end_to_end[GF_SHA256_HEX_LEN];
} gf_qualify_result;

/* The own kernels this build can qualify on a card of compute capability cc
 * (major * 10 + minor: the ResNet layers pin the variant that card runs);
 * n in *count. Valid until the next call with another cc; one thread. */
const gf_candidate *gf_qualify_candidates(int cc, size_t *count);

/* Qualify one candidate on one tuple. Returns 0 (whatever the verdict, in
 * *out), GF_EUNSUP when the kernel refuses this card or tuple, GF_EDEVICE,
 * GF_EIO (records could not be written). */
int gf_qualify_run(const gf_qualify_ctx *ctx, const gf_candidate *cand, int batch, gf_math math,
                   gf_qualify_result *out);

/* One measured tuple of a candidate. */
typedef struct {
    const gf_candidate *cand;
    int batch;
    gf_math math;
    gf_qualify_result result;
} gf_qualify_entry;

/* One binding (a YAML list item under `bindings:`) for the card's point scope
 * and the module measured, with one proof per winning entry (entries that did
 * not win are left out; all entries must be of one area). Returns the number
 * of proofs written; nothing is written when there are none. */
int gf_qualify_write_binding(FILE *f, const gf_card_identity *card,
                             const gf_qualify_entry *entries, size_t n);

#endif
