/* lstm.h — one direction of one LSTM layer over a batch of sequences (CPU reference).
 *
 * PyTorch conventions: gate order i, f, g, o; both biases added; zero initial
 * state. The input projections of every time step (both directions at once
 * if the caller stacks their weights) are one sgemm; the recurrence then
 * runs step by step over the whole batch with the recurrent weights
 * transposed once at load time, so each step streams them once for all
 * sequences. The gate nonlinearities use a vectorisable exp (Cephes
 * polynomial, about 1 ulp), not libm's scalar one. */
#ifndef GF_KERNELS_LSTM_H
#define GF_KERNELS_LSTM_H

/* Input projections: gates [B*T, G] = x [B*T, In] (row stride ldx) · w_ihᵀ
 * (w_ih [G, In]) + b_ih + b_hh, with G the total gate width (4H, or 8H for
 * both directions' weights stacked). */
void gf_lstm_proj_cpu(const float *x, long rows, int In, int ldx, const float *w_ih,
                      const float *bias, int G, float *gates);

/* Pack w_hh [4H, H] for gf_lstm_dir_cpu: transposed, in blocks of 32 gate
 * columns ([4H/32][H][32]); 4H must be a multiple of 32. */
void gf_lstm_pack_cpu(const float *w_hh, int H, float *whT);

/* The recurrence of one direction. gates: [B*T rows of stride ldg], this
 * direction's 4H columns starting at gates (already holding the input
 * projections and biases; overwritten). Writes h_t to out[(b*T + t)*ldo ..
 * + H]. reverse: run from t = T-1 down to 0. c: workspace [B, H]. */
void gf_lstm_dir_cpu(float *gates, int ldg, int B, int T, const float *whT, int H, int reverse,
                     float *out, int ldo, float *c);

#endif
