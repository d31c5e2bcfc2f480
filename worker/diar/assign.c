/* assign.c — embedding filtering, centroids, scores and assignment
 * (assign.h), as pyannote's VBxClustering does after VBx. */
#include "worker/diar/assign.h"

#include "common/util.h"
#include "worker/diar/lsa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t gf_assign_filter(const float *seg, const float *emb, size_t n_chunks, size_t n_frames,
                        size_t n_spk, size_t dim, double min_active_ratio, int64_t *chunk_idx,
                        int64_t *spk_idx)
{
    size_t n = 0;
    float *clean = gf_malloc(n_spk * sizeof *clean);
    for (size_t c = 0; c < n_chunks; c++) {
        for (size_t s = 0; s < n_spk; s++)
            clean[s] = 0.0f;
        for (size_t f = 0; f < n_frames; f++) {
            const float *row = seg + (c * n_frames + f) * n_spk;
            float sum = 0.0f;
            for (size_t s = 0; s < n_spk; s++)
                sum += row[s];
            if (sum == 1.0f)
                for (size_t s = 0; s < n_spk; s++)
                    clean[s] += row[s];
        }
        for (size_t s = 0; s < n_spk; s++) {
            bool active = (double)clean[s] >= min_active_ratio * (double)n_frames;
            bool valid = true;
            const float *e = emb + (c * n_spk + s) * dim;
            for (size_t d = 0; d < dim && valid; d++)
                if (isnan(e[d]))
                    valid = false;
            if (active && valid) {
                chunk_idx[n] = (int64_t)c;
                spk_idx[n] = (int64_t)s;
                n++;
            }
        }
    }
    free(clean);
    return n;
}

void gf_assign_centroids(const float *emb, size_t n, size_t dim, const double *w, size_t k,
                         double *centroids)
{
    for (size_t j = 0; j < k; j++) {
        double ws = 0.0;
        double *c = centroids + j * dim;
        for (size_t d = 0; d < dim; d++)
            c[d] = 0.0;
        for (size_t t = 0; t < n; t++) {
            double wt = w[t * k + j];
            ws += wt;
            for (size_t d = 0; d < dim; d++)
                c[d] += wt * (double)emb[t * dim + d];
        }
        for (size_t d = 0; d < dim; d++)
            c[d] /= ws;
    }
}

void gf_assign_scores(const float *emb, size_t n_chunks, size_t n_spk, size_t dim,
                      const double *centroids, size_t k, double *soft)
{
    double *cn = gf_malloc(k * sizeof *cn);
    for (size_t j = 0; j < k; j++) {
        double s = 0.0;
        for (size_t d = 0; d < dim; d++)
            s += centroids[j * dim + d] * centroids[j * dim + d];
        cn[j] = s;
    }
    for (size_t i = 0; i < n_chunks * n_spk; i++) {
        const float *e = emb + i * dim;
        double en = 0.0;
        for (size_t d = 0; d < dim; d++)
            en += (double)e[d] * (double)e[d];
        for (size_t j = 0; j < k; j++) {
            double dot = 0.0;
            for (size_t d = 0; d < dim; d++)
                dot += (double)e[d] * centroids[j * dim + d];
            double cosv = dot / sqrt(en * cn[j]);
            if (fabs(cosv) > 1.0)
                cosv = copysign(1.0, cosv);
            soft[i * k + j] = 2.0 - (1.0 - cosv);
        }
    }
    free(cn);
}

void gf_assign_hard(double *soft, const float *seg, size_t n_chunks, size_t n_frames,
                    size_t n_spk, size_t k, bool constrained, int8_t *hard)
{
    size_t cells = n_chunks * n_spk * k;
    for (size_t i = 0; i < n_chunks * n_spk; i++)
        hard[i] = -2;
    if (!constrained) {
        for (size_t i = 0; i < n_chunks * n_spk; i++) {
            const double *r = soft + i * k;
            size_t best = 0;
            for (size_t j = 0; j < k; j++) {
                if (isnan(r[j])) {   /* numpy.argmax: the first NaN wins */
                    best = j;
                    break;
                }
                if (r[j] > r[best])
                    best = j;
            }
            hard[i] = (int8_t)best;
        }
        return;
    }
    /* const = soft.min() - 1 (NaN if any score is NaN), given to speakers
     * that are never active; then NaN -> nanmin. */
    double mn = INFINITY, nanmin = INFINITY;
    bool any_nan = false;
    for (size_t i = 0; i < cells; i++) {
        if (isnan(soft[i])) {
            any_nan = true;
            continue;
        }
        if (soft[i] < nanmin)
            nanmin = soft[i];
    }
    mn = any_nan ? NAN : nanmin - 1.0;
    for (size_t c = 0; c < n_chunks; c++) {
        for (size_t s = 0; s < n_spk; s++) {
            float act = 0.0f;
            for (size_t f = 0; f < n_frames; f++)
                act += seg[(c * n_frames + f) * n_spk + s];
            if (act == 0.0f)
                for (size_t j = 0; j < k; j++)
                    soft[(c * n_spk + s) * k + j] = mn;
        }
    }
    nanmin = INFINITY;
    for (size_t i = 0; i < cells; i++)
        if (!isnan(soft[i]) && soft[i] < nanmin)
            nanmin = soft[i];
    int *col = gf_malloc(n_spk * sizeof *col);
    double *cost = gf_malloc(n_spk * k * sizeof *cost);
    for (size_t c = 0; c < n_chunks; c++) {
        for (size_t i = 0; i < n_spk * k; i++) {
            double v = soft[c * n_spk * k + i];
            cost[i] = isnan(v) ? nanmin : v;
        }
        if (gf_lsa_solve(cost, n_spk, k, true, col) != 0)
            continue;   /* only with non-finite scores: leave unassigned */
        for (size_t s = 0; s < n_spk; s++)
            if (col[s] >= 0)
                hard[c * n_spk + s] = (int8_t)col[s];
    }
    free(cost);
    free(col);
}

