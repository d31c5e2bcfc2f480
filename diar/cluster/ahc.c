/* ahc.c — centroid linkage and distance cut (ahc.h).
 *
 * Linkage follows the "generic clustering algorithm" of D. Müllner, Modern
 * hierarchical, agglomerative clustering algorithms (arXiv:1109.2378), as
 * scipy runs it for the centroid method: every cluster x keeps a candidate
 * nearest neighbour among higher indices and a lower bound of its distance
 * in a binary heap; the heap minimum is checked against the current
 * distance and refreshed until it is exact; the two clusters merge into the
 * slot of the higher index. The update is the centroid Lance-Williams formula
 * on (non-squared) Euclidean distances. Ties are broken as scipy breaks them
 * (strict comparisons, lowest index first), because the merge order decides
 * the numbering of clusters. */
#include "diar/cluster/ahc.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/npsum.h"
#include "common/par.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline size_t cidx(size_t n, size_t i, size_t j)
{
    if (i > j) {
        size_t t = i;
        i = j;
        j = t;
    }
    return n * i - (i * (i + 1)) / 2 + (j - i - 1);
}

static double centroid_update(double d_xi, double d_yi, double d_xy, int nx, int ny)
{
    /* nx * ny in double: as an int product (scipy's) it overflows once
     * both clusters pass 46,341 members; below that the two are equal. */
    return sqrt((((nx * d_xi * d_xi) + (ny * d_yi * d_yi)) - ((double)nx * ny * d_xy * d_xy) / (nx + ny))
                / (nx + ny));
}

/* Distance of one pair, summed in index order (as a plain loop would). */
static double dist1(const double *a, const double *b, size_t dim)
{
    double s = 0.0;
    for (size_t k = 0; k < dim; k++) {
        double d = a[k] - b[k];
        s += d * d;
    }
    return sqrt(s);
}

/* Four pairs at a time, one per lane of a 4-double vector: lanes never
 * mix, so each lane's sum runs in index order exactly as dist1's does (no
 * reassociation, no fused multiply-add: ISO C mode keeps
 * -ffp-contract=off). yt holds eight rows interleaved (yt[k*8 + b]). */
typedef double v4d __attribute__((vector_size(32)));

__attribute__((target_clones("avx2", "default")))
static void dist8(const double *xi, const double *yt, size_t dim, double *out)
{
    v4d s0 = { 0 }, s1 = { 0 };
    for (size_t k = 0; k < dim; k++) {
        v4d y0, y1;
        memcpy(&y0, yt + k * 8, sizeof y0);
        memcpy(&y1, yt + k * 8 + 4, sizeof y1);
        double a = xi[k];
        v4d d0 = a - y0, d1 = a - y1;
        s0 += d0 * d0;
        s1 += d1 * d1;
    }
    for (int b = 0; b < 4; b++) {
        out[b] = sqrt(s0[b]);
        out[b + 4] = sqrt(s1[b]);
    }
}

#define PD_ROWS 16   /* rows of a tile: each group of 8 columns is read once per tile */

/* Rows [r0, r1) of the condensed Euclidean distance matrix, in tiles of
 * PD_ROWS rows; each group of eight columns is interleaved once per tile
 * and stays in cache while the tile's rows use it. */
static void pdist_rows(const double *x, size_t n, size_t dim, double *D, size_t r0, size_t r1)
{
    double *yt = gf_malloc(8 * dim * sizeof *yt);
    for (size_t i0 = r0; i0 < r1; i0 += PD_ROWS) {
        size_t i1 = i0 + PD_ROWS < r1 ? i0 + PD_ROWS : r1;
        for (size_t i = i0; i < i1; i++) {   /* the triangle inside the tile */
            size_t base = cidx(n, i, i + 1) - (i + 1);
            for (size_t j = i + 1; j < i1 && j < n; j++)
                D[base + j] = dist1(x + i * dim, x + j * dim, dim);
        }
        size_t j = i1;
        for (; j + 8 <= n; j += 8) {
            for (size_t b = 0; b < 8; b++)
                for (size_t k = 0; k < dim; k++)
                    yt[k * 8 + b] = x[(j + b) * dim + k];
            for (size_t i = i0; i < i1; i++) {
                size_t base = cidx(n, i, i + 1) - (i + 1);
                dist8(x + i * dim, yt, dim, D + base + j);
            }
        }
        for (; j < n; j++)
            for (size_t i = i0; i < i1; i++) {
                size_t base = cidx(n, i, i + 1) - (i + 1);
                D[base + j] = dist1(x + i * dim, x + j * dim, dim);
            }
    }
    free(yt);
}

