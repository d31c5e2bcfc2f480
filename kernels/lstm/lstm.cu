// lstm.cu — the project's own kernel for the boundary lstm.stack: a
// persistent recurrent kernel that runs all time steps of one LSTM layer for
// every (sequence, direction) pair in a single launch, instead of the
// library route's GEMM + cell kernel per step (2·T launches per direction).
// CPU reference: kernels/lstm/lstm_cpu.c (gf_lstm_dir_cpu).
//
// One block of 512 threads per (sequence b, direction d). Thread j owns gate
// row j of W_hh [512 x 128]: its first KREG columns live in the thread's
// registers, the other 128 - KREG in shared memory, transposed so that the
// warp reads consecutive words. The hidden state is broadcast from shared
// memory; the cell state stays in the registers of threads 0..127. Per step:
// 512 dot products of 128, one barrier, the cell update, one barrier.
//
// Needs (128 - KREG)·512·4 + 2.5 KB of dynamic shared memory: 130 KB with
// KREG 64, above the 64 KB of sm_75 cards (the planner refuses it there and
// the library route runs).
//
// gf_lstm_rec_cluster (cc 9.0, below) does the same work on far fewer
// multiprocessors: see its comment.

#define H 128
#define G (4 * H)
#define KREG 64
#define KSMEM (H - KREG)

__device__ __forceinline__ float sigmoidf_(float v) { return 1.0f / (1.0f + expf(-v)); }

// gx [2][B][T][G]: input projections plus both biases, per direction;
// w_hh [2][G][H]; out [B][T][2H] receives h (forward in [0, H), reverse in
// [H, 2H)). Grid (B, 2), block G threads, dynamic shared memory
// gf_lstm_rec_smem bytes.
extern "C" __global__ void __launch_bounds__(G, 1)
gf_lstm_rec_v1(const float *__restrict__ gx, const float *__restrict__ w_hh,
               float *__restrict__ out, int B, int T)
{
    extern __shared__ float smem[];
    float *wt = smem;                   // [KSMEM][G]
    float *h_s = smem + KSMEM * G;      // [H]
    float *g_s = h_s + H;               // [G]
    const int b = blockIdx.x, d = blockIdx.y, j = threadIdx.x;
    const float *w = w_hh + (size_t)d * G * H + (size_t)j * H;

    float wr[KREG];
#pragma unroll
    for (int k = 0; k < KREG; k++)
        wr[k] = w[k];
    for (int k = 0; k < KSMEM; k++)
        wt[k * G + j] = w[KREG + k];
    if (j < H)
        h_s[j] = 0.0f;
    float c = 0.0f;
    __syncthreads();

    const float *gxb = gx + ((size_t)d * B + b) * (size_t)T * G;
    float *outb = out + (size_t)b * T * 2 * H + (size_t)d * H;
    int t = d ? T - 1 : 0;
    float next = gxb[(size_t)t * G + j];
    for (int s = 0; s < T; s++) {
        float acc = next;
        int tn = d ? t - 1 : t + 1;
        if (s + 1 < T)
            next = gxb[(size_t)tn * G + j];     // prefetch the next step's input
        float acc2 = 0.0f;
#pragma unroll
        for (int k = 0; k < KREG; k++)
            acc = fmaf(wr[k], h_s[k], acc);
#pragma unroll 8
        for (int k = 0; k < KSMEM; k++)
            acc2 = fmaf(wt[k * G + j], h_s[KREG + k], acc2);
        g_s[j] = acc + acc2;
        __syncthreads();
        if (j < H) {
            float ig = sigmoidf_(g_s[j]), fg = sigmoidf_(g_s[H + j]);
            float gg = tanhf(g_s[2 * H + j]), og = sigmoidf_(g_s[3 * H + j]);
            c = fg * c + ig * gg;
            float h = og * tanhf(c);
            h_s[j] = h;
            outb[(size_t)t * 2 * H + j] = h;
        }
        __syncthreads();
        t = tn;
    }
}

// gf_lstm_rec_cluster — the recurrence in tf32 math for cc >= 9.0, on a
// thread-block cluster per (direction, group of SB sequences) instead of a
// block per (sequence, direction). v1 holds 64 multiprocessors for the whole
// stack at a batch of 32 while each does a few hundred multiply-adds a step;
// with SB = 32 this one launches 16 blocks and leaves the rest of the card to the work
// that runs beside it (the ResNet trunk).
//
// Block r of the cluster owns hidden units [16r, 16r + 16): their 64 gate
// rows (i, f, g, o) of W_hh. Per step the block multiplies those rows by the
// hidden state of its SB sequences on the tensor cores (mma.sync m16n8k8
// tf32): warp w takes gate w % 4 (16 rows, whose A fragments for all of K
// stay in its registers, rounded to tf32 once) and the sequences of every
// other 8-column tile from w / 4, reading B fragments from the hidden state
// in shared memory (rows padded to 132 words: conflict-free). The gates meet
// in shared memory; the thread of each (sequence, unit) pair adds its input
// projection (loaded a step ahead), updates the cell state (float32, kept in
// registers), writes h to the output and, rounded to tf32, into the
// next-step hidden buffer of every block of the cluster (distributed shared
// memory). One cluster barrier a step, release then acquire, publishes those
// writes; the hidden buffers alternate, so the next step's writes cannot
// overtake a slower block's reads.
//
// Grid (8, ceil(B / SB), 2), cluster (8, 1, 1), 256 threads; SB a multiple
// of 8, at most 32; dynamic shared memory cluster_smem(SB) in kernels/lstm/lstm_gpu.c =
// (2·SB·132 + SB·80)·4 bytes.

#include "kernels/tf32.cuh"

