/* nets_run — run gpuflock's CPU networks on raw float32 files, for the parity
 * test (tests/integration/nets_parity.sh) and the benchmark (bench/nets/).
 *
 *   nets_run seg MODEL WAVE.f32 B OUT.f32 [THREADS [REPEAT]]
 *       WAVE [B, 160000] → OUT [B, 589, 7] log-probabilities
 *   nets_run emb MODEL FBANK.f32 B MASKS.f32 S OUT.f32 [THREADS [REPEAT]]
 *       FBANK [B, 998, 80], MASKS [B, S, 589] → OUT [B, S, 256]
 *   nets_run fbank - WAVE.f32 B OUT.f32 [THREADS [REPEAT]]
 *       WAVE [B, 160000] → OUT [B, 998, 80] (kernels/fbank/fbank_cpu, mean-normalised;
 *       one thread whatever THREADS says)
 *
 * With REPEAT > 1 the network runs that many times and the mean wall time per
 * run goes to stderr as "time_s=…" (the benchmark reads it), with the peak
 * resident memory (VmHWM) as "maxrss_kb=…". */
#include "common/util.h"
#include "kernels/blas.h"
#include "diar/embedding.h"
#include "kernels/fbank/fbank_cpu.h"
#include "diar/segmentation.h"

#include <stdio.h>
#include <stdlib.h>

static float *read_f32(const char *path, long n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "nets_run: cannot open %s\n", path);
        return NULL;
    }
    float *buf = gf_malloc(sizeof(float) * (size_t)n);
    size_t got = fread(buf, sizeof(float), (size_t)n, f);
    fclose(f);
    if ((long)got != n) {
        fprintf(stderr, "nets_run: %s: %zu floats, %ld expected\n", path, got, n);
        free(buf);
        return NULL;
    }
    return buf;
}

static int write_f32(const char *path, const float *buf, long n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, sizeof(float), (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "nets_run: cannot write %s\n", path);
        if (f)
            fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

/* Peak resident set of this process image: VmHWM (ru_maxrss would carry the
 * high-water mark of the process that exec'd us). */
static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static void report(uint64_t t0, int repeat)
{
    fprintf(stderr, "time_s=%.6f maxrss_kb=%ld\n", (double)(gf_now_ns() - t0) / 1e9 / repeat,
            peak_rss_kb());
}

int main(int argc, char **argv)
{
    if (argc >= 6 && argv[1][0] == 'f') {
        int B = atoi(argv[4]), repeat = argc > 7 ? atoi(argv[7]) : 1;
        float *wave = read_f32(argv[3], (long)B * GF_SEG_SAMPLES);
        if (!wave)
            return 1;
        float *out = gf_malloc(sizeof(float) * (size_t)B * GF_EMB_FRAMES * GF_EMB_MELS);
        uint64_t t0 = 0;
        for (int r = 0; r < repeat + (repeat > 1); r++) {
            if (r == (repeat > 1))
                t0 = gf_now_ns();
            for (int b = 0; b < B; b++) {
                size_t nf = 0;
                if (gf_fbank_compute(wave + (long)b * GF_SEG_SAMPLES, GF_SEG_SAMPLES,
                                     out + (long)b * GF_EMB_FRAMES * GF_EMB_MELS, &nf) != 0 ||
                    nf != GF_EMB_FRAMES)
                    return 1;
            }
        }
        report(t0, repeat);
        int rc = write_f32(argv[5], out, (long)B * GF_EMB_FRAMES * GF_EMB_MELS);
        free(wave);
        free(out);
        return rc;
    }
    if (argc >= 6 && argv[1][0] == 's') {
        int B = atoi(argv[4]);
        int threads = argc > 6 ? atoi(argv[6]) : 1, repeat = argc > 7 ? atoi(argv[7]) : 1;
        gf_blas_set_threads(threads);
        float *wave = read_f32(argv[3], (long)B * GF_SEG_SAMPLES);
        gf_segmentation *seg = gf_segmentation_new(argv[2], NULL, B, threads);
        if (!wave || !seg)
            return 1;
        float *out = gf_malloc(sizeof(float) * (size_t)B * GF_SEG_FRAMES * GF_SEG_CLASSES);
        if (repeat > 1 && gf_segmentation_run(seg, wave, B, out) != 0)   /* warm-up */
            return 1;
        uint64_t t0 = gf_now_ns();
        for (int r = 0; r < repeat; r++)
            if (gf_segmentation_run(seg, wave, B, out) != 0)
                return 1;
        report(t0, repeat);
        int rc = write_f32(argv[5], out, (long)B * GF_SEG_FRAMES * GF_SEG_CLASSES);
        gf_segmentation_destroy(&seg);
        free(wave);
        free(out);
        return rc;
    }
    if (argc >= 8 && argv[1][0] == 'e') {
        int B = atoi(argv[4]), S = atoi(argv[6]);
        int threads = argc > 8 ? atoi(argv[8]) : 1, repeat = argc > 9 ? atoi(argv[9]) : 1;
        gf_blas_set_threads(threads);
        float *fb = read_f32(argv[3], (long)B * GF_EMB_FRAMES * GF_EMB_MELS);
        float *masks = read_f32(argv[5], (long)B * S * 589);
        gf_embedding *emb = gf_embedding_new(argv[2], NULL, GF_EMB_FRAMES, B, threads);
        if (!fb || !masks || !emb)
            return 1;
        float *out = gf_malloc(sizeof(float) * (size_t)B * S * GF_EMB_DIM);
        uint64_t t0 = 0;
        for (int r = 0; r < repeat + (repeat > 1); r++) {
            if (r == (repeat > 1))
                t0 = gf_now_ns();   /* after the warm-up run */
            if (gf_embedding_trunk(emb, fb, B) != 0)
                return 1;
            for (int b = 0; b < B; b++)
                for (int s = 0; s < S; s++)
                    if (gf_embedding_pool(emb, b, masks + ((long)b * S + s) * 589, 589,
                                          out + ((long)b * S + s) * GF_EMB_DIM) != 0)
                        return 1;
        }
        report(t0, repeat);
        int rc = write_f32(argv[7], out, (long)B * S * GF_EMB_DIM);
        gf_embedding_destroy(&emb);
        free(fb);
        free(masks);
        free(out);
        return rc;
    }
    fprintf(stderr, "usage: nets_run seg MODEL WAVE.f32 B OUT.f32 [THREADS [REPEAT]]\n"
                    "       nets_run fbank - WAVE.f32 B OUT.f32 [THREADS [REPEAT]]\n"
                    "       nets_run emb MODEL FBANK.f32 B MASKS.f32 S OUT.f32 [THREADS [REPEAT]]\n");
    return 64;
}