/* splitmix64: a small, well-mixed deterministic generator */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double sqdist(const double *a, const double *b, size_t dim)
{
    double s = 0.0;
    for (size_t d = 0; d < dim; d++) {
        double t = a[d] - b[d];
        s += t * t;
    }
    return s;
}

/* One k-means run; returns the inertia. */
static double kmeans_once(const double *x, size_t n, size_t dim, size_t k, uint64_t *rng,
                          int *labels, double *cent)
{
    double *closest = gf_malloc(n * sizeof *closest);
    size_t first = (size_t)(uniform(rng) * (double)n) % n;
    memcpy(cent, x + first * dim, dim * sizeof *cent);
    for (size_t i = 0; i < n; i++)
        closest[i] = sqdist(x + i * dim, cent, dim);
    /* greedy k-means++: a few candidates per centre, keep the best */
    int trials = 2 + (int)log((double)k);
    for (size_t c = 1; c < k; c++) {
        double total = 0.0;
        for (size_t i = 0; i < n; i++)
            total += closest[i];
        size_t best = 0;
        double best_pot = INFINITY;
        for (int t = 0; t < trials; t++) {
            double r = uniform(rng) * total, acc = 0.0;
            size_t cand = n - 1;
            for (size_t i = 0; i < n; i++) {
                acc += closest[i];
                if (acc > r) {
                    cand = i;
                    break;
                }
            }
            double pot = 0.0;
            for (size_t i = 0; i < n; i++) {
                double d = sqdist(x + i * dim, x + cand * dim, dim);
                pot += d < closest[i] ? d : closest[i];
            }
            if (pot < best_pot) {
                best_pot = pot;
                best = cand;
            }
        }
        memcpy(cent + c * dim, x + best * dim, dim * sizeof *cent);
        for (size_t i = 0; i < n; i++) {
            double d = sqdist(x + i * dim, cent + c * dim, dim);
            if (d < closest[i])
                closest[i] = d;
        }
    }
    free(closest);
    size_t *cnt = gf_malloc(k * sizeof *cnt);
    double inertia = INFINITY;
    for (int it = 0; it < 300; it++) {
        bool changed = it == 0;
        inertia = 0.0;
        for (size_t i = 0; i < n; i++) {
            int b = 0;
            double bd = INFINITY;
            for (size_t c = 0; c < k; c++) {
                double d = sqdist(x + i * dim, cent + c * dim, dim);
                if (d < bd) {
                    bd = d;
                    b = (int)c;
                }
            }
            if (labels[i] != b)
                changed = true;
            labels[i] = b;
            inertia += bd;
        }
        if (!changed)
            break;
        memset(cent, 0, k * dim * sizeof *cent);
        memset(cnt, 0, k * sizeof *cnt);
        for (size_t i = 0; i < n; i++) {
            cnt[labels[i]]++;
            for (size_t d = 0; d < dim; d++)
                cent[(size_t)labels[i] * dim + d] += x[i * dim + d];
        }
        for (size_t c = 0; c < k; c++) {
            if (cnt[c] == 0) {   /* empty cluster: take the farthest point */
                size_t far = 0;
                double fd = -1.0;
                for (size_t i = 0; i < n; i++) {
                    double d = sqdist(x + i * dim, cent + (size_t)labels[i] * dim, dim);
                    if (d > fd) {
                        fd = d;
                        far = i;
                    }
                }
                memcpy(cent + c * dim, x + far * dim, dim * sizeof *cent);
                continue;
            }
            for (size_t d = 0; d < dim; d++)
                cent[c * dim + d] /= (double)cnt[c];
        }
    }
    free(cnt);
    return inertia;
}

void gf_assign_kmeans(const double *x, size_t n, size_t dim, size_t k, int n_init, uint64_t seed,
                      int *labels)
{
    if (k == 0 || n == 0)
        return;
    if (k >= n) {
        for (size_t i = 0; i < n; i++)
            labels[i] = (int)i;
        return;
    }
    uint64_t rng = seed;
    int *lab = gf_malloc(n * sizeof *lab);
    double *cent = gf_malloc(k * dim * sizeof *cent);
    double best = INFINITY;
    for (int r = 0; r < (n_init > 0 ? n_init : 1); r++) {
        for (size_t i = 0; i < n; i++)
            lab[i] = -1;
        double inertia = kmeans_once(x, n, dim, k, &rng, lab, cent);
        if (inertia < best) {
            best = inertia;
            memcpy(labels, lab, n * sizeof *labels);
        }
    }
    free(cent);
    free(lab);
}