#define CL 8                  // blocks a cluster
#define HU (H / CL)           // hidden units a block: 16
#define CT 256                // threads
#define HP (H + 4)            // hidden row stride, words
#define RP 80                 // gate row stride, words (64 gates + 16)
#define MAXPAIR 2             // (sequence, unit) pairs a thread at SB 32

#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ void cluster_sync_(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n"
                 "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void st_cluster_(unsigned addr, unsigned rank, float v)
{
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(v) : "memory");
}
#endif

extern "C" __global__ void __launch_bounds__(CT, 1)
gf_lstm_rec_cluster(const float *__restrict__ gx, const float *__restrict__ w_hh,
                    float *__restrict__ out, int B, int T, int SB)
{
#if __CUDA_ARCH__ >= 900
    extern __shared__ float4 smem4[];
    float *hbuf = (float *)smem4;               // [2][SB][HP]
    float *gat = hbuf + 2 * SB * HP;            // [SB][RP]
    const int rank = blockIdx.x, d = blockIdx.z, tid = threadIdx.x;
    const int b0 = blockIdx.y * SB;
    const int nseq = min(SB, B - b0);
    const int u0 = rank * HU;

    // mma role: warp w, gate w % 4, 8-column tiles w / 4, w / 4 + 2
    const int warp = tid / 32, lane = tid % 32, g = lane / 4, tq = lane % 4;
    const int gate = warp & 3, nh = warp >> 2;
    unsigned a[16][4];
    {
        const float *w0 = w_hh + ((size_t)d * G + gate * H + u0 + g) * H + tq;
        const float *w1 = w0 + 8 * H;
#pragma unroll
        for (int ks = 0; ks < 16; ks++) {
            a[ks][0] = round_tf32(w0[ks * 8]);
            a[ks][1] = round_tf32(w1[ks * 8]);
            a[ks][2] = round_tf32(w0[ks * 8 + 4]);
            a[ks][3] = round_tf32(w1[ks * 8 + 4]);
        }
    }
    for (int i = tid; i < 2 * SB * HP; i += CT)
        hbuf[i] = 0.0f;

    // cell role: pairs p = tid + CT·i, (sequence p / HU, unit p % HU)
    float c[MAXPAIR], gn[MAXPAIR][4];
    int t = d ? T - 1 : 0;
#pragma unroll
    for (int i = 0; i < MAXPAIR; i++) {
        c[i] = 0.0f;
        int p = tid + CT * i, s = p / HU, u = p % HU;
        if (s < nseq) {
            const float *gp = gx + (((size_t)d * B + b0 + s) * T + t) * G + u0 + u;
#pragma unroll
            for (int k = 0; k < 4; k++)
                gn[i][k] = gp[k * H];
        }
    }
    const unsigned hbase = (unsigned)__cvta_generic_to_shared(hbuf);

    cluster_sync_();    // every block started and zeroed before any remote write
    for (int step = 0; step < T; step++) {
        const int cur = step & 1;
        const int tn = d ? t - 1 : t + 1;
        float gv[MAXPAIR][4];
#pragma unroll
        for (int i = 0; i < MAXPAIR; i++) {
            int p = tid + CT * i, s = p / HU, u = p % HU;
#pragma unroll
            for (int k = 0; k < 4; k++)
                gv[i][k] = gn[i][k];
            if (s < nseq && step + 1 < T) {      // the next step's projections, ahead
                const float *gp = gx + (((size_t)d * B + b0 + s) * T + tn) * G + u0 + u;
#pragma unroll
                for (int k = 0; k < 4; k++)
                    gn[i][k] = gp[k * H];
            }
        }
        const float *hc = hbuf + cur * SB * HP;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            const int nt = nh + 2 * j;
            if (nt * 8 < nseq) {
                float e[4] = { 0.0f, 0.0f, 0.0f, 0.0f }, o[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
                const float *hb = hc + (nt * 8 + g) * HP + tq;
#pragma unroll
                for (int ks = 0; ks < 16; ks += 2) {
                    mma_tf32(e, a[ks], __float_as_uint(hb[ks * 8]), __float_as_uint(hb[ks * 8 + 4]));
                    mma_tf32(o, a[ks + 1], __float_as_uint(hb[ks * 8 + 8]),
                             __float_as_uint(hb[ks * 8 + 12]));
                }
                float *gr = gat + (nt * 8 + 2 * tq) * RP + gate * HU + g;
                gr[0] = e[0] + o[0];
                gr[RP] = e[1] + o[1];
                gr[8] = e[2] + o[2];
                gr[RP + 8] = e[3] + o[3];
            }
        }
        __syncthreads();
        const unsigned nxt = hbase + (unsigned)((cur ^ 1) * SB * HP) * 4u;
#pragma unroll
        for (int i = 0; i < MAXPAIR; i++) {
            int p = tid + CT * i, s = p / HU, u = p % HU;
            if (s < nseq) {
                const float *gr = gat + s * RP + u;
                float ig = sigmoidf_(gv[i][0] + gr[0]), fg = sigmoidf_(gv[i][1] + gr[HU]);
                float gg = tanhf(gv[i][2] + gr[2 * HU]), og = sigmoidf_(gv[i][3] + gr[3 * HU]);
                c[i] = fg * c[i] + ig * gg;
                float h = og * tanhf(c[i]);
                out[((size_t)(b0 + s) * T + t) * 2 * H + d * H + u0 + u] = h;
                unsigned adr = nxt + (unsigned)(s * HP + u0 + u) * 4u;
                float hr = __uint_as_float(round_tf32(h));
#pragma unroll
                for (int rr = 0; rr < CL; rr++)
                    st_cluster_(adr, (unsigned)rr, hr);
            }
        }
        cluster_sync_();
        t = tn;
    }
#endif
}
