/* fbank_gpu.c — log-mel features on the card, two boundaries with a library
 * and an own route each (see fbank_gpu.h). */
#include "kernels/fbank/fbank_gpu.h"
#include "kernels/fbank/fbank_cpu.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLES GF_FBANK_GPU_SAMPLES
#define FRAMES GF_FBANK_GPU_FRAMES
#define NB 256                            /* power bins the mel banks weight */

/* Must match kernels/fbank/fbank.cu: 16 frames a block of 256 threads for the FFT
 * and its 544 twiddles; 16 frames a block of the mel kernel, 128 a block of
 * the mean's; at most 512 nonzero mel weights. */
#define OWN_DFT_FRAMES 16
#define OWN_THREADS 256
#define OWN_TW 544
#define OWN_MEL_FRAMES 16
#define OWN_NORM_FRAMES 128
#define OWN_MEL_MAXW 512
#define CHUNKS ((FRAMES + OWN_MEL_FRAMES - 1) / OWN_MEL_FRAMES)   /* 63 */

enum { DFT = 0, MEL = 1 };
static const char *const boundary_names[2] = { "fbank.dft", "fbank.mel" };

struct gf_fbank_gpu {
    gf_gpu *gpu;                          /* borrowed */
    gf_blas_gpu *blas;                    /* borrowed */
    int max_batch;
    gf_route_kind route[2];               /* fbank.dft, fbank.mel */
    gf_cu_function frames_fn, power_fn, log_fn;   /* library glue */
    gf_cu_function dft_fn, mel_fn, norm_fn;       /* own: loaded when chosen */
    gf_cu_ptr window, dft, mel;           /* [400], [512 x 400], [80 x 256] */
    gf_cu_ptr tw, mel_meta, mel_w;        /* own: twiddles [544] float2; mel bins'
                                             first power bin, count, offset [3][80];
                                             their nonzero weights */
    int n_mel_w;                          /* how many */
    gf_cu_ptr wave, frames, spec, power, out;
    gf_cu_ptr part;                       /* own: per-chunk sums [B][63][80] float64 */
    gf_gpu_allocs mem;                    /* every device allocation */
};

static int dalloc(gf_fbank_gpu *s, size_t bytes, gf_cu_ptr *p)
{
    return gf_gpu_allocs_take(&s->mem, bytes, p);
}

/* The own FFT's twiddles (kernels/fbank/fbank.cu), each W = (cos a, -sin a) rounded
 * once from float64: W256^(n1 k2) at k2 * 32 + n1, W512^k at 256 + k,
 * W32^(r u) at 512 + u * 4 + r. */
static void own_twiddles(float *tw)
{
    for (int i = 0; i < OWN_TW; i++) {
        double a;
        if (i < 256)
            a = 2.0 * M_PI * (double)((i / 32) * (i % 32)) / 256.0;
        else if (i < 512)
            a = 2.0 * M_PI * (double)(i - 256) / 512.0;
        else
            a = 2.0 * M_PI * (double)(((i - 512) / 4) * ((i - 512) % 4)) / 32.0;
        tw[2 * i] = (float)cos(a);
        tw[2 * i + 1] = (float)-sin(a);
    }
}

