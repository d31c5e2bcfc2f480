/* assign.c — embedding filtering, centroids, scores and assignment
 * (assign.h), as pyannote's VBxClustering does after VBx. */
#include "diar/cluster/assign.h"

#include "common/util.h"
#include "diar/cluster/lsa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Chunks per task of the per-chunk passes (filter, assignment). */
#define CHUNKS_PER_TASK 64

static int chunk_tasks(size_t n_chunks)
{
    return (int)((n_chunks + CHUNKS_PER_TASK - 1) / CHUNKS_PER_TASK);
}

/* Run fn over ntasks tasks, on par when there is one, else here. */
static void run_tasks(gf_par *par, int ntasks, gf_par_fn fn, void *arg)
{
    gf_par_run(par, ntasks, fn, arg);
}

typedef struct {
    const float *seg, *emb;       /* inputs (assign.h layouts) */
    size_t n_chunks, n_frames, n_spk, dim;
    double min_active_ratio;      /* share of n_frames a speaker must hold alone */
    float *clean;                 /* per worker: n_spk frame counts */
    unsigned char *keep;          /* n_chunks x n_spk: 1 to keep */
    float *act;                   /* n_chunks x n_spk activity sums, or NULL */
} filter_job;

static void filter_task(void *arg, int worker, int task)
{
    filter_job *j = arg;
    size_t S = j->n_spk;
    float *clean = j->clean + (size_t)worker * S;
    size_t c1 = ((size_t)task + 1) * CHUNKS_PER_TASK;
    if (c1 > j->n_chunks)
        c1 = j->n_chunks;
    for (size_t c = (size_t)task * CHUNKS_PER_TASK; c < c1; c++) {
        float *act = j->act ? j->act + c * S : NULL;
        const float *seg = j->seg + c * j->n_frames * S;
        if (S == 3) {
            /* the recipe's three local speakers, sums held in registers */
            float cl0 = 0.0f, cl1 = 0.0f, cl2 = 0.0f, a0 = 0.0f, a1 = 0.0f, a2 = 0.0f;
            for (size_t f = 0; f < j->n_frames; f++) {
                const float *row = seg + f * 3;
                float sum = 0.0f;
                sum += row[0];
                sum += row[1];
                sum += row[2];
                if (sum == 1.0f) {
                    cl0 += row[0];
                    cl1 += row[1];
                    cl2 += row[2];
                }
                a0 += row[0];
                a1 += row[1];
                a2 += row[2];
            }
            clean[0] = cl0;
            clean[1] = cl1;
            clean[2] = cl2;
            if (act) {
                act[0] = a0;
                act[1] = a1;
                act[2] = a2;
            }
        } else {
            for (size_t s = 0; s < S; s++)
                clean[s] = 0.0f;
            for (size_t s = 0; act && s < S; s++)
                act[s] = 0.0f;
            for (size_t f = 0; f < j->n_frames; f++) {
                const float *row = seg + f * S;
                float sum = 0.0f;
                for (size_t s = 0; s < S; s++)
                    sum += row[s];
                if (sum == 1.0f)
                    for (size_t s = 0; s < S; s++)
                        clean[s] += row[s];
                for (size_t s = 0; act && s < S; s++)   /* each speaker's sum in frame order */
                    act[s] += row[s];
            }
        }
        for (size_t s = 0; s < S; s++) {
            bool active = (double)clean[s] >= j->min_active_ratio * (double)j->n_frames;
            bool valid = true;
            const float *e = j->emb + (c * S + s) * j->dim;
            for (size_t d = 0; d < j->dim && valid; d++)
                if (isnan(e[d]))
                    valid = false;
            j->keep[c * S + s] = active && valid;
        }
    }
}

