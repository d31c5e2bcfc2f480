/* qualify.c — accuracy, speed and end-to-end records for own kernels (see
 * qualify.h): the driver of `gpuflock qualify`. It holds the candidates
 * table, the records, the accuracy bookkeeping against float64, the
 * interleaved A/B timing and the verdicts on speed and end to end, and
 * hands each candidate to its area's function: the segmentation network's
 * in qualify_seg.c, the embedding network's in qualify_emb.c (what the
 * three share: qualify_priv.h). A new candidate adds a row to its network's
 * table and a function that runs its boundary on both routes. */
#include "qualify/qualify.h"
#include "qualify/measure.h"
#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the candidates ------------------------------------------------------ */

/* The segmentation network's (qualify_seg.c) then the embedding network's
 * (qualify_emb.c), built for the card last asked about. */
static gf_candidate candidates[GFQ_MAX_CANDIDATES];
static size_t n_candidates;
static int candidates_cc = -1;   /* the card they were built for */

const gf_candidate *gf_qualify_candidates(int cc, size_t *count)
{
    if (cc != candidates_cc) {
        n_candidates = gfq_seg_candidates(cc, candidates, GF_ARRAY_LEN(candidates));
        n_candidates += gfq_emb_candidates(cc, candidates + n_candidates,
                                           GF_ARRAY_LEN(candidates) - n_candidates);
        candidates_cc = cc;
    }
    *count = n_candidates;
    return candidates;
}

/* ---- records ------------------------------------------------------------- */

static const char *tier_name(int tier, char *buf, size_t len)
{
    snprintf(buf, len, "sm%d", tier);
    return buf;
}

static json_object *record_base(const gf_qualify_ctx *ctx, const char *kind,
                                const gf_candidate *cand, int batch, gf_math math,
                                const gf_module_id *m)
{
    char tier[16];
    json_object *r = json_object_new_object();
    json_object_object_add(r, "format", json_object_new_int(1));
    json_object_object_add(r, "kind", json_object_new_string(kind));
    json_object *t = json_object_new_object();
    json_object_object_add(t, "boundary", json_object_new_string(cand->boundary));
    json_object_object_add(t, "batch", json_object_new_int(batch));
    json_object_object_add(t, "math", json_object_new_string(gf_math_name(math)));
    json_object_object_add(r, "tuple", t);
    json_object *mo = json_object_new_object();
    json_object_object_add(mo, "area", json_object_new_string(m->area));
    json_object_object_add(mo, "tier", json_object_new_string(tier_name(m->tier, tier, sizeof tier)));
    json_object_object_add(mo, "artifact", json_object_new_string("ptx-jit"));
    json_object_object_add(mo, "sha256", json_object_new_string(m->sha256));
    json_object_object_add(r, "module", mo);
    json_object *cfg = json_object_new_object();
    for (size_t i = 0; i < cand->n_config; i++)
        json_object_object_add(cfg, cand->config[i].key,
                               json_object_new_string(cand->config[i].value));
    json_object_object_add(r, "config", cfg);
    json_object_object_add(r, "card", gf_card_to_json(ctx->card));
    return r;
}

/* Write r as records_dir/<sha256>.json (temp file + rename); name in out. */
static int record_write(const gf_qualify_ctx *ctx, json_object *r, char out[GF_SHA256_HEX_LEN])
{
    const char *text = json_object_to_json_string_ext(r, JSON_C_TO_STRING_PRETTY |
                                                          JSON_C_TO_STRING_SPACED);
    size_t len = strlen(text);
    gf_sha256_hex(text, len, out);
    if (mkdir(ctx->records_dir, 0755) != 0 && errno != EEXIST) {
        GF_ERROR("%s: cannot create: %s", ctx->records_dir, strerror(errno));
        return GF_EIO;
    }
    char *path = gf_strfmt("%s/%s.json", ctx->records_dir, out);
    int rc = gf_write_file_atomic(path, text, len);
    free(path);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static json_object *timing_json(double *v, int n, double *median, double *lo, double *hi)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    *lo = v[0];
    *hi = v[n - 1];
    json_object *o = json_object_new_object();
    json_object_object_add(o, "median", json_object_new_double(*median));
    json_object_object_add(o, "spread", json_object_new_double(*hi - *lo));
    json_object_object_add(o, "runs", json_object_new_int(n));
    json_object_object_add(o, "min", json_object_new_double(*lo));
    json_object_object_add(o, "max", json_object_new_double(*hi));
    return o;
}

/* ---- accuracy against float64 --------------------------------------------- */

bool gfq_acc_add_within(gfq_acc_errors *e, double got, double ref, double lim)
{
    double d = fabs(got - ref);
    bool ok = d <= lim;
    e->elements++;
    if (!ok)
        e->mismatches++;
    e->max_abs = fmax(e->max_abs, d);
    if (fabs(ref) > 1e-3)
        e->max_rel = fmax(e->max_rel, d / fabs(ref));
    e->num += d * d;
    e->den += ref * ref;
    return ok;
}