/* The dense mel matrix [80 x 256] as each bin's run of nonzero weights. */
static int sparse_mel(const float *mel, int meta[3 * GF_FBANK_BINS], float w[OWN_MEL_MAXW])
{
    int n = 0;
    for (int b = 0; b < GF_FBANK_BINS; b++) {
        const float *row = mel + (size_t)b * NB;
        int first = 0, last = NB - 1;
        while (first < NB && row[first] == 0.0f)
            first++;
        while (last > first && row[last] == 0.0f)
            last--;
        assert(first < NB);   /* every bin has weights (fbank.c builds them so) */
        meta[b] = first;
        meta[GF_FBANK_BINS + b] = last - first + 1;
        meta[2 * GF_FBANK_BINS + b] = n;
        for (int k = first; k <= last; k++) {
            assert(n < OWN_MEL_MAXW);
            w[n++] = row[k];
        }
    }
    return n;
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
    float tw[2 * OWN_TW], mel_w[OWN_MEL_MAXW];
    int meta[3 * GF_FBANK_BINS];
    /* Rows 0..255: cos, rows 256..511: -sin of 2 pi k n / 512 (bins 0..255). */
    for (int k = 0; k < NB; k++)
        for (int n = 0; n < GF_FBANK_FRAME; n++) {
            double a = 2.0 * M_PI * (double)((long)k * n % GF_FBANK_FFT) / GF_FBANK_FFT;
            dft[(size_t)k * GF_FBANK_FRAME + n] = (float)cos(a);
            dft[(size_t)(NB + k) * GF_FBANK_FRAME + n] = (float)-sin(a);
        }
    gf_fbank_mel_dense(ref, mel);
    own_twiddles(tw);
    s->n_mel_w = sparse_mel(mel, meta, mel_w);
    const size_t B = (size_t)max_batch, rows = B * FRAMES, f = sizeof(float);
    static const char *const names[] = { "gf_fbank_frames", "gf_fbank_power",
                                         "gf_fbank_log_norm" };
    gf_cu_function *const fns[] = { &s->frames_fn, &s->power_fn, &s->log_fn };
    int rc = gf_gpu_allocs_upload(&s->mem, gf_fbank_window(ref), GF_FBANK_FRAME * f, &s->window);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, dft, 2 * NB * GF_FBANK_FRAME * f, &s->dft);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, mel, GF_FBANK_BINS * NB * f, &s->mel);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, tw, sizeof tw, &s->tw);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, meta, sizeof meta, &s->mel_meta);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_allocs_upload(&s->mem, mel_w, (size_t)s->n_mel_w * f, &s->mel_w);
    if (rc)
        goto out_free_host;
    rc = dalloc(s, B * SAMPLES * f, &s->wave);
    if (rc)
        goto out_free_host;
    rc = dalloc(s, rows * GF_FBANK_FRAME * f, &s->frames);
    if (rc)
        goto out_free_host;
    rc = dalloc(s, rows * 2 * NB * f, &s->spec);
    if (rc)
        goto out_free_host;
    rc = dalloc(s, rows * NB * f, &s->power);
    if (rc)
        goto out_free_host;
    rc = dalloc(s, rows * GF_FBANK_BINS * f, &s->out);
    if (rc)
        goto out_free_host;
    rc = dalloc(s, B * CHUNKS * GF_FBANK_BINS * sizeof(double), &s->part);
    if (rc)
        goto out_free_host;
    rc = gf_gpu_functions(gpu, "glue", names, fns, GF_ARRAY_LEN(names));
    if (rc)
        goto out_free_host;
    rc = gf_gpu_sync(gpu);   /* the host tables are freed next */
out_free_host:
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

static int boundary_index(const char *boundary)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(boundary, boundary_names[i]) == 0)
            return i;
    return -1;
}

int gf_fbank_gpu_set_route(gf_fbank_gpu *s, const char *boundary, gf_route_kind kind,
                           const char **module_sha256)
{
    const int i = boundary_index(boundary);
    if (i < 0) {
        GF_ERROR("fbank (gpu): no boundary '%s' (fbank.dft, fbank.mel)", boundary);
        return GF_EINVAL;
    }
    if (kind == GF_ROUTE_LIBRARY) {
        s->route[i] = GF_ROUTE_LIBRARY;
        return 0;
    }
    const char *sha = NULL;
    if (i == DFT) {
        GF_TRY(gf_gpu_own_kernel(s->gpu, boundary, "fbank", "gf_fbank_dft_power", 0, &s->dft_fn,
                                 &sha));
    } else {
        GF_TRY(gf_gpu_own_kernel(s->gpu, boundary, "fbank", "gf_fbank_mel_log", 0, &s->mel_fn,
                                 &sha));
        GF_TRY(gf_gpu_own_kernel(s->gpu, boundary, "fbank", "gf_fbank_mean_sub", 0, &s->norm_fn,
                                 NULL));
    }
    s->route[i] = GF_ROUTE_OWN;
    if (module_sha256)
        *module_sha256 = sha;
    return 0;
}

int gf_fbank_gpu_plan(const gf_route_request *req, const gf_card_identity *card, char *why,
                      size_t len)
{
    (void)card;   /* its kernels take no dynamic shared memory */
    if (boundary_index(req->boundary) < 0)
        return GF_ENOENT;
    return gf_plan_refuse_area(req->area, "fbank", req->boundary, why, len);
}

gf_route_kind gf_fbank_gpu_route(const gf_fbank_gpu *s, const char *boundary)
{
    const int i = boundary_index(boundary);
    return i < 0 ? GF_ROUTE_LIBRARY : s->route[i];
}

int gf_fbank_gpu_switch(void *self, const char *boundary, gf_route_kind kind,
                        const char **module_sha256)
{
    if (boundary_index(boundary) < 0)
        return GF_ENOENT;
    return gf_fbank_gpu_set_route(self, boundary, kind, module_sha256);
}

int gf_fbank_gpu_apply_plan(gf_fbank_gpu *s, gf_route_plan *plan, int batch, gf_math math)
{
    return gf_route_plan_apply(plan, batch, math, boundary_names, 2, gf_fbank_gpu_switch, s, NULL);
}

gf_cu_ptr gf_fbank_gpu_features(const gf_fbank_gpu *s)
{
    return s->out;
}