typedef struct {
    const double *x;   /* points */
    size_t n, dim;     /* their count and dimension */
    double *D;         /* condensed output */
    size_t r0, r1;     /* rows of this thread */
} pdist_job;

static void *pdist_thread(void *arg)
{
    pdist_job *j = arg;
    pdist_rows(j->x, j->n, j->dim, j->D, j->r0, j->r1);
    return NULL;
}

/* Condensed distances on up to one thread per core (rows split so that
 * each thread gets about the same number of pairs); the values do not
 * depend on the split. */
static void pdist(const double *x, size_t n, size_t dim, double *D)
{
    size_t nt = (size_t)gf_par_cores(16);
    if (n < 512 || nt == 1) {
        pdist_rows(x, n, dim, D, 0, n);
        return;
    }
    pdist_job jobs[16];
    pthread_t th[16];
    double total = (double)n * (double)(n - 1) / 2.0;
    size_t r = 0;
    for (size_t t = 0; t < nt; t++) {
        /* rows r0..r1 hold pairs sum (n-1-i); cut at equal shares */
        double want = total * (double)(t + 1) / (double)nt, acc = 0.0;
        size_t r1 = r;
        if (t + 1 == nt) {
            r1 = n;
        } else {
            /* pairs in rows [0, m) = m*n - m*(m+1)/2 */
            while (r1 < n && (acc = (double)r1 * (double)n - (double)r1 * (double)(r1 + 1) / 2.0) < want)
                r1++;
        }
        jobs[t] = (pdist_job){ x, n, dim, D, r, r1 };
        r = r1;
    }
    size_t started = 0;
    for (size_t t = 0; t < nt; t++) {
        if (pthread_create(&th[t], NULL, pdist_thread, &jobs[t]) != 0)
            break;
        started++;
    }
    for (size_t t = started; t < nt; t++)   /* threads unavailable: do it here */
        pdist_rows(x, n, dim, D, jobs[t].r0, jobs[t].r1);
    for (size_t t = 0; t < started; t++)
        pthread_join(th[t], NULL);
}

/* ---- an indexed binary min-heap of keys 0..n-1 ---------------------- */

typedef struct {
    int *key_at;     /* heap slot -> key */
    int *slot_of;    /* key -> heap slot */
    double *val;     /* heap slot -> value */
    int size;        /* slots in use */
} heap;

static void heap_swap(heap *h, int i, int j)
{
    double v = h->val[i];
    h->val[i] = h->val[j];
    h->val[j] = v;
    int ki = h->key_at[i], kj = h->key_at[j];
    h->key_at[i] = kj;
    h->key_at[j] = ki;
    h->slot_of[ki] = j;
    h->slot_of[kj] = i;
}

static void heap_down(heap *h, int i)
{
    int c = 2 * i + 1;
    while (c < h->size) {
        if (c + 1 < h->size && h->val[c + 1] < h->val[c])
            c++;
        if (h->val[i] > h->val[c]) {
            heap_swap(h, i, c);
            i = c;
            c = 2 * i + 1;
        } else {
            break;
        }
    }
}

static void heap_up(heap *h, int i)
{
    int p = (i - 1) >> 1;
    while (i > 0 && h->val[p] > h->val[i]) {
        heap_swap(h, i, p);
        i = p;
        p = (i - 1) >> 1;
    }
}

static void heap_change(heap *h, int key, double v)
{
    int i = h->slot_of[key];
    double old = h->val[i];
    h->val[i] = v;
    if (v < old)
        heap_up(h, i);
    else
        heap_down(h, i);
}

static void heap_pop(heap *h)
{
    heap_swap(h, 0, h->size - 1);
    h->size--;
    heap_down(h, 0);
}

/* Nearest live cluster above x; -1 if none. */
static int nearest_above(size_t n, const double *D, const int *size, size_t x, double *dist)
{
    double best = INFINITY;
    int y = -1;
    size_t base = cidx(n, x, x + 1) - (x + 1);   /* D[base + i] = D(x, i), i > x; wraps */
    for (size_t i = x + 1; i < n; i++) {
        if (size[i] == 0)
            continue;
        if (D[base + i] < best) {
            best = D[base + i];
            y = (int)i;
        }
    }
    *dist = best;
    return y;
}

