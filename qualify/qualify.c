/* qualify.c — the driver of `gpuflock qualify` (qualify.h): the candidates
 * of both networks, the dispatch of a candidate to its area's function (one
 * table), and the end-to-end measurement of a winning candidate's network.
 * The areas' functions live in seg.c and emb.c (areas.h); what all of them
 * stand on (records, accuracy, A/B timing) in measure.c. A new candidate adds
 * a row to its network's table, a function that runs its boundary on both
 * routes, and its area's row here. */
#include "qualify/qualify.h"
#include "qualify/areas.h"
#include "common/error.h"
#include "common/util.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the candidates ------------------------------------------------------ */

struct gf_qualify_set {
    gfq_trunk trunk;                         /* what the ResNet candidates point into */
    gf_candidate cands[GFQ_MAX_CANDIDATES];
    size_t n;
};

gf_qualify_set *gf_qualify_set_new(int cc)
{
    gf_qualify_set *self = gf_calloc(1, sizeof *self);
    self->n = gfq_seg_candidates(cc, self->cands, GF_ARRAY_LEN(self->cands));
    self->n += gfq_emb_candidates(cc, &self->trunk, self->cands + self->n,
                                  GF_ARRAY_LEN(self->cands) - self->n);
    return self;
}

const gf_candidate *gf_qualify_set_candidates(const gf_qualify_set *self, size_t *n)
{
    *n = self->n;
    return self->cands;
}

void gf_qualify_set_destroy(gf_qualify_set **self_p)
{
    free(*self_p);
    *self_p = NULL;
}

/* ---- the areas ------------------------------------------------------------ */

typedef enum { NET_SEGMENTATION, NET_EMBEDDING, NET_FBANK } network;

/* Each area's function, and the network its end-to-end run measures (the
 * fbank's: the fbank and the embedding network from the waveform). */
static const struct {
    const char *area;
    gfq_area_fn *run;
    network net;
} areas[] = {
    { "lstm", gfq_lstm, NET_SEGMENTATION },   { "sincnet", gfq_sinc, NET_SEGMENTATION },
    { "segconv", gfq_segconv, NET_SEGMENTATION }, { "dense", gfq_dense, NET_SEGMENTATION },
    { "resnet", gfq_conv, NET_EMBEDDING },    { "resnet32", gfq_conv, NET_EMBEDDING },
    { "fbank", gfq_fbank, NET_FBANK },        { "pooling", gfq_pool, NET_EMBEDDING },
    { "embedding", gfq_seg1, NET_EMBEDDING },
};

/* A winning candidate's network end to end, with and without it: the
 * end-to-end record, or no win where the network is slower in every run. */
static int end_to_end(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                      network net, gf_qualify_result *res)
{
    bool seg = net == NET_SEGMENTATION;
    const char *model = seg ? ctx->segmentation_model : ctx->embedding_model;
    if (!model) {
        fprintf(ctx->report, "  end to end: no %s model given, not measured\n",
                seg ? "segmentation" : "embedding");
        res->win = false;
        return 0;
    }
    bool fbank = net == NET_FBANK, own_trunk = false;
    uint64_t rng = res->e2e_seed;
    double *a = gf_calloc((size_t)ctx->rounds, sizeof(double));
    double *b = gf_calloc((size_t)ctx->rounds, sizeof(double));
    double am, alo, ahi, bm, blo, bhi;
    int rc = seg     ? gfq_e2e_segmentation(ctx, cand->boundary, B, math, &rng, a, b)
         : fbank ? gfq_e2e_fbank(ctx, cand->boundary, B, math, &rng, a, b)
                 : gfq_e2e_embedding(ctx, cand->boundary, B, math, &rng, a, b, &own_trunk);
    if (rc)
        goto free_runs;
    json_object *r = gfq_record_base(ctx, "end-to-end", cand, B, math, &res->module);
    json_object_object_add(r, "unit", json_object_new_string("s"));
    json_object_object_add(r, "order", json_object_new_string("ABAB"));
    json_object_object_add(r, "pipeline", json_object_new_string(
        fbank ? "fbank and embedding network on the card"
        : !seg ? (own_trunk ? "embedding network on the card, own ResNet"
                            : "embedding network on the card")
        : strcmp(cand->area, "lstm") == 0 ? "segmentation network on the card"
                                          : "segmentation network on the card, own LSTM"));
    json_object_object_add(r, "candidate", gfq_timing_json(a, ctx->rounds, &am, &alo, &ahi));
    json_object_object_add(r, "library", gfq_timing_json(b, ctx->rounds, &bm, &blo, &bhi));
    res->e2e_speedup = bm / am;
    bool slower = alo > bhi;   /* outside the noise, as the validator's rule */
    fprintf(ctx->report, "  end to end (%s): %.3f ms with, %.3f ms without: %.2fx%s\n",
            seg ? "segmentation network" : fbank ? "fbank + embedding network"
                                                 : "embedding network",
            am * 1e3, bm * 1e3, res->e2e_speedup,
            slower ? " (slower in every run: no win)" : "");
    if (!slower)
        rc = gfq_record_write(ctx, r, res->end_to_end);
    else
        res->win = false;
    json_object_put(r);
free_runs:
    free(a);
    free(b);
    return rc;
}


