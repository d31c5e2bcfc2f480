/* backend_cpu.c — the pipeline's CPU backend (backend_cpu.h): the two
 * networks of diar/segmentation and diar/embedding, loaded once with the
 * manifest's digests when there is one, run on the host's threads. The
 * fbank hook is left NULL, so the pipeline computes the features on the CPU
 * (kernels/fbank/fbank_cpu); each call is recorded in the devstats as
 * "unavailable: cpu card", there being no device time to measure. */
#include "diar/backend_cpu.h"

#include "common/error.h"
#include "common/par.h"
#include "common/util.h"
#include "diar/embedding.h"
#include "diar/models.h"
#include "diar/pipeline.h"
#include "diar/segmentation.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

typedef struct {
    gf_segmentation *seg;  /* segmentation network */
    gf_embedding *emb;     /* embedding network */
} cpu_ctx;

static int cpu_segment(void *ctx, const float *wave, int B, float *logp, gf_devstats *stats)
{
    cpu_ctx *c = ctx;
    int rc = gf_segmentation_run(c->seg, wave, B, logp);
    if (stats)
        gf_devstats_unavailable(stats, "segmentation", "cpu", "cpu card");
    return rc;
}

static int cpu_embed(void *ctx, const float *fbank, int B, const int *job_window,
                     const float *masks, int n_jobs, float *emb, gf_devstats *stats)
{
    cpu_ctx *c = ctx;
    int rc = gf_embedding_trunk(c->emb, fbank, B);
    if (stats)
        gf_devstats_unavailable(stats, "embedding.trunk", "cpu", "cpu card");
    for (int j = 0; rc == 0 && j < n_jobs; j++) {
        rc = gf_embedding_pool(c->emb, job_window[j], masks + (size_t)j * GF_DIAR_FRAMES,
                               GF_DIAR_FRAMES, emb + (size_t)j * GF_DIAR_EMB_DIM);
        if (stats)
            gf_devstats_unavailable(stats, "embedding.pool", "cpu", "cpu card");
    }
    return rc;
}

static void cpu_destroy(void *ctx)
{
    cpu_ctx *c = ctx;
    if (!c)
        return;
    gf_segmentation_destroy(&c->seg);
    gf_embedding_destroy(&c->emb);
    free(c);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int gf_diar_backend_cpu(const char *models_dir, int max_batch, int threads, gf_diar_backend *out)
{
    if (threads <= 0)
        threads = gf_par_cores(INT_MAX);
    char *seg_path = gf_strfmt("%s/%s", models_dir, GF_MODELS_SEGMENTATION);
    char *emb_path = gf_strfmt("%s/%s", models_dir, GF_MODELS_EMBEDDING);
    int rc = 0;
    gf_manifest *man = NULL;
    cpu_ctx *c = NULL;
    if (!file_exists(seg_path) || !file_exists(emb_path)) {
        rc = GF_ENOENT;
        goto out_free;
    }
    int mrc = gf_manifest_load(models_dir, &man);
    if (mrc != 0 && mrc != GF_ENOENT) {
        rc = mrc;
        goto out_free;
    }
    c = gf_calloc(1, sizeof *c);
    c->seg = gf_segmentation_new(seg_path,
                                 man ? gf_manifest_sha256(man, GF_MODELS_SEGMENTATION) : NULL,
                                 max_batch, threads);
    if (c->seg)
        c->emb = gf_embedding_new(emb_path,
                                  man ? gf_manifest_sha256(man, GF_MODELS_EMBEDDING) : NULL,
                                  GF_DIAR_FBANK_FRAMES, max_batch, threads);
    if (!c->seg || !c->emb) {
        cpu_destroy(c);
        rc = GF_EINVAL;
        goto out_free;
    }
    *out = (gf_diar_backend){ .name = "cpu", .route = "cpu", .segment = cpu_segment,
                              .embed = cpu_embed, .destroy = cpu_destroy, .ctx = c,
                              .identity = "cpu" };
out_free:
    gf_manifest_destroy(&man);
    free(seg_path);
    free(emb_path);
    return rc;
}
