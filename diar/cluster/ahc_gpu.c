/* ahc_gpu.c — centroid linkage on the card (see ahc_gpu.h, kernels/ahc/ahc.cu). */
#include "diar/cluster/ahc_gpu.h"
#include "diar/cluster/ahc.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define PICK_THREADS 1024    /* the one block of gf_ahc_pick */
#define SCAN_BLOCKS 264      /* blocks striding over the rows at the start */
#define PD_T 16              /* points per tile side of gf_ahc_pdist */

/* kernels/ahc/ahc.cu's struct gf_ahc_state, field for field. */
typedef struct {
    int a, b, na, nb;
    double dist;
    int err;
} ahc_state;

enum { F_PDIST, F_INIT, F_SCAN, F_PICK, F_UPDATE, F_COUNT };

int gf_ahc_linkage_centroid_gpu(gf_gpu *gpu, const double *x, size_t n, size_t dim, double *Z)
{
    if (n < 2)
        return 0;
    if (n > (size_t)PD_T * 65535 || dim > INT32_MAX / n) {
        GF_ERROR("ahc: %zu embeddings of %zu values: beyond the card kernels' grid", n, dim);
        return GF_ETOOBIG;
    }
    static const char *const names[F_COUNT] = { "gf_ahc_pdist", "gf_ahc_init", "gf_ahc_rescan_all",
                                                "gf_ahc_pick", "gf_ahc_update" };
    gf_cu_function fn[F_COUNT];
    gf_cu_function *const fns[F_COUNT] = { &fn[0], &fn[1], &fn[2], &fn[3], &fn[4] };
    int rc = gf_gpu_functions(gpu, "ahc", names, fns, F_COUNT);
    if (rc)
        return rc;
    size_t m = n * (n - 1) / 2;
    gf_gpu_allocs mem = { .gpu = gpu };
    gf_cu_ptr D;
    if (gf_gpu_allocs_take(&mem, m * sizeof(double), &D) != 0) {
        GF_ERROR("ahc: %zu embeddings: the %.1f GB distance matrix does not fit on the card", n,
                 (double)m * 8.0 / 1e9);
        return GF_ETOOBIG;
    }
    gf_cu_ptr X, size, id, lb, nbr, st, Zd;
    int ni = (int)n, di = (int)dim;
    ahc_state s = { 0 };
    rc = gf_gpu_allocs_upload(&mem, x, n * dim * sizeof(double), &X);
    if (rc)
        goto out_release;
    rc = gf_gpu_allocs_take(&mem, n * sizeof(int), &size);
    if (rc)
        goto out_release;
    rc = gf_gpu_allocs_take(&mem, n * sizeof(int), &id);
    if (rc)
        goto out_release;
    rc = gf_gpu_allocs_take(&mem, n * sizeof(double), &lb);
    if (rc)
        goto out_release;
    rc = gf_gpu_allocs_take(&mem, n * sizeof(int), &nbr);
    if (rc)
        goto out_release;
    rc = gf_gpu_allocs_take(&mem, sizeof(ahc_state), &st);
    if (rc)
        goto out_release;
    rc = gf_gpu_allocs_take(&mem, (n - 1) * 4 * sizeof(double), &Zd);
    if (rc)
        goto out_release;
    rc = gf_gpu_fill32(gpu, st, 0, sizeof(ahc_state) / 4);
    if (rc)
        goto out_release;
    unsigned tiles = (unsigned)((n + PD_T - 1) / PD_T);
    void *p_pdist[] = { &X, &ni, &di, &D };
    rc = gf_gpu_launch(gpu, fn[F_PDIST], tiles, tiles, 1, PD_T * PD_T, 1, 1, 0, p_pdist);
    if (rc)
        goto out_release;
    void *p_init[] = { &size, &id, &ni };
    rc = gf_gpu_launch1d(gpu, fn[F_INIT], (long)n, p_init);
    if (rc)
        goto out_release;
    /* every row's nearest neighbour above it */
    void *p_scan[] = { &D, &size, &ni, &lb, &nbr };
    rc = gf_gpu_launch(gpu, fn[F_SCAN], SCAN_BLOCKS, 1, 1, 256, 1, 1, 0, p_scan);
    if (rc)
        goto out_release;
    for (int k = 0; k < ni - 1; k++) {
        void *pp[] = { &D, &size, &id, &ni, &k, &lb, &nbr, &st, &Zd };
        rc = gf_gpu_launch_dependent(gpu, fn[F_PICK], 1, PICK_THREADS, pp);
        if (rc)
            goto out_release;
        void *pu[] = { &D, &size, &ni, &st, &lb, &nbr };
        rc = gf_gpu_launch_dependent(gpu, fn[F_UPDATE], (unsigned)((n + 255) / 256), 256, pu);
        if (rc)
            goto out_release;
    }
    rc = gf_gpu_download(gpu, &s, st, sizeof s);
    if (rc)
        goto out_release;
    rc = gf_gpu_download(gpu, Z, Zd, (n - 1) * 4 * sizeof(double));
    if (rc)
        goto out_release;
    if (s.err) {
        GF_ERROR("ahc: %zu embeddings: no pair left with a finite distance", n);
        rc = GF_EINVAL;
    }
out_release:
    gf_gpu_allocs_release(&mem);
    return rc;
}

int gf_ahc_link_gpu(void *ctx, gf_devstats *stats, const double *x, size_t n, size_t dim,
                    double *Z)
{
    gf_gpu *gpu = ctx;
    GF_TRY(gf_gpu_bind(gpu));   /* a job's thread, not the one that opened the card */
    if (stats)
        GF_TRY(gf_gpu_timing_begin(gpu, "clustering.ahc", "own"));
    int rc = gf_ahc_linkage_centroid_gpu(gpu, x, n, dim, Z);
    if (rc == GF_ETOOBIG) {
        if (stats) {
            gf_gpu_timing_drop(gpu);
            gf_devstats_unavailable(stats, "clustering.ahc", "cpu",
                                    "distance matrix too big for the card");
        }
        GF_WARN("ahc: %zu embeddings: linking on the CPU instead (same result)", n);
        return gf_ahc_linkage_centroid(x, n, dim, Z);
    }
    if (stats) {
        if (rc == 0)
            rc = gf_gpu_timing_end(gpu);
        gf_gpu_timing_collect(gpu, stats);   /* not ended: failed, never device time */
    }
    return rc;
}
