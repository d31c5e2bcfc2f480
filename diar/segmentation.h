/* segmentation.h — the segmentation network (pyannote segmentation-3.0
 * architecture: SincNet, 4-layer BiLSTM, linear head, powerset classifier) on
 * the CPU.
 *
 * One object holds the weights (taken from a checked safetensors file, see
 * docs/models.md) and a workspace for up to max_batch windows, allocated once:
 * running a batch allocates nothing. Not thread-safe: one object per thread. */
#ifndef GF_SEGMENTATION_H
#define GF_SEGMENTATION_H

#define GF_SEG_SAMPLES 160000  /* 10 s at 16 kHz per window */
#define GF_SEG_FRAMES 589      /* output frames per window */
#define GF_SEG_CLASSES 7       /* powerset classes {}, {0}, {1}, {2}, {0,1}, {0,2}, {1,2} */
#define GF_SEG_LSTM_IN 60      /* the LSTM stack's inputs a frame (the convolutions' channels) */
#define GF_SEG_LSTM_HIDDEN 128 /* its hidden size a direction */
#define GF_SEG_LSTM_LAYERS 4   /* bidirectional layers */

typedef struct gf_segmentation gf_segmentation;

/* Load `path` (sha256_hex: its expected digest, or NULL) and allocate for
 * batches of up to max_batch windows, run on `threads` threads (windows of a
 * batch, and the two LSTM directions, go side by side; BLAS calls outside
 * those use the BLAS thread count, gf_blas_set_threads). Returns NULL after
 * logging a message naming the file and the tensor at fault. */
gf_segmentation *gf_segmentation_new(const char *path, const char *sha256_hex, int max_batch,
                                     int threads);

/* Free; accepts NULL and sets *self_p to NULL. */
void gf_segmentation_destroy(gf_segmentation **self_p);

/* wave [B, GF_SEG_SAMPLES] (16 kHz, float in [-1, 1]) → logp [B,
 * GF_SEG_FRAMES, GF_SEG_CLASSES] log-probabilities. 1 <= B <= max_batch.
 * Returns 0, or GF_EINVAL for a bad B. */
int gf_segmentation_run(gf_segmentation *self, const float *wave, int B, float *logp);

#endif
