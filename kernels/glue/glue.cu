// glue.cu — the element-wise and reduction kernels of the library route: what
// runs around the cuBLAS GEMMs (layout changes, bias and activation
// epilogues, pooling, normalisation, the LSTM cell, log-softmax, statistics
// pooling, the fbank's framing and log-mel). Launched through the driver API
// by name (extern "C"). Each is checked against the CPU references of
// kernels/<op>/*_cpu.c through the boundary it serves (tests/gpu/).

#define LEAKY(v, s) ((v) > 0.0f ? (v) : (v) * (s))

// x[r][c] = leaky_relu(x[r][c] + bias[c]); bias may be NULL; slope 1: no activation.
extern "C" __global__ void gf_bias_leaky_relu(float *x, const float *bias, int rows, int cols,
                                              float slope)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long n = (long)rows * cols;
    if (i >= n)
        return;
    float v = x[i] + (bias ? bias[i % cols] : 0.0f);
    x[i] = LEAKY(v, slope);
}

// Block-wide sum of doubles (blockDim.x a multiple of 32, at most 1024).
__device__ double block_sum(double v, double *scratch)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = threadIdx.x < nw ? scratch[threadIdx.x] : 0.0;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, o);
    if (threadIdx.x == 0)
        scratch[0] = v;
    __syncthreads();
    double r = scratch[0];
    __syncthreads();
    return r;
}

// Instance norm of each row x[r][0..T) (biased variance, in float64), affine
// with per-channel weight/bias (channel = r % C), then leaky ReLU. One block a row.
extern "C" __global__ void gf_instnorm_lrelu(float *x, int T, int C, const float *weight,
                                             const float *bias, float eps, float slope)
{
    __shared__ double scratch[32];
    float *row = x + (long)blockIdx.x * T;
    double s = 0.0;
    for (int t = threadIdx.x; t < T; t += blockDim.x)
        s += row[t];
    double mean = block_sum(s, scratch) / T;
    double q = 0.0;
    for (int t = threadIdx.x; t < T; t += blockDim.x) {
        double d = row[t] - mean;
        q += d * d;
    }
    double var = block_sum(q, scratch) / T;
    int c = blockIdx.x % C;
    float scale = (float)(1.0 / sqrt(var + (double)eps));
    float w = weight[c], b = bias[c], m = (float)mean;
    for (int t = threadIdx.x; t < T; t += blockDim.x) {
        float v = (row[t] - m) * scale * w + b;
        row[t] = LEAKY(v, slope);
    }
}

// col[b][t][c*K + k] = x[b][c][t*stride + k] for t < Tout: the im2col of a
// 1-D convolution, rows of length Cin*K.
extern "C" __global__ void gf_im2col1d(const float *x, int B, int Cin, int Tin, int K,
                                       int stride, int Tout, float *col)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long row_len = (long)Cin * K;
    long n = (long)B * Tout * row_len;
    if (i >= n)
        return;
    long j = i % row_len;
    long bt = i / row_len;
    int t = (int)(bt % Tout), b = (int)(bt / Tout);
    int c = (int)(j / K), k = (int)(j % K);
    col[i] = x[((long)b * Cin + c) * Tin + (long)t * stride + k];
}

// out[r][t] = max_j f(x[r][t*k + j]) + bias[r % C] for t < Tout, f = |.| when
// absval, identity otherwise; bias may be NULL (bias commutes with max).
extern "C" __global__ void gf_pool_max(const float *x, int rows, int Tin, int k, int Tout,
                                       int absval, const float *bias, int C, float *out)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)rows * Tout)
        return;
    long r = i / Tout;
    int t = (int)(i % Tout);
    const float *p = x + r * Tin + (long)t * k;
    float m = absval ? fabsf(p[0]) : p[0];
    for (int j = 1; j < k; j++) {
        float v = absval ? fabsf(p[j]) : p[j];
        m = v > m ? v : m;
    }
    out[i] = m + (bias ? bias[r % C] : 0.0f);
}

// Waveform instance norm: each row of N samples to zero mean, unit (biased)
// variance, then * w + b (scalars). One block a row.
extern "C" __global__ void gf_wavnorm(const float *x, float *out, int N, const float *w,
                                      const float *b, float eps)
{
    __shared__ double scratch[32];
    const float *row = x + (long)blockIdx.x * N;
    float *o = out + (long)blockIdx.x * N;
    double s = 0.0;
    for (int t = threadIdx.x; t < N; t += blockDim.x)
        s += row[t];
    double mean = block_sum(s, scratch) / N;
    double q = 0.0;
    for (int t = threadIdx.x; t < N; t += blockDim.x) {
        double d = row[t] - mean;
        q += d * d;
    }
    double var = block_sum(q, scratch) / N;
    float scale = (float)(1.0 / sqrt(var + (double)eps)), m = (float)mean;
    float ww = w[0], bb = b[0];
    for (int t = threadIdx.x; t < N; t += blockDim.x)
        o[t] = (row[t] - m) * scale * ww + bb;
}

