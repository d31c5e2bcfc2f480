/* diar_gpu.h — the diarization pipeline's GPU backend: the segmentation and
 * embedding networks on a CUDA card (diar/segmentation_gpu,
 * embedding_gpu) behind the pipeline's backend table (gf_diar_backend).
 *
 * The table is diar/backend.h (through pipeline.h, whose sizes the backend
 * uses); the CPU backend is diar/backend_cpu.c. Device timings of every
 * boundary go to the devstats the pipeline passes down. */
#ifndef GF_DIAR_GPU_H
#define GF_DIAR_GPU_H

#include "route/boundary.h"
#include "route/plan.h"
#include "diar/pipeline.h"

/* Row counts of a backend's routes: the library row and one a production
 * batch at most. */
#define GF_DIAR_GPU_ROWS (1 + GF_N_PRODUCTION_BATCHES)

/* Open the CUDA card of `plan` (its card's index is the CUDA ordinal), load
 * the two networks from models_dir (with the manifest's digests when there
 * is one) for batches of up to max_batch windows, in `math` (fp32 or tf32),
 * and apply `plan` (borrowed: the worker's, made once; route/plan.h) for
 * every call size up to max_batch: a call of B windows runs the plan's row
 * of batch B when B is a production batch, the library route otherwise.
 * The table is fixed_batch (diar/backend.h): the batches of the pipeline
 * and of the batcher are all padded to max_batch (diar/netbatch.c), so a
 * window's numbers are those of one size and one row, whoever runs it and
 * whatever shares its batch; on the H200 a library route gave other bits
 * at other sizes (tests/gpu/test_gpu_batcher.c). overlap: in span mode, start each batch's fbank and ResNet trunk on a
 * second stream before its segmentation (worker.overlap). Returns 0 and
 * fills *out; GF_ENOENT (no such card or no model files) or GF_EDEVICE /
 * GF_EINVAL (not a CUDA card) after logging why. */
int gf_diar_backend_gpu(gf_route_plan *plan, const char *models_dir, int max_batch, gf_math math,
                        bool overlap, gf_diar_backend *out);

/* The routes a GPU backend applied (be as gf_diar_backend_gpu filled it, not
 * yet handed to a pipeline): *routes holds one row of gf_boundary_count()
 * routes, in registry order, for each call size; (*batches)[r] is row r's
 * (0: every size that is no production batch). Borrowed from be's context.
 * Returns the number of rows; 0 for a backend that is not this one. */
size_t gf_diar_backend_gpu_routes(const gf_diar_backend *be, const gf_route **routes,
                                  const int **batches);

#endif
