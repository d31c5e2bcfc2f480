/* fbank_ref.h — one 10 s window's log-mel features in float64 on the host,
 * by the definition fbank_gpu.h's two boundaries compute, whose window
 * (GF_FBANK_GPU_SAMPLES, GF_FBANK_GPU_FRAMES) it shares. */
#ifndef GF_KERNELS_FBANK_REF_H
#define GF_KERNELS_FBANK_REF_H

#include "kernels/fbank/fbank_gpu.h"

/* One window's features by the definition in float64 (fbank.h's conventions
 * with its float32 window and mel banks, the DFT summed directly): wave
 * [160000] → ref [998][80]. cond [998][80] (may be NULL): each output's
 * conditioning, the scale of a float32 computation's error in it: the
 * frame's power (bins 0..255) over the mel bin's energy, plus that ratio's
 * mean over the window's frames for the bin (the mean normalisation carries
 * every frame's error). The checks allow atol + rtol · cond. */
void gf_fbank_gpu_ref(const float *wave, double *ref, double *cond);

#endif
