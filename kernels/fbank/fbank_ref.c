/* fbank_ref.c — the log-mel features' float64 truth (see fbank_ref.h): the
 * definition the qualification (qualify/emb.c) and the GPU tests
 * (tests/gpu/test_gpu_fbank.c) compare the card's routes with;
 * tests/unit/test_fbank_gpu.c checks it against the CPU filterbank, without
 * a card. */
#include "kernels/fbank/fbank_ref.h"
#include "kernels/fbank/fbank_cpu.h"
#include "common/util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#define FRAMES GF_FBANK_GPU_FRAMES
#define NB 256                            /* power bins the mel banks weight */

void gf_fbank_gpu_ref(const float *wave, double *ref, double *cond)
{
    gf_fbank *fb = gf_fbank_new();
    const float *win = gf_fbank_window(fb);
    float *mel = gf_malloc(sizeof(float) * GF_FBANK_BINS * NB);
    double *cs = gf_malloc(sizeof(double) * 2 * GF_FBANK_FFT), *sn = cs + GF_FBANK_FFT;
    double *ratio = gf_malloc(sizeof(double) * FRAMES * GF_FBANK_BINS);
    gf_fbank_mel_dense(fb, mel);
    for (int m = 0; m < GF_FBANK_FFT; m++) {
        cs[m] = cos(2.0 * M_PI * m / GF_FBANK_FFT);
        sn[m] = sin(2.0 * M_PI * m / GF_FBANK_FFT);
    }
    for (int t = 0; t < FRAMES; t++) {
        const float *w = wave + (size_t)t * GF_FBANK_SHIFT;
        double x[GF_FBANK_FRAME], y[GF_FBANK_FRAME], p[NB], sum = 0.0, energy = 0.0;
        for (int j = 0; j < GF_FBANK_FRAME; j++)
            sum += x[j] = (double)w[j] * 32768.0;
        const double mean = sum / GF_FBANK_FRAME;
        for (int j = 0; j < GF_FBANK_FRAME; j++)
            y[j] = ((x[j] - mean) - 0.97 * ((j ? x[j - 1] : x[0]) - mean)) * win[j];
        for (int k = 0; k < NB; k++) {
            double re = 0.0, im = 0.0;
            for (int j = 0; j < GF_FBANK_FRAME; j++) {
                const int m = (j * k) & (GF_FBANK_FFT - 1);
                re += y[j] * cs[m];
                im -= y[j] * sn[m];
            }
            energy += p[k] = re * re + im * im;
        }
        for (int b = 0; b < GF_FBANK_BINS; b++) {
            double e = 0.0;
            for (int k = 0; k < NB; k++)
                e += (double)mel[b * NB + k] * p[k];
            e = fmax(e, FLT_EPSILON);
            ref[t * GF_FBANK_BINS + b] = log(e);
            ratio[t * GF_FBANK_BINS + b] = energy / e;
        }
    }
    for (int b = 0; b < GF_FBANK_BINS; b++) {
        double mean = 0.0, mean_ratio = 0.0;
        for (int t = 0; t < FRAMES; t++) {
            mean += ref[t * GF_FBANK_BINS + b];
            mean_ratio += ratio[t * GF_FBANK_BINS + b];
        }
        mean /= FRAMES;
        mean_ratio /= FRAMES;
        for (int t = 0; t < FRAMES; t++) {
            ref[t * GF_FBANK_BINS + b] -= mean;
            if (cond)
                cond[t * GF_FBANK_BINS + b] = ratio[t * GF_FBANK_BINS + b] + mean_ratio;
        }
    }
    free(mel);
    free(cs);
    free(ratio);
    gf_fbank_destroy(&fb);
}
