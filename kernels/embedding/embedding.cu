// embedding.cu — the project's own kernel for the boundary embedding.seg_1:
// the embedding's last layer, emb[j][n] = bias[n] + Σk pooled[j][k]·W[n][k]
// for up to a few hundred jobs j, 256 outputs n and K = 5120: in float32
// FMAs (gf_seg1_splitk, math mode fp32) or on the tensor cores in tf32
// (gf_seg1_cluster_tf32 on cc 9.0, gf_seg1_splitk_tf32 where a cluster cannot
// be launched; math mode tf32, as the library then runs). The library route
// is cuBLAS's SGEMM and a bias kernel; with so few rows the product is short
// and wide, so it is split along K here and the bias is added where the
// parts meet.
// CPU reference: gf_seg1_ref (kernels/embedding/seg1_gpu.c), kernels/dense/dense_cpu.c.
//
// Block: 128 threads own 32 jobs x 64 outputs of one slice of K (K /
// gridDim.z, a multiple of 32; the host picks the slices so that the grid
// is at most 256 blocks); grid (outputs / 64, ceil(jobs / 32), slices). Each
// chunk of 32 k comes into shared memory by 16-byte loads, rows of 36 floats
// (pooled [32][36], W [64][36], 13.8 KB), the next chunk's loads in flight
// during the current one's multiply; a thread keeps 4 jobs x 4 outputs (jobs
// jg + 8a, outputs ng + 16b) and reads float4s along k: the pooled reads are
// broadcasts, the W reads of 8 lanes fall in distinct banks. The block
// writes its 32 x 64 partial sums to part[slice]; the last block of a tile
// to arrive (a counter per tile, reset by that block) adds the slices in
// order 0, 1, ... and the bias, so the result does not depend on which
// block came last.
//
// gf_seg1_splitk_tf32: the same tiles, slices, partial sums and last-block
// sum, the multiply on the tensor cores (mma.sync m16n8k8 tf32, float32
// accumulation, both operands rounded as cvt.rna does as their fragments
// are read, by an integer add and mask). A slice is 128 or 256 k (40 or 20
// slices; the host picks), and the block's whole slice, pooled [32][ks] and
// W [64][ks], comes into dynamic shared memory at once by 16-byte cp.async
// in four groups (the slice's quarters), each quarter multiplied as soon as
// it lands; there is no chunk loop whose loads wait on each other. Rows are
// padded to ks + 16 floats and k is permuted inside each 16 as in
// kernels/dense/dense.cu (lane 4g + t holds k 4t .. 4t + 3 of both k-tiles), so
// each fragment row is one 16-byte load and eight lanes' loads fall in 32
// banks: 104.4 KB at 256 k (two blocks an SM), 55.3 KB at 128. Warp w owns
// outputs 16w .. 16w + 15 (2 n-tiles) of the 32 jobs (2 m-tiles). Needs
// sm_80: the sm75 tier traps (kernels/embedding/seg1_gpu.c runs gf_seg1_splitk there).
//
// gf_seg1_cluster_tf32 (below): the tf32 multiply of gf_seg1_splitk_tf32
// with the slices summed inside a thread-block cluster through distributed
// shared memory, in one launch without the partial sums in global memory,
// the counters or the last block's second pass: see its comment.

#include "kernels/tf32.cuh"

#define SEG1_JT 32                     // jobs a block
#define SEG1_NT 64                     // outputs a block
#define SEG1_KC 32                     // k a chunk
#define SEG1_PITCH (SEG1_KC + 4)       // shared row pitch, floats
#define SEG1_THREADS 128
#define SEG1_TF32_PAD 16               // tf32 slice row padding: 16-byte fragment loads
                                       // of 8 lanes (rows g, g + 1) fall in 32 banks

