// fbank.cu — the project's own kernels for the embedding network's Kaldi
// log-mel features, boundaries fbank.dft and fbank.mel. The library route
// (kernels/fbank/fbank_gpu.c) writes every frame out, multiplies the frames by
// a 512 x 400 cosine/sine matrix in an SGEMM, squares in a third pass and
// multiplies the power by the dense 80 x 256 mel matrix in a second SGEMM;
// these kernels keep each frame in shared memory and skip the zeros.
// CPU reference: kernels/fbank/fbank_cpu.c (conventions); the checks compare with
// the float64 definition gf_fbank_gpu_ref (kernels/fbank/fbank_gpu.h).
//
// fbank.dft, gf_fbank_dft_power: one warp per frame, 8 warps and 16 frames a
// block; grid (frames / 16). A warp loads its 400 samples (x 32768) into
// shared memory, takes their mean in float64 by shuffles, applies DC
// removal, pre-emphasis and the window, and runs the 512-point real FFT as
// a 256-point complex FFT of (even, odd) sample pairs: a radix-8 pass in
// registers over n = n1 + 32 n2, a radix-8 pass over n1 = r + 4 s, a radix-4
// pass, each through the warp's shared buffer (layouts padded so that no
// access of a half-warp meets a bank twice), then the even/odd split into
// the power of bins 0..255, written [frame][256] as the library route's.
// Float32 throughout; the twiddles come rounded once from float64 (host).
// Shared memory: 35.6 KB a block, static.
//
// fbank.mel, gf_fbank_mel_log then gf_fbank_mean_sub: the first takes 16
// frames of one window a block (grid (63, B), 256 threads), stages their
// power in shared memory, weights each mel bin's few consecutive power bins
// (each power bin lies in at most two triangles: 1-18 weights a bin, not
// 256), takes log(max(e, FLT_EPSILON)), writes the features and each bin's
// float64 sum over the block's frames; the second (grid (8, B)) adds a
// window's partial sums in a fixed order and subtracts each bin's mean in
// float64. No atomics: the result does not depend on the schedule.

#define FB_FRAME 400
#define FB_SHIFT 160
#define FB_POWER 256                          // power bins written per frame
#define FB_WARPS 8
#define FB_FPW 2                              // frames a warp
#define FB_BLOCK_FRAMES (FB_WARPS * FB_FPW)   // 16
#define FB_BUF 288                            // complex slots a warp (the largest layout)
#define FB_TW 544                             // twiddles: [8][32], [256], [8][4]
#define FB_TW_POST 256                        // offset of W512^k
#define FB_TW_R32 512                         // offset of W32^(r u)
#define FB_A(k2, n1) ((k2) * 36 + (n1))       // first pass's output
#define FB_B(r, t) ((r) * 68 + (t))           // second pass's output

#define MEL_BINS 80
#define MEL_FRAMES 16                         // frames a block of gf_fbank_mel_log
#define MEL_THREADS 256
#define MEL_MAXW 512                          // nonzero weights at most (two per power bin)
#define NORM_FRAMES 128                       // frames a block of gf_fbank_mean_sub

#define FB_HD __host__ __device__ __forceinline__

