/* cluster.h — the community-1 clustering recipe, end to end.
 *
 * From binarized segmentation (windows x frames x local speakers) and one
 * embedding per (window, local speaker) to frame-level diarization and
 * speaker turns: speaker counting; filtering of embeddings; AHC; PLDA and
 * VBx; (optional) k-means for a forced speaker count; assignment;
 * reconstruction; turns. Every intermediate is kept in the result so that
 * tests compare each stage with the reference. */
#ifndef GF_CLUSTER_H
#define GF_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "diar/cluster/aggregate.h"
#include "diar/cluster/ahc.h"
#include "common/par.h"
#include "diar/cluster/plda.h"
#include "diar/cluster/reconstruct.h"
#include "diar/cluster/vbx.h"

typedef struct {
    gf_swin chunks;            /* windows: start 0, duration 10 s, step 1 s */
    gf_swin frames;            /* frames: duration 0.0619375 s, step 0.016875 s */
    double threshold;          /* AHC distance cut, 0.6 */
    gf_vbx_opts vbx;           /* Fa 0.07, Fb 0.8, 20 iterations, smoothing 7 */
    double min_active_ratio;   /* clean-frame share to keep an embedding, 0.2 */
    double min_duration_off;   /* merge same-speaker gaps shorter than this, 0 */
    int num_speakers;          /* 0: not forced */
    int min_speakers;          /* 0: 1 */
    int max_speakers;          /* 0: unbounded */
    gf_ahc_link_fn ahc_link;   /* NULL: AHC linkage on the CPU; else this one (e.g. on a
                                  card: diar/cluster/ahc_gpu.h) */
    void *ahc_ctx;             /* passed to ahc_link */
    gf_devstats *stats;        /* ahc_link's device time, where it has one; may be NULL */
    int threads;               /* host threads for everything but the AHC linkage (counting,
                                  filtering, PLDA, VBx, assignment, reconstruction); 0: one
                                  per online CPU, at most 16. Results do not depend on it. */
    gf_par *par;               /* a pool to run them on instead (borrowed; threads is then
                                  ignored): one that lives across runs starts no thread */
} gf_cluster_opts;

/* The community-1 parameters. */
gf_cluster_opts gf_cluster_defaults(void);

typedef struct {
    size_t n_total;            /* global frames */
    uint8_t *count;            /* [n_total] speaker count (before the max_speakers cap) */
    size_t n_train;            /* embeddings kept for clustering */
    int64_t *train_chunk;      /* [n_train] their window */
    int64_t *train_spk;        /* [n_train] their local speaker */
    int *ahc;                  /* [n_train] AHC labels */
    size_t n_ahc;              /* AHC clusters */
    double *fea;               /* [n_train x plda dim] PLDA features */
    double *gamma;             /* [n_train x n_ahc] VBx responsibilities */
    double *pi;                /* [n_ahc] VBx priors */
    size_t n_centroids;        /* clusters after VBx (or k-means) */
    int8_t *hard;              /* [windows x local speakers] cluster, -2 none */
    size_t n_clusters;         /* columns of diar */
    float *diar;               /* [n_total x n_clusters] 0/1 */
    size_t n_turns;            /* turns */
    gf_segment *turns;         /* sorted; label = speaker index (SPEAKER_%02d) */
    size_t n_excl_turns;       /* the exclusive diarization (pyannote's
                                  exclusive_speaker_diarization): at most one speaker at
                                  a time, the most active one; the same speaker names */
    gf_segment *excl_turns;
    size_t n_speakers;         /* speakers named in turns */
    size_t dim;                /* embedding size */
    float *centroids;          /* [n_speakers x dim] each speaker's centroid (the mean of
                                  its cluster's embeddings, as the assignment scores
                                  them; zeros where the count named more speakers than
                                  clusters were found) */
    double t_count;            /* seconds spent: speaker counting */
    double t_ahc;              /*   AHC (normalisation, linkage, cut) */
    double t_plda;             /*   x-vector transform + PLDA features (beside the AHC
                                    when its linkage is on the card: not in the sum then) */
    double t_vbx;              /*   VBx */
    double t_assign;           /*   centroids, k-means, scores, assignment */
    double t_reconstruct;      /*   frame-level diarization and turns */
} gf_cluster_result;

/* Check inputs: seg n_chunks x n_frames x n_spk with values 0/1, emb
 * n_chunks x n_spk x dim with dim == the PLDA's, embeddings finite or
 * entirely NaN, and NaN only for speakers with no active frame. Logs what
 * is wrong, naming seg_name / emb_name; returns 0 or GF_EINVAL. */
int gf_cluster_check(const char *seg_name, const float *seg, const char *emb_name,
                     const float *emb, size_t n_chunks, size_t n_frames, size_t n_spk,
                     size_t dim, const gf_plda *plda);

/* Run the recipe. plda NULL: no PLDA and VBx, the AHC clusters (at
 * opts->threshold) are the speakers and assignment is unconstrained (two
 * local speakers of a window may get the same one: the weight-free mode). Returns 0 and fills *res (free with gf_cluster_result_free),
 * or GF_EINVAL (bad speaker constraints) / GF_ETOOBIG (AHC memory). */
int gf_cluster_run(const float *seg, const float *emb, size_t n_chunks, size_t n_frames,
                   size_t n_spk, size_t dim, const gf_plda *plda, const gf_cluster_opts *opts,
                   gf_cluster_result *res);
void gf_cluster_result_free(gf_cluster_result *res);

#endif