// One chunk's loads: 8 threads a row of 32 k (128 bytes); the pooled tile's
// 32 rows in 2 passes of 16 (rows past the last job read as zeros), W's 64
// rows in 4.
__device__ __forceinline__ void seg1_load(const float *__restrict__ pooled, int jobs, int K,
                                          const float *__restrict__ w, int jt0, int n0, int k0,
                                          float4 pv[2], float4 wv[4])
{
    const int lr = threadIdx.x >> 3, lk = (threadIdx.x & 7) * 4;
#pragma unroll
    for (int p = 0; p < 2; p++) {
        const int j = jt0 + lr + 16 * p;
        pv[p] = j < jobs ? __ldg(reinterpret_cast<const float4 *>(pooled + (long)j * K + k0 + lk))
                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int p = 0; p < 4; p++)
        wv[p] = __ldg(reinterpret_cast<const float4 *>(w + (long)(n0 + lr + 16 * p) * K + k0 + lk));
}

// The end of both kernels, after the block wrote its partial sums: the
// count of the tile's arrivals; the last block adds the slices and the bias.
__device__ __forceinline__ void seg1_finish(const float *__restrict__ bias, int N,
                                            const float *__restrict__ part,
                                            unsigned *__restrict__ count,
                                            float *__restrict__ out, int jobs, int jt0, int n0,
                                            int slices, long rows)
{
    __shared__ bool last;
    const int tid = threadIdx.x;
    __threadfence();   // the parts visible to the whole card before the count
    __syncthreads();
    if (tid == 0) {
        unsigned *c = count + blockIdx.y * gridDim.x + blockIdx.x;
        last = atomicAdd(c, 1u) == (unsigned)slices - 1;
        if (last)
            *c = 0;   // ready for the next launch
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    // The sum of the slices: thread (rows jr + 8i, float4 column c4) of the
    // tile, loads 16 bytes wide from L2, a slice's loads and those of the
    // next slices in flight together. Rows past the last job were neither
    // written nor are they read.
    const int c4 = tid & 15, jr = tid >> 4, n = n0 + 4 * c4;
    const long step = rows * N / 4;   // a slice, in float4s
    const float4 *src = reinterpret_cast<const float4 *>(part + (long)(jt0 + jr) * N + n);
    float4 s[4];
#pragma unroll
    for (int i = 0; i < 4; i++)   // row jr + 8i: 8 rows = 2N float4s on
        s[i] = jt0 + jr + 8 * i < jobs ? __ldcg(src + (long)i * 2 * N)
                                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
    for (int z = 1; z < slices; z++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            if (jt0 + jr + 8 * i < jobs) {
                const float4 v = __ldcg(src + z * step + (long)i * 2 * N);
                s[i].x += v.x;
                s[i].y += v.y;
                s[i].z += v.z;
                s[i].w += v.w;
            }
    const float4 bv = *reinterpret_cast<const float4 *>(bias + n);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int j = jt0 + jr + 8 * i;
        if (j < jobs)
            *reinterpret_cast<float4 *>(out + (long)j * N + n) =
                make_float4(s[i].x + bv.x, s[i].y + bv.y, s[i].z + bv.z, s[i].w + bv.w);
    }
}

// pooled [jobs][K]; w [N][K]; bias [N]; part [slices][ceil(jobs/32)·32][N]
// (workspace); count [ceil(jobs/32)][N/64] (zero before the first launch,
// left zero by every launch); out [jobs][N]. N a multiple of 64, K of 32 ·
// gridDim.z; all rows 16-byte aligned.
extern "C" __global__ void __launch_bounds__(SEG1_THREADS)
gf_seg1_splitk(const float *__restrict__ pooled, int jobs, int K, const float *__restrict__ w,
               const float *__restrict__ bias, int N, float *__restrict__ part,
               unsigned *__restrict__ count, float *__restrict__ out)
{
    __shared__ __align__(16) float ps[SEG1_JT][SEG1_PITCH];
    __shared__ __align__(16) float wsm[SEG1_NT][SEG1_PITCH];
    const int n0 = blockIdx.x * SEG1_NT, jt0 = blockIdx.y * SEG1_JT;
    const int slices = gridDim.z, ks = K / slices, kb = blockIdx.z * ks;
    const int tid = threadIdx.x, ng = tid & 15, jg = tid >> 4;
    const int lr = tid >> 3, lk = (tid & 7) * 4;
    float4 pv[2], wv[4];
    float acc[4][4];
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int b = 0; b < 4; b++)
            acc[a][b] = 0.0f;
    seg1_load(pooled, jobs, K, w, jt0, n0, kb, pv, wv);
    for (int k0 = kb; k0 < kb + ks; k0 += SEG1_KC) {
        __syncthreads();   // the previous chunk's reads done
#pragma unroll
        for (int p = 0; p < 2; p++)
            *reinterpret_cast<float4 *>(&ps[lr + 16 * p][lk]) = pv[p];
#pragma unroll
        for (int p = 0; p < 4; p++)
            *reinterpret_cast<float4 *>(&wsm[lr + 16 * p][lk]) = wv[p];
        __syncthreads();
        if (k0 + SEG1_KC < kb + ks)
            seg1_load(pooled, jobs, K, w, jt0, n0, k0 + SEG1_KC, pv, wv);
#pragma unroll
        for (int k = 0; k < SEG1_KC; k += 4) {
            float4 x[4], y[4];
#pragma unroll
            for (int a = 0; a < 4; a++)
                x[a] = *reinterpret_cast<const float4 *>(&ps[jg + 8 * a][k]);
#pragma unroll
            for (int b = 0; b < 4; b++)
                y[b] = *reinterpret_cast<const float4 *>(&wsm[ng + 16 * b][k]);
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    acc[a][b] = fmaf(x[a].x, y[b].x, acc[a][b]);
                    acc[a][b] = fmaf(x[a].y, y[b].y, acc[a][b]);
                    acc[a][b] = fmaf(x[a].z, y[b].z, acc[a][b]);
                    acc[a][b] = fmaf(x[a].w, y[b].w, acc[a][b]);
                }
        }
    }
    const long rows = (long)gridDim.y * SEG1_JT;   // part's rows a slice
    float *pb = part + (long)blockIdx.z * rows * N;