// out[b][t][c] = x[b][c][t]: channel-major to time-major.
extern "C" __global__ void gf_transpose_ct(const float *x, int B, int C, int T, float *out)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)B * C * T)
        return;
    int c = (int)(i % C);
    long bt = i / C;
    int t = (int)(bt % T), b = (int)(bt / T);
    out[i] = x[((long)b * C + c) * T + t];
}

__device__ __forceinline__ float sigm(float v) { return 1.0f / (1.0f + expf(-v)); }

// One LSTM time step for B sequences: gates (i, f, g, o blocks of H, already
// holding W_ih x + W_hh h + both biases) at gates + b*gstride; cell c [B, H];
// h written to h_out + b*hstride.
extern "C" __global__ void gf_lstm_cell(const float *gates, long gstride, float *c, int B, int H,
                                        float *h_out, long hstride)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * H)
        return;
    int b = i / H, j = i % H;
    const float *g = gates + b * gstride;
    float ig = sigm(g[j]), fg = sigm(g[H + j]), gg = tanhf(g[2 * H + j]), og = sigm(g[3 * H + j]);
    float cn = fg * c[i] + ig * gg;
    c[i] = cn;
    h_out[b * hstride + j] = og * tanhf(cn);
}

// In place log-softmax over rows of C <= 32 values, one warp a row, float64 sum.
extern "C" __global__ void gf_logsoftmax_rows(float *x, int N, int C)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= N)
        return;
    float *row = x + (long)warp * C;
    float v = lane < C ? row[lane] : -INFINITY;
    float m = v;
    for (int o = 16; o > 0; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    double e = lane < C ? exp((double)v - (double)m) : 0.0;
    for (int o = 16; o > 0; o >>= 1)
        e += __shfl_xor_sync(0xffffffffu, e, o);
    if (lane < C)
        row[lane] = (float)((double)v - (double)m - log(e));
}

// col[b][p][c*k*k + ky*k + kx] = x[b][c][oy*s - pad + ky][ox*s - pad + kx]
// (0 outside), p = oy*Wo + ox: the im2col of a 2-D convolution.
extern "C" __global__ void gf_im2col2d(const float *x, int B, int C, int H, int W, int k, int s,
                                       int pad, int Ho, int Wo, float *col)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long row_len = (long)C * k * k;
    long n = (long)B * Ho * Wo * row_len;
    if (i >= n)
        return;
    long j = i % row_len;
    long bp = i / row_len;
    int p = (int)(bp % ((long)Ho * Wo)), b = (int)(bp / ((long)Ho * Wo));
    int c = (int)(j / (k * k)), kk = (int)(j % (k * k));
    int ky = kk / k, kx = kk % k;
    int oy = p / Wo, ox = p % Wo;
    int y = oy * s - pad + ky, xx = ox * s - pad + kx;
    float v = 0.0f;
    if (y >= 0 && y < H && xx >= 0 && xx < W)
        v = x[(((long)b * C + c) * H + y) * W + xx];
    col[i] = v;
}

// x[b][c][p] += bias[c] (+ residual[b][c][p]), then ReLU when relu; HW = positions.
extern "C" __global__ void gf_bias_residual_relu(float *x, const float *bias,
                                                 const float *residual, int B, int C, int HW,
                                                 int relu)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)B * C * HW)
        return;
    int c = (int)((i / HW) % C);
    float v = x[i] + bias[c] + (residual ? residual[i] : 0.0f);
    x[i] = relu ? fmaxf(v, 0.0f) : v;
}

// Weighted statistics pooling, one block per (window, speaker) job:
// x [windows][R][T], weights w [jobs][T] (NULL row pointer semantics: see
// has_w), out [jobs][2R] = means then standard deviations (MODELS.md
// formulas, float64 sums). job_window[j] names the window of job j.
extern "C" __global__ void gf_statspool(const float *x, int R, int T, const float *w,
                                        const int *job_window, float *out)
{
    int j = blockIdx.x;
    const float *xs = x + (long)job_window[j] * R * T;
    const float *wj = w + (long)j * T;
    __shared__ double sw, sw2;
    if (threadIdx.x == 0) {
        double a = 0.0, b = 0.0;
        for (int t = 0; t < T; t++) {
            a += wj[t];
            b += (double)wj[t] * wj[t];
        }
        sw = a;
        sw2 = b;
    }
    __syncthreads();
    double v1 = sw + 1e-8;
    double denom = v1 - sw2 / v1 + 1e-8;
    for (int r = threadIdx.x; r < R; r += blockDim.x) {
        const float *row = xs + (long)r * T;
        double m = 0.0;
        for (int t = 0; t < T; t++)
            m += (double)wj[t] * row[t];
        m /= v1;
        double q = 0.0;
        for (int t = 0; t < T; t++) {
            double d = row[t] - m;
            q += (double)wj[t] * d * d;
        }
        out[(long)j * 2 * R + r] = (float)m;
        out[(long)j * 2 * R + R + r] = (float)sqrt(q / denom);
    }
}

