// ahc.cu — centroid-linkage AHC on the card (diar/cluster/ahc_gpu.c drives
// it). The condensed distance matrix lives in device memory, so the number
// of embeddings is bounded by the card's memory, not the host's.
//
// Every value is computed as diar/cluster/ahc.c computes it on the CPU:
// pairwise distances summed dimension by dimension in index order, the
// centroid Lance-Williams update with the same association, all in float64
// with explicit round-to-nearest intrinsics so that nvcc fuses nothing into
// an FMA. The distances are therefore bit-identical to the CPU's, and so is
// every merge, except that two exactly equal candidate distances are broken
// by the lower row here and by scipy's heap order there.
//
// As in the CPU's generic algorithm, each row x keeps a candidate nearest
// live neighbour above it, nbr[x], and a lower bound of its distance, lb[x]:
// merges only ever lower a bound at once, and a row whose bound went stale is
// scanned again only when its bound is the smallest. One merge is two
// launches on one stream, with no host round trip: gf_ahc_pick (one block:
// the merged cluster's row scanned, then the smallest bound taken, checked
// against its distance and its row scanned again until it is exact; the
// linkage row and bookkeeping) and gf_ahc_update (the merged cluster's
// distances to everybody, bounds lowered, candidates moved from a to b),
// each launched to start as the one before it ends (follow_previous).

#include <math.h>

struct gf_ahc_state {
    int a, b;               // the pair merged by the last pick (a < b; b keeps the cluster)
    int na, nb;             // their sizes before the merge
    double dist;            // their distance
    int err;                // 1: no pair had a finite distance
};

__device__ __forceinline__ size_t cidx(long n, long i, long j)
{
    if (i > j) {
        long t = i;
        i = j;
        j = t;
    }
    return (size_t)(n * i - (i * (i + 1)) / 2 + (j - i - 1));
}

