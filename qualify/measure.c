/* measure.c — what every part of `gpuflock qualify` stands on (measure.h):
 * the records, accuracy against float64, the interleaved A/B timing and the
 * speed verdict. It calls no candidate and not the driver. */
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

/* ---- records ------------------------------------------------------------- */

static const char *tier_name(int tier, char *buf, size_t len)
{
    snprintf(buf, len, "sm%d", tier);
    return buf;
}

json_object *gfq_record_base(const gf_qualify_ctx *ctx, const char *kind,
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
int gfq_record_write(const gf_qualify_ctx *ctx, json_object *r, char out[GF_SHA256_HEX_LEN])
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

json_object *gfq_timing_json(double *v, int n, double *median, double *lo, double *hi)
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
    json_object *j = gfq_record_base(ctx, "accuracy", cand, B, math, &res->module);
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
    int rc = gfq_record_write(ctx, j, res->accuracy);
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
    if (rc)
        goto out_collect;
    rc = sub->run(sub->arg, NULL);
    if (rc)
        goto out_collect;
    rc = gf_gpu_timing_end(sub->gpu);
out_collect:
    gf_gpu_timing_collect(sub->gpu, st);
    return rc;
}

/* One run of route 0 (own) or 1 (library) into a fresh devstats; round r
 * >= 0 keeps its device time (x scale) in a[r] or b[r], -1 (the warm-up)
 * none. GF_EDEVICE where a stage failed or recorded nothing. */
static int ab_round(const gfq_ab_subject *sub, double scale, int r, int route, double *a,
                    double *b)
{
    gf_devstats *st = gf_devstats_new();
    int rc = sub->set_route(sub->arg, route == 0 ? GF_ROUTE_OWN : GF_ROUTE_LIBRARY);
    if (rc)
        goto out_destroy;
    rc = ab_run(sub, st);
    if (rc)
        goto out_destroy;
    const gf_devstats_row *rows;
    size_t n = gf_devstats_rows(st, &rows);
    for (size_t i = 0; i < n; i++)
        if (rows[i].failed || !rows[i].count) {
            rc = GF_EDEVICE;
            goto out_destroy;
        }
    if (r >= 0)
        (route == 0 ? a : b)[r] = stats_total_ns(st) * scale;
out_destroy:
    gf_devstats_destroy(&st);
    return rc;
}

int gfq_ab_rounds(const gf_qualify_ctx *ctx, const gfq_ab_subject *sub, double scale, double *a,
                  double *b)
{
    for (int r = -1; r < ctx->rounds; r++)
        for (int route = 0; route < 2; route++)
            GF_TRY(ab_round(sub, scale, r, route, a, b));
    return 0;
}

/* From the A/B rounds (a: candidate, b: library, ms): the speed record when
 * the candidate wins outside the noise, then the end-to-end network with and
 * without it (segmentation for the LSTM, the filterbank, the 1-D
 * convolutions and the head's layers, embedding for the ResNet, the pooling
 * and seg_1, the fbank and the embedding network from the waveform for the
 * fbank), whose record is written unless the network got slower in every
 * run (the fastest with it slower than the slowest without). */

/* The speed record of an A/B run (ms): written when the candidate wins
 * outside the noise. */
static int speed_record(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B,
                        gf_math math, gf_qualify_result *res, double *a, double *b)
{
    double am, alo, ahi, bm, blo, bhi;
    json_object *r = gfq_record_base(ctx, "speed", cand, B, math, &res->module);
    json_object_object_add(r, "unit", json_object_new_string("ms"));
    json_object_object_add(r, "order", json_object_new_string("ABAB"));
    json_object_object_add(r, "candidate", gfq_timing_json(a, ctx->rounds, &am, &alo, &ahi));
    json_object_object_add(r, "library", gfq_timing_json(b, ctx->rounds, &bm, &blo, &bhi));
    res->speedup = bm / am;
    res->win = ahi < blo && res->speedup > 1.0;   /* outside the noise */
    fprintf(ctx->report, "  speed: own %.3f ms [%.3f..%.3f], library %.3f ms [%.3f..%.3f]: "
            "%.2fx%s\n", am, alo, ahi, bm, blo, bhi, res->speedup,
            res->win ? "" : " (no win outside the spread of the runs)");
    int rc = res->win ? gfq_record_write(ctx, r, res->speed) : 0;
    json_object_put(r);
    return rc;
}

int gfq_measure_speed(const gf_qualify_ctx *ctx, const gf_candidate *cand, int B, gf_math math,
                      gf_qualify_result *res, const gfq_ab_subject *sub, uint64_t *rng)
{
    double *a = gf_calloc((size_t)ctx->rounds, sizeof(double));
    double *b = gf_calloc((size_t)ctx->rounds, sizeof(double));
    int rc = gfq_ab_rounds(ctx, sub, 1e-6, a, b);
    if (!rc)
        rc = speed_record(ctx, cand, B, math, res, a, b);
    res->e2e_seed = *rng;
    free(a);
    free(b);
    return rc;
}
