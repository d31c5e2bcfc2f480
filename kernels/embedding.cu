// embedding.cu — the project's own kernel for the boundary embedding.seg_1:
// the embedding's last layer, emb[j][n] = bias[n] + Σk pooled[j][k]·W[n][k]
// for up to a few hundred jobs j, 256 outputs n and K = 5120, in float32
// FMAs whatever the math mode. The library route is cuBLAS's SGEMM and a
// bias kernel; with so few rows the product is short and wide, so it is
// split along K here and the bias is added where the parts meet.
// CPU reference: gf_seg1_ref (worker/seg1_gpu.c), kernels/linear.c.
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

#define SEG1_JT 32                     // jobs a block
#define SEG1_NT 64                     // outputs a block
#define SEG1_KC 32                     // k a chunk
#define SEG1_PITCH (SEG1_KC + 4)       // shared row pitch, floats
#define SEG1_THREADS 128

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
    __shared__ bool last;
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