// Programmatic dependent launch (gpu/device.c gf_gpu_launch_dependent): the
// pick and the update of each merge are launched so that one may start
// while the one before it finishes. Each first waits for its predecessor to
// complete (its writes visible), then lets its own successor be scheduled,
// so that at most two are in flight. Both are no-ops in a plain launch and
// before cc 9.0.
__device__ __forceinline__ void follow_previous(void)
{
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// The smaller of two (value, index) candidates; equal values: lower index.
__device__ __forceinline__ void better(double &v, int &i, double v2, int i2)
{
    if (v2 < v || (v2 == v && i2 >= 0 && (i < 0 || i2 < i))) {
        v = v2;
        i = i2;
    }
}

// The block's best (value, index), returned to every thread (blockDim.x a
// multiple of 32).
__device__ void block_argmin(double &v, int &i)
{
    __shared__ double sv[32];
    __shared__ int si[32];
    for (int o = 16; o > 0; o >>= 1) {
        double v2 = __shfl_down_sync(0xffffffffu, v, o);
        int i2 = __shfl_down_sync(0xffffffffu, i, o);
        better(v, i, v2, i2);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) {
        sv[warp] = v;
        si[warp] = i;
    }
    __syncthreads();
    int nw = blockDim.x >> 5;
    if (warp == 0) {
        v = lane < nw ? sv[lane] : INFINITY;
        i = lane < nw ? si[lane] : -1;
        for (int o = 16; o > 0; o >>= 1) {
            double v2 = __shfl_down_sync(0xffffffffu, v, o);
            int i2 = __shfl_down_sync(0xffffffffu, i, o);
            better(v, i, v2, i2);
        }
        if (lane == 0) {
            sv[0] = v;
            si[0] = i;
        }
    }
    __syncthreads();
    v = sv[0];
    i = si[0];
    __syncthreads();
}

// Loads a thread keeps in flight: the scans below read U values (and the
// sizes beside them) before comparing any, so that a row of n costs about
// one memory latency instead of n / blockDim.x of them one after another.
#define SCAN_U 8

// Row x's nearest live neighbour above it, by the whole block (every thread
// gets it); none: INFINITY and -1. Each thread visits its columns in
// ascending order and keeps the first of equal distances, as a plain loop
// would.
__device__ void scan_row(const double *D, const int *size, int n, int x, double &best, int &at)
{
    best = INFINITY;
    at = -1;
    const size_t base = cidx(n, x, x + 1) - (size_t)(x + 1);
    const int step = blockDim.x;
    for (int y0 = x + 1 + threadIdx.x; y0 < n; y0 += step * SCAN_U) {
        double d[SCAN_U];
        int live[SCAN_U];
#pragma unroll
        for (int u = 0; u < SCAN_U; u++) {
            const int y = y0 + u * step;
            d[u] = y < n ? D[base + y] : INFINITY;
            live[u] = y < n ? size[y] : 0;
        }
#pragma unroll
        for (int u = 0; u < SCAN_U; u++)
            if (live[u] != 0 && d[u] < best) {
                best = d[u];
                at = y0 + u * step;
            }
    }
    block_argmin(best, at);
}

// scan_row, its answer stored as row x's bound and neighbour, visible to the
// whole block on return.
__device__ void rescan_row(const double *D, const int *size, int n, int x, double *lb, int *nbr)
{
    double best;
    int at;
    scan_row(D, size, n, x, best, at);
    if (threadIdx.x == 0) {
        lb[x] = best;
        nbr[x] = at;
    }
    __syncthreads();
}

// Condensed Euclidean distances of n points x[n x dim]: 16 x 16 pairs per
// block (blockIdx.y: row tile, blockIdx.x: column tile, upper triangle only),
// dimensions staged through shared memory 32 at a time. Each pair's sum runs
// over k in order, like the CPU's.
#define PD_T 16
#define PD_K 32
extern "C" __global__ void gf_ahc_pdist(const double *x, int n, int dim, double *D)
{
    int ti = blockIdx.y, tj = blockIdx.x;
    if (tj < ti)
        return;
    __shared__ double xi[PD_T][PD_K + 1], xj[PD_T][PD_K + 1];
    int tx = threadIdx.x % PD_T, ty = threadIdx.x / PD_T;
    long i = (long)ti * PD_T + ty, j = (long)tj * PD_T + tx;
    double s = 0.0;
    for (int k0 = 0; k0 < dim; k0 += PD_K) {
        for (int e = threadIdx.x; e < PD_T * PD_K; e += PD_T * PD_T) {
            int r = e / PD_K, c = e % PD_K;
            long gi = (long)ti * PD_T + r, gj = (long)tj * PD_T + r;
            xi[r][c] = gi < n && k0 + c < dim ? x[gi * dim + k0 + c] : 0.0;
            xj[r][c] = gj < n && k0 + c < dim ? x[gj * dim + k0 + c] : 0.0;
        }
        __syncthreads();
        int kn = dim - k0 < PD_K ? dim - k0 : PD_K;
        for (int k = 0; k < kn; k++) {
            double d = __dsub_rn(xi[ty][k], xj[tx][k]);
            s = __dadd_rn(s, __dmul_rn(d, d));
        }
        __syncthreads();
    }
    if (i < n && j < n && j > i)
        D[cidx(n, i, j)] = __dsqrt_rn(s);
}

// size[i] = 1, id[i] = i.
extern "C" __global__ void gf_ahc_init(int *size, int *id, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        size[i] = 1;
        id[i] = i;
    }
}

// Every row's nearest live neighbour above it: one block per row, blocks
// striding over the rows.
extern "C" __global__ void gf_ahc_rescan_all(const double *D, const int *size, int n,
                                             double *lb, int *nbr)
{
    for (int x = blockIdx.x; x < n - 1; x += gridDim.x)
        rescan_row(D, size, n, x, lb, nbr);
}

