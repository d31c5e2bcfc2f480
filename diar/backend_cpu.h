/* backend_cpu.h — the diarization pipeline's CPU backend: the segmentation
 * and embedding networks of diar/segmentation and diar/embedding on the
 * host's cores, behind the pipeline's backend table (diar/backend.h). The
 * pipeline makes one for itself when the model files are there; the GPU
 * backend (diar/backend_gpu.h) replaces it on a card. */
#ifndef GF_DIAR_BACKEND_CPU_H
#define GF_DIAR_BACKEND_CPU_H

#include "diar/backend.h"

/* The CPU networks from models_dir, for batches of up to max_batch windows,
 * on `threads` threads (<= 0: one per online core). Returns 0 and fills
 * *out; GF_ENOENT when a model file is missing (nothing logged: the caller
 * falls back to weight-free mode); GF_EINVAL after logging the file and
 * tensor at fault. */
int gf_diar_backend_cpu(const char *models_dir, int max_batch, int threads, gf_diar_backend *out);

#endif
