/* winograd.c — Winograd F(2×2, 3×3) convolution for the ResNet34 trunk.
 *
 * With Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; ½ ½ ½;
 * ½ -½ ½; 0 0 1] and Aᵀ = [1 1 1 0; 0 1 -1 -1]: U = G g Gᵀ per filter,
 * V = Bᵀ d B per 4×4 input patch, M = U ⊙ V summed over input channels (16
 * sgemms, one per position ξ of the 4×4 transform), Y = Aᵀ M A. Tiles go in
 * chunks so V and M stay in cache-sized buffers. */
#include "kernels/resnet/winograd_cpu.h"

#include <cblas.h>

void gf_winograd_pack_cpu(const float *w, int Cout, int Cin, float *u)
{
    for (int o = 0; o < Cout; o++)
        for (int i = 0; i < Cin; i++) {
            const float *g = w + ((long)o * Cin + i) * 9;
            double t[4][3], r[4][4];
            for (int c = 0; c < 3; c++) {        /* G g */
                t[0][c] = g[c];
                t[1][c] = 0.5 * ((double)g[c] + g[3 + c] + g[6 + c]);
                t[2][c] = 0.5 * ((double)g[c] - g[3 + c] + g[6 + c]);
                t[3][c] = g[6 + c];
            }
            for (int a = 0; a < 4; a++) {        /* (G g) Gᵀ */
                r[a][0] = t[a][0];
                r[a][1] = 0.5 * (t[a][0] + t[a][1] + t[a][2]);
                r[a][2] = 0.5 * (t[a][0] - t[a][1] + t[a][2]);
                r[a][3] = t[a][2];
            }
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 4; b++)
                    u[((long)(a * 4 + b) * Cout + o) * Cin + i] = (float)r[a][b];
        }
}

/* Tiles go by whole rows of tiles so that both transforms run along a row,
 * tile after tile, as plain loops the compiler vectorises: in a row, the
 * 4 columns of tile i are the odd/even samples at i and i+1 (with pad 1,
 * column 2i-1+b), so each input row splits into E[j] = x[2j-1] and
 * O[j] = x[2j] and every step is an elementwise add over i. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define CLONES __attribute__((target_clones("arch=x86-64-v3", "default"), optimize("O3")))
#else
#define CLONES
#endif

long gf_winograd_ws_size(int Cin, int Cout, int W, long budget)
{
    long tw = (W + 1) / 2, need = 16L * (Cin + Cout) * tw + 16L * (tw + 1);
    return budget > need ? budget : need;
}

/* Rows of tiles per chunk and the scratch it needs: V, M and row buffers. */
static int chunk_rows(int Cin, int Cout, int tw, long ws_floats)
{
    long per_row = 16L * (Cin + Cout) * tw;
    long scratch = 16L * (tw + 1);
    long rows = (ws_floats - scratch) / per_row;
    return rows < 1 ? 1 : (int)rows;
}

CLONES
static void input_row(const float *restrict xc, int H, int W, int ty, int tw, float *restrict v,
                      long plane, float *restrict scratch)
{
    float *E[4], *O[4];
    for (int a = 0; a < 4; a++) {
        E[a] = scratch + (long)(2 * a) * (tw + 1);
        O[a] = scratch + (long)(2 * a + 1) * (tw + 1);
        int y = 2 * ty - 1 + a;
        if (y < 0 || y >= H) {
            for (int j = 0; j <= tw; j++)
                E[a][j] = O[a][j] = 0.0f;
            continue;
        }
        /* E[j] = x[2j-1], O[j] = x[2j], zero outside [0, W): the ends apart,
         * the interior as branch-free stride-2 loads */
        const float *r = xc + (long)y * W;
        float *restrict e = E[a], *restrict o = O[a];
        const int inner = (W - 1) / 2;   /* j = 1 .. inner: 2j-1 and 2j both inside */
        for (int j = 1; j <= inner; j++) {
            e[j] = r[2 * j - 1];
            o[j] = r[2 * j];
        }
        e[0] = 0.0f;
        o[0] = r[0];
        for (int j = inner + 1; j <= tw; j++) {
            e[j] = 2 * j - 1 < W ? r[2 * j - 1] : 0.0f;
            o[j] = 2 * j < W ? r[2 * j] : 0.0f;
        }
    }
    /* Bᵀ d along the rows a, in place: rows become t0..t3 */
    for (int j = 0; j <= tw; j++) {
        float e0 = E[0][j], e1 = E[1][j], e2 = E[2][j], e3 = E[3][j];
        float o0 = O[0][j], o1 = O[1][j], o2 = O[2][j], o3 = O[3][j];
        E[0][j] = e0 - e2, E[1][j] = e1 + e2, E[2][j] = e2 - e1, E[3][j] = e1 - e3;
        O[0][j] = o0 - o2, O[1][j] = o1 + o2, O[2][j] = o2 - o1, O[3][j] = o1 - o3;
    }
    /* (Bᵀ d) B along the columns: tile i has columns E[i], O[i], E[i+1], O[i+1] */
    for (int a = 0; a < 4; a++) {
        const float *restrict e = E[a], *restrict o = O[a];
        float *restrict v0 = v + (long)(4 * a) * plane, *restrict v1 = v0 + plane;
        float *restrict v2 = v1 + plane, *restrict v3 = v2 + plane;
        for (int i = 0; i < tw; i++) {
            v0[i] = e[i] - e[i + 1];
            v1[i] = o[i] + e[i + 1];
            v2[i] = e[i + 1] - o[i];
            v3[i] = o[i] - o[i + 1];
        }
    }
}

