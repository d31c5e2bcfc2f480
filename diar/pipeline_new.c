/* pipeline_new.c — building the diarization pipeline (pipeline.h): the
 * CPU networks from a models folder, or the weight-free mode (with its
 * voice activity detector) where the network files are missing; another
 * backend taken over; the batch buffers each backend wants; the accessors.
 * diar/pipeline.c runs it. */
#include "diar/pipeline_impl.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/backend_cpu.h"
#include "diar/models.h"
#include "diar/wf_vad.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>


static gf_diar *diar_alloc(int batch, bool weight_free)
{
    gf_diar *d = gf_calloc(1, sizeof *d);
    d->batch = batch > 0 ? batch : 32;
    d->weight_free = weight_free;
    size_t B = (size_t)d->batch;
    if (weight_free)   /* with networks, the backend decides (batch_buffer) */
        d->wave = gf_malloc(B * GF_DIAR_WINDOW * sizeof *d->wave);
    d->valid = gf_malloc(B * sizeof *d->valid);
    d->valid_ahead = gf_malloc(B * sizeof *d->valid_ahead);
    if (weight_free)
        d->ahead = gf_malloc(B * GF_DIAR_WINDOW * sizeof *d->ahead);
    if (weight_free) {   /* the fbank one window at a time */
        d->feats = gf_malloc(GF_DIAR_FBANK_FRAMES * GF_FBANK_BINS * sizeof *d->feats);
        d->fbank = gf_fbank_new();
    } else {
        d->net = gf_diar_netbatch_new(d->batch);
    }
    return d;
}

/* The backend lets go of the batch buffer, then is destroyed. */
static void drop_backend(gf_diar *d)
{
    if (!d->has_backend)
        return;
    if (d->pinned && d->backend.unpin)
        d->backend.unpin(d->backend.ctx, d->pinned);
    if (d->pinned_ahead && d->backend.unpin)
        d->backend.unpin(d->backend.ctx, d->pinned_ahead);
    d->pinned = d->pinned_ahead = NULL;
    if (d->backend.destroy)
        d->backend.destroy(d->backend.ctx);
    d->has_backend = false;
}

/* The batch buffers the backend takes, the one in use and the one ahead:
 * spans in span mode, else B whole windows (the other kind is not kept);
 * page-locked where the backend can. */
static void batch_buffer(gf_diar *d)
{
    assert(!d->pinned && !d->pinned_ahead);   /* the last backend let go (drop_backend) */
    bool span = gf_diar_span_mode(d);
    float **keep = span ? &d->span : &d->wave, **drop = span ? &d->wave : &d->span;
    size_t bytes = span ? gf_diar_span_samples(d->batch) * sizeof(float)
                        : (size_t)d->batch * GF_DIAR_WINDOW * sizeof(float);
    free(*drop);
    *drop = NULL;
    free(d->ahead);
    if (!*keep)
        *keep = gf_malloc(bytes);
    d->ahead = gf_malloc(bytes);
    /* Not pinned is only slower: the copies stage through pageable memory. */
    if (d->backend.pin && d->backend.pin(d->backend.ctx, *keep, bytes) == 0)
        d->pinned = *keep;
    if (d->backend.pin && d->backend.pin(d->backend.ctx, d->ahead, bytes) == 0)
        d->pinned_ahead = d->ahead;
}

/* The weight-free mode's VAD (pipeline.h, gf_diar_new_weight_free): 0 and
 * *out (NULL: the energy detector, said in the log), or GF_EINVAL. */
static int load_vad(const char *models_dir, gf_vad **out)
{
    *out = NULL;
    bool named;
    char *path = gf_diar_vad_file(models_dir, &named);
    if (!path) {
        GF_INFO("weight-free mode: the energy voice activity detector, as "
                "GPUFLOCK_VAD=energy asks");
        return 0;
    }
    int rc = gf_vad_load(path, out);
    if (rc == GF_ENOENT && !named)
        GF_WARN("weight-free mode: no trained voice activity detector at %s "
                "(tools/setup-deps fetches it): the energy detector instead", path);
    else if (rc == GF_ENOENT)
        GF_ERROR("GPUFLOCK_VAD=%s: no such file", path);
    free(path);
    return rc == GF_ENOENT && !named ? 0 : rc ? GF_EINVAL : 0;
}

