/* fbank.h — the Kaldi log-mel filterbank the embedding network reads.
 *
 * Fixed to the configuration of WeSpeaker as pyannote calls it (torchaudio's
 * compliance.kaldi.fbank with 80 bins, 25 ms / 10 ms, dither 0, hamming,
 * no energy) on 16 kHz input in [-1, 1], which is scaled by 32768 first:
 * frames of 400 samples every 160 with snip edges, per-frame DC removal,
 * pre-emphasis 0.97 (x[-1] := x[0]), symmetric Hamming window, 512-point
 * FFT, power spectrum, 80 triangular mel bins over 20-8000 Hz (the Nyquist
 * bin weighted 0), log(max(x, FLT_EPSILON)); optionally each bin's mean over
 * the frames subtracted. Output is [frames x 80], row-major. docs/audio.md
 * lists every convention and the parity test against torchaudio. */
#ifndef GF_DIAR_FBANK_H
#define GF_DIAR_FBANK_H

#include <stddef.h>

#define GF_FBANK_BINS  80   /* mel bins per frame */
#define GF_FBANK_FRAME 400  /* samples per frame (25 ms at 16 kHz) */
#define GF_FBANK_SHIFT 160  /* samples between frames (10 ms) */
#define GF_FBANK_FFT   512  /* FFT length */

/* Flags for gf_fbank_run. */
enum {
    GF_FBANK_MEAN_NORM = 1 << 0, /* subtract each bin's mean over the frames */
};

/* Precomputed window, mel banks and FFT twiddles; immutable after creation,
 * so one context may serve several threads. */
typedef struct gf_fbank gf_fbank;

gf_fbank *gf_fbank_new(void);
void gf_fbank_destroy(gf_fbank **self_p);

/* Frames for n samples: 1 + (n - 400) / 160, 0 when n < 400 (998 for 10 s). */
size_t gf_fbank_frames(size_t n_samples);

/* Features of wave[0..n) into out, which holds gf_fbank_frames(n) * 80
 * floats; *n_frames gets the frame count. No allocation. Returns 0, or
 * GF_EINVAL (logged) when n < 400. */
int gf_fbank_run(const gf_fbank *self, const float *wave, size_t n, float *out,
                 size_t *n_frames, unsigned flags);

/* The context's tables, for another device computing the same features:
 * the symmetric Hamming window [400] (borrowed), and the mel banks as a dense
 * matrix [80 x 256] over power bins 0..255 (the Nyquist bin is weighted 0). */
const float *gf_fbank_window(const gf_fbank *self);
void gf_fbank_mel_dense(const gf_fbank *self, float out[GF_FBANK_BINS * GF_FBANK_FFT / 2]);

/* The 512-point real FFT of x (x is overwritten as scratch) into out in
 * half-complex order: X0, Re X1, Im X1, ..., Re X255, Im X255, X256, with
 * X[k] = sum_j x[j] e^{-2 pi i j k / 512}. Float32 in the order of torch's
 * CPU FFT (pocketfft), whose output it reproduces bit for bit. */
void gf_fbank_rfft(const gf_fbank *self, float x[GF_FBANK_FFT], float out[GF_FBANK_FFT]);

/* gf_fbank_run with mean normalisation on a process-wide context built once
 * (thread-safe): the embedding network's input. */
int gf_fbank_compute(const float *wave16k, size_t n_samples, float *out, size_t *n_frames);

#endif
