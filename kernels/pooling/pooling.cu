// pooling.cu — the project's own kernel for the boundary pooling.stats: the
// embedding's mask-weighted statistics pooling, per job the weighted mean and
// standard deviation of each of the trunk's 2560 rows over its 125 frames,
// in float64 as on the library route (kernels/glue/glue.cu, gf_statspool): v1 =
// Σw + 1e-8, mean = Σ w·x / v1, std = sqrt(Σ w·(x - mean)² / (v1 - Σw²/v1 +
// 1e-8)), one rounding to float at the end. The glue kernel runs one block a
// job and one thread a row, so a warp's loads stride 500 bytes apart and
// three jobs of one window read its rows three times; here a block owns 32
// rows of one window for every job of that window.
// CPU reference: gf_pool_ref (kernels/pooling/pooling_gpu.c), kernels/pooling/pooling_cpu.c.
//
// Block: 128 threads = 4 warps; grid (rows / 32, windows). The block reads
// its 32 rows (4,000 contiguous floats, 16-byte loads) once into shared
// memory as float64 (row pitch 125 doubles, odd, so a warp reading one frame
// of 32 rows hits distinct banks). Then per group of up to 3 jobs of the
// window (win_start / win_jobs: the window's jobs, made on the host): warp j
// converts job j's weights to float64 into shared memory ([frame][4], one
// broadcast a frame and job) and sums Σw, Σw² once for the block; thread
// (warp q, lane r) sums frames 32q..32q+31 of row r for the 3 jobs, the four
// partial sums meet in shared memory in a fixed order, so every thread of
// the row has the same mean; the second pass the same way; warp j writes
// job j's 32 means and 32 deviations. Shared memory 42.2 KB, static.

#define POOL_T 125                     // frames of a trunk row
#define POOL_ROWS 32                   // rows a block
#define POOL_THREADS 128               // 4 warps: 4 quarters of the frames
#define POOL_JG 3                      // jobs a pass
#define POOL_Q 32                      // frames a quarter (the last has 29)
#define POOL_VEC (POOL_ROWS * POOL_T / 4)   // float4s a block reads: 1000
#define POOL_LOADS ((POOL_VEC + POOL_THREADS - 1) / POOL_THREADS)   // 8 a thread

// x [windows][R][125] float, R a multiple of 32; w [jobs][125] float;
// win_start [windows + 1], win_jobs [jobs]: the jobs of window b are
// win_jobs[win_start[b] .. win_start[b + 1]); out [jobs][2R] float: R means
// then R deviations.
extern "C" __global__ void __launch_bounds__(POOL_THREADS)
gf_pool_stats(const float *__restrict__ x, int R, const float *__restrict__ w,
              const int *__restrict__ win_start, const int *__restrict__ win_jobs,
              float *__restrict__ out)
{
    __shared__ __align__(16) double xs[POOL_ROWS * POOL_T];
    __shared__ __align__(16) double ws[POOL_T][4];
    __shared__ double part[4][POOL_JG][POOL_ROWS], part2[4][POOL_JG][POOL_ROWS];
    __shared__ double v1s[POOL_JG], dens[POOL_JG];
    const int win = blockIdx.y, r0 = blockIdx.x * POOL_ROWS;
    const int j0 = win_start[win], j1 = win_start[win + 1];
    if (j0 >= j1)
        return;   // no job pools this window
    const float4 *src = reinterpret_cast<const float4 *>(x + ((long)win * R + r0) * POOL_T);
    float4 v[POOL_LOADS];
#pragma unroll
    for (int k = 0; k < POOL_LOADS; k++) {
        const int i = threadIdx.x + k * POOL_THREADS;
        if (i < POOL_VEC)
            v[k] = __ldg(src + i);
    }
#pragma unroll
    for (int k = 0; k < POOL_LOADS; k++) {
        const int i = threadIdx.x + k * POOL_THREADS;
        if (i < POOL_VEC) {
            double2 *d = reinterpret_cast<double2 *>(xs + 4 * i);
            d[0] = make_double2(v[k].x, v[k].y);
            d[1] = make_double2(v[k].z, v[k].w);
        }
    }
    const int q = threadIdx.x >> 5, r = threadIdx.x & 31;   // quarter of the frames, row
    const int t0 = q * POOL_Q;
    const double *xr = xs + r * POOL_T + t0;
    for (int g = j0; g < j1; g += POOL_JG) {
        const int nj = min(POOL_JG, j1 - g);
        __syncthreads();   // rows staged; the previous group's reads done
        if (q < POOL_JG) {   // warp q: job q's weights in float64 and their sums
            const float *wj = w + (long)win_jobs[g + (q < nj ? q : 0)] * POOL_T;
            double a = 0.0, b = 0.0;
            for (int t = r; t < POOL_T; t += 32) {
                const double wv = q < nj ? (double)wj[t] : 0.0;
                ws[t][q] = wv;
                a += wv;
                b += wv * wv;
            }
            for (int o = 16; o > 0; o >>= 1) {
                a += __shfl_xor_sync(0xffffffffu, a, o);
                b += __shfl_xor_sync(0xffffffffu, b, o);
            }
            if (r == 0) {
                const double v1 = a + 1e-8;
                v1s[q] = v1;
                dens[q] = v1 - b / v1 + 1e-8;
            }
        }
        __syncthreads();
        double s0 = 0.0, s1 = 0.0, s2 = 0.0;
#pragma unroll
        for (int t = 0; t < POOL_Q; t++)
            if (t0 + t < POOL_T) {
                const double xv = xr[t];
                const double2 wa = *reinterpret_cast<const double2 *>(&ws[t0 + t][0]);
                const double wb = ws[t0 + t][2];
                s0 = fma(wa.x, xv, s0);
                s1 = fma(wa.y, xv, s1);
                s2 = fma(wb, xv, s2);
            }
        part[q][0][r] = s0;
        part[q][1][r] = s1;
        part[q][2][r] = s2;
        __syncthreads();
        const double m0 = (((part[0][0][r] + part[1][0][r]) + part[2][0][r]) + part[3][0][r]) / v1s[0];
        const double m1 = (((part[0][1][r] + part[1][1][r]) + part[2][1][r]) + part[3][1][r]) / v1s[1];
        const double m2 = (((part[0][2][r] + part[1][2][r]) + part[2][2][r]) + part[3][2][r]) / v1s[2];
        double q0 = 0.0, q1 = 0.0, q2 = 0.0;
#pragma unroll
        for (int t = 0; t < POOL_Q; t++)
            if (t0 + t < POOL_T) {
                const double xv = xr[t];
                const double2 wa = *reinterpret_cast<const double2 *>(&ws[t0 + t][0]);
                const double wb = ws[t0 + t][2];
                const double d0 = xv - m0, d1 = xv - m1, d2 = xv - m2;
                q0 = fma(wa.x * d0, d0, q0);
                q1 = fma(wa.y * d1, d1, q1);
                q2 = fma(wb * d2, d2, q2);
            }
        part2[q][0][r] = q0;
        part2[q][1][r] = q1;
        part2[q][2][r] = q2;
        __syncthreads();
        if (q < nj) {   // warp q writes job q's 32 rows
            const double m = q == 0 ? m0 : q == 1 ? m1 : m2;
            const double qs = ((part2[0][q][r] + part2[1][q][r]) + part2[2][q][r]) + part2[3][q][r];
            float *o = out + (long)win_jobs[g + q] * 2 * R;
            o[r0 + r] = (float)m;
            o[R + r0 + r] = (float)sqrt(qs / dens[q]);
        }
    }
}
