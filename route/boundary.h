/* boundary.h — the layer boundaries of both networks, the areas that own
 * them, and the production tuples a route is planned for.
 *
 * A boundary is the unit the planner chooses a route for: one layer (or one
 * fused group of layers) of the segmentation or embedding network, named as
 * the kernels and the evidence tables name it ("lstm.stack",
 * "resnet.layer2.1.conv1"). Each boundary has a home area; an area is the
 * family of own kernels (one module) that may run it. The registry is static
 * data: nothing here allocates. */
#ifndef GF_BOUNDARY_H
#define GF_BOUNDARY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/mathmode.h"

#define GF_N_PRODUCTION_BATCHES 3
#define GF_DEFAULT_BATCH 32

typedef struct {
    const char *name;   /* "resnet.layer2.1.conv1" */
    const char *area;   /* home area: "resnet" */
} gf_boundary;

/* Number of boundaries, and the i-th (i < count), in network order. */
size_t gf_boundary_count(void);
const gf_boundary *gf_boundary_at(size_t i);
/* The boundary with this exact name, or NULL. */
const gf_boundary *gf_boundary_find(const char *name);

/* Number of known areas. */
size_t gf_area_count(void);
bool gf_area_known(const char *area);
/* Whether a module of 'area' may run boundary 'name': its home area, or an
 * area that can also run it (a GEMM of the dense area runs the fbank DFT and
 * the embedding's linear layer). */
bool gf_area_runs(const char *area, const char *boundary);

/* Configuration keys an own kernel of an area pins (tile sizes, stages...).
 * gf_area_config_key: whether 'key' belongs to 'area'. gf_area_key_owner:
 * some area that owns 'key' (the first in registry order), or NULL when no
 * area knows it. */
bool gf_area_config_key(const char *area, const char *key);
const char *gf_area_key_owner(const char *key);

/* The production batches: 1, 8, 32 (32 the default). */
const int *gf_production_batches(void);
bool gf_batch_is_production(int batch);


#endif
