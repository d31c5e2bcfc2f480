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
 * overlap: in span mode, start each batch's fbank and ResNet trunk on a
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

/* From now on every call of be (a GPU backend as gf_diar_backend_gpu
 * filled it), whatever its size, runs the routes of its capacity's row, so
 * that a window's numbers do not depend on the size of the batch that
 * carries it (a batch of several jobs' windows, diar/batcher.h, which also
 * pads every batch to the capacity: a library route may choose its
 * algorithm by the batch size, tests/gpu/test_gpu_batcher.c). Its identity
 * says so. GF_EINVAL for a backend that is not this one. */
int gf_diar_backend_gpu_one_row(gf_diar_backend *be);

#endif
