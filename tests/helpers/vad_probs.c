/* vad_probs — the voice activity detector's probabilities of a recording,
 * for the parity test (tests/integration/vad_parity.sh) and by hand.
 *
 *   vad_probs [--pcm-out FILE] MODEL IN
 *
 * MODEL is the converted network (tools/convert-vad); IN an audio file
 * (decoded by diar/io/audio at 16 kHz) or raw little-endian float32 samples
 * at 16 kHz (a name ending in .f32). Prints one probability per whole chunk
 * of GF_VAD_CHUNK samples ("%.9g", one a line), the state carried from the
 * first chunk to the last. --pcm-out writes the samples the chunks covered
 * as raw float32 (what the reference reads). Its speed: bench/vad. */
#include "common/util.h"
#include "diar/io/audio.h"
#include "diar/vad.h"

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

int main(int argc, char **argv)
{
    const char *pcm_out = NULL;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--pcm-out") == 0 && i + 1 < argc)
            pcm_out = argv[++i];
        else
            break;
    }
    if (argc - i != 2) {
        fprintf(stderr, "usage: vad_probs [--pcm-out FILE] MODEL IN\n");
        return 64;
    }
    const char *model = argv[i], *in = argv[i + 1];
    gf_vad *vad = NULL;
    int rc = gf_vad_load(model, &vad);
    if (rc != 0) {
        fprintf(stderr, "vad_probs: %s: cannot load (%d)\n", model, rc);
        return 66;
    }
    float *x = NULL;
    size_t n = 0;
    size_t len = strlen(in);
    if (len > 4 && strcmp(in + len - 4, ".f32") == 0) {
        x = read_f32(in, &n);
    } else if (gf_audio_read_all(in, &x, &n) != 0) {
        x = NULL;
    }
    if (!x) {
        fprintf(stderr, "vad_probs: %s: cannot read\n", in);
        gf_vad_destroy(&vad);
        return 66;
    }
    size_t chunks = n / GF_VAD_CHUNK;
    float *p = gf_malloc((chunks + 1) * sizeof(float));
    gf_vad_state st;
    gf_vad_reset(&st);
    gf_vad_run(vad, &st, x, chunks, p);
    for (size_t c = 0; c < chunks; c++)
        printf("%.9g\n", p[c]);
    rc = 0;
    if (pcm_out) {
        FILE *f = fopen(pcm_out, "wb");
        if (!f || fwrite(x, sizeof(float), chunks * GF_VAD_CHUNK, f) != chunks * GF_VAD_CHUNK) {
            fprintf(stderr, "vad_probs: cannot write %s\n", pcm_out);
            rc = 73;
        }
        if (f && fclose(f) != 0)
            rc = 73;
    }
    free(p);
    free(x);
    gf_vad_destroy(&vad);
    return rc;
}