size_t gf_assign_filter(const float *seg, const float *emb, size_t n_chunks, size_t n_frames,
                        size_t n_spk, size_t dim, double min_active_ratio, gf_par *par,
                        int64_t *chunk_idx, int64_t *spk_idx, float *act)
{
    int workers = gf_par_threads(par);
    filter_job j = { seg, emb, n_chunks, n_frames, n_spk, dim, min_active_ratio,
                     gf_malloc((size_t)workers * (n_spk ? n_spk : 1) * sizeof(float)),
                     gf_malloc(n_chunks * n_spk + 1), act };
    run_tasks(par, chunk_tasks(n_chunks), filter_task, &j);
    size_t n = 0;
    for (size_t c = 0; c < n_chunks; c++)
        for (size_t s = 0; s < n_spk; s++)
            if (j.keep[c * n_spk + s]) {
                chunk_idx[n] = (int64_t)c;
                spk_idx[n] = (int64_t)s;
                n++;
            }
    free(j.keep);
    free(j.clean);
    return n;
}

typedef struct {
    const float *emb;   /* n x dim */
    size_t n, dim;
    const double *w;    /* n x k */
    size_t k;
    double *cent;       /* k x dim */
} centroid_job;

/* Centroid number `task`: one pass over the embeddings, sums in t order.
 * (Splitting the dimensions across tasks as well was slower: each task
 * then strides through every row for a few cache lines.) */
static void centroid_task(void *arg, int worker, int task)
{
    (void)worker;
    const centroid_job *j = arg;
    const size_t n = j->n, dim = j->dim, k = j->k, c = (size_t)task;
    const float *restrict emb = j->emb;
    const double *restrict w = j->w;
    double *restrict cc = j->cent + c * dim;
    double ws = 0.0;
    for (size_t d = 0; d < dim; d++)
        cc[d] = 0.0;
    for (size_t t = 0; t < n; t++) {
        double wt = w[t * k + c];
        ws += wt;
        for (size_t d = 0; d < dim; d++)
            cc[d] += wt * (double)emb[t * dim + d];
    }
    for (size_t d = 0; d < dim; d++)
        cc[d] /= ws;
}

void gf_assign_centroids(const float *emb, size_t n, size_t dim, const double *w, size_t k,
                         gf_par *par, double *centroids)
{
    centroid_job j = { emb, n, dim, w, k, centroids };
    run_tasks(par, (int)k, centroid_task, &j);
}

/* Cells per score task. */
#define CELLS_PER_TASK 256

typedef struct {
    const float *emb;         /* cells x dim */
    size_t cells, dim;
    const double *centroids;  /* k x dim */
    const double *cn;         /* k: their squared norms */
    size_t k;
    double *soft;             /* cells x k */
} score_job;

static double score(double dot, double en, double cn)
{
    double cosv = dot / sqrt(en * cn);
    if (fabs(cosv) > 1.0)
        cosv = copysign(1.0, cosv);
    return 2.0 - (1.0 - cosv);
}

/* Two cells against four centroids at a time, ten sums in registers: each
 * dot product and norm still sums over d in order in its own accumulator,
 * and the chains overlap in the pipeline. Rows past the end repeat the
 * last one; their sums are dropped. */
static void score_task(void *arg, int worker, int task)
{
    (void)worker;
    const score_job *j = arg;
    const size_t k = j->k, dim = j->dim;
    size_t i1 = ((size_t)task + 1) * CELLS_PER_TASK;
    if (i1 > j->cells)
        i1 = j->cells;
    for (size_t i = (size_t)task * CELLS_PER_TASK; i < i1; i += 2) {
        bool two = i + 1 < i1;
        const float *e0 = j->emb + i * dim, *e1 = two ? e0 + dim : e0;
        double en0 = 0.0, en1 = 0.0;
        for (size_t c0 = 0; c0 < k; c0 += 4) {
            size_t nb = k - c0 < 4 ? k - c0 : 4;
            const double *r0 = j->centroids + c0 * dim;
            const double *r1 = r0 + (nb > 1 ? dim : 0);
            const double *r2 = r0 + (nb > 2 ? 2 * dim : 0);
            const double *r3 = r0 + (nb > 3 ? 3 * dim : 0);
            double n0 = 0.0, n1 = 0.0;
            double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0;
            double b0 = 0.0, b1 = 0.0, b2 = 0.0, b3 = 0.0;
            for (size_t d = 0; d < dim; d++) {
                double x = (double)e0[d], y = (double)e1[d];
                n0 += x * x;
                n1 += y * y;
                a0 += x * r0[d];
                a1 += x * r1[d];
                a2 += x * r2[d];
                a3 += x * r3[d];
                b0 += y * r0[d];
                b1 += y * r1[d];
                b2 += y * r2[d];
                b3 += y * r3[d];
            }
            en0 = n0;   /* the same in every block */
            en1 = n1;
            double a[4] = { a0, a1, a2, a3 }, b[4] = { b0, b1, b2, b3 };
            for (size_t c = 0; c < nb; c++) {
                j->soft[i * k + c0 + c] = score(a[c], en0, j->cn[c0 + c]);
                if (two)
                    j->soft[(i + 1) * k + c0 + c] = score(b[c], en1, j->cn[c0 + c]);
            }
        }
    }
}