static gf_diar *weight_free_in(const char *models_dir, int batch_size)
{
    gf_vad *vad = NULL;
    if (load_vad(models_dir, &vad))
        return NULL;
    GF_INFO("diarize: weight-free mode (%s voice activity, fbank-statistics embeddings, "
            "spectral clustering of their segments; no PLDA/VBx)",
            vad ? "Silero VAD v4" : "energy");
    gf_diar *d = diar_alloc(batch_size, true);
    d->vad = vad;
    return d;
}

gf_diar *gf_diar_new_weight_free(int batch_size)
{
    return weight_free_in(NULL, batch_size);
}

gf_diar *gf_diar_new(const char *models_dir, int batch_size, int threads, bool *weight_free)
{
    gf_diar_backend be;
    int bs = batch_size > 0 ? batch_size : 32;
    int rc = gf_diar_backend_cpu(models_dir, bs, threads, &be);
    if (rc == GF_ENOENT) {
        /* a caller that asks is told and says it in its own voice (once);
         * one that does not gets the warning here */
        if (weight_free)
            *weight_free = true;
        else
            GF_WARN("weight-free mode: no model files in %s (%s, %s)", models_dir,
                    GF_MODELS_SEGMENTATION, GF_MODELS_EMBEDDING);
        gf_diar *wf = weight_free_in(models_dir, bs);
        if (wf)
            wf->threads = threads;
        return wf;
    }
    if (rc != 0)
        return NULL;
    gf_diar *d = gf_diar_new_with(models_dir, bs, threads, &be);
    if (!d) {
        be.destroy(be.ctx);
        return NULL;
    }
    if (weight_free)
        *weight_free = false;
    return d;
}

gf_diar *gf_diar_new_with(const char *models_dir, int batch_size, int threads,
                          gf_diar_backend *backend)
{
    char *plda_dir = gf_strfmt("%s/plda", models_dir);
    gf_plda *plda = NULL;
    int rc = gf_plda_load(plda_dir, &plda);
    free(plda_dir);
    if (rc != 0) {
        GF_ERROR("%s: the network files are there but the PLDA (plda/) is unusable",
                 models_dir);
        return NULL;
    }
    gf_diar *d = diar_alloc(batch_size, false);
    d->threads = threads;
    d->backend = *backend;
    d->has_backend = true;
    memset(backend, 0, sizeof *backend);
    batch_buffer(d);
    d->plda = plda;
    return d;
}

void gf_diar_set_backend(gf_diar *self, gf_diar_backend *backend)
{
    assert(!self->weight_free);
    drop_backend(self);
    self->backend = *backend;
    self->has_backend = true;
    memset(backend, 0, sizeof *backend);
    batch_buffer(self);
}

void gf_diar_destroy(gf_diar **self_p)
{
    gf_diar *d = self_p ? *self_p : NULL;
    if (!d)
        return;
    drop_backend(d);
    gf_par_destroy(&d->cluster_par);
    gf_plda_destroy(&d->plda);
    gf_fbank_destroy(&d->fbank);
    gf_vad_destroy(&d->vad);
    free(d->wave);
    free(d->span);
    free(d->ahead);
    free(d->valid);
    free(d->valid_ahead);
    free(d->feats);
    gf_diar_netbatch_destroy(&d->net);
    free(d);
    *self_p = NULL;
}

bool gf_diar_weight_free(const gf_diar *self)
{
    return self->weight_free;
}

int gf_diar_batch(const gf_diar *self)
{
    return self->batch;
}

const char *gf_diar_vad(const gf_diar *self)
{
    return !self->weight_free ? "-" : self->vad ? GF_DIAR_VAD_SILERO : GF_DIAR_VAD_ENERGY;
}

const char *gf_diar_vad_sha256(const gf_diar *self)
{
    return self->vad ? gf_vad_sha256(self->vad) : gf_diar_vad(self);
}

const char *gf_diar_identity(const gf_diar *self)
{
    if (self->weight_free || !self->has_backend || !self->backend.identity)
        return "cpu";
    return self->backend.identity;
}

gf_diar_run_opts gf_diar_run_defaults(void)
{
    gf_diar_run_opts o = { .cluster = gf_cluster_defaults(), .exclude_overlap = true };
    return o;
}
