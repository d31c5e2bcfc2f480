// ahc.cu — centroid-linkage AHC on the card (worker/diar/ahc_gpu.c drives
// it). The condensed distance matrix lives in device memory, so the number
// of embeddings is bounded by the card's memory, not the host's.
//
// Every value is computed as worker/diar/ahc.c computes it on the CPU:
// pairwise distances summed dimension by dimension in index order, the
// centroid Lance-Williams update with the same association, all in float64
// with explicit round-to-nearest intrinsics so that nvcc fuses nothing into
// an FMA. The distances are therefore bit-identical to the CPU's, and so is
// every merge, except that two exactly equal candidate distances are broken
// by the lower row here and by scipy's heap order there.
//
// Each row x keeps its exact nearest live neighbour above it (rowmin[x],
// nbr[x]; the lowest index among equals). One merge is three launches on
// one stream, with no host round trip: gf_ahc_pick (global minimum, the
// linkage row, bookkeeping), gf_ahc_update (the merged cluster's distances
// and the rows whose minimum it changes; rows that lost theirs are listed)
// and gf_ahc_rescan (those rows scanned again).

#include <math.h>

#define AHC_THREADS 256

struct gf_ahc_state {
    int a, b;               // the pair merged by the last pick (a < b; b keeps the cluster)
    int na, nb;             // their sizes before the merge
    double dist;            // their distance
    int count;              // rows listed for a rescan
    int done;               // blocks of gf_ahc_pick finished (last one finalises)
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

// The smaller of two (value, index) candidates; equal values: lower index.
__device__ __forceinline__ void better(double &v, int &i, double v2, int i2)
{
    if (v2 < v || (v2 == v && i2 >= 0 && (i < 0 || i2 < i))) {
        v = v2;
        i = i2;
    }
}

__device__ void block_argmin(double &v, int &i)
{
    __shared__ double sv[AHC_THREADS / 32];
    __shared__ int si[AHC_THREADS / 32];
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
    if (warp == 0) {
        v = lane < AHC_THREADS / 32 ? sv[lane] : INFINITY;
        i = lane < AHC_THREADS / 32 ? si[lane] : -1;
        for (int o = 16; o > 0; o >>= 1) {
            double v2 = __shfl_down_sync(0xffffffffu, v, o);
            int i2 = __shfl_down_sync(0xffffffffu, i, o);
            better(v, i, v2, i2);
        }
    }
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

// Nearest live neighbour above each listed row (rows NULL: rows 0..count-1,
// count read from *countp when countp is not NULL), one block per row,
// blocks striding over the list.
extern "C" __global__ void gf_ahc_rescan(const double *D, const int *size, int n,
                                         const int *rows, int count, const int *countp,
                                         double *rowmin, int *nbr)
{
    int cnt = countp ? *countp : count;
    for (int r = blockIdx.x; r < cnt; r += gridDim.x) {
        int x = rows ? rows[r] : r;
        double best = INFINITY;
        int at = -1;
        size_t base = cidx(n, x, x + 1) - (size_t)(x + 1);
        for (int y = x + 1 + threadIdx.x; y < n; y += blockDim.x)
            if (size[y] != 0 && D[base + y] < best) {
                best = D[base + y];
                at = y;
            }
        block_argmin(best, at);
        if (threadIdx.x == 0) {
            rowmin[x] = best;
            nbr[x] = at;
        }
        __syncthreads();
    }
}

// The global minimum over the rows' minima (equal values: the lower row),
// then, in the last block to finish: linkage row k of Z, sizes and ids, the
// merged-away row retired, the rescan list emptied.
extern "C" __global__ void gf_ahc_pick(double *rowmin, int *nbr, int *size, int *id, int n,
                                       int k, double *part_v, int *part_i,
                                       struct gf_ahc_state *st, double *Z)
{
    double v = INFINITY;
    int at = -1;
    for (int x = blockIdx.x * blockDim.x + threadIdx.x; x < n - 1; x += gridDim.x * blockDim.x)
        better(v, at, rowmin[x], x);
    block_argmin(v, at);
    __shared__ bool last;
    if (threadIdx.x == 0) {
        part_v[blockIdx.x] = v;
        part_i[blockIdx.x] = at;
        __threadfence();
        last = atomicAdd(&st->done, 1) == (int)gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    v = INFINITY;
    at = -1;
    for (int g = threadIdx.x; g < (int)gridDim.x; g += blockDim.x)
        better(v, at, ((volatile double *)part_v)[g], ((volatile int *)part_i)[g]);
    block_argmin(v, at);
    if (threadIdx.x != 0)
        return;
    st->done = 0;
    st->count = 0;
    int a = at, b = at >= 0 ? nbr[at] : -1;
    if (a < 0 || b < 0) {
        st->err = 1;
        st->a = st->b = -1;
        return;
    }
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
    rowmin[a] = INFINITY;
    nbr[a] = -1;
}

// D(z, b) for every live z after a and b merged into b: the centroid
// Lance-Williams formula, as worker/diar/ahc.c writes it. Rows z < b keep an
// exact minimum where they can; those whose minimum was a or b and is not
// beaten by the new distance are listed for gf_ahc_rescan, and so is b.
extern "C" __global__ void gf_ahc_update(double *D, const int *size, int n,
                                         struct gf_ahc_state *st, double *rowmin, int *nbr,
                                         int *list)
{
    int z = blockIdx.x * blockDim.x + threadIdx.x;
    int a = st->a, b = st->b;
    if (z >= n || a < 0)
        return;
    if (z == b) {
        if (b < n - 1)
            list[atomicAdd(&st->count, 1)] = b;
        return;
    }
    if (z == a || size[z] == 0)
        return;
    double nx = st->na, ny = st->nb, dxy = st->dist, nxy = (double)(st->na + st->nb);
    size_t za = cidx(n, z, a), zb = cidx(n, z, b);
    double dxi = D[za], dyi = D[zb];
    double num = __dadd_rn(__dmul_rn(__dmul_rn(nx, dxi), dxi), __dmul_rn(__dmul_rn(ny, dyi), dyi));
    double cut = __ddiv_rn(__dmul_rn(__dmul_rn(__dmul_rn(nx, ny), dxy), dxy), nxy);
    double d = __dsqrt_rn(__ddiv_rn(__dsub_rn(num, cut), nxy));
    D[zb] = d;
    if (z > b)
        return;
    int was = nbr[z];
    if (d < rowmin[z]) {
        rowmin[z] = d;
        nbr[z] = b;
    } else if (was == a || was == b) {
        list[atomicAdd(&st->count, 1)] = z;
    } else if (d == rowmin[z] && b < was) {
        nbr[z] = b;
    }
}
