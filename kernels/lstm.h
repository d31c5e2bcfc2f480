/* lstm.h — one direction of one LSTM layer over a batch of sequences (CPU reference).
 *
 * PyTorch conventions: gate order i, f, g, o; both biases added; zero initial
 * state. The input projection of every time step is one sgemm; each recurrent
 * step is one sgemm [B, H]·[H, 4H] over the whole batch, reading the previous
 * hidden state straight from the output tensor. */
#ifndef GF_KERNELS_LSTM_H
#define GF_KERNELS_LSTM_H

/* x [B, T, ldx] (first In columns used); w_ih [4H, In], w_hh [4H, H], b_ih
 * and b_hh [4H]. Writes h_t to out[(b*T + t)*ldo + off .. + H]. reverse: run
 * from t = T-1 down to 0. Workspace: gates [B*T, 4H], c [B, H]. */
void gf_lstm_dir_ref(const float *x, int B, int T, int In, int ldx, const float *w_ih,
                     const float *w_hh, const float *b_ih, const float *b_hh, int H, int reverse,
                     float *out, int ldo, int off, float *gates, float *c);

#endif