#pragma unroll
    for (int a = 0; a < 4; a++)
        if (jt0 + jg + 8 * a < jobs)
#pragma unroll
            for (int b = 0; b < 4; b++)
                pb[(long)(jt0 + jg + 8 * a) * N + n0 + ng + 16 * b] = acc[a][b];
    seg1_finish(bias, N, part, count, out, jobs, jt0, n0, slices, rows);
}

// Math mode tf32. Arguments as gf_seg1_splitk's, with K a multiple of 64 ·
// gridDim.z (a slice's quarters whole pairs of k-tiles) and (32 + 64) · (K
// / gridDim.z + 16) · 4 bytes of dynamic shared memory. Grid (N / 64,
// ceil(jobs / 32), slices), 128 threads.
extern "C" __global__ void __launch_bounds__(SEG1_THREADS)
gf_seg1_splitk_tf32(const float *__restrict__ pooled, int jobs, int K,
                    const float *__restrict__ w, const float *__restrict__ bias, int N,
                    float *__restrict__ part, unsigned *__restrict__ count,
                    float *__restrict__ out)
{
#if __CUDA_ARCH__ >= 800
    extern __shared__ __align__(16) float sm[];
    const int n0 = blockIdx.x * SEG1_NT, jt0 = blockIdx.y * SEG1_JT;
    const int slices = gridDim.z, ks = K / slices, kb = blockIdx.z * ks;
    const int pitch = ks + SEG1_TF32_PAD;
    float *ps = sm;                        // [32][pitch]: the jobs' slice
    float *wsm = sm + SEG1_JT * pitch;     // [64][pitch]: the outputs' weights
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const int gq = ks / 16;                // float4s of a row's quarter slice
    const int np = ks / 16, ppg = np / 4;  // k pairs (16 k), pairs a quarter

    // The four quarters in flight: 32 pooled rows, then 64 weight rows, 16
    // bytes a thread at a time along each row; jobs past the end read as
    // zeros (from job 0's address, which exists: jobs >= 1).
#pragma unroll
    for (int q = 0; q < 4; q++) {
        for (int i = tid; i < (SEG1_JT + SEG1_NT) * gq; i += SEG1_THREADS) {
            const int r = i / gq, c = q * (ks / 4) + 4 * (i % gq);
            if (r < SEG1_JT) {
                const bool ok = jt0 + r < jobs;
                cp_async16(ps + r * pitch + c, pooled + (long)(ok ? jt0 + r : 0) * K + kb + c,
                           ok ? 16 : 0);
            } else {
                const int wr = r - SEG1_JT;
                cp_async16(wsm + wr * pitch + c, w + (long)(n0 + wr) * K + kb + c, 16);
            }
        }
        cp_async_commit();
    }

    float acc[2][2][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    // k permuted inside each 16 as in kernels/dense/dense.cu: lane 4g + t holds
    // k 4t .. 4t + 3 of both k-tiles, one 16-byte load a row.
    const float *pa = ps + g * pitch + 4 * t;                 // m-tile 0, row g
    const float *wb = wsm + (warp * 16 + g) * pitch + 4 * t;  // n-tile 0, output g
#pragma unroll 2
    for (int p = 0; p < np; p++) {
        if (p % ppg == 0) {                // a quarter begins: its copies landed
            cp_async_wait_quarter(p / ppg);
            __syncthreads();
        }
        float4 va[2][2], vb[2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            va[i][0] = *reinterpret_cast<const float4 *>(pa + i * 16 * pitch + 16 * p);
            va[i][1] = *reinterpret_cast<const float4 *>(pa + (i * 16 + 8) * pitch + 16 * p);
        }
#pragma unroll
        for (int j = 0; j < 2; j++)
            vb[j] = *reinterpret_cast<const float4 *>(wb + j * 8 * pitch + 16 * p);
#pragma unroll
        for (int sub = 0; sub < 2; sub++)
#pragma unroll
            for (int i = 0; i < 2; i++) {
                unsigned a[4];
                a_fragment(va[i][0], va[i][1], sub, a);
#pragma unroll
                for (int j = 0; j < 2; j++)
                    mma_tf32(acc[i][j], a, round_tf32(sub ? vb[j].z : vb[j].x),
                             round_tf32(sub ? vb[j].w : vb[j].y));
            }
    }

    const long rows = (long)gridDim.y * SEG1_JT;   // part's rows a slice
    float *pb = part + (long)blockIdx.z * rows * N;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int j = jt0 + i * 16 + g + 8 * hf;
            if (j >= jobs)
                continue;
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
                *reinterpret_cast<float2 *>(pb + (long)j * N + n0 + warp * 16 + nt * 8 + 2 * t) =
                    make_float2(acc[i][nt][2 * hf], acc[i][nt][2 * hf + 1]);
        }
    seg1_finish(bias, N, part, count, out, jobs, jt0, n0, slices, rows);
#else
    __trap();
#endif
}