bool gfq_acc_add(gfq_acc_errors *e, double got, double ref)
{
    return gfq_acc_add_within(e, got, ref, e->atol + e->rtol * fabs(ref));
}

long gfq_count_unwritten(const float *got, size_t n)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(got[i]))
            bad++;
    return bad;
}

int gfq_acc_record(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                   gf_qualify_result *res, uint64_t seed, const gfq_acc_errors *e, long unwritten,
                   size_t outputs, const char *what, const char *extra_key, int64_t extra_value)
{
    long mismatches = e->mismatches + unwritten;
    double norm_err = sqrt(e->num / (e->den > 0 ? e->den : 1));
    fprintf(ctx->report, "  accuracy: %ld %s vs float64, max abs %.3g, max rel %.3g, "
            "normalised %.3g, %ld mismatches (atol %g, rtol %g), %ld unwritten of %zu\n",
            e->elements, what, e->max_abs, e->max_rel, norm_err, mismatches, e->atol, e->rtol,
            unwritten, outputs);
    res->accurate = mismatches == 0;
    json_object *j = record_base(ctx, "accuracy", cand, B, math, &res->module);
    json_object_object_add(j, "reference", json_object_new_string("float64"));
    json_object_object_add(j, "seed", json_object_new_int64((int64_t)(seed & 0x7fffffffffffLL)));
    json_object_object_add(j, "elements", json_object_new_int64(e->elements));
    json_object_object_add(j, extra_key, json_object_new_int64(extra_value));
    json_object_object_add(j, "max_abs_err", json_object_new_double(e->max_abs));
    json_object_object_add(j, "max_rel_err", json_object_new_double(e->max_rel));
    json_object_object_add(j, "normalised_err", json_object_new_double(norm_err));
    json_object_object_add(j, "atol", json_object_new_double(e->atol));
    json_object_object_add(j, "rtol", json_object_new_double(e->rtol));
    json_object_object_add(j, "mismatches", json_object_new_int64(mismatches));
    int rc = record_write(ctx, j, res->accuracy);
    json_object_put(j);
    return rc;
}

int gfq_check_module(const char *boundary, const char *sha, const gf_qualify_result *res)
{
    if (strcmp(sha, res->module.sha256) == 0)
        return 0;
    GF_ERROR("%s: the module that loaded (%s) is not the candidate (%s)", boundary, sha,
             res->module.sha256);
    return GF_ESTATE;
}

/* ---- A/B timing ------------------------------------------------------------ */

static double stats_total_ns(const gf_devstats *st)
{
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    double total = 0;
    for (size_t i = 0; i < n; i++)
        total += (double)rows[i].total_ns;
    return total;
}

/* One run of sub into st (see gfq_ab_subject). */
static int ab_run(const gfq_ab_subject *sub, gf_devstats *st)
{
    if (!sub->gpu)
        return sub->run(sub->arg, st);
    int rc = gf_gpu_timing_begin(sub->gpu, sub->stage, "qualify");
    rc = rc ? rc : sub->run(sub->arg, NULL);
    rc = rc ? rc : gf_gpu_timing_end(sub->gpu);
    gf_gpu_timing_collect(sub->gpu, st);
    return rc;
}

int gfq_ab_rounds(const gf_qualify_ctx *ctx, const gfq_ab_subject *sub, double scale, double *a,
                  double *b)
{
    int rc = 0;
    for (int r = -1; r < ctx->rounds && !rc; r++)
        for (int route = 0; route < 2 && !rc; route++) {
            gf_devstats *st = gf_devstats_new();
            rc = sub->set_route(sub->arg, route == 0 ? GF_ROUTE_OWN : GF_ROUTE_LIBRARY);
            rc = rc ? rc : ab_run(sub, st);
            const gf_devstats_row *rows;
            size_t n = gf_devstats_rows(st, &rows);
            for (size_t i = 0; i < n && !rc; i++)
                if (rows[i].failed || !rows[i].count)
                    rc = GF_EDEVICE;
            if (!rc && r >= 0)
                (route == 0 ? a : b)[r] = stats_total_ns(st) * scale;
            gf_devstats_destroy(&st);
        }
    return rc;
}

/* From the A/B rounds (a: candidate, b: library, ms): the speed record when
 * the candidate wins outside the noise, then the end-to-end network with and
 * without it (segmentation for the LSTM, the filterbank, the 1-D
 * convolutions and the head's layers, embedding for the ResNet, the pooling
 * and seg_1, the fbank and the embedding network from the waveform for the
 * fbank), whose record is written unless the network got slower in every
 * run (the fastest with it slower than the slowest without). */