// The im2col of a 1-D convolution with one input channel, into float64: the
// sinc filterbank runs in double precision (MODELS.md: a float32 251-tap sum
// loses the bands at the quantisation floor). col[b][t][k] = x[b][t*stride + k].
extern "C" __global__ void gf_im2col1d_f64(const float *x, int B, int Tin, int K, int stride,
                                           int Tout, double *col)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long n = (long)B * Tout * K;
    if (i >= n)
        return;
    int k = (int)(i % K);
    long bt = i / K;
    int t = (int)(bt % Tout), b = (int)(bt / Tout);
    col[i] = (double)x[(long)b * Tin + (long)t * stride + k];
}

// out[r][t] = max_j |x[r][t*k + j]| from a float64 input, rounded once.
extern "C" __global__ void gf_pool_absmax_f64(const double *x, int rows, int Tin, int k,
                                              int Tout, float *out)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)rows * Tout)
        return;
    long r = i / Tout;
    int t = (int)(i % Tout);
    const double *p = x + r * Tin + (long)t * k;
    double m = fabs(p[0]);
    for (int j = 1; j < k; j++)
        m = fmax(m, fabs(p[j]));
    out[i] = (float)m;
}

// The fbank's frames, ready for a DFT as a matrix product: out[f][j] =
// window[j] * pre-emphasised, mean-removed (32768 * wave[b][t*160 + j]) for
// frame f = b*frames + t (kernels/fbank/fbank_cpu.c is the reference).
// One block of 128 threads per frame; the frame mean in float64.
extern "C" __global__ void gf_fbank_frames(const float *wave, int n_samples, int frames,
                                           const float *window, float *out)
{
    __shared__ double scratch[32];
    __shared__ float x[400];
    const int f = blockIdx.x, b = f / frames, t = f - b * frames;
    const float *w = wave + (long)b * n_samples + (long)t * 160;
    double s = 0.0;
    for (int j = threadIdx.x; j < 400; j += blockDim.x) {
        x[j] = w[j] * 32768.0f;
        s += x[j];
    }
    float mean = (float)(block_sum(s, scratch) / 400.0);
    __syncthreads();
    float *o = out + (long)f * 400;
    for (int j = threadIdx.x; j < 400; j += blockDim.x) {
        float cur = x[j] - mean, prev = (j ? x[j - 1] : x[0]) - mean;
        o[j] = (cur - 0.97f * prev) * window[j];
    }
}

// power[f][k] = re^2 + im^2 from spec[f] = [re 0..255, im 0..255].
extern "C" __global__ void gf_fbank_power(const float *spec, long rows, float *power)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * 256)
        return;
    long r = i >> 8;
    int k = (int)(i & 255);
    float re = spec[r * 512 + k], im = spec[r * 512 + 256 + k];
    power[i] = re * re + im * im;
}

// In place on mel [B][frames][80]: log(max(x, FLT_EPSILON)), then each bin's
// mean over the window's frames subtracted (float64). One block per (b, bin).
extern "C" __global__ void gf_fbank_log_norm(float *mel, int frames)
{
    __shared__ double scratch[32];
    const int b = blockIdx.x / 80, bin = blockIdx.x % 80;
    float *m = mel + (long)b * frames * 80 + bin;
    double s = 0.0;
    for (int t = threadIdx.x; t < frames; t += blockDim.x) {
        float v = m[(long)t * 80];
        v = logf(v > 1.1920929e-7f ? v : 1.1920929e-7f);
        m[(long)t * 80] = v;
        s += v;
    }
    float mean = (float)(block_sum(s, scratch) / frames);
    for (int t = threadIdx.x; t < frames; t += blockDim.x)
        m[(long)t * 80] = m[(long)t * 80] - mean;
}

// Windows [B, window] from one span of audio where window b starts at
// b * step (the pipeline's overlapping windows, sent to the card once).
extern "C" __global__ void gf_windows_expand(const float *span, int step, int window, int B,
                                             float *out)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long)B * window)
        return;
    long b = i / window, j = i - b * window;
    out[i] = span[b * step + j];
}
