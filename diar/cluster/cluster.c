/* cluster.c — the community-1 clustering recipe (cluster.h), in the order
 * of pyannote's SpeakerDiarization.apply and VBxClustering.__call__. */
#include "diar/cluster/cluster.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/ahc.h"
#include "diar/cluster/assign.h"
#include "diar/cluster/npsum.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

gf_cluster_opts gf_cluster_defaults(void)
{
    gf_cluster_opts o = {
        .chunks = { 0.0, 10.0, 1.0 },
        .frames = { 0.0, 0.0619375, 0.016875 },
        .threshold = 0.6,
        .vbx = gf_vbx_defaults(),
        .min_active_ratio = 0.2,
        .min_duration_off = 0.0,
    };
    return o;
}

int gf_cluster_check(const char *seg_name, const float *seg, const char *emb_name,
                     const float *emb, size_t n_chunks, size_t n_frames, size_t n_spk,
                     size_t dim, const gf_plda *plda)
{
    if (plda && dim != gf_plda_in_dim(plda)) {
        GF_ERROR("%s: embeddings have %zu dimensions, the PLDA expects %zu", emb_name, dim,
                 gf_plda_in_dim(plda));
        return GF_EINVAL;
    }
    for (size_t c = 0; c < n_chunks; c++) {
        for (size_t s = 0; s < n_spk; s++) {
            size_t active = 0;
            for (size_t f = 0; f < n_frames; f++) {
                float v = seg[(c * n_frames + f) * n_spk + s];
                if (v != 0.0f && v != 1.0f) {
                    GF_ERROR("%s: window %zu frame %zu speaker %zu: %g is not binarized "
                             "activity (0 or 1)", seg_name, c, f, s, (double)v);
                    return GF_EINVAL;
                }
                active += v == 1.0f;
            }
            const float *e = emb + (c * n_spk + s) * dim;
            size_t nans = 0;
            for (size_t d = 0; d < dim; d++) {
                if (isnan(e[d]))
                    nans++;
                else if (!isfinite(e[d])) {
                    GF_ERROR("%s: window %zu speaker %zu: infinite value", emb_name, c, s);
                    return GF_EINVAL;
                }
            }
            if (nans && nans != dim) {
                GF_ERROR("%s: window %zu speaker %zu: embedding partly NaN (%zu of %zu)",
                         emb_name, c, s, nans, dim);
                return GF_EINVAL;
            }
            if (nans && active) {
                GF_ERROR("%s: window %zu speaker %zu: NaN embedding for a speaker active on "
                         "%zu frames of %s", emb_name, c, s, active, seg_name);
                return GF_EINVAL;
            }
        }
    }
    return 0;
}

void gf_cluster_result_free(gf_cluster_result *r)
{
    free(r->count);
    free(r->train_chunk);
    free(r->train_spk);
    free(r->ahc);
    free(r->fea);
    free(r->gamma);
    free(r->pi);
    free(r->hard);
    free(r->diar);
    free(r->turns);
    free(r->excl_turns);
    free(r->centroids);
    memset(r, 0, sizeof *r);
}

/* The PLDA features of the training embeddings, which do not depend on the
 * AHC: where the linkage runs on the card (o->ahc_link), computed on another
 * thread with the host pool meanwhile, since the calling thread then only
 * launches and waits; with the linkage on the CPU, after it (its distance
 * matrix takes the cores). */
typedef struct {
    const gf_plda *plda;
    const float *train;
    size_t n;
    gf_par *par;
    double *fea;
    double secs;
} plda_job;

static void *plda_run(void *arg)
{
    plda_job *j = arg;
    uint64_t t0 = gf_now_ns();
    gf_plda_features(j->plda, j->train, j->n, j->par, j->fea);
    j->secs = (double)(gf_now_ns() - t0) * 1e-9;
    return NULL;
}

