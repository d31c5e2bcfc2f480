/* winograd.c — Winograd F(2×2, 3×3) convolution for the ResNet34 trunk.
 *
 * With Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; ½ ½ ½;
 * ½ -½ ½; 0 0 1] and Aᵀ = [1 1 1 0; 0 1 -1 -1]: U = G g Gᵀ per filter,
 * V = Bᵀ d B per 4×4 input patch, M = U ⊙ V summed over input channels (16
 * sgemms, one per position ξ of the 4×4 transform), Y = Aᵀ M A. Tiles go in
 * chunks so V and M stay in cache-sized buffers. */
#include "kernels/winograd.h"

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

long gf_winograd_ws_size(int Cin, int Cout, long budget)
{
    long per_tile = 16L * (Cin + Cout);
    return budget > per_tile ? budget : per_tile;
}

void gf_winograd_cpu(const float *x, int Cin, int H, int W, const float *u, const float *bias,
                     int Cout, const float *residual, int relu, float *out, float *ws,
                     long ws_floats)
{
    const int th = (H + 1) / 2, tw = (W + 1) / 2;
    const long ntiles = (long)th * tw, HW = (long)H * W;
    long chunk = ws_floats / (16L * (Cin + Cout));
    if (chunk > ntiles)
        chunk = ntiles;
    for (long p0 = 0; p0 < ntiles; p0 += chunk) {
        const long nt = ntiles - p0 < chunk ? ntiles - p0 : chunk;
        float *V = ws, *M = ws + 16L * Cin * nt;   /* [16][Cin][nt], [16][Cout][nt] */
        const int ty0 = (int)(p0 / tw), tx0 = (int)(p0 % tw);
        for (int ci = 0; ci < Cin; ci++) {
            const float *xc = x + ci * HW;
            int ty = ty0, tx = tx0;
            for (long q = 0; q < nt; q++, tx = tx + 1 == tw ? (ty++, 0) : tx + 1) {
                const int y0 = ty * 2 - 1, x0 = tx * 2 - 1;
                float d[4][4];
                if (y0 >= 0 && x0 >= 0 && y0 + 3 < H && x0 + 3 < W) {
                    for (int a = 0; a < 4; a++)
                        for (int b = 0; b < 4; b++)
                            d[a][b] = xc[(long)(y0 + a) * W + x0 + b];
                } else {
                    for (int a = 0; a < 4; a++)
                        for (int b = 0; b < 4; b++) {
                            int yy = y0 + a, xx = x0 + b;
                            d[a][b] = (yy >= 0 && yy < H && xx >= 0 && xx < W)
                                          ? xc[(long)yy * W + xx] : 0.0f;
                        }
                }
                float t[4][4];
                for (int b = 0; b < 4; b++) {      /* Bᵀ d */
                    t[0][b] = d[0][b] - d[2][b];
                    t[1][b] = d[1][b] + d[2][b];
                    t[2][b] = d[2][b] - d[1][b];
                    t[3][b] = d[1][b] - d[3][b];
                }
                for (int a = 0; a < 4; a++) {      /* (Bᵀ d) B */
                    float *v = V + ((long)(a * 4) * Cin + ci) * nt + q;
                    const long s = (long)Cin * nt;
                    v[0] = t[a][0] - t[a][2];
                    v[s] = t[a][1] + t[a][2];
                    v[2 * s] = t[a][2] - t[a][1];
                    v[3 * s] = t[a][1] - t[a][3];
                }
            }
        }
        for (int xi = 0; xi < 16; xi++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, Cout, (int)nt, Cin, 1.0f,
                        u + (long)xi * Cout * Cin, Cin, V + (long)xi * Cin * nt, (int)nt, 0.0f,
                        M + (long)xi * Cout * nt, (int)nt);
        const long s = (long)Cout * nt;
        for (int co = 0; co < Cout; co++) {
            const float bb = bias[co];
            float *oc = out + co * HW;
            const float *rc = residual ? residual + co * HW : NULL;
            int ty = ty0, tx = tx0;
            for (long q = 0; q < nt; q++, tx = tx + 1 == tw ? (ty++, 0) : tx + 1) {
                const int y0 = ty * 2, x0 = tx * 2;
                const float *m = M + (long)co * nt + q;
                float t[2][4];
                for (int b = 0; b < 4; b++) {      /* Aᵀ M */
                    float m0 = m[(long)b * s], m1 = m[(long)(4 + b) * s];
                    float m2 = m[(long)(8 + b) * s], m3 = m[(long)(12 + b) * s];
                    t[0][b] = m0 + m1 + m2;
                    t[1][b] = m1 - m2 - m3;
                }
                for (int a = 0; a < 2; a++) {      /* (Aᵀ M) A */
                    int yy = y0 + a;
                    if (yy >= H)
                        break;
                    float y2[2] = { t[a][0] + t[a][1] + t[a][2], t[a][1] - t[a][2] - t[a][3] };
                    for (int b = 0; b < 2; b++) {
                        int xx = x0 + b;
                        if (xx >= W)
                            break;
                        long idx = (long)yy * W + xx;
                        float v = y2[b] + bb;
                        if (rc)
                            v += rc[idx];
                        if (relu && v < 0.0f)
                            v = 0.0f;
                        oc[idx] = v;
                    }
                }
            }
        }
    }
}
