/* fuzz_audio.c — libFuzzer target for audio input (diar/io/audio.c,
 * audio_width.c, audio_windows.c: libsndfile's WAV, FLAC, Ogg/Vorbis and
 * MP3 decoders behind our reader, the header's sample width, the downmix
 * and the libsoxr resampler, and the 10 s window iterator): any bytes give
 * samples or an error, never a crash. The bytes are served as a
 * file through a memfd. `make fuzz`, then
 * build/fuzz/fuzz_audio -max_total_time=30 tests/fuzz/corpus/audio */
#include "common/log.h"
#include "diar/io/audio.h"
#include "diar/io/audio_windows.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_SAMPLES (1 << 20)   /* 65 s at 16 kHz: enough to reach every code path */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gf_log_init("fuzz_audio", GF_LOG_OFF);
    int fd = memfd_create("fuzz-audio", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);

    int err = 0;
    gf_audio_reader *r = gf_audio_reader_new(path, &err);
    if (r) {
        static float buf[4096];
        size_t total = 0;
        ssize_t n;
        while (total < MAX_SAMPLES && (n = gf_audio_reader_read(r, buf, 4096)) > 0)
            total += (size_t)n;
        gf_audio_reader_destroy(&r);
    }
    gf_audio_windows *w = gf_audio_windows_new(path, 160000, 16000, &err);
    if (w) {
        const float *win;
        int64_t start;
        for (int i = 0; i < 8; i++) {
            int rc = gf_audio_windows_next(w, &win, &start, NULL);
            if (rc <= 0)
                break;
        }
        gf_audio_windows_destroy(&w);
    }
    close(fd);
    return 0;
}