FB_HD float2 fb_add(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
FB_HD float2 fb_sub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
FB_HD float2 fb_mul(float2 a, float2 w)
{
    return make_float2(a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x);
}

// In place: the 4-point DFT (forward, W4 = -i) of x0..x3.
FB_HD void fb_dft4(float2 &x0, float2 &x1, float2 &x2, float2 &x3)
{
    const float2 t0 = fb_add(x0, x2), t1 = fb_sub(x0, x2);
    const float2 t2 = fb_add(x1, x3), t3 = fb_sub(x1, x3);
    x0 = fb_add(t0, t2);
    x2 = fb_sub(t0, t2);
    x1 = make_float2(t1.x + t3.y, t1.y - t3.x);   // t1 - i t3
    x3 = make_float2(t1.x - t3.y, t1.y + t3.x);   // t1 + i t3
}

// In place: the 8-point DFT (forward) of a[0..7], as two 4-point DFTs of the
// even and odd inputs and a radix-2 step.
FB_HD void fb_dft8(float2 a[8])
{
    const float h = 0.707106781186547524f;
    float2 e0 = a[0], e1 = a[2], e2 = a[4], e3 = a[6];
    float2 o0 = a[1], o1 = a[3], o2 = a[5], o3 = a[7];
    fb_dft4(e0, e1, e2, e3);
    fb_dft4(o0, o1, o2, o3);
    o1 = make_float2(h * (o1.x + o1.y), h * (o1.y - o1.x));    // x W8 = (h, -h)
    o2 = make_float2(o2.y, -o2.x);                             // x W8^2 = -i
    o3 = make_float2(h * (o3.y - o3.x), -h * (o3.x + o3.y));   // x W8^3 = (-h, -h)
    a[0] = fb_add(e0, o0);
    a[4] = fb_sub(e0, o0);
    a[1] = fb_add(e1, o1);
    a[5] = fb_sub(e1, o1);
    a[2] = fb_add(e2, o2);
    a[6] = fb_sub(e2, o2);
    a[3] = fb_add(e3, o3);
    a[7] = fb_sub(e3, o3);
}

// The warp's steps on one frame; lane is 0..31. Each step reads what the
// one before wrote (the kernel puts __syncwarp between them), and the
// passes read all their inputs before any lane writes (read / write split).

// Samples x 32768 into xs; returns the lane's float64 share of their sum.
FB_HD double fb_load(int lane, const float *w, float *xs)
{
    double s = 0.0;
    for (int i = 0; i < 13; i++) {
        const int j = lane + 32 * i;
        if (j < FB_FRAME) {
            const float v = w[j] * 32768.0f;
            xs[j] = v;
            s += v;
        }
    }
    return s;
}

// DC removal, pre-emphasis (x[-1] := x[0]) and the window, zero-padded to
// 512 real samples, into the buffer seen as floats.
FB_HD void fb_prep(int lane, const float *xs, float mean, const float *window, float *y)
{
    for (int i = 0; i < 16; i++) {
        const int j = lane + 32 * i;
        float v = 0.0f;
        if (j < FB_FRAME) {
            const float cur = xs[j] - mean, prev = xs[j ? j - 1 : 0] - mean;
            v = (cur - 0.97f * prev) * window[j];
        }
        y[j] = v;
    }
}

// Pass 1: z[n] = y[2n] + i y[2n+1], n = n1 + 32 n2 (n1 = lane); the 8-point
// DFT over n2, times W256^(n1 k2).
FB_HD void fb_pass1_read(int lane, const float2 *buf, const float2 *tw, float2 a[8])
{
    for (int n2 = 0; n2 < 8; n2++)
        a[n2] = buf[lane + 32 * n2];
    fb_dft8(a);
    for (int k2 = 1; k2 < 8; k2++)
        a[k2] = fb_mul(a[k2], tw[k2 * 32 + lane]);
}
FB_HD void fb_pass1_write(int lane, float2 *buf, const float2 a[8])
{
    for (int k2 = 0; k2 < 8; k2++)
        buf[FB_A(k2, lane)] = a[k2];
}

// Pass 2: for k2 = lane / 4 the 32-point DFT over n1 = r + 4 s splits into
// an 8-point DFT over s (r = lane % 4), times W32^(r u).
FB_HD void fb_pass2_read(int lane, const float2 *buf, const float2 *tw, float2 a[8])
{
    const int k2 = lane >> 2, r = lane & 3;
    for (int s = 0; s < 8; s++)
        a[s] = buf[FB_A(k2, r + 4 * s)];
    fb_dft8(a);
    for (int u = 1; u < 8; u++)
        a[u] = fb_mul(a[u], tw[FB_TW_R32 + u * 4 + r]);
}
FB_HD void fb_pass2_write(int lane, float2 *buf, const float2 a[8])
{
    const int k2 = lane >> 2, r = lane & 3;
    for (int u = 0; u < 8; u++)
        buf[FB_B(r, k2 + 8 * u)] = a[u];
}

// Pass 3: for t = k2 + 8 u (lane and lane + 32) the 4-point DFT over r gives
// Z[t + 64 v], written in natural order.
FB_HD void fb_pass3_read(int lane, const float2 *buf, float2 a[8])
{
    for (int h = 0; h < 2; h++) {
        const int t = lane + 32 * h;
        for (int r = 0; r < 4; r++)
            a[4 * h + r] = buf[FB_B(r, t)];
        fb_dft4(a[4 * h], a[4 * h + 1], a[4 * h + 2], a[4 * h + 3]);
    }
}
FB_HD void fb_pass3_write(int lane, float2 *buf, const float2 a[8])
{
    for (int h = 0; h < 2; h++)
        for (int v = 0; v < 4; v++)
            buf[lane + 32 * h + 64 * v] = a[4 * h + v];
}

// The real spectrum X[k] = E[k] + W512^k O[k], E and O the spectra of the
// even and odd samples taken from Z[k] and conj(Z[256 - k]); its power.
FB_HD void fb_power(int lane, const float2 *z, const float2 *tw, float *out)
{
    for (int i = 0; i < 8; i++) {
        const int k = lane + 32 * i;
        const float2 a = z[k], b = z[(FB_POWER - k) & (FB_POWER - 1)];
        const float2 e = make_float2(0.5f * (a.x + b.x), 0.5f * (a.y - b.y));
        const float2 d = make_float2(0.5f * (a.x - b.x), 0.5f * (a.y + b.y));
        const float2 o = make_float2(d.y, -d.x);   // -i d
        const float2 x = fb_add(e, fb_mul(o, tw[FB_TW_POST + k]));
        out[k] = x.x * x.x + x.y * x.y;
    }
}

// wave [B][n_samples]; window [400]; tw [544] (kernels/fbank/fbank_gpu.c):
// W256^(n1 k2) at k2 * 32 + n1, W512^k at 256 + k, W32^(r u) at 512 + u * 4
// + r, each (cos, -sin). power [B * frames][256]. Grid ceil(rows / 16).
extern "C" __global__ void __launch_bounds__(FB_WARPS * 32)
gf_fbank_dft_power(const float *__restrict__ wave, int n_samples, int frames, long rows,
                   const float *__restrict__ window, const float2 *__restrict__ tw,
                   float *__restrict__ power)
{
    __shared__ float2 tws[FB_TW];
    __shared__ float2 bufs[FB_WARPS][FB_BUF];
    __shared__ float xss[FB_WARPS][FB_FRAME];
    for (int i = threadIdx.x; i < FB_TW; i += FB_WARPS * 32)
        tws[i] = tw[i];
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float2 *buf = bufs[warp];
    float *xs = xss[warp];
    for (int i = 0; i < FB_FPW; i++) {
        const long f = (long)blockIdx.x * FB_BLOCK_FRAMES + i * FB_WARPS + warp;
        if (f >= rows)
            break;   // warp-uniform
        const long b = f / frames, t = f - b * frames;
        double s = fb_load(lane, wave + b * n_samples + t * FB_SHIFT, xs);
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        __syncwarp();
        fb_prep(lane, xs, (float)(s / FB_FRAME), window, (float *)buf);
        __syncwarp();
        float2 a[8];
        fb_pass1_read(lane, buf, tws, a);
        __syncwarp();
        fb_pass1_write(lane, buf, a);
        __syncwarp();
        fb_pass2_read(lane, buf, tws, a);
        __syncwarp();
        fb_pass2_write(lane, buf, a);
        __syncwarp();
        fb_pass3_read(lane, buf, a);
        __syncwarp();
        fb_pass3_write(lane, buf, a);
        __syncwarp();
        fb_power(lane, buf, tws, power + f * FB_POWER);
        __syncwarp();   // the next frame overwrites xs and buf
    }
}

// power [B * frames][256] → out [B][frames][80] = log(max(mel, FLT_EPSILON)),
// and part [B][chunks][80] (float64): each bin's sum over the block's frames,
// chunks = ceil(frames / 16). mel: first power bin [80], count [80], offset
// into w [80]; w the nonzero weights. Grid (chunks, B), 256 threads.
extern "C" __global__ void __launch_bounds__(MEL_THREADS)
gf_fbank_mel_log(const float *__restrict__ power, int frames, const int *__restrict__ mel,
                 const float *__restrict__ w, int n_w, float *__restrict__ out,
                 double *__restrict__ part)
{
    __shared__ __align__(16) float ps[MEL_FRAMES][FB_POWER];
    __shared__ float lg[MEL_FRAMES][MEL_BINS];
    __shared__ int ms[3 * MEL_BINS];
    __shared__ float ws[MEL_MAXW];
    const int c = blockIdx.x, b = blockIdx.y, t0 = c * MEL_FRAMES;
    const int nf = min(MEL_FRAMES, frames - t0);
    const long row0 = (long)b * frames + t0;
    const float4 *p4 = (const float4 *)(power + row0 * FB_POWER);
    for (int i = threadIdx.x; i < nf * FB_POWER / 4; i += MEL_THREADS)
        ((float4 *)&ps[0][0])[i] = p4[i];
    for (int i = threadIdx.x; i < 3 * MEL_BINS; i += MEL_THREADS)
        ms[i] = mel[i];
    for (int i = threadIdx.x; i < n_w; i += MEL_THREADS)
        ws[i] = w[i];
    __syncthreads();
    for (int o = threadIdx.x; o < nf * MEL_BINS; o += MEL_THREADS) {
        const int fr = o / MEL_BINS, bin = o - fr * MEL_BINS;
        const float *p = &ps[fr][ms[bin]], *wb = ws + ms[2 * MEL_BINS + bin];
        const int len = ms[MEL_BINS + bin];
        float e = 0.0f;
        for (int j = 0; j < len; j++)
            e += wb[j] * p[j];
        const float v = logf(e > 1.1920929e-7f ? e : 1.1920929e-7f);
        lg[fr][bin] = v;
        out[row0 * MEL_BINS + o] = v;
    }
    __syncthreads();
    if (threadIdx.x < MEL_BINS) {
        double s = 0.0;
        for (int fr = 0; fr < nf; fr++)
            s += lg[fr][threadIdx.x];
        part[((long)b * gridDim.x + c) * MEL_BINS + threadIdx.x] = s;
    }
}

// In place on out [B][frames][80]: each bin's mean over the window's frames
// (from part [B][chunks][80], added in chunk order) subtracted in float64.
// Grid (ceil(frames / 128), B), 256 threads.
extern "C" __global__ void __launch_bounds__(MEL_THREADS)
gf_fbank_mean_sub(float *__restrict__ out, int frames, const double *__restrict__ part,
                  int chunks)
{
    __shared__ double mean[MEL_BINS];
    const int b = blockIdx.y, t0 = blockIdx.x * NORM_FRAMES;
    const int nf = min(NORM_FRAMES, frames - t0);
    if (threadIdx.x < MEL_BINS) {
        const double *pb = part + (long)b * chunks * MEL_BINS + threadIdx.x;
        double s = 0.0;
        for (int c = 0; c < chunks; c++)
            s += pb[(long)c * MEL_BINS];
        mean[threadIdx.x] = s / frames;
    }
    __syncthreads();
    float *o = out + ((long)b * frames + t0) * MEL_BINS;
    for (int i = threadIdx.x; i < nf * MEL_BINS; i += MEL_THREADS)
        o[i] = (float)((double)o[i] - mean[i % MEL_BINS]);
}
