/* measure.h — what every part of `gpuflock qualify` stands on: the shared
 * types, accuracy against float64, the records, and the interleaved A/B
 * timing (measure.c). The networks' candidates (seg.c, emb.c: areas.h) use
 * it, and the driver (qualify.c) above them; it uses neither. */
#ifndef GF_QUALIFY_MEASURE_H
#define GF_QUALIFY_MEASURE_H

#include "common/card.h"
#include "common/devstats.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/evidence.h"
#include "kernels/resnet/resnet_gpu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
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
    uint64_t e2e_seed;                    /* where the end-to-end inputs start (the speed step) */
} gf_qualify_result;

/* Candidates at most: the ResNet trunk's layers (in two variants) and the rest. */
#define GFQ_MAX_CONV_LAYERS 40
#define GFQ_MAX_CANDIDATES (11 + 2 * GFQ_MAX_CONV_LAYERS)   /* resnet and resnet32 */

/* One measured tuple of a candidate. */
typedef struct {
    const gf_candidate *cand;
    int batch;
    gf_math math;
    gf_qualify_result result;
} gf_qualify_entry;

/* ---- records -------------------------------------------------------------- */

/* A record of `kind` ("accuracy", "speed", "end-to-end") for a candidate's
 * tuple, with the card, module and seed filled in; the caller adds its
 * fields, writes it (gfq_record_write: named by its SHA-256 into out) and
 * puts it. */
json_object *gfq_record_base(const gf_qualify_ctx *ctx, const char *kind, const gf_candidate *cand,
                             int B, gf_math math, const gf_module_id *module);
int gfq_record_write(const gf_qualify_ctx *ctx, json_object *r, char out[GF_SHA256_HEX_LEN]);
/* The n timings as a JSON array, and their median, lowest and highest. */
json_object *gfq_timing_json(double *v, int n, double *median, double *lo, double *hi);

/* ---- accuracy against float64 --------------------------------------------- */

/* A candidate's outputs against the float64 reference, one element at a
 * time, with the math mode's per-element tolerance atol + rtol·|ref|. */
typedef struct {
    double atol, rtol;            /* the tolerance, set by the caller */
    long elements, mismatches;    /* compared, and outside the tolerance */
    double max_abs, max_rel;      /* the largest errors (rel where |ref| > 1e-3) */
    double num, den;              /* sums of squared errors and of squared refs */
} gfq_acc_errors;

/* The layer bound of a math mode, for one GEMM-like layer against float64:
 * fp32 atol 1e-4 + rtol 1e-3, tf32 5e-3 + 1e-2 (tf32's 10-bit mantissa). */
static inline gfq_acc_errors gfq_acc_layer(gf_math math)
{
    return math == GF_MATH_TF32 ? (gfq_acc_errors){ .atol = 5e-3, .rtol = 1e-2 }
                                : (gfq_acc_errors){ .atol = 1e-4, .rtol = 1e-3 };
}

/* Adds one element; false when it is further from ref than lim (NaN too). */
bool gfq_acc_add_within(gfq_acc_errors *e, double got, double ref, double lim);

/* The same with the tolerance atol + rtol·|ref|. */
bool gfq_acc_add(gfq_acc_errors *e, double got, double ref);

/* Outputs the run left as the NaN they were poisoned with (or made NaN). */
long gfq_count_unwritten(const float *got, size_t n);

/* The verdict (an unwritten output is a mismatch), its report line, and the
 * accuracy record: what was compared (`what`: "sampled outputs", "elements")
 * and one key of its own (extra_key: extra_value). */
int gfq_acc_record(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                   gf_qualify_result *res, uint64_t seed, const gfq_acc_errors *e,
                   long unwritten, size_t outputs, const char *what, const char *extra_key,
                   int64_t extra_value);

/* The module the own route loaded must be the candidate's: 0, or GF_ESTATE. */
int gfq_check_module(const char *boundary, const char *sha, const gf_qualify_result *res);

/* ---- A/B timing ------------------------------------------------------------ */

/* What A/B rounds compare: the same work on the own route (A) and on the
 * library route (B). With gpu set, one boundary's launches: the rounds time
 * each run by events on gpu's stream as `stage` (run's stats unused). With
 * gpu NULL, a whole network: run adds the device time of its stages to
 * stats. */
typedef struct {
    int (*set_route)(void *arg, gf_route_kind kind);
    int (*run)(void *arg, gf_devstats *stats);
    void *arg;
    gf_gpu *gpu;
    const char *stage;
} gfq_ab_subject;

/* One warm-up of each route, then ctx->rounds interleaved rounds A, B, A, B;
 * a[r], b[r] in ns x scale. A run whose timing failed fails the rounds. */
int gfq_ab_rounds(const gf_qualify_ctx *ctx, const gfq_ab_subject *sub, double scale, double *a,
                  double *b);

/* An accurate candidate's speed: interleaved A/B rounds of sub (ms), then
 * the speed record on a win outside the noise (res->win). *rng, where the
 * candidate's inputs left it, is kept in res->e2e_seed: the driver's end-to-end
 * run draws its inputs from there. */
int gfq_measure_speed(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                      gf_qualify_result *res, const gfq_ab_subject *sub, uint64_t *rng);

/* ---- the candidates, by network ------------------------------------------- */

/* The most candidates one card has: the segmentation's 7, the embedding's 4
 * besides the ResNet trunk, and its layers. */
#endif