CLONES
static void output_row(const float *restrict m, long plane, int tw, int H, int W, int ty,
                       float bias, const float *restrict res, int relu, float *restrict oc,
                       float *restrict scratch)
{
    float *t[2][4];
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 4; b++)
            t[a][b] = scratch + (long)(a * 4 + b) * tw;
    for (int b = 0; b < 4; b++) {   /* Aᵀ M */
        const float *restrict m0 = m + (long)b * plane, *restrict m1 = m0 + 4 * plane;
        const float *restrict m2 = m1 + 4 * plane, *restrict m3 = m2 + 4 * plane;
        float *restrict t0 = t[0][b], *restrict t1 = t[1][b];
        for (int i = 0; i < tw; i++) {
            t0[i] = m0[i] + m1[i] + m2[i];
            t1[i] = m1[i] - m2[i] - m3[i];
        }
    }
    float *y0 = scratch + 8L * tw, *y1 = scratch + 9L * tw;
    for (int a = 0; a < 2; a++) {   /* (Aᵀ M) A, then bias, residual, ReLU */
        int y = 2 * ty + a;
        if (y >= H)
            break;
        const float *restrict s0 = t[a][0], *restrict s1 = t[a][1], *restrict s2 = t[a][2],
                              *restrict s3 = t[a][3];
        for (int i = 0; i < tw; i++) {
            y0[i] = s0[i] + s1[i] + s2[i] + bias;
            y1[i] = s1[i] - s2[i] - s3[i] + bias;
        }
        float *restrict o = oc + (long)y * W;
        const float *restrict r = res ? res + (long)y * W : NULL;
        int pairs = W / 2;
        for (int i = 0; i < pairs; i++) {
            o[2 * i] = y0[i];
            o[2 * i + 1] = y1[i];
        }
        if (W % 2)
            o[W - 1] = y0[pairs];
        if (r)
            for (int xx = 0; xx < W; xx++)
                o[xx] += r[xx];
        if (relu)
            for (int xx = 0; xx < W; xx++)
                o[xx] = o[xx] > 0.0f ? o[xx] : 0.0f;
    }
}

void gf_winograd_cpu(const float *x, int Cin, int H, int W, const float *u, const float *bias,
                     int Cout, const float *residual, int relu, float *out, float *ws,
                     long ws_floats)
{
    const int th = (H + 1) / 2, tw = (W + 1) / 2;
    const long HW = (long)H * W;
    const int rows = chunk_rows(Cin, Cout, tw, ws_floats);
    for (int ty0 = 0; ty0 < th; ty0 += rows) {
        const int nr = th - ty0 < rows ? th - ty0 : rows;
        const long nt = (long)nr * tw;
        float *V = ws, *M = ws + 16L * Cin * nt;   /* [16][Cin][nt], [16][Cout][nt] */
        float *scratch = M + 16L * Cout * nt;
        for (int ci = 0; ci < Cin; ci++)
            for (int r = 0; r < nr; r++)
                input_row(x + ci * HW, H, W, ty0 + r, tw, V + (long)ci * nt + (long)r * tw,
                          (long)Cin * nt, scratch);
        for (int xi = 0; xi < 16; xi++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Cout, (int)nt, Cin, 1.0f,
                        u + (long)xi * Cout * Cin, Cin, V + (long)xi * Cin * nt, (int)nt, 0.0f,
                        M + (long)xi * Cout * nt, (int)nt);
        for (int co = 0; co < Cout; co++)
            for (int r = 0; r < nr; r++)
                output_row(M + (long)co * nt + (long)r * tw, (long)Cout * nt, tw, H, W, ty0 + r,
                           bias[co], residual ? residual + co * HW : NULL, relu, out + co * HW,
                           scratch);
    }
}
