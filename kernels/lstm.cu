// lstm.cu — the project's own kernel for the boundary lstm.stack: a
// persistent recurrent kernel that runs all time steps of one LSTM layer for
// every (sequence, direction) pair in a single launch, instead of the
// library route's GEMM + cell kernel per step (2·T launches per direction).
// CPU reference: kernels/lstm.c (gf_lstm_dir_ref).
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