int gf_cluster_run(const float *seg, const float *emb, size_t n_chunks, size_t n_frames,
                   size_t n_spk, size_t dim, const gf_plda *plda, const gf_cluster_opts *o,
                   gf_cluster_result *r)
{
    memset(r, 0, sizeof *r);
    /* speaker constraints, as pyannote's set_num_speakers */
    long num = o->num_speakers > 0 ? o->num_speakers : 0;
    long min_spk = num ? num : (o->min_speakers > 0 ? o->min_speakers : 1);
    long max_spk = num ? num : (o->max_speakers > 0 ? o->max_speakers : -1);   /* -1: inf */
    if (max_spk != -1 && min_spk > max_spk) {
        GF_ERROR("min_speakers must be at most max_speakers (here %ld and %ld)", min_spk,
                 max_spk);
        return GF_EINVAL;
    }
    if (min_spk == max_spk)
        num = min_spk;

    /* host threads for everything but the AHC linkage: the caller's pool, or
     * one for this run */
    gf_par *own = o->par ? NULL : gf_par_new(o->threads > 0 ? o->threads : gf_par_cores(16));
    gf_par *par = o->par ? o->par : own;
    float *act = NULL;

    uint64_t t0 = gf_now_ns();
    r->n_total = gf_aggregate_frames(&o->chunks, n_chunks, &o->frames);
    r->count = gf_malloc((r->n_total ? r->n_total : 1) * sizeof *r->count);
    gf_speaker_count(seg, n_chunks, n_frames, n_spk, &o->chunks, &o->frames, par, r->count);
    size_t cells = n_chunks * n_spk;
    r->t_count = (double)(gf_now_ns() - t0) * 1e-9;
    r->hard = gf_malloc((cells ? cells : 1) * sizeof *r->hard);
    uint8_t maxcount = 0;
    for (size_t t = 0; t < r->n_total; t++)
        if (r->count[t] > maxcount)
            maxcount = r->count[t];
    if (maxcount == 0) {
        /* nobody speaks: no clustering, no turns */
        for (size_t i = 0; i < cells; i++)
            r->hard[i] = -2;
        r->diar = gf_calloc(1, sizeof *r->diar);
        r->turns = gf_calloc(1, sizeof *r->turns);
        r->excl_turns = gf_calloc(1, sizeof *r->excl_turns);
        r->dim = dim;
        gf_par_destroy(&own);
        return 0;
    }

    r->train_chunk = gf_malloc((cells ? cells : 1) * sizeof *r->train_chunk);
    r->train_spk = gf_malloc((cells ? cells : 1) * sizeof *r->train_spk);
    /* with the per (window, speaker) activity: who is never active */
    act = gf_malloc((cells ? cells : 1) * sizeof *act);
    r->n_train = gf_assign_filter(seg, emb, n_chunks, n_frames, n_spk, dim, o->min_active_ratio,
                                  par, r->train_chunk, r->train_spk, act);
    size_t n = r->n_train;
    float *train = gf_malloc((n ? n : 1) * dim * sizeof *train);
    for (size_t i = 0; i < n; i++)
        memcpy(train + i * dim,
               emb + ((size_t)r->train_chunk[i] * n_spk + (size_t)r->train_spk[i]) * dim,
               dim * sizeof *train);
    double *centroids = NULL;
    size_t K = 0;
    bool constrained = plda != NULL;  /* weight-free: local speakers may share a cluster */
    int rc = 0;
    if (n < 2) {
        /* too few embeddings to cluster: everybody is cluster 0 */
        for (size_t i = 0; i < cells; i++)
            r->hard[i] = 0;
        goto reconstruct;
    }
    r->ahc = gf_malloc(n * sizeof *r->ahc);
    plda_job pj = { plda, train, n, par, NULL, 0.0 };
    pthread_t plda_th;
    bool plda_ahead = false;
    if (plda) {
        r->fea = gf_malloc(n * gf_plda_dim(plda) * sizeof *r->fea);
        pj.fea = r->fea;
        plda_ahead = o->ahc_link && pthread_create(&plda_th, NULL, plda_run, &pj) == 0;
    }
    t0 = gf_now_ns();
    rc = o->ahc_link ? gf_ahc_cluster_with(o->ahc_link, o->ahc_ctx, o->stats, train, n, dim,
                                           o->threshold, r->ahc)
                     : gf_ahc_cluster(train, n, dim, o->threshold, r->ahc);
    r->t_ahc = (double)(gf_now_ns() - t0) * 1e-9;
    if (plda_ahead)
        pthread_join(plda_th, NULL);
    else if (plda && rc >= 0)
        plda_run(&pj);
    r->t_plda = pj.secs;
    if (rc < 0)
        goto out_free;
    r->n_ahc = (size_t)rc;
    rc = 0;
    if (!plda) {
        /* no PLDA (weight-free embeddings): the AHC clusters are the speakers */
        K = r->n_ahc;
        double *onehot = gf_calloc(n * K, sizeof *onehot);
        for (size_t i = 0; i < n; i++)
            onehot[i * K + (size_t)r->ahc[i]] = 1.0;
        centroids = gf_malloc(K * dim * sizeof *centroids);
        gf_assign_centroids(train, n, dim, onehot, K, par, centroids);
        free(onehot);
        goto constraints;
    }
    size_t L = gf_plda_dim(plda);
    t0 = gf_now_ns();
    r->gamma = gf_malloc(n * r->n_ahc * sizeof *r->gamma);
    r->pi = gf_malloc(r->n_ahc * sizeof *r->pi);
    gf_vbx(r->fea, n, L, gf_plda_phi(plda), r->ahc, r->n_ahc, &o->vbx, par, r->gamma, r->pi);
    r->t_vbx = (double)(gf_now_ns() - t0) * 1e-9;
    t0 = gf_now_ns();
    /* keep the speakers VBx kept (prior > 1e-7): their columns of gamma,
     * copied row by row */
    size_t *kept = gf_malloc(r->n_ahc * sizeof *kept);
    for (size_t j = 0; j < r->n_ahc; j++)
        if (r->pi[j] > 1e-7)
            kept[K++] = j;
    double *wk = gf_malloc(n * (K ? K : 1) * sizeof *wk);
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < K; j++)
            wk[t * K + j] = r->gamma[t * r->n_ahc + kept[j]];
    free(kept);
    centroids = gf_malloc((K ? K : 1) * dim * sizeof *centroids);
    gf_assign_centroids(train, n, dim, wk, K, par, centroids);
    free(wk);