void gf_assign_scores(const float *emb, size_t n_chunks, size_t n_spk, size_t dim,
                      const double *centroids, size_t k, gf_par *par, double *soft)
{
    double *cn = gf_malloc((k ? k : 1) * sizeof *cn);
    for (size_t c = 0; c < k; c++) {
        double s = 0.0;
        for (size_t d = 0; d < dim; d++)
            s += centroids[c * dim + d] * centroids[c * dim + d];
        cn[c] = s;
    }
    size_t cells = n_chunks * n_spk;
    score_job j = { emb, cells, dim, centroids, cn, k, soft };
    run_tasks(par, (int)((cells + CELLS_PER_TASK - 1) / CELLS_PER_TASK), score_task, &j);
    free(cn);
}

typedef struct {
    const double *soft;   /* n_chunks x n_spk x k, inactive rows and NaNs settled */
    size_t n_chunks, n_spk, k;
    double nanmin;        /* what a NaN score becomes */
    int *col;             /* per worker: n_spk */
    double *cost;         /* per worker: n_spk x k */
    int8_t *hard;         /* n_chunks x n_spk */
} lsa_job;

static void lsa_task(void *arg, int worker, int task)
{
    lsa_job *j = arg;
    size_t S = j->n_spk, k = j->k;
    int *col = j->col + (size_t)worker * S;
    double *cost = j->cost + (size_t)worker * S * k;
    size_t c1 = ((size_t)task + 1) * CHUNKS_PER_TASK;
    if (c1 > j->n_chunks)
        c1 = j->n_chunks;
    for (size_t c = (size_t)task * CHUNKS_PER_TASK; c < c1; c++) {
        for (size_t i = 0; i < S * k; i++) {
            double v = j->soft[c * S * k + i];
            cost[i] = isnan(v) ? j->nanmin : v;
        }
        if (gf_lsa_solve(cost, S, k, true, col) != 0)
            continue;   /* only with non-finite scores: leave unassigned */
        for (size_t s = 0; s < S; s++)
            if (col[s] >= 0)
                j->hard[c * S + s] = (int8_t)col[s];
    }
}

void gf_assign_hard(double *soft, const float *act, size_t n_chunks, size_t n_spk, size_t k,
                    bool constrained, gf_par *par, int8_t *hard)
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
    for (size_t i = 0; i < n_chunks * n_spk; i++)
        if (act[i] == 0.0f)
            for (size_t j = 0; j < k; j++)
                soft[i * k + j] = mn;
    nanmin = INFINITY;
    for (size_t i = 0; i < cells; i++)
        if (!isnan(soft[i]) && soft[i] < nanmin)
            nanmin = soft[i];
    int workers = gf_par_threads(par);
    lsa_job j = { soft, n_chunks, n_spk, k, nanmin,
                  gf_malloc((size_t)workers * (n_spk ? n_spk : 1) * sizeof(int)),
                  gf_malloc((size_t)workers * (n_spk * k + 1) * sizeof(double)),
                  hard };
    run_tasks(par, chunk_tasks(n_chunks), lsa_task, &j);
    free(j.cost);
    free(j.col);
}

