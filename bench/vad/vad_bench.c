/* vad_bench — how fast the voice activity detector (diar/vad.h) runs on one
 * thread.
 *
 *   vad_bench [--rounds N] MODEL AUDIO...
 *
 * Decodes each AUDIO file (diar/io/audio, 16 kHz), then runs the network over
 * all of them N times (default 5), the state reset at each file's start as
 * the pipeline would, and prints the best round's time against the audio's
 * duration (x real time) and per chunk. Decoding is not timed. The
 * probabilities of every round are compared with the first's: a round that
 * differs is reported and the exit status is 1 (the network is
 * deterministic). bench/RESULTS.md, "Voice activity detector". */
#include "common/util.h"
#include "diar/io/audio.h"
#include "diar/vad.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int rounds = 5, i = 1;
    if (i + 1 < argc && strcmp(argv[i], "--rounds") == 0) {
        rounds = atoi(argv[i + 1]);
        i += 2;
    }
    if (argc - i < 2 || rounds < 1) {
        fprintf(stderr, "usage: vad_bench [--rounds N] MODEL AUDIO...\n");
        return 64;
    }
    gf_vad *vad = NULL;
    if (gf_vad_load(argv[i], &vad) != 0) {
        fprintf(stderr, "vad_bench: %s: cannot load\n", argv[i]);
        return 66;
    }
    int nfiles = argc - i - 1;
    float **pcm = gf_calloc((size_t)nfiles, sizeof *pcm);
    size_t *chunks = gf_calloc((size_t)nfiles, sizeof *chunks), total = 0;
    for (int f = 0; f < nfiles; f++) {
        size_t n = 0;
        if (gf_audio_read_all(argv[i + 1 + f], &pcm[f], &n) != 0) {
            fprintf(stderr, "vad_bench: %s: cannot decode\n", argv[i + 1 + f]);
            return 66;
        }
        chunks[f] = n / GF_VAD_CHUNK;
        total += chunks[f];
    }
    float *first = gf_malloc((total + 1) * sizeof(float));
    float *probs = gf_malloc((total + 1) * sizeof(float));
    double best = 1e30;
    int rc = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        size_t at = 0;
        for (int f = 0; f < nfiles; f++) {
            gf_vad_state st;
            gf_vad_reset(&st);
            gf_vad_run(vad, &st, pcm[f], chunks[f], probs + at);
            at += chunks[f];
        }
        double t = now_s() - t0;
        if (t < best)
            best = t;
        if (r == 0) {
            memcpy(first, probs, total * sizeof(float));
        } else if (memcmp(first, probs, total * sizeof(float)) != 0) {
            fprintf(stderr, "vad_bench: round %d gave other probabilities than round 1\n", r + 1);
            rc = 1;
        }
    }
    double audio = (double)total * GF_VAD_CHUNK / GF_VAD_RATE;
    printf("vad_bench: %d files, %.1f s of audio, %zu chunks; best of %d rounds %.4f s: %.0fx real "
           "time, %.1f us a chunk (one thread)\n", nfiles, audio, total, rounds, best, audio / best,
           best / (double)total * 1e6);
    for (int f = 0; f < nfiles; f++)
        free(pcm[f]);
    free(pcm);
    free(chunks);
    free(first);
    free(probs);
    gf_vad_destroy(&vad);
    return rc;
}
