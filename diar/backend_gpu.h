/* diar_gpu.h — the diarization pipeline's GPU backend: the segmentation and
 * embedding networks on a CUDA card (diar/segmentation_gpu,
 * embedding_gpu) behind the pipeline's backend table (gf_diar_backend).
 *
 * It lives in the worker library, beside the card code it uses; the CPU
 * backend is in diar/pipeline.c. Device timings of every boundary go
 * to the devstats the pipeline passes down. */
#ifndef GF_DIAR_GPU_H
#define GF_DIAR_GPU_H

#include "route/boundary.h"
#include "diar/pipeline.h"

/* Open CUDA card `ordinal`, load the two networks from models_dir (with the
 * manifest's digests when there is one) for batches of up to max_batch
 * windows, in `math` (fp32 or tf32), routes from the planner. overlap: in
 * span mode, start each batch's fbank and ResNet trunk on a second stream
 * before its segmentation (worker.overlap). Returns 0 and fills *out;
 * GF_ENOENT (no such card or no model files) or GF_EDEVICE / GF_EINVAL after
 * logging why. */
int gf_diar_backend_gpu(int ordinal, const char *models_dir, int max_batch, gf_math math,
                        bool overlap, gf_diar_backend *out);

#endif
