/* qualify_priv.h — what the three parts of `gpuflock qualify` share, not part
 * of its contract (qualify/qualify.h): the driver (qualify.c: the candidates
 * table, the records, the accuracy bookkeeping and the A/B timing), the
 * segmentation network's candidates (qualify_seg.c) and the embedding
 * network's (qualify_emb.c). Each candidate's function runs its boundary on
 * both routes and leaves the records to the driver's helpers. */
#ifndef GF_QUALIFY_PRIV_H
#define GF_QUALIFY_PRIV_H

#include "qualify/qualify.h"
#include "common/devstats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * the speed record and, on a win, the end-to-end network's. */
int gfq_measure_speed(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                      gf_qualify_result *res, const gfq_ab_subject *sub, uint64_t *rng);

/* ---- the candidates, by network ------------------------------------------- */

/* The most candidates one card has: the segmentation's 7, the embedding's 4
 * besides the ResNet trunk, and its layers. */
#define GFQ_MAX_CONV_LAYERS 40
#define GFQ_MAX_CANDIDATES (11 + 2 * GFQ_MAX_CONV_LAYERS)   /* resnet and resnet32 */

/* Each appends its network's candidates for a card of compute capability cc
 * to out (room for cap) in the report's order; returns how many. The
 * pointers stay valid until the next call. */
size_t gfq_seg_candidates(int cc, gf_candidate *out, size_t cap);
size_t gfq_emb_candidates(int cc, gf_candidate *out, size_t cap);

/* One candidate of an area on one tuple, as gf_qualify_run, which
 * dispatches to them by area. */
typedef int gfq_area_fn(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B,
                        gf_math math, gf_qualify_result *res);
gfq_area_fn gfq_lstm, gfq_sinc, gfq_segconv, gfq_dense;   /* qualify_seg.c */
gfq_area_fn gfq_conv, gfq_fbank, gfq_pool, gfq_seg1;      /* qualify_emb.c */

/* ---- end to end ------------------------------------------------------------ */

/* The whole network with `boundary` on the own route (A) and on the library
 * route (B), interleaved rounds in s into a[r], b[r]; *seed draws the inputs.
 * Segmentation: the waveform to the log-probabilities. */
int gfq_e2e_segmentation(const gf_qualify_ctx *ctx, const char *boundary, int B, gf_math math,
                         uint64_t *seed, double *a, double *b);

/* The embedding network from the features; *own_trunk: whether the ResNet
 * trunk ran on its own kernel. */
int gfq_e2e_embedding(const gf_qualify_ctx *ctx, const char *boundary, int B, gf_math math,
                      uint64_t *seed, double *a, double *b, bool *own_trunk);

/* The fbank and the embedding network from the waveform. */
int gfq_e2e_fbank(const gf_qualify_ctx *ctx, const char *boundary, int B, gf_math math,
                  uint64_t *seed, double *a, double *b);

#endif
