/* reconstruct.h — from clustered windows to frame-level diarization and
 * speaker turns.
 *
 * Each window's local speakers take the cluster they were assigned; per
 * window and cluster the activity is the maximum over its speakers. These
 * are added up on the global frame grid (overlap-add without averaging);
 * at every frame the count[t] clusters with the most activity are marked
 * active (ties to the lower cluster). Turns come from that 0/1 matrix:
 * a cluster is active from the middle of the frame where it switches on to
 * the middle of the frame where it switches off; with min_duration_off,
 * turns of one speaker separated by a shorter gap are merged. */
#ifndef GF_RECONSTRUCT_H
#define GF_RECONSTRUCT_H

#include <stddef.h>
#include <stdint.h>

#include "diar/cluster/aggregate.h"
#include "common/par.h"

/* Frame-level diarization. seg: n_chunks x n_frames x n_spk (0/1); hard:
 * n_chunks x n_spk (-2: none); count: n_total speakers per global frame
 * (n_total = gf_aggregate_frames(...)). Returns a new n_total x *n_clusters
 * float32 0/1 matrix (caller frees); *n_clusters = max(max(hard) + 1,
 * max(count)). par: threads to split the frames across (NULL: this one);
 * the result does not depend on it. */
float *gf_reconstruct(const float *seg, size_t n_chunks, size_t n_frames, size_t n_spk,
                      const int8_t *hard, const uint8_t *count, const gf_swin *chunks,
                      const gf_swin *frames, gf_par *par, size_t *n_clusters);

typedef struct {
    double start;   /* seconds */
    double end;     /* seconds */
    int label;      /* cluster (column) index */
} gf_segment;

/* Turns of a n_total x n_clusters 0/1 matrix on the frame grid 'grid'
 * (start at the chunks' start). Returns a new array sorted by (start, end,
 * label) and its length in *n (caller frees). */
gf_segment *gf_reconstruct_turns(const float *diar, size_t n_total, size_t n_clusters,
                                 const gf_swin *grid, double min_duration_off, size_t *n);

#endif
