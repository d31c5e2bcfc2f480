/* fbank_gpu.c — log-mel features on the card (see fbank_gpu.h). */
#include "worker/diar/fbank_gpu.h"
#include "worker/diar/fbank.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#define SAMPLES 160000                    /* a 10 s window */
#define FRAMES 998                        /* its fbank frames */
#define NB 256                            /* power bins the mel banks weight */

struct gf_fbank_gpu {
    gf_gpu *gpu;                          /* borrowed */
    gf_blas_gpu *blas;                    /* borrowed */
    int max_batch;
    gf_cu_function frames_fn, power_fn, log_fn;
    gf_cu_ptr window, dft, mel;           /* [400], [512 x 400], [80 x 256] */
    gf_cu_ptr wave, frames, spec, power, out;
    gf_gpu_allocs mem;                    /* every device allocation */
};

static int dalloc(gf_fbank_gpu *s, size_t bytes, gf_cu_ptr *p)
{
    return gf_gpu_allocs_take(&s->mem, bytes, p);
}

gf_fbank_gpu *gf_fbank_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, int max_batch)
{
    gf_fbank_gpu *s = gf_calloc(1, sizeof *s);
    s->gpu = gpu;
    s->blas = blas;
    s->max_batch = max_batch;
    s->mem.gpu = gpu;
    gf_fbank *ref = gf_fbank_new();
    float *dft = gf_malloc(sizeof(float) * 2 * NB * GF_FBANK_FRAME);
    float *mel = gf_malloc(sizeof(float) * GF_FBANK_BINS * NB);
    /* Rows 0..255: cos, rows 256..511: -sin of 2 pi k n / 512 (bins 0..255). */
    for (int k = 0; k < NB; k++)
        for (int n = 0; n < GF_FBANK_FRAME; n++) {
            double a = 2.0 * M_PI * (double)((long)k * n % GF_FBANK_FFT) / GF_FBANK_FFT;
            dft[(size_t)k * GF_FBANK_FRAME + n] = (float)cos(a);
            dft[(size_t)(NB + k) * GF_FBANK_FRAME + n] = (float)-sin(a);
        }
    gf_fbank_mel_dense(ref, mel);
    const size_t B = (size_t)max_batch, rows = B * FRAMES, f = sizeof(float);
    int rc = gf_gpu_allocs_upload(&s->mem, gf_fbank_window(ref), GF_FBANK_FRAME * f, &s->window);
    rc = rc ? rc : gf_gpu_allocs_upload(&s->mem, dft, 2 * NB * GF_FBANK_FRAME * f, &s->dft);
    rc = rc ? rc : gf_gpu_allocs_upload(&s->mem, mel, GF_FBANK_BINS * NB * f, &s->mel);
    rc = rc ? rc : dalloc(s, B * SAMPLES * f, &s->wave);
    rc = rc ? rc : dalloc(s, rows * GF_FBANK_FRAME * f, &s->frames);
    rc = rc ? rc : dalloc(s, rows * 2 * NB * f, &s->spec);
    rc = rc ? rc : dalloc(s, rows * NB * f, &s->power);
    rc = rc ? rc : dalloc(s, rows * GF_FBANK_BINS * f, &s->out);
    static const char *const names[] = { "gf_fbank_frames", "gf_fbank_power",
                                         "gf_fbank_log_norm" };
    gf_cu_function *const fns[] = { &s->frames_fn, &s->power_fn, &s->log_fn };
    rc = rc ? rc : gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    rc = rc ? rc : gf_gpu_sync(gpu);   /* the host tables are freed next */
    free(dft);
    free(mel);
    gf_fbank_destroy(&ref);
    if (rc)
        gf_fbank_gpu_destroy(&s);
    return s;
}

void gf_fbank_gpu_destroy(gf_fbank_gpu **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_fbank_gpu *s = *self_p;
    gf_gpu_allocs_release(&s->mem);
    free(s);
    *self_p = NULL;
}


int gf_fbank_gpu_run(gf_fbank_gpu *s, const float *wave, int B, float *feats, gf_devstats *stats)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("fbank (gpu): batch of %d windows, capacity %d", B, s->max_batch);
        return GF_EINVAL;
    }
    GF_TRY(gf_gpu_upload(s->gpu, s->wave, wave, sizeof(float) * (size_t)B * SAMPLES));
    return gf_fbank_gpu_run_dev(s, s->wave, B, feats, stats);
}

gf_cu_ptr gf_fbank_gpu_features(const gf_fbank_gpu *s)
{
    return s->out;
}

int gf_fbank_gpu_run_dev(gf_fbank_gpu *s, gf_cu_ptr wave, int B, float *feats,
                         gf_devstats *stats)
{
    if (B < 1 || B > s->max_batch) {
        GF_ERROR("fbank (gpu): batch of %d windows, capacity %d", B, s->max_batch);
        return GF_EINVAL;
    }
    const long rows = (long)B * FRAMES;
    if (stats)
        GF_TRY(gf_gpu_timing_begin(s->gpu, "fbank.dft", "library"));
    int n = SAMPLES, frames = FRAMES;
    void *p_fr[] = { &wave, &n, &frames, &s->window, &s->frames };
    GF_TRY(gf_gpu_launch(s->gpu, s->frames_fn, (unsigned)rows, 1, 1, 128, 1, 1, 0, p_fr));
    /* spec [rows, 512] = frames [rows, 400] · dftᵀ (dft [512, 400]) */
    GF_TRY(gf_blas_gpu_gemm(s->blas, GF_MATH_FP32, true, (int)rows, 2 * NB, GF_FBANK_FRAME, 1.0f,
                         s->frames, GF_FBANK_FRAME, s->dft, GF_FBANK_FRAME, 0.0f, s->spec,
                         2 * NB));
    void *p_pw[] = { &s->spec, (void *)&rows, &s->power };
    GF_TRY(gf_gpu_launch1d(s->gpu, s->power_fn, rows * NB, p_pw));
    if (stats) {
        GF_TRY(gf_gpu_timing_end(s->gpu));
        GF_TRY(gf_gpu_timing_begin(s->gpu, "fbank.mel", "library"));
    }
    /* out [rows, 80] = power [rows, 256] · melᵀ (mel [80, 256]) */
    GF_TRY(gf_blas_gpu_gemm(s->blas, GF_MATH_FP32, true, (int)rows, GF_FBANK_BINS, NB, 1.0f,
                         s->power, NB, s->mel, NB, 0.0f, s->out, GF_FBANK_BINS));
    void *p_lg[] = { &s->out, &frames };
    GF_TRY(gf_gpu_launch(s->gpu, s->log_fn, (unsigned)(B * GF_FBANK_BINS), 1, 1, 256, 1, 1, 0, p_lg));
    if (stats)
        GF_TRY(gf_gpu_timing_end(s->gpu));
    if (!feats)
        return 0;   /* the features stay; so do the timed regions (fbank_gpu.h) */
    GF_TRY(gf_gpu_download(s->gpu, feats, s->out, sizeof(float) * (size_t)rows * GF_FBANK_BINS));
    if (stats)
        gf_gpu_timing_collect(s->gpu, stats);
    return 0;
}