// gf_seg1_cluster_tf32 — math mode tf32 on cc 9.0: the multiply of
// gf_seg1_splitk_tf32 (mma.sync m16n8k8 tf32, float32 accumulation, both
// operands rounded as cvt.rna does as their fragments are read, k permuted
// inside each 16), the slices summed inside a thread-block cluster. The
// split-K kernel is level with cuBLAS (0.016-0.023 ms at 96 jobs): its
// blocks write their partial sums to L2, count their arrivals with atomics,
// and the last block of each tile reads every slice back. Here the partial
// tiles never leave the multiprocessors: one launch, no workspace, no
// counters.
//
// A cluster of 8 blocks (the portable size: gf_gpu_launch_cluster does not
// ask for more) owns a tile of 32 jobs x 32 outputs; block r, its rank in
// the cluster, takes slice r of K (640 k at K = 5120). The slice streams
// through a ring of 3 stages of 128 k in dynamic shared memory, pooled
// [32][144] and W [32][144] a stage (rows padded by 16 floats as in
// gf_seg1_splitk_tf32: 36.9 KB a stage, 110.6 KB a block, two blocks an SM:
// the 192 blocks of 96 jobs in one wave). A whole slice at once (164 KB)
// would leave one block an SM and two waves. Warp w multiplies the whole 32
// x 32 tile over 16-k pairs w and w + 4 of each stage (2 m-tiles x 4
// n-tiles: 8 fragment loads feed 16 mma; the second m-tile is skipped where
// the tile holds at most 16 jobs), and copies those columns itself (16-byte
// cp.async), so the ring needs no block barrier: all 3 stages in flight from
// the start, a stage refilled as soon as its warp has read it. The four
// warps' tiles meet in shared memory (where the ring was) and are summed in
// warp order 0..3 into the block's partial tile [32][32]. One cluster
// barrier (release, acquire) publishes the 8 partial tiles; block r then
// sums rows 4r .. 4r + 3 of all 8, read by ld.shared::cluster in rank order
// 0..7, adds the bias and stores; a last cluster barrier keeps each block's
// shared memory alive until the others have read it. Every sum runs in a
// fixed order, so the result does not depend on which block gets ahead.
// On an H200 the loads bound it: 31.5 MB from L2 at 96 jobs (W read by 3
// row tiles, the pooled rows by 8 column tiles). Tiles of 32 x 64 (23.6 MB,
// 96 blocks of 166 KB, one an SM) were no faster at 96 jobs and slower below.
//
// pooled [jobs][K]; w [N][K]; bias [N]; out [jobs][N]; N a multiple of 32,
// K of 8 · 128; rows 16-byte aligned. Grid (8 · N / 32, ceil(jobs / 32)),
// cluster (8, 1, 1), 128 threads, SEG1_CL_SMEM bytes of dynamic shared
// memory. Needs sm_90: the sm75 tier traps (kernels/embedding/seg1_gpu.c runs it on cc
// 9.0 only, where a cluster can be placed).

