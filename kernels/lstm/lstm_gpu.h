/* lstm_gpu.h — a stacked bidirectional LSTM on a CUDA card, with its two
 * routes for the boundary lstm.stack.
 *
 * Both routes compute each layer's input projections for all time steps as
 * one cuBLAS GEMM (plus both biases). The library route then runs, per time
 * step and direction, one GEMM [B, H]·[H, 4H] and one cell kernel (2·T
 * launches per direction and layer); the own route runs all steps of both
 * directions for all sequences in one launch of the persistent recurrent
 * kernel of kernels/lstm/lstm.cu (a block per sequence and direction). PyTorch
 * conventions: gate order i, f, g, o; zero initial state; each layer's
 * output is [forward, reverse] (2H wide). */
#ifndef GF_LSTM_GPU_H
#define GF_LSTM_GPU_H

#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

typedef struct {
    const float *w_ih;   /* [4H, in] */
    const float *w_hh;   /* [4H, H] */
    const float *b_ih;   /* [4H] */
    const float *b_hh;   /* [4H] */
} gf_lstm_gpu_dir;

typedef struct gf_lstm_gpu gf_lstm_gpu;

/* Upload `layers` layers of weights (w[l][0] forward, w[l][1] reverse; host
 * memory, copied) for sequences of T steps with in0 inputs at layer 0, and
 * take device buffers for up to max_batch sequences. NULL on a device error. */
gf_lstm_gpu *gf_lstm_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, int layers, int in0, int hidden,
                             const gf_lstm_gpu_dir (*w)[2], int max_batch, int T);
void gf_lstm_gpu_destroy(gf_lstm_gpu **self_p);

/* The own route's planning step: whether it runs a stack of this hidden size
 * on a card offering smem_optin bytes of shared memory a block (0: not known,
 * not checked), with the kernels of module `area` (NULL: not asked). It is
 * built for hidden 128 only (other sizes are valid but unimplemented
 * geometry). Returns 0, or GF_EUNSUP with the reason in why (the planner's
 * hook and the route switch apply this rule). */
int gf_lstm_gpu_plan(int hidden, int smem_optin, const char *area, char *why, size_t len);

/* Choose the route. The own route is refused (GF_EUNSUP, reason logged) where
 * gf_lstm_gpu_plan refuses it, or a card whose shared memory per block is too
 * small; GF_EDEVICE on a driver error.
 * On success with the own route, *module_sha256 (may be NULL) is the identity
 * of the module that loaded. */
int gf_lstm_gpu_set_route(gf_lstm_gpu *self, gf_route_kind kind, const char **module_sha256);
gf_route_kind gf_lstm_gpu_route(const gf_lstm_gpu *self);

/* The own route runs one of two kernels of the same module (kernels/lstm/lstm.cu):
 * in tf32 math, on cc >= 9.0 with a driver that launches clusters,
 * gf_lstm_rec_cluster (the recurrence on the tensor cores, a cluster of 8
 * blocks a direction and group of sequences); otherwise gf_lstm_rec_v1
 * (float32, a block of 512 threads a sequence and direction).
 *
 * The cluster kernel takes 8 sequences a cluster by default, the fastest
 * alone (64 blocks at a batch of 32); narrow (set when other work
 * runs beside the stack on the card, the stages overlapped) takes 32, a
 * quarter of the blocks for a longer time. For tests and
 * benchmarks, gf_lstm_gpu_set_seqs_per_cluster overrides both until the
 * route is set again: 0 selects v1 in both maths, 8, 16 or 32 the cluster
 * kernel (GF_EUNSUP where it is not loaded, GF_EINVAL for another value).
 * gf_lstm_gpu_seqs_per_cluster says what tf32 runs (0: v1 or the library
 * route). */
void gf_lstm_gpu_set_narrow(gf_lstm_gpu *self, bool narrow);
int gf_lstm_gpu_set_seqs_per_cluster(gf_lstm_gpu *self, int seqs);
int gf_lstm_gpu_seqs_per_cluster(const gf_lstm_gpu *self);

/* Fill the layer outputs with NaN, so a check can prove every element was
 * written by the next run. */
int gf_lstm_gpu_poison(gf_lstm_gpu *self);

/* x [B, T, in0] on the card → *out [B, T, 2H] on the card (a buffer of the
 * object, valid until the next run). Returns 0, GF_EINVAL or GF_EDEVICE. */
int gf_lstm_gpu_run(gf_lstm_gpu *self, gf_math math, gf_cu_ptr x, int B, gf_cu_ptr *out);

/* Random weights for a stack, in host memory: every value uniform in
 * ±1/sqrt(hidden), the range PyTorch initialises an LSTM with, drawn from
 * the splitmix64 stream *seed. For qualify, tests and benchmarks. */
#define GF_LSTM_MAX_LAYERS 8
typedef struct {
    int layers;
    float *buf[GF_LSTM_MAX_LAYERS][2][4];         /* w_ih, w_hh, b_ih, b_hh */
    gf_lstm_gpu_dir dirs[GF_LSTM_MAX_LAYERS][2];  /* views of buf, for gf_lstm_gpu_new */
} gf_lstm_weights;
void gf_lstm_weights_random(gf_lstm_weights *w, int layers, int in0, int hidden,
                            uint64_t *seed);
void gf_lstm_weights_free(gf_lstm_weights *w);

#endif