/* fbank.dft: wave → power [B * 998][256]. */
static int run_dft(gf_fbank_gpu *s, gf_cu_ptr wave, int B)
{
    long rows = (long)B * FRAMES;
    int n = SAMPLES, frames = FRAMES;
    if (s->route[DFT] == GF_ROUTE_OWN) {
        void *p[] = { &wave, &n, &frames, &rows, &s->window, &s->tw, &s->power };
        return gf_gpu_launch(s->gpu, s->dft_fn,
                             (unsigned)((rows + OWN_DFT_FRAMES - 1) / OWN_DFT_FRAMES), 1, 1,
                             OWN_THREADS, 1, 1, 0, p);
    }
    void *p_fr[] = { &wave, &n, &frames, &s->window, &s->frames };
    GF_TRY(gf_gpu_launch(s->gpu, s->frames_fn, (unsigned)rows, 1, 1, 128, 1, 1, 0, p_fr));
    /* spec [rows, 512] = frames [rows, 400] · dftᵀ (dft [512, 400]) */
    GF_TRY(gf_blas_gpu_gemm(s->blas, GF_MATH_FP32, true, (int)rows, 2 * NB, GF_FBANK_FRAME, 1.0f,
                            s->frames, GF_FBANK_FRAME, s->dft, GF_FBANK_FRAME, 0.0f, s->spec,
                            2 * NB));
    void *p_pw[] = { &s->spec, &rows, &s->power };
    return gf_gpu_launch1d(s->gpu, s->power_fn, rows * NB, p_pw);
}

/* fbank.mel: power → features [B][998][80], mean-normalised. */
static int run_mel(gf_fbank_gpu *s, int B)
{
    int frames = FRAMES;
    if (s->route[MEL] == GF_ROUTE_OWN) {
        int chunks = CHUNKS;
        void *p_mel[] = { &s->power, &frames, &s->mel_meta, &s->mel_w, &s->n_mel_w, &s->out,
                          &s->part };
        GF_TRY(gf_gpu_launch(s->gpu, s->mel_fn, CHUNKS, (unsigned)B, 1, OWN_THREADS, 1, 1, 0,
                             p_mel));
        void *p_norm[] = { &s->out, &frames, &s->part, &chunks };
        return gf_gpu_launch(s->gpu, s->norm_fn,
                             (FRAMES + OWN_NORM_FRAMES - 1) / OWN_NORM_FRAMES, (unsigned)B, 1,
                             OWN_THREADS, 1, 1, 0, p_norm);
    }
    const int rows = B * FRAMES;
    /* out [rows, 80] = power [rows, 256] · melᵀ (mel [80, 256]) */
    GF_TRY(gf_blas_gpu_gemm(s->blas, GF_MATH_FP32, true, rows, GF_FBANK_BINS, NB, 1.0f,
                            s->power, NB, s->mel, NB, 0.0f, s->out, GF_FBANK_BINS));
    void *p_lg[] = { &s->out, &frames };
    return gf_gpu_launch(s->gpu, s->log_fn, (unsigned)(B * GF_FBANK_BINS), 1, 1, 256, 1, 1, 0,
                         p_lg);
}

static int check_batch(const gf_fbank_gpu *s, int B)
{
    if (B >= 1 && B <= s->max_batch)
        return 0;
    GF_ERROR("fbank (gpu): batch of %d windows, capacity %d", B, s->max_batch);
    return GF_EINVAL;
}

int gf_fbank_gpu_stage(gf_fbank_gpu *s, const char *boundary, gf_cu_ptr wave, int B)
{
    GF_TRY(check_batch(s, B));
    const int i = boundary_index(boundary);
    if (i < 0) {
        GF_ERROR("fbank (gpu): no boundary '%s' (fbank.dft, fbank.mel)", boundary);
        return GF_EINVAL;
    }
    return i == DFT ? run_dft(s, wave, B) : run_mel(s, B);
}

int gf_fbank_gpu_run(gf_fbank_gpu *s, const float *wave, int B, float *feats, gf_devstats *stats)
{
    GF_TRY(check_batch(s, B));
    GF_TRY(gf_gpu_upload(s->gpu, s->wave, wave, sizeof(float) * (size_t)B * SAMPLES));
    return gf_fbank_gpu_run_dev(s, s->wave, B, feats, stats);
}

int gf_fbank_gpu_run_dev(gf_fbank_gpu *s, gf_cu_ptr wave, int B, float *feats,
                         gf_devstats *stats)
{
    GF_TRY(check_batch(s, B));
    if (stats)
        GF_TRY(gf_gpu_timing_begin(s->gpu, "fbank.dft", gf_route_kind_name(s->route[DFT])));
    GF_TRY(run_dft(s, wave, B));
    if (stats) {
        GF_TRY(gf_gpu_timing_end(s->gpu));
        GF_TRY(gf_gpu_timing_begin(s->gpu, "fbank.mel", gf_route_kind_name(s->route[MEL])));
    }
    GF_TRY(run_mel(s, B));
    if (stats)
        GF_TRY(gf_gpu_timing_end(s->gpu));
    if (!feats)
        return 0;   /* the features stay; so do the timed regions (fbank_gpu.h) */
    GF_TRY(gf_gpu_download(s->gpu, feats, s->out,
                           sizeof(float) * (size_t)B * FRAMES * GF_FBANK_BINS));
    if (stats)
        gf_gpu_timing_collect(s->gpu, stats);
    return 0;
}