#define SEG1_CL 8                                   // blocks a cluster: K slices
#define SEG1_CL_NT 32                               // outputs a cluster
#define SEG1_CL_NJ (SEG1_CL_NT / 8)                 // n-tiles a warp
#define SEG1_CL_KC 128                              // k a ring stage
#define SEG1_CL_STAGES 3
#define SEG1_CL_PITCH (SEG1_CL_KC + SEG1_TF32_PAD)  // 144: 16-byte loads of 8 lanes in 32 banks
#define SEG1_CL_STAGE ((SEG1_JT + SEG1_CL_NT) * SEG1_CL_PITCH)   // floats a stage
#define SEG1_CL_SMEM (SEG1_CL_STAGES * SEG1_CL_STAGE * 4)        // 110,592 bytes
#define SEG1_CL_RP (SEG1_CL_NT + 8)                 // warp tiles' row pitch: the float2
                                                    // stores of a half-warp in 32 banks

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned cluster_rank_(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_arrive_(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}

__device__ __forceinline__ void cluster_wait_(void)
{
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The float at shared address addr (this block's window) in the block of
// rank `rank` of the cluster.
__device__ __forceinline__ float ld_cluster_(unsigned addr, unsigned rank)
{
    unsigned remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    return v;
}

// One warp's share of a ring stage: the two 16-k pairs it multiplies (k
// 16w .. 16w + 15 and 64 + 16w .. 64 + 16w + 15 of the stage's 128) of all
// 32 pooled and 32 weight rows, 64 bytes a row and pair, four rows a turn.
// Lanes 8h .. 8h + 7 (one pass of the shared-memory stores) take 64 bytes of
// each of rows r, r + 1, whose 144-float pitch puts them 16 banks apart.
// Jobs past the end are zeros (read from job 0's address, which exists).
__device__ __forceinline__ void seg1_cl_load(float *stage, const float *__restrict__ pooled,
                                             int jobs, int K, const float *__restrict__ w,
                                             int jt0, int n0, int k0)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int c = 16 * warp + 64 * ((lane >> 3) & 1) + 4 * (lane & 3);
    const int r0 = ((lane >> 4) << 1) | ((lane >> 2) & 1);   // 0 .. 3
#pragma unroll
    for (int m = 0; m < SEG1_JT / 4; m++) {
        const int r = r0 + 4 * m;
        const bool ok = jt0 + r < jobs;
        cp_async16(stage + r * SEG1_CL_PITCH + c, pooled + (long)(ok ? jt0 + r : 0) * K + k0 + c,
                   ok ? 16 : 0);
    }
#pragma unroll
    for (int m = 0; m < SEG1_CL_NT / 4; m++) {
        const int r = r0 + 4 * m;
        cp_async16(stage + (SEG1_JT + r) * SEG1_CL_PITCH + c, w + (long)(n0 + r) * K + k0 + c, 16);
    }
}
#endif

extern "C" __global__ void __launch_bounds__(SEG1_THREADS, 2)   // two blocks an SM
gf_seg1_cluster_tf32(const float *__restrict__ pooled, int jobs, int K,
                     const float *__restrict__ w, const float *__restrict__ bias, int N,
                     float *__restrict__ out)
{
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) float sm[];
    const unsigned rank = cluster_rank_();
    const int n0 = (blockIdx.x / SEG1_CL) * SEG1_CL_NT, jt0 = blockIdx.y * SEG1_JT;
    const int ks = K / SEG1_CL, kb = (int)rank * ks, chunks = ks / SEG1_CL_KC;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
    const bool m1 = jt0 + 16 < jobs;   // the second m-tile holds jobs

    // Each warp copies and multiplies its own columns of every stage, so the
    // ring needs no block barrier: the whole ring in flight at once, a stage
    // refilled as soon as the warp has read it.
#pragma unroll
    for (int c = 0; c < SEG1_CL_STAGES; c++) {
        if (c < chunks)
            seg1_cl_load(sm + c * SEG1_CL_STAGE, pooled, jobs, K, w, jt0, n0, kb + c * SEG1_CL_KC);
        cp_async_commit();
    }

    float acc[2][SEG1_CL_NJ][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < SEG1_CL_NJ; j++)
            acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.0f;
    for (int c = 0; c < chunks; c++) {
        // Chunk c landed (two groups, chunks c + 1 and c + 2, may still fly;
        // a group is committed every turn, empty or not, so that the count
        // stays right), the other lanes' copies too.
        cp_async_wait<SEG1_CL_STAGES - 1>();
        __syncwarp();
        const float *st = sm + (c % SEG1_CL_STAGES) * SEG1_CL_STAGE;
        const float *pa = st + g * SEG1_CL_PITCH + 4 * t;                  // m-tile 0, row g
        const float *wb = st + (SEG1_JT + g) * SEG1_CL_PITCH + 4 * t;      // n-tile 0, output g
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int p = warp + 4 * h;   // this warp's 16-k pairs of the chunk's 8
            float4 va[2][2], vb[SEG1_CL_NJ];
#pragma unroll
            for (int i = 0; i < 2; i++)
                if (i == 0 || m1) {
                    const float *r = pa + i * 16 * SEG1_CL_PITCH + 16 * p;
                    va[i][0] = *reinterpret_cast<const float4 *>(r);
                    va[i][1] = *reinterpret_cast<const float4 *>(r + 8 * SEG1_CL_PITCH);
                }
#pragma unroll
            for (int j = 0; j < SEG1_CL_NJ; j++)
                vb[j] = *reinterpret_cast<const float4 *>(wb + j * 8 * SEG1_CL_PITCH + 16 * p);
#pragma unroll
            for (int sub = 0; sub < 2; sub++) {
                unsigned b[SEG1_CL_NJ][2];
#pragma unroll
                for (int j = 0; j < SEG1_CL_NJ; j++) {
                    b[j][0] = round_tf32(sub ? vb[j].z : vb[j].x);
                    b[j][1] = round_tf32(sub ? vb[j].w : vb[j].y);
                }
#pragma unroll
                for (int i = 0; i < 2; i++)
                    if (i == 0 || m1) {
                        unsigned a[4];
                        a_fragment(va[i][0], va[i][1], sub, a);
#pragma unroll
                        for (int j = 0; j < SEG1_CL_NJ; j++)
                            mma_tf32(acc[i][j], a, b[j][0], b[j][1]);
                    }
            }
        }
        __syncwarp();   // every lane's reads of the stage done: chunk c + 3 takes it
        if (c + SEG1_CL_STAGES < chunks)
            seg1_cl_load(sm + (c % SEG1_CL_STAGES) * SEG1_CL_STAGE, pooled, jobs, K, w, jt0, n0,
                         kb + (c + SEG1_CL_STAGES) * SEG1_CL_KC);
        cp_async_commit();
    }

    // The warps' tiles where the ring was (every warp done with it), then
    // the block's partial tile beside them: warp order 0..3.
    float *red = sm;                                // [4][32][SEG1_CL_RP]
    float *part = sm + 4 * SEG1_JT * SEG1_CL_RP;    // [32][SEG1_CL_NT]
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
#pragma unroll
            for (int j = 0; j < SEG1_CL_NJ; j++)
                *reinterpret_cast<float2 *>(red +
                                            (warp * SEG1_JT + i * 16 + g + 8 * hf) * SEG1_CL_RP +
                                            j * 8 + 2 * t) =
                    make_float2(acc[i][j][2 * hf], acc[i][j][2 * hf + 1]);
    __syncthreads();
#pragma unroll
    for (int m = 0; m < SEG1_JT * SEG1_CL_NT / SEG1_THREADS; m++) {
        const int e = tid + SEG1_THREADS * m;
        const float *q = red + (e / SEG1_CL_NT) * SEG1_CL_RP + e % SEG1_CL_NT;
        const int wt = SEG1_JT * SEG1_CL_RP;   // one warp's tile
        part[e] = ((q[0] + q[wt]) + q[2 * wt]) + q[3 * wt];
    }

    // Block r's share of the tile: rows 4r .. 4r + 3, element e = 4r·NT +
    // tid + 128u (a warp 32 columns of a row: 128-byte stores), the 8 partial
    // tiles in rank order.
    constexpr int EU = SEG1_CL_NT / 32;   // elements a thread
    float bv[EU];
    unsigned addr[EU];
#pragma unroll
    for (int u = 0; u < EU; u++) {
        const int e = (int)rank * 4 * SEG1_CL_NT + tid + SEG1_THREADS * u;
        bv[u] = bias[n0 + e % SEG1_CL_NT];
        addr[u] = (unsigned)__cvta_generic_to_shared(part + e);
    }
    cluster_arrive_();   // this block's partial tile written
    cluster_wait_();     // and every other block's
    float s[EU];
#pragma unroll
    for (int u = 0; u < EU; u++) {
        float v[SEG1_CL];
#pragma unroll
        for (int q = 0; q < SEG1_CL; q++)
            v[q] = ld_cluster_(addr[u], (unsigned)q);
        s[u] = v[0];
#pragma unroll
        for (int q = 1; q < SEG1_CL; q++)
            s[u] += v[q];
    }
    cluster_arrive_();   // this block's reads of the others' tiles done
#pragma unroll
    for (int u = 0; u < EU; u++) {
        const int e = (int)rank * 4 * SEG1_CL_NT + tid + SEG1_THREADS * u;
        const int row = jt0 + e / SEG1_CL_NT;
        if (row < jobs)
            out[(long)row * N + n0 + e % SEG1_CL_NT] = s[u] + bv[u];
    }
    cluster_wait_();     // no block leaves while another may still read its tile
#else
    __trap();
#endif
}
