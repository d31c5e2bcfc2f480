/* audio_bench — the gpuflock side of bench/audio/run.sh.
 *
 *   audio_bench synth OUT SECONDS wav|flac|mp3   44.1 kHz stereo test audio
 *   audio_bench decode IN                        16 kHz mono f32 to stdout
 *   audio_bench windows IN                       10 s windows every 1 s
 *
 * decode and windows go through diar/io/audio exactly as the pipeline
 * does and print, on stderr, the samples or windows seen and the process's
 * peak resident memory. */
#include "common/util.h"
#include "diar/io/audio.h"
#include "diar/io/audio_windows.h"

#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long peak_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static int synth(const char *out, double seconds, const char *fmt)
{
    int format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
    if (strcmp(fmt, "flac") == 0)
        format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16;
    else if (strcmp(fmt, "mp3") == 0)
        format = SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
    SF_INFO si = { .samplerate = 44100, .channels = 2, .format = format };
    SNDFILE *sf = sf_open(out, SFM_WRITE, &si);
    if (!sf) {
        fprintf(stderr, "audio_bench: cannot write %s: %s\n", out, sf_strerror(NULL));
        return 1;
    }
    /* Speech-like enough for the codecs: two drifting tones, amplitude
     * modulated at syllable rate, plus a little noise. */
    enum { BLOCK = 44100 };
    static float buf[BLOCK * 2];
    size_t total = (size_t)(seconds * 44100), done = 0;
    unsigned rng = 12345;
    double ph1 = 0, ph2 = 0;
    while (done < total) {
        size_t n = total - done < BLOCK ? total - done : BLOCK;
        for (size_t i = 0; i < n; i++) {
            double t = (double)(done + i) / 44100;
            double f1 = 180 + 60 * sin(0.7 * t), f2 = 1200 + 400 * sin(0.13 * t);
            ph1 += 2 * M_PI * f1 / 44100;
            ph2 += 2 * M_PI * f2 / 44100;
            double env = 0.5 + 0.5 * sin(2 * M_PI * 4 * t);
            rng = rng * 1664525u + 1013904223u;
            double noise = ((double)(rng >> 8) / 16777216.0 - 0.5) * 0.02;
            buf[2 * i] = (float)(env * (0.3 * sin(ph1) + 0.1 * sin(ph2)) + noise);
            buf[2 * i + 1] = (float)(env * (0.25 * sin(ph1 + 0.3) + 0.12 * sin(ph2)) - noise);
        }
        if (sf_writef_float(sf, buf, (sf_count_t)n) != (sf_count_t)n) {
            fprintf(stderr, "audio_bench: writing %s failed: %s\n", out, sf_strerror(sf));
            sf_close(sf);
            return 1;
        }
        done += n;
    }
    sf_close(sf);
    return 0;
}

static int decode(const char *in)
{
    gf_audio_reader *r = gf_audio_reader_new(in, NULL);
    if (!r)
        return 1;
    static float buf[16000];
    long long total = 0;
    ssize_t got;
    while ((got = gf_audio_reader_read(r, buf, 16000)) > 0) {
        if (fwrite(buf, sizeof(float), (size_t)got, stdout) != (size_t)got)
            break;
        total += got;
    }
    gf_audio_reader_destroy(&r);
    if (got < 0)
        return 1;
    fprintf(stderr, "decode %s: %lld samples at 16 kHz, peak RSS %ld KiB\n", in, total,
            peak_kib());
    return 0;
}

static int windows(const char *in)
{
    gf_audio_windows *w = gf_audio_windows_new(in, 160000, 16000, NULL);
    if (!w)
        return 1;
    const float *win;
    int64_t start;
    size_t valid, count = 0;
    double check = 0;
    int rc;
    while ((rc = gf_audio_windows_next(w, &win, &start, &valid)) == 1) {
        check += win[valid / 2];
        count++;
    }
    gf_audio_windows_destroy(&w);
    if (rc < 0)
        return 1;
    fprintf(stderr, "windows %s: %zu windows (check %.3f), peak RSS %ld KiB\n", in, count,
            check, peak_kib());
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "synth") == 0)
        return synth(argv[2], atof(argv[3]), argv[4]);
    if (argc == 3 && strcmp(argv[1], "decode") == 0)
        return decode(argv[2]);
    if (argc == 3 && strcmp(argv[1], "windows") == 0)
        return windows(argv[2]);
    fprintf(stderr, "usage: audio_bench synth OUT SECONDS wav|flac|mp3 | decode IN | windows IN\n");
    return 64;
}