constraints:;
    long want = num;
    if ((long)K < min_spk)
        want = min_spk;
    else if (max_spk != -1 && (long)K > max_spk)
        want = max_spk;
    if (want && want != (long)K) {
        /* forced count: k-means on the normalised embeddings, centroids as
         * plain means, unconstrained assignment */
        constrained = false;
        double *xn = gf_malloc(n * dim * sizeof *xn);
        float *sq = gf_malloc(dim * sizeof *sq);
        for (size_t i = 0; i < n; i++) {
            for (size_t d = 0; d < dim; d++)
                sq[d] = train[i * dim + d] * train[i * dim + d];
            float norm = sqrtf(gf_npsum_f32(sq, dim, 1));
            for (size_t d = 0; d < dim; d++)
                xn[i * dim + d] = (double)(train[i * dim + d] / norm);
        }
        free(sq);
        int *lab = gf_malloc(n * sizeof *lab);
        /* scikit-learn refuses more clusters than samples; we cap instead */
        size_t kk = (size_t)want > n ? n : (size_t)want;
        gf_assign_kmeans(xn, n, dim, kk, 3, 42, par, lab);
        free(xn);
        double *onehot = gf_calloc(n * kk, sizeof *onehot);
        for (size_t i = 0; i < n; i++)
            if (lab[i] >= 0 && (size_t)lab[i] < kk)
                onehot[i * kk + (size_t)lab[i]] = 1.0;
        free(lab);
        K = kk;
        free(centroids);
        centroids = gf_malloc(K * dim * sizeof *centroids);
        gf_assign_centroids(train, n, dim, onehot, K, par, centroids);
        free(onehot);
    }
    r->n_centroids = K;
    double *soft = gf_malloc(cells * K * sizeof *soft);
    gf_assign_scores(emb, n_chunks, n_spk, dim, centroids, K, par, soft);
    gf_assign_hard(soft, act, n_chunks, n_spk, K, constrained, par, r->hard);
    free(soft);
    r->t_assign = (double)(gf_now_ns() - t0) * 1e-9;