int gf_ahc_linkage_centroid(const double *x, size_t n, size_t dim, double *Z)
{
    if (n < 2)
        return 0;
    if (n > (size_t)INT32_MAX / 2 || n * (n - 1) / 2 > SIZE_MAX / sizeof(double) / 2) {
        GF_ERROR("ahc: %zu embeddings: distance matrix too large", n);
        return GF_ETOOBIG;
    }
    size_t m = n * (n - 1) / 2;
    double *D = malloc(m * sizeof *D);
    if (!D) {
        GF_ERROR("ahc: %zu embeddings: cannot allocate the %.1f GB distance matrix", n,
                 (double)m * 8.0 / 1e9);
        return GF_ETOOBIG;
    }
    pdist(x, n, dim, D);
    int *size = gf_malloc(n * sizeof *size);
    int *id = gf_malloc(n * sizeof *id);
    int *nbr = gf_malloc((n - 1) * sizeof *nbr);
    double *lb = gf_malloc((n - 1) * sizeof *lb);
    for (size_t i = 0; i < n; i++) {
        size[i] = 1;
        id[i] = (int)i;
    }
    for (size_t i = 0; i + 1 < n; i++)
        nbr[i] = nearest_above(n, D, size, i, &lb[i]);
    heap h = { gf_malloc((n - 1) * sizeof(int)), gf_malloc((n - 1) * sizeof(int)),
               gf_malloc((n - 1) * sizeof(double)), (int)(n - 1) };
    for (int i = 0; i < h.size; i++) {
        h.key_at[i] = h.slot_of[i] = i;
        h.val[i] = lb[i];
    }
    for (int i = h.size / 2 - 1; i >= 0; i--)
        heap_down(&h, i);

    for (size_t k = 0; k + 1 < n; k++) {
        int a = 0, b = 0;
        double dist = 0.0;
        for (size_t it = 0; it < n - k; it++) {
            a = h.key_at[0];
            dist = h.val[0];
            b = nbr[a];
            if (b >= 0 && dist == D[cidx(n, (size_t)a, (size_t)b)])
                break;
            b = nearest_above(n, D, size, (size_t)a, &dist);
            nbr[a] = b;
            lb[a] = dist;
            heap_change(&h, a, dist);
        }
        heap_pop(&h);
        int ida = id[a], idb = id[b], na = size[a], nb = size[b];
        Z[k * 4 + 0] = ida < idb ? ida : idb;
        Z[k * 4 + 1] = ida < idb ? idb : ida;
        Z[k * 4 + 2] = dist;
        Z[k * 4 + 3] = na + nb;
        size[a] = 0;
        size[b] = na + nb;
        id[b] = (int)(n + k);
        /* One pass over the clusters, in increasing order, doing what
         * scipy does in three: the centroid update of D(z, b), moving
         * candidates from a to b, and lowering bounds to D(z, b). Heap
         * changes happen in the same order, so ties resolve the same way;
         * the column entries (z < b) are fetched ahead of use. */
        enum { PF = 16 };
        for (size_t z = 0; z < n; z++) {
            if (z + PF < (size_t)b) {
                __builtin_prefetch(&D[cidx(n, z + PF, (size_t)b)], 1);
                if (z + PF < (size_t)a)
                    __builtin_prefetch(&D[cidx(n, z + PF, (size_t)a)], 0);
            }
            if (size[z] == 0 || z == (size_t)b)
                continue;
            size_t zb = cidx(n, z, (size_t)b);
            double d = centroid_update(D[cidx(n, z, (size_t)a)], D[zb], dist, na, nb);
            D[zb] = d;
            if (z < (size_t)a && nbr[z] == a)
                nbr[z] = b;
            if (z < (size_t)b && d < lb[z]) {
                nbr[z] = b;
                lb[z] = d;
                heap_change(&h, (int)z, d);
            }
        }
        if ((size_t)b < n - 1) {
            double d;
            int z = nearest_above(n, D, size, (size_t)b, &d);
            if (z != -1) {
                nbr[b] = z;
                lb[b] = d;
                heap_change(&h, b, d);
            }
        }
    }
    free(h.key_at);
    free(h.slot_of);
    free(h.val);
    free(lb);
    free(nbr);
    free(id);
    free(size);
    free(D);
    return 0;
}

