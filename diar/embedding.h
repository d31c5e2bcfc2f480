/* embedding.h — the speaker embedding network (WeSpeaker ResNet34 as wrapped
 * by pyannote) on the CPU.
 *
 * Input: fbank features [B, frames, 80] (frame-major, mean-normalised per bin,
 * as kernels/fbank/fbank_cpu produces them). The ResNet34 trunk runs once per
 * window; its output [256, 10, frames/8] stays in the object so that each
 * active local speaker of the window is then pooled with its own mask
 * (mask-weighted mean and std) and projected to 256 by seg_1. Weights come
 * from a checked safetensors file with batch norm folded into the convolutions
 * at load time; the workspace for up to max_batch windows is allocated once.
 * Not thread-safe: one object per thread. */
#ifndef GF_EMBEDDING_H
#define GF_EMBEDDING_H

#define GF_EMB_FRAMES 998   /* fbank frames of a 10 s window */
#define GF_EMB_MELS 80      /* mel bins */
#define GF_EMB_DIM 256      /* embedding size */

typedef struct gf_embedding gf_embedding;

/* Load `path` (sha256_hex: expected digest or NULL), for windows of `frames`
 * fbank frames (GF_EMB_FRAMES for 10 s) and batches of up to max_batch, run
 * on `threads` threads (the windows of a batch side by side, each thread with
 * its own workspace; a batch of one window uses the BLAS threads instead).
 * Returns NULL after logging a message naming the file and tensor at fault. */
gf_embedding *gf_embedding_new(const char *path, const char *sha256_hex, int frames,
                               int max_batch, int threads);

/* Free; accepts NULL and sets *self_p to NULL. */
void gf_embedding_destroy(gf_embedding **self_p);

/* Run the trunk on fbank [B, frames, 80]; the features stay inside until the
 * next call. Returns 0, or GF_EINVAL for a bad B. */
int gf_embedding_trunk(gf_embedding *self, const float *fbank, int B);

/* Embedding of window b (< B of the last trunk call) pooled with `mask`
 * [mask_frames] (weights, usually 0/1 activity on the segmentation's 589
 * frames), resized to the trunk's frames by nearest neighbour (source index
 * i*mask_frames/T). out [GF_EMB_DIM]. Returns 0 or GF_EINVAL. */
int gf_embedding_pool(gf_embedding *self, int b, const float *mask, int mask_frames, float *out);

/* Frames of the trunk's output (frames/8 rounded as the strides do: 125). */
int gf_embedding_trunk_frames(const gf_embedding *self);

#endif