reconstruct:
    t0 = gf_now_ns();
    /* speakers never active in a window get no cluster */
    for (size_t i = 0; i < cells; i++)
        if (act[i] == 0.0f)
            r->hard[i] = -2;
    {
        uint8_t *capped = gf_malloc(r->n_total * sizeof *capped);
        for (size_t t = 0; t < r->n_total; t++)
            capped[t] = (max_spk != -1 && r->count[t] > max_spk) ? (uint8_t)max_spk : r->count[t];
        r->diar = gf_reconstruct(seg, n_chunks, n_frames, n_spk, r->hard, capped, &o->chunks,
                                 &o->frames, par, &r->n_clusters);
        gf_swin grid = { o->chunks.start, o->frames.duration, o->frames.step };
        r->turns = gf_reconstruct_turns(r->diar, r->n_total, r->n_clusters, &grid,
                                        o->min_duration_off, &r->n_turns);
        /* the exclusive diarization: the same, at most one speaker a frame
         * (the count capped at 1: the most active one) */
        for (size_t t = 0; t < r->n_total; t++)
            capped[t] = capped[t] > 1 ? 1 : capped[t];
        size_t n_excl_clusters = 0;
        float *excl = gf_reconstruct(seg, n_chunks, n_frames, n_spk, r->hard, capped, &o->chunks,
                                     &o->frames, par, &n_excl_clusters);
        r->excl_turns = gf_reconstruct_turns(excl, r->n_total, n_excl_clusters, &grid,
                                             o->min_duration_off, &r->n_excl_turns);
        free(excl);
        free(capped);
        /* name speakers in order of cluster index among those with turns;
         * the exclusive turns' speakers are among them, under the same names */
        int *rename = gf_malloc((r->n_clusters ? r->n_clusters : 1) * sizeof *rename);
        for (size_t k = 0; k < r->n_clusters; k++)
            rename[k] = -1;
        for (size_t i = 0; i < r->n_turns; i++)
            rename[r->turns[i].label] = 0;
        int next = 0;
        for (size_t k = 0; k < r->n_clusters; k++)
            if (rename[k] == 0)
                rename[k] = next++;
        for (size_t i = 0; i < r->n_turns; i++)
            r->turns[i].label = rename[r->turns[i].label];
        size_t n_named = 0;
        for (size_t i = 0; i < r->n_excl_turns; i++) {
            int k = r->excl_turns[i].label;
            if (k >= 0 && (size_t)k < r->n_clusters && rename[k] >= 0) {
                r->excl_turns[n_named] = r->excl_turns[i];
                r->excl_turns[n_named++].label = rename[k];
            }
        }
        r->n_excl_turns = n_named;
        /* each named speaker's centroid (zeros for a speaker of more than the
         * clusters found: a count above them) */
        r->n_speakers = (size_t)next;
        r->dim = dim;
        r->centroids = gf_calloc((size_t)(next ? next : 1) * dim, sizeof *r->centroids);
        for (size_t k = 0; k < r->n_clusters; k++)
            if (rename[k] >= 0 && k < r->n_centroids && centroids)
                for (size_t d = 0; d < dim; d++)
                    r->centroids[(size_t)rename[k] * dim + d] = (float)centroids[k * dim + d];
        free(rename);
    }
    r->t_reconstruct = (double)(gf_now_ns() - t0) * 1e-9;
out_free:
    gf_par_destroy(&own);
    free(act);
    free(centroids);
    free(train);
    if (rc)
        gf_cluster_result_free(r);
    return rc;
}