static double uniform(uint64_t *s)
{
    return (double)(gf_splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
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

/* Points per k-means task, and dimensions per centroid-update task. */
#define POINTS_PER_TASK 256
#define KM_DIMS_PER_TASK 32

enum km_step { KM_FIRST, KM_CLOSEST, KM_POTENTIAL, KM_ASSIGN, KM_SUMS };

typedef struct {
    const double *x;       /* n x dim */
    size_t n, dim, k;
    enum km_step step;     /* what the tasks do */
    const double *ref;     /* KM_FIRST, KM_CLOSEST, KM_POTENTIAL: the point measured against */
    double *closest;       /* n: squared distance to the nearest centre so far */
    double *val;           /* n: KM_POTENTIAL min(d, closest); KM_ASSIGN the best distance */
    double *cent;          /* k x dim */
    double *dist;          /* per worker: k distances */
    int *labels;           /* n */
    unsigned char *changed;/* per task: KM_ASSIGN changed a label */
} km_job;

/* Squared distances of a to the k rows of cent, four at a time in
 * registers: each sums over d in order in its own accumulator, exactly as
 * sqdist does, and the four chains overlap in the pipeline. */
static void sqdist_all(const double *a, const double *cent, size_t k, size_t dim, double *out)
{
    for (size_t c0 = 0; c0 < k; c0 += 4) {
        size_t nb = k - c0 < 4 ? k - c0 : 4;
        /* rows past k repeat the last one; their sums are dropped */
        const double *r0 = cent + c0 * dim;
        const double *r1 = cent + (c0 + (nb > 1 ? 1 : 0)) * dim;
        const double *r2 = cent + (c0 + (nb > 2 ? 2 : 0)) * dim;
        const double *r3 = cent + (c0 + (nb > 3 ? 3 : 0)) * dim;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (size_t d = 0; d < dim; d++) {
            double t0 = a[d] - r0[d], t1 = a[d] - r1[d];
            double t2 = a[d] - r2[d], t3 = a[d] - r3[d];
            s0 += t0 * t0;
            s1 += t1 * t1;
            s2 += t2 * t2;
            s3 += t3 * t3;
        }
        out[c0] = s0;
        if (nb > 1)
            out[c0 + 1] = s1;
        if (nb > 2)
            out[c0 + 2] = s2;
        if (nb > 3)
            out[c0 + 3] = s3;
    }
}

static void km_task(void *arg, int worker, int task)
{
    km_job *j = arg;
    const size_t dim = j->dim, k = j->k, n = j->n;
    const double *restrict x = j->x;
    double *restrict cent = j->cent, *restrict closest = j->closest, *restrict val = j->val;
    int *restrict labels = j->labels;
    if (j->step == KM_SUMS) {
        /* dimensions [d0, d1) of every centre's sum, points in order */
        size_t d0 = (size_t)task * KM_DIMS_PER_TASK;
        size_t d1 = d0 + KM_DIMS_PER_TASK < dim ? d0 + KM_DIMS_PER_TASK : dim;
        for (size_t c = 0; c < k; c++)
            for (size_t d = d0; d < d1; d++)
                cent[c * dim + d] = 0.0;
        for (size_t i = 0; i < n; i++) {
            double *cc = cent + (size_t)labels[i] * dim;
            const double *xi = x + i * dim;
            for (size_t d = d0; d < d1; d++)
                cc[d] += xi[d];
        }
        return;
    }
    size_t i0 = (size_t)task * POINTS_PER_TASK;
    size_t i1 = i0 + POINTS_PER_TASK < n ? i0 + POINTS_PER_TASK : n;
    if (j->step != KM_ASSIGN) {
        /* four points at a time against one: (ref - x)^2 is (x - ref)^2 */
        for (size_t i = i0; i < i1; i += 4) {
            size_t nb = i1 - i < 4 ? i1 - i : 4;
            double d4[4];
            sqdist_all(j->ref, x + i * dim, nb, dim, d4);
            for (size_t b = 0; b < nb; b++) {
                double d = d4[b];
                if (j->step == KM_FIRST)
                    closest[i + b] = d;
                else if (j->step == KM_CLOSEST && d < closest[i + b])
                    closest[i + b] = d;
                else if (j->step == KM_POTENTIAL)
                    val[i + b] = d < closest[i + b] ? d : closest[i + b];
            }
        }
        return;
    }
    double *dist = j->dist + (size_t)worker * k;
    bool changed = false;
    for (size_t i = i0; i < i1; i++) {
        sqdist_all(x + i * dim, cent, k, dim, dist);
        int b = 0;
        double bd = INFINITY;
        for (size_t c = 0; c < k; c++)
            if (dist[c] < bd) {
                bd = dist[c];
                b = (int)c;
            }
        if (labels[i] != b)
            changed = true;
        labels[i] = b;
        val[i] = bd;
    }
    j->changed[task] = changed;
}

static int km_tasks(const km_job *j)
{
    return j->step == KM_SUMS ? (int)((j->dim + KM_DIMS_PER_TASK - 1) / KM_DIMS_PER_TASK)
                              : (int)((j->n + POINTS_PER_TASK - 1) / POINTS_PER_TASK);
}

static void km_run(gf_par *par, km_job *j, enum km_step step, const double *ref)
{
    j->step = step;
    j->ref = ref;
    run_tasks(par, km_tasks(j), km_task, j);
}

/* One k-means run; returns the inertia. Every sum over points runs in point
 * order on this thread; the per-point work is spread over par. */
static double kmeans_once(km_job *j, gf_par *par, uint64_t *rng)
{
    const double *x = j->x;
    size_t n = j->n, dim = j->dim, k = j->k;
    double *closest = j->closest, *val = j->val, *cent = j->cent;
    int *labels = j->labels;
    size_t first = (size_t)(uniform(rng) * (double)n) % n;
    memcpy(cent, x + first * dim, dim * sizeof *cent);
    km_run(par, j, KM_FIRST, cent);
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
            km_run(par, j, KM_POTENTIAL, x + cand * dim);
            double pot = 0.0;
            for (size_t i = 0; i < n; i++)
                pot += val[i];
            if (pot < best_pot) {
                best_pot = pot;
                best = cand;
            }
        }
        memcpy(cent + c * dim, x + best * dim, dim * sizeof *cent);
        km_run(par, j, KM_CLOSEST, cent + c * dim);
    }
    size_t *cnt = gf_malloc(k * sizeof *cnt);
    double inertia = INFINITY;
    int ntasks_assign = (int)((n + POINTS_PER_TASK - 1) / POINTS_PER_TASK);
    for (int it = 0; it < 300; it++) {
        bool changed = it == 0;
        km_run(par, j, KM_ASSIGN, NULL);
        for (int t = 0; t < ntasks_assign; t++)
            changed |= j->changed[t];
        inertia = 0.0;
        for (size_t i = 0; i < n; i++)
            inertia += val[i];
        if (!changed)
            break;
        memset(cnt, 0, k * sizeof *cnt);
        for (size_t i = 0; i < n; i++)
            cnt[labels[i]]++;
        km_run(par, j, KM_SUMS, NULL);
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
                      gf_par *par, int *labels)
{
    if (k == 0 || n == 0)
        return;
    if (k >= n) {
        for (size_t i = 0; i < n; i++)
            labels[i] = (int)i;
        return;
    }
    uint64_t rng = seed;
    int workers = gf_par_threads(par);
    km_job j = {
        .x = x, .n = n, .dim = dim, .k = k,
        .closest = gf_malloc(n * sizeof(double)),
        .val = gf_malloc(n * sizeof(double)),
        .cent = gf_malloc(k * dim * sizeof(double)),
        .dist = gf_malloc((size_t)workers * k * sizeof(double)),
        .labels = gf_malloc(n * sizeof(int)),
        .changed = gf_malloc((n + POINTS_PER_TASK - 1) / POINTS_PER_TASK),
    };
    double best = INFINITY;
    for (int r = 0; r < (n_init > 0 ? n_init : 1); r++) {
        for (size_t i = 0; i < n; i++)
            j.labels[i] = -1;
        double inertia = kmeans_once(&j, par, &rng);
        if (inertia < best) {
            best = inertia;
            memcpy(labels, j.labels, n * sizeof *labels);
        }
    }
    free(j.changed);
    free(j.labels);
    free(j.dist);
    free(j.cent);
    free(j.val);
    free(j.closest);
}
