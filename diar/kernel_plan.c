/* kernel_plan.c — the production module provider (see kernel_plan.h): the
 * embedded modules' identity, and each network's answer for its own
 * boundaries. */
#include "diar/kernel_plan.h"
#include "common/error.h"
#include "diar/embedding_gpu.h"
#include "kernels/fbank/fbank_gpu.h"
#include "diar/segmentation_gpu.h"

#include <stdio.h>

static int identity(void *ctx, const char *area, int tier, const gf_card_identity *card,
                    gf_module_id *out)
{
    (void)ctx;
    const gf_module_provider *e = &gf_module_provider_embedded;
    return e->identity(e->ctx, area, tier, card, out);
}

int gf_kernel_plan(void *ctx, const gf_route_request *req, const gf_card_identity *card,
                   char *why, size_t len)
{
    (void)ctx;
    /* Each network answers for its boundaries and says GF_ENOENT for the others. */
    static int (*const nets[])(const gf_route_request *, const gf_card_identity *, char *,
                               size_t) = {
        gf_segmentation_gpu_plan, gf_embedding_gpu_plan, gf_fbank_gpu_plan,
    };
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        int rc = nets[i](req, card, why, len);
        if (rc != GF_ENOENT)
            return rc;
    }
    snprintf(why, len, "no own kernel of this build runs %s", req->boundary);
    return GF_EUNSUP;
}

const gf_module_provider gf_kernel_modules = {
    .name = "embedded",
    .identity = identity,
    .plan = gf_kernel_plan,
    .ctx = NULL,
};

gf_route_plan *gf_kernel_plan_new(const gf_card_identity *card)
{
    return gf_route_plan_new(card, gf_evidence_default_dir(), &gf_kernel_modules,
                             gf_planner_force_library_env());
}
