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

#include "qualify/measure.h"

#include <stdio.h>

/* The own kernels this build can qualify on a card of compute capability cc
 * (major * 10 + minor: the ResNet layers pin the variant that card runs):
 * the set owns what the candidates point into (the ResNet layers' names and
 * pinned configurations), so they stay valid until it is destroyed. */
typedef struct gf_qualify_set gf_qualify_set;
gf_qualify_set *gf_qualify_set_new(int cc);
const gf_candidate *gf_qualify_set_candidates(const gf_qualify_set *self, size_t *n);
void gf_qualify_set_destroy(gf_qualify_set **self_p);

/* Qualify one candidate on one tuple. Returns 0 (whatever the verdict, in
 * *out), GF_EUNSUP when the kernel refuses this card or tuple, GF_EDEVICE,
 * GF_EIO (records could not be written). */
int gf_qualify_run(const gf_qualify_ctx *ctx, const gf_candidate *cand, int batch, gf_math math,
                   gf_qualify_result *out);

/* One binding (a YAML list item under `bindings:`) for the card's point scope
 * and the module measured, with one proof per winning entry (entries that did
 * not win are left out; all entries must be of one area). Returns the number
 * of proofs written; nothing is written when there are none. */
int gf_qualify_write_binding(FILE *f, const gf_card_identity *card,
                             const gf_qualify_entry *entries, size_t n);

#endif
