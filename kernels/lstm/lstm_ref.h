/* lstm_ref.h — a stacked bidirectional LSTM in float64 on the host, by the
 * conventions in lstm_gpu.h (gate order i, f, g, o; zero initial state;
 * each layer's output [forward, reverse]), whose host weights
 * (gf_lstm_gpu_dir) it reads. */
#ifndef GF_KERNELS_LSTM_REF_H
#define GF_KERNELS_LSTM_REF_H

#include "kernels/lstm/lstm_gpu.h"

/* The stack's float64 definition for one sequence, on the host: x [T, in0]
 * → out [T, 2H], `layers` layers of w as for gf_lstm_gpu_new. For checks. */
void gf_lstm_ref(const gf_lstm_gpu_dir (*w)[2], int layers, int in0, int hidden, int T,
                 const float *x, double *out);

#endif
