/* areas.h — the networks' candidates and their runs, for the driver
 * (qualify.c): seg.c holds the segmentation network's areas, emb.c the
 * embedding network's. Each area's function runs its boundary on both
 * routes on fresh random inputs, writes the accuracy record and, where it is
 * accurate, the speed record (measure.h); the driver then measures the
 * network end to end with the gfq_e2e_* of the candidate's network. */
#ifndef GF_QUALIFY_AREAS_H
#define GF_QUALIFY_AREAS_H

#include "qualify/measure.h"


/* Each appends its network's candidates for a card of compute capability cc
 * to out (room for cap) in the report's order; returns how many. The
 * pointers stay valid until the next call. */
size_t gfq_seg_candidates(int cc, gf_candidate *out, size_t cap);
size_t gfq_emb_candidates(int cc, gf_candidate *out, size_t cap);

/* One candidate of an area on one tuple, as gf_qualify_run, which
 * dispatches to them by area. */
typedef int gfq_area_fn(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B,
                        gf_math math, gf_qualify_result *res);
gfq_area_fn gfq_lstm, gfq_sinc, gfq_segconv, gfq_dense;   /* seg.c */
gfq_area_fn gfq_conv, gfq_fbank, gfq_pool, gfq_seg1;      /* emb.c */

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
