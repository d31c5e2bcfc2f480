/* fbank_dump — our filterbank of a slice of audio, for the parity test.
 *
 *   fbank_dump [--no-norm] IN OFFSET COUNT WAVE_OUT FEAT_OUT
 *
 * IN is an audio file (decoded by diar/io/audio) or raw little-endian
 * float32 samples at 16 kHz (a name ending in .f32). Samples [OFFSET,
 * OFFSET+COUNT) are written to WAVE_OUT as raw float32 (what the reference
 * reads) and their features, [frames x 80] float32 row-major, to FEAT_OUT.
 *
 *   fbank_dump --rfft FRAMES_IN SPECTRA_OUT
 *
 * The 512-point real FFT (gf_fbank_rfft) of each 512-float frame of
 * FRAMES_IN, half-complex, to SPECTRA_OUT. */
#include "common/util.h"
#include "diar/io/audio.h"
#include "kernels/fbank/fbank_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *read_f32(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    *n = (size_t)len / sizeof(float);
    float *x = gf_malloc(*n * sizeof(float) + 1);
    if (fread(x, sizeof(float), *n, f) != *n) {
        free(x);
        x = NULL;
    }
    fclose(f);
    return x;
}

static int write_f32(const char *path, const float *x, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(x, sizeof(float), n, f) != n) {
        fprintf(stderr, "fbank_dump: cannot write %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

static int rfft_frames(const char *in, const char *out)
{
    size_t n = 0;
    float *x = read_f32(in, &n);
    if (!x || n % GF_FBANK_FFT) {
        fprintf(stderr, "fbank_dump: %s: not whole frames of %d float32 values\n", in,
                GF_FBANK_FFT);
        free(x);
        return 65;
    }
    gf_fbank *fb = gf_fbank_new();
    float *y = gf_malloc((n ? n : 1) * sizeof(float));
    for (size_t f = 0; f < n; f += GF_FBANK_FFT)
        gf_fbank_rfft(fb, x + f, y + f);
    int rc = write_f32(out, y, n) == 0 ? 0 : 73;
    gf_fbank_destroy(&fb);
    free(x);
    free(y);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--rfft") == 0)
        return rfft_frames(argv[2], argv[3]);
    unsigned flags = GF_FBANK_MEAN_NORM;
    int a = 1;
    if (argc > 1 && strcmp(argv[1], "--no-norm") == 0) {
        flags = 0;
        a++;
    }
    if (argc - a != 5) {
        fprintf(stderr, "usage: fbank_dump [--no-norm] IN OFFSET COUNT WAVE_OUT FEAT_OUT\n");
        return 64;
    }
    const char *in = argv[a];
    size_t off = strtoul(argv[a + 1], NULL, 10), count = strtoul(argv[a + 2], NULL, 10);
    float *x = NULL;
    size_t n = 0;
    size_t len = strlen(in);
    if (len > 4 && strcmp(in + len - 4, ".f32") == 0) {
        x = read_f32(in, &n);
        if (!x) {
            fprintf(stderr, "fbank_dump: cannot read %s\n", in);
            return 66;
        }
    } else if (gf_audio_read_all(in, &x, &n) != 0) {
        return 66;
    }
    if (off + count > n) {
        fprintf(stderr, "fbank_dump: %s has %zu samples, asked for %zu..%zu\n", in, n, off,
                off + count);
        free(x);
        return 65;
    }
    size_t frames = gf_fbank_frames(count);
    float *feat = gf_malloc((frames ? frames : 1) * GF_FBANK_BINS * sizeof(float));
    gf_fbank *fb = gf_fbank_new();
    size_t got = 0;
    int rc = gf_fbank_run(fb, x + off, count, feat, &got, flags);
    if (rc == 0 && (write_f32(argv[a + 3], x + off, count) || write_f32(argv[a + 4], feat, got * GF_FBANK_BINS)))
        rc = 1;
    gf_fbank_destroy(&fb);
    free(feat);
    free(x);
    return rc ? 1 : 0;
}
