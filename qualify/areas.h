/* areas.h — the networks' candidates and their runs, for the driver
 * (qualify.c): seg.c holds the segmentation network's areas, emb.c the
 * embedding network's. Each area's function runs its boundary on both
 * routes on fresh random inputs, writes the accuracy record and, where it is
 * accurate, the speed record (measure.h); the driver then measures the
 * network end to end with the gfq_e2e_* of the candidate's network. */
#ifndef GF_QUALIFY_AREAS_H
#define GF_QUALIFY_AREAS_H

#include "qualify/measure.h"


/* The ResNet kernel's configuration per layer, from the variant the own
 * route runs for its shape (gf_conv_gpu_own_kernel). */
#define RESNET_PINS 7
typedef struct {
    gf_pin pins[RESNET_PINS];
    char tile_m[8], tile_n[8], tile_k[8], stages[8], halo[16];
} resnet_config;

/* The ResNet34 trunk's convolutions, in network order, with their shapes and
 * input extents (80 mel rows x 998 frames at the trunk's input). */
typedef struct {
    char boundary[48];
    gf_conv_shape shape;
    int h, w;            /* input extent */
    int residual, relu;  /* epilogue as the network runs it */
    resnet_config config;     /* the tf32 variant's (the resnet area) */
    resnet_config config32;   /* the fp32 variant's (resnet32), where it has one there */
    bool has32;
} conv_layer;

/* The ResNet34 trunk's layers for one card: what the ResNet candidates'
 * boundaries and pins point into (storage the caller keeps as long as the
 * candidates). */
typedef struct {
    conv_layer layers[GFQ_MAX_CONV_LAYERS];
    size_t n;
} gfq_trunk;

/* The trunk's layers for a card of capability cc into *t (resnet.c). */
void gfq_trunk_build(int cc, gfq_trunk *t);

/* Each appends its network's candidates for a card of compute capability cc
 * to out (room for cap) in the report's order; returns how many. The
 * segmentation network's point into static tables; the embedding network's
 * ResNet candidates into *trunk, which it fills. */
size_t gfq_seg_candidates(int cc, gf_candidate *out, size_t cap);
size_t gfq_emb_candidates(int cc, gfq_trunk *trunk, gf_candidate *out, size_t cap);

/* One candidate of an area on one tuple, as gf_qualify_run, which
 * dispatches to them by area. */
typedef int gfq_area_fn(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B,
                        gf_math math, gf_qualify_result *res);
gfq_area_fn gfq_lstm, gfq_sinc, gfq_segconv, gfq_dense;   /* seg.c */
gfq_area_fn gfq_conv;                                     /* resnet.c */
gfq_area_fn gfq_fbank, gfq_pool, gfq_seg1;                /* emb.c */

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
