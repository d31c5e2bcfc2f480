/* netbatch.h — one batch of windows through the networks: segmentation,
 * powerset decoding, the fbank and the embeddings, each window's results
 * written where its piece (gf_diar_piece, diar/backend.h) says. A batch may
 * hold the windows of several recordings: the pipeline runs its own batches
 * through it (one piece), the batcher (diar/batcher.h) the pieces of several
 * jobs. At one batch size and one row of routes a window's results do not
 * depend on which other windows share its batch; for a backend whose
 * numbers depend on the size (fixed_batch, diar/backend.h: on a card a
 * library route may choose another algorithm at another size, and each
 * size has its own row of routes) every batch is padded here to the
 * capacity with silent windows, whoever runs it (tests/gpu/test_gpu_batcher.c). */
#ifndef GF_DIAR_NETBATCH_H
#define GF_DIAR_NETBATCH_H

#include "common/devstats.h"
#include "diar/backend.h"

typedef struct gf_diar_netbatch gf_diar_netbatch;

/* Host buffers for batches of up to cap windows. */
gf_diar_netbatch *gf_diar_netbatch_new(int cap);
void gf_diar_netbatch_destroy(gf_diar_netbatch **self_p);

/* The windows of n pieces (at most cap in all) through be's networks.
 * Returns 0 or a negative GF_E* after logging which stage failed; stage
 * seconds are added to times (may be NULL), device timings to stats (may
 * be NULL). */
int gf_diar_netbatch_run(gf_diar_netbatch *self, gf_diar_backend *be, const gf_diar_piece *p,
                         int n, gf_devstats *stats, gf_diar_times *times);

#endif