// One block. Row b of the previous merge (k > 0) is scanned again, as its
// distances all changed. Then the smallest bound (equal bounds: the lower
// row) is taken until it is exact, each stale one's row scanned again; that
// row and its neighbour merge: linkage row k of Z, sizes, ids, the merged-away
// row retired.
extern "C" __global__ void gf_ahc_pick(const double *D, int *size, int *id, int n, int k,
                                       double *lb, int *nbr, struct gf_ahc_state *st, double *Z)
{
    follow_previous();
    double v;
    int x;
    if (k > 0 && st->b >= 0 && st->b < n - 1)
        rescan_row(D, size, n, st->b, lb, nbr);
    for (;;) {
        v = INFINITY;
        x = -1;
        for (int r0 = threadIdx.x; r0 < n - 1; r0 += blockDim.x * SCAN_U) {
            double l[SCAN_U];
#pragma unroll
            for (int u = 0; u < SCAN_U; u++) {
                const int r = r0 + u * (int)blockDim.x;
                l[u] = r < n - 1 ? lb[r] : INFINITY;
            }
#pragma unroll
            for (int u = 0; u < SCAN_U; u++) {
                const int r = r0 + u * (int)blockDim.x;
                better(v, x, l[u], r < n - 1 ? r : -1);
            }
        }
        block_argmin(v, x);
        if (x < 0 || v == INFINITY) {
            if (threadIdx.x == 0) {
                st->err = 1;
                st->a = st->b = -1;
            }
            return;
        }
        int y = nbr[x];
        if (y >= 0 && D[cidx(n, x, y)] == v)
            break;
        rescan_row(D, size, n, x, lb, nbr);
    }
    if (threadIdx.x != 0)
        return;
    int a = x, b = nbr[x];
    int na = size[a], nb = size[b], ida = id[a], idb = id[b];
    Z[(size_t)k * 4 + 0] = ida < idb ? ida : idb;
    Z[(size_t)k * 4 + 1] = ida < idb ? idb : ida;
    Z[(size_t)k * 4 + 2] = v;
    Z[(size_t)k * 4 + 3] = na + nb;
    st->a = a;
    st->b = b;
    st->na = na;
    st->nb = nb;
    st->dist = v;
    size[a] = 0;
    size[b] = na + nb;
    id[b] = n + k;
    lb[a] = INFINITY;
    nbr[a] = -1;
}

// D(z, b) for every live z after a and b merged into b: the centroid
// Lance-Williams formula, as diar/cluster/ahc.c writes it; then, as there,
// candidates a of rows below a become b, and bounds above D(z, b) drop to it.
extern "C" __global__ void gf_ahc_update(double *D, const int *size, int n,
                                         const struct gf_ahc_state *st, double *lb, int *nbr)
{
    follow_previous();
    int z = blockIdx.x * blockDim.x + threadIdx.x;
    int a = st->a, b = st->b;
    if (z >= n || a < 0 || z == a || z == b)
        return;
    // Everything this thread reads, requested at once (a dead row's values
    // are read and ignored).
    size_t za = cidx(n, z, a), zb = cidx(n, z, b);
    const int live = size[z], nz = nbr[z];
    const double dxi = D[za], dyi = D[zb], lbz = lb[z];
    double nx = st->na, ny = st->nb, dxy = st->dist, nxy = (double)(st->na + st->nb);
    if (live == 0)
        return;
    double num = __dadd_rn(__dmul_rn(__dmul_rn(nx, dxi), dxi), __dmul_rn(__dmul_rn(ny, dyi), dyi));
    double cut = __ddiv_rn(__dmul_rn(__dmul_rn(__dmul_rn(nx, ny), dxy), dxy), nxy);
    double d = __dsqrt_rn(__ddiv_rn(__dsub_rn(num, cut), nxy));
    D[zb] = d;
    if (z < b && d < lbz) {
        lb[z] = d;
        nbr[z] = b;
    } else if (z < a && nz == a) {
        nbr[z] = b;
    }
}