size_t gf_ahc_fcluster_distance(const double *Z, size_t n, double threshold, int *labels)
{
    if (n == 0)
        return 0;
    if (n == 1) {
        labels[0] = 0;
        return 1;
    }
    /* largest merge distance under each node (post-order) */
    double *maxd = gf_malloc((n - 1) * sizeof *maxd);
    for (size_t i = 0; i + 1 < n; i++) {
        double m = Z[i * 4 + 2];
        for (int s = 0; s < 2; s++) {
            size_t c = (size_t)Z[i * 4 + s];
            if (c >= n && maxd[c - n] > m)
                m = maxd[c - n];
        }
        maxd[i] = m;
    }
    /* Depth-first from the root as scipy's cluster_monocrit walks it: go
     * into an unvisited non-leaf left child, else an unvisited non-leaf
     * right child; when both are done, number the leaf children (left, then
     * right). The first node on the way down whose max distance is within
     * the threshold leads a cluster that all leaves below it join. */
    size_t *stack = gf_malloc(n * sizeof *stack);
    unsigned char *visited = gf_calloc(2 * n, 1);
    int n_cluster = 0;
    long leader = -1;
    long k = 0;
    stack[0] = 2 * n - 2;
    while (k >= 0) {
        size_t root = stack[k] - n;
        size_t lc = (size_t)Z[root * 4 + 0], rc = (size_t)Z[root * 4 + 1];
        if (leader == -1 && maxd[root] <= threshold) {
            leader = (long)root;
            n_cluster++;
        }
        if (lc >= n && !visited[lc]) {
            visited[lc] = 1;
            stack[++k] = lc;
            continue;
        }
        if (rc >= n && !visited[rc]) {
            visited[rc] = 1;
            stack[++k] = rc;
            continue;
        }
        if (lc < n) {
            if (leader == -1)
                n_cluster++;
            labels[lc] = n_cluster - 1;
        }
        if (rc < n) {
            if (leader == -1)
                n_cluster++;
            labels[rc] = n_cluster - 1;
        }
        if (leader == (long)root)
            leader = -1;
        k--;
    }
    free(visited);
    free(stack);
    free(maxd);
    return (size_t)n_cluster;
}

int gf_ahc_cluster_with(gf_ahc_link_fn link, void *ctx, gf_devstats *stats, const float *emb,
                        size_t n, size_t dim, double threshold, int *labels)
{
    if (n == 0)
        return 0;
    if (n == 1) {
        labels[0] = 0;
        return 1;
    }
    /* numpy: emb / np.linalg.norm(emb, axis=1, keepdims=True), all float32;
     * then scipy converts to float64. */
    double *x = malloc(n * dim * sizeof *x);
    double *Z = malloc((n - 1) * 4 * sizeof *Z);
    float *sq = gf_malloc(dim * sizeof *sq);
    if (!x || !Z) {
        free(x);
        free(Z);
        free(sq);
        GF_ERROR("ahc: %zu embeddings: out of memory", n);
        return GF_ETOOBIG;
    }
    for (size_t i = 0; i < n; i++) {
        const float *e = emb + i * dim;
        for (size_t k = 0; k < dim; k++)
            sq[k] = e[k] * e[k];
        float norm = sqrtf(gf_npsum_f32(sq, dim, 1));
        for (size_t k = 0; k < dim; k++)
            x[i * dim + k] = (double)(e[k] / norm);
    }
    free(sq);
    int rc = link(ctx, stats, x, n, dim, Z);
    free(x);
    if (rc) {
        free(Z);
        return rc;
    }
    size_t k = gf_ahc_fcluster_distance(Z, n, threshold, labels);
    free(Z);
    return (int)k;
}

static int link_cpu(void *ctx, gf_devstats *stats, const double *x, size_t n, size_t dim,
                    double *Z)
{
    (void)ctx;
    (void)stats;
    return gf_ahc_linkage_centroid(x, n, dim, Z);
}

int gf_ahc_cluster(const float *emb, size_t n, size_t dim, double threshold, int *labels)
{
    return gf_ahc_cluster_with(link_cpu, NULL, NULL, emb, n, dim, threshold, labels);
}