static int speed_and_e2e(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B,
                         gf_math math, gf_qualify_result *res, double *a, double *b,
                         uint64_t *rng)
{
    double am, alo, ahi, bm, blo, bhi;
    json_object *r = record_base(ctx, "speed", cand, B, math, &res->module);
    json_object_object_add(r, "unit", json_object_new_string("ms"));
    json_object_object_add(r, "order", json_object_new_string("ABAB"));
    json_object_object_add(r, "candidate", timing_json(a, ctx->rounds, &am, &alo, &ahi));
    json_object_object_add(r, "library", timing_json(b, ctx->rounds, &bm, &blo, &bhi));
    res->speedup = bm / am;
    res->win = ahi < blo && res->speedup > 1.0;   /* outside the noise */
    fprintf(ctx->report, "  speed: own %.3f ms [%.3f..%.3f], library %.3f ms [%.3f..%.3f]: "
            "%.2fx%s\n", am, alo, ahi, bm, blo, bhi, res->speedup,
            res->win ? "" : " (no win outside the spread of the runs)");
    int rc = res->win ? record_write(ctx, r, res->speed) : 0;
    json_object_put(r);
    if (rc || !res->win)
        return rc;
    bool seg = strcmp(cand->area, "lstm") == 0 || strcmp(cand->area, "sincnet") == 0 ||
               strcmp(cand->area, "segconv") == 0 || strcmp(cand->area, "dense") == 0;
    const char *model = seg ? ctx->segmentation_model : ctx->embedding_model;
    if (!model) {
        fprintf(ctx->report, "  end to end: no %s model given, not measured\n",
                seg ? "segmentation" : "embedding");
        res->win = false;
        return 0;
    }
    bool fbank = strcmp(cand->area, "fbank") == 0, own_trunk = false;
    rc = seg     ? gfq_e2e_segmentation(ctx, cand->boundary, B, math, rng, a, b)
         : fbank ? gfq_e2e_fbank(ctx, cand->boundary, B, math, rng, a, b)
                 : gfq_e2e_embedding(ctx, cand->boundary, B, math, rng, a, b, &own_trunk);
    if (rc)
        return rc;
    r = record_base(ctx, "end-to-end", cand, B, math, &res->module);
    json_object_object_add(r, "unit", json_object_new_string("s"));
    json_object_object_add(r, "order", json_object_new_string("ABAB"));
    json_object_object_add(r, "pipeline", json_object_new_string(
        fbank ? "fbank and embedding network on the card"
        : !seg ? (own_trunk ? "embedding network on the card, own ResNet"
                            : "embedding network on the card")
        : strcmp(cand->area, "lstm") == 0 ? "segmentation network on the card"
                                          : "segmentation network on the card, own LSTM"));
    json_object_object_add(r, "candidate", timing_json(a, ctx->rounds, &am, &alo, &ahi));
    json_object_object_add(r, "library", timing_json(b, ctx->rounds, &bm, &blo, &bhi));
    res->e2e_speedup = bm / am;
    bool slower = alo > bhi;   /* outside the noise, as the validator's rule */
    fprintf(ctx->report, "  end to end (%s): %.3f ms with, %.3f ms without: %.2fx%s\n",
            seg ? "segmentation network" : fbank ? "fbank + embedding network"
                                                 : "embedding network",
            am * 1e3, bm * 1e3, res->e2e_speedup,
            slower ? " (slower in every run: no win)" : "");
    if (!slower)
        rc = record_write(ctx, r, res->end_to_end);
    else
        res->win = false;
    json_object_put(r);
    return rc;
}

/* An accurate candidate's speed: interleaved A/B rounds of sub (ms), then
 * speed_and_e2e's records. */
int gfq_measure_speed(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                      gf_qualify_result *res, const gfq_ab_subject *sub, uint64_t *rng)
{
    double *a = gf_calloc((size_t)ctx->rounds, sizeof(double));
    double *b = gf_calloc((size_t)ctx->rounds, sizeof(double));
    int rc = gfq_ab_rounds(ctx, sub, 1e-6, a, b);
    if (!rc)
        rc = speed_and_e2e(ctx, cand, B, math, res, a, b, rng);
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
    if (strcmp(cand->area, "lstm") == 0)
        return gfq_lstm(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "sincnet") == 0)
        return gfq_sinc(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "segconv") == 0)
        return gfq_segconv(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "dense") == 0)
        return gfq_dense(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "resnet") == 0 || strcmp(cand->area, "resnet32") == 0)
        return gfq_conv(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "fbank") == 0)
        return gfq_fbank(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "pooling") == 0)
        return gfq_pool(ctx, cand, batch, math, out);
    if (strcmp(cand->area, "embedding") == 0)
        return gfq_seg1(ctx, cand, batch, math, out);
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
