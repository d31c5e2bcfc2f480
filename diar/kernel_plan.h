/* kernel_plan.h — the module provider production plans with: the modules
 * embedded in this binary, and the own kernels' own planning step.
 *
 * Its identity is gf_module_provider_embedded's (the SHA-256 of the embedded
 * PTX of an area and tier, nothing loaded). Its plan step is the kernels'
 * refusal (planner.h, the provider's `plan`): for a tuple and a card it asks
 * the network that holds the boundary (diar/segmentation_gpu.h,
 * embedding_gpu.h, fbank_gpu.h), which asks that layer's launcher
 * (gf_lstm_gpu_plan, gf_conv_gpu_plan, ... in worker/) with the layer's
 * geometry as the network builds it. The launchers' route switches apply the
 * same rule when they load, so a plan made with this provider is the plan
 * that loads. Nothing here touches a card: `gpuflock plan --card` asks it
 * for a card this machine does not have (a described card's shared memory
 * is not known, and not checked). */
#ifndef GF_KERNEL_PLAN_H
#define GF_KERNEL_PLAN_H

#include "route/plan.h"
#include "route/planner.h"

/* The embedded modules with the kernels' planning step; name "embedded". */
extern const gf_module_provider gf_kernel_modules;

/* The planning step alone (gf_kernel_modules.plan; ctx unused): 0 where the
 * launcher runs the tuple on card with the kernels of req->area; GF_EUNSUP
 * with the reason in why where it refuses (device unsupported, a geometry it
 * does not implement, another area's module). */
int gf_kernel_plan(void *ctx, const gf_route_request *req, const gf_card_identity *card,
                   char *why, size_t len);

/* The production route plan of card (plan.h): the evidence in
 * gf_evidence_default_dir() ($GPUFLOCK_EVIDENCE, else the source tree's
 * evidence/), these modules, GPUFLOCK_FORCE_LIBRARY from the environment.
 * The worker makes it once at start-up; `gpuflock diarize`, the proof suite
 * and the benchmarks make theirs the same way. NULL after logging when
 * planning fails. */
gf_route_plan *gf_kernel_plan_new(const gf_card_identity *card);

#endif