int gf_qualify_run(const gf_qualify_ctx *ctx, const gf_candidate *cand, int batch, gf_math math,
                   gf_qualify_result *out)
{
    gf_module_id module = out->module;   /* set by the caller from the explicit plan */
    memset(out, 0, sizeof *out);
    out->module = module;
    fprintf(ctx->report, "%s (%s) batch %d %s on %s:\n", cand->boundary, cand->area, batch,
            gf_math_name(math), ctx->card->name);
    for (size_t i = 0; i < GF_ARRAY_LEN(areas); i++) {
        if (strcmp(cand->area, areas[i].area) != 0)
            continue;
        int rc = areas[i].run(ctx, cand, batch, math, out);
        if (rc || !out->win)
            return rc;
        return end_to_end(ctx, cand, batch, math, areas[i].net, out);
    }
    return GF_EUNSUP;
}

int gf_qualify_write_binding(FILE *f, const gf_card_identity *card,
                             const gf_qualify_entry *entries, size_t n)
{
    const gf_qualify_entry *first = NULL;
    for (size_t i = 0; i < n && !first; i++)
        if (entries[i].result.win && entries[i].result.end_to_end[0])
            first = &entries[i];
    if (!first)
        return 0;
    char scope[256];
    snprintf(scope, sizeof scope, "{kind: point, cc: \"%d.%d\", sms: %d, name: \"%s\"}",
             card->cc_major, card->cc_minor, card->sm_count, card->name);
    const gf_module_id *m = &first->result.module;
    fprintf(f, "  - id: %s-sm%d%d-%d-%.12s\n", first->cand->area, card->cc_major, card->cc_minor,
            card->sm_count, m->sha256);
    fprintf(f, "    scope: %s\n", scope);
    fprintf(f, "    module:\n      area: %s\n      tier: sm%d\n", first->cand->area, m->tier);
    fprintf(f, "      artifact: {kind: ptx-jit, sha256: %s}\n    proofs:\n", m->sha256);
    int proofs = 0;
    for (size_t i = 0; i < n; i++) {
        const gf_qualify_entry *e = &entries[i];
        const gf_qualify_result *r = &e->result;
        if (!r->win || !r->end_to_end[0])
            continue;
        fprintf(f, "      - boundary: %s\n        batch: %d\n        math: %s\n", e->cand->boundary,
                e->batch, gf_math_name(e->math));
        fprintf(f, "        config: {");
        for (size_t k = 0; k < e->cand->n_config; k++)   /* values quoted: they may hold , or : */
            fprintf(f, "%s%s: \"%s\"", k ? ", " : "", e->cand->config[k].key,
                    e->cand->config[k].value);
        fprintf(f, "}\n        accuracy: %s\n", r->accuracy);
        fprintf(f, "        speed:\n          kind: measured\n          scope: %s\n", scope);
        fprintf(f, "          record: %s\n          end_to_end: %s\n", r->speed, r->end_to_end);
        proofs++;
    }
    return proofs;
}
