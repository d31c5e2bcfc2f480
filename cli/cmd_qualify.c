/* cmd_qualify.c — `gpuflock qualify`: measure the project's own kernels on a
 * card and write the evidence records a binding can stand on.
 *
 * Runs under the card's exclusive lock and the box-wide bench lock, so no
 * other job or timing run shares the card meanwhile. Each candidate is asked
 * for explicitly (route/planner.c: exactly that module, never a fallback);
 * qualify/qualify.c makes the measurements and writes the records, with each
 * network's candidates in qualify/seg.c and qualify/emb.c. */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "common/card.h"
#include "common/config.h"
#include "common/error.h"
#include "common/lock.h"
#include "common/log.h"
#include "common/util.h"
#include "gpu/blas.h"
#include "route/boundary.h"
#include "gpu/device.h"
#include "route/planner.h"
#include "qualify/qualify.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int gf_cmd_qualify(int argc, char **argv, gf_cli_ctx *cli);

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock qualify [--gpu N] [--area A[,A...]] [--math M] [--batch B] [--rounds N]\n"
            "                        [--models DIR] [--evidence DIR] [--binding-out FILE]\n"
            "                        [--config FILE]\n"
            "\n"
            "Measure every own-kernel candidate on a CUDA card, for each production batch\n"
            "(1, 8, 32) and math mode (fp32, tf32): accuracy against a float64 reference on\n"
            "fresh random inputs, speed against the library route (interleaved A/B rounds\n"
            "timed by device events), and the segmentation network end to end. Records go\n"
            "to EVIDENCE/records/<sha256>.json; a binding for the wins (this card's point\n"
            "scope) is written to --binding-out, to be reviewed and promoted into\n"
            "EVIDENCE/bindings/ (docs/evidence.md).\n"
            "\n"
            "  --gpu N            configured card (default 0); must be a CUDA card\n"
            "  --area A[,A...]    only candidates of these areas (lstm, ...)\n"
            "  --math M           only fp32 or tf32\n"
            "  --batch B          only this production batch\n"
            "  --rounds N         A/B rounds per measurement (default 10)\n"
            "  --models DIR       segmentation.safetensors for the end-to-end record\n"
            "                     (default: models_dir of the configuration)\n"
            "  --evidence DIR     evidence folder (default: $GPUFLOCK_EVIDENCE, else the\n"
            "                     evidence/ folder of the tree gpuflock was built from)\n"
            "  --binding-out FILE write the binding there (default: standard output)\n"
            "\n"
            "Exit status: 0 done, 1 a measurement failed, 64 usage, 69 no such CUDA card,\n"
            "75 locks not had, 78 configuration error.\n");
}

typedef struct {
    const char *config, *area, *models, *evidence, *binding_out;
    int gpu, batch, rounds;
    int math;   /* -1: both */
} opts;

static int parse(int argc, char **argv, opts *o)
{
    static const struct option longopts[] = {
        { "gpu", required_argument, 0, 'g' },     { "area", required_argument, 0, 'a' },
        { "math", required_argument, 0, 'm' },    { "batch", required_argument, 0, 'b' },
        { "rounds", required_argument, 0, 'r' },  { "models", required_argument, 0, 'M' },
        { "evidence", required_argument, 0, 'e' }, { "binding-out", required_argument, 0, 'o' },
        { "config", required_argument, 0, 'c' },  { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 },
    };
    *o = (opts){ .rounds = 10, .math = -1, .batch = 0 };
    o->evidence = gf_evidence_default_dir();
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        gf_math m;
        switch (c) {
        case 'g':
            if (gf_cli_int("qualify", "--gpu", optarg, 0, &o->gpu) != 0)
                return GF_EXIT_USAGE;
            break;
        case 'a': o->area = optarg; break;
        case 'm':
            if (gf_math_parse(optarg, &m) != 0) {
                fprintf(stderr, "gpuflock qualify: --math: '%s' is not fp32 or tf32\n", optarg);
                return GF_EXIT_USAGE;
            }
            o->math = (int)m;
            break;
        case 'b':
            if (gf_cli_int("qualify", "--batch", optarg, 1, &o->batch) != 0)
                return GF_EXIT_USAGE;
            if (!gf_batch_is_production(o->batch)) {
                fprintf(stderr, "gpuflock qualify: --batch: %s is not a production batch "
                        "(1, 8, 32)\n", optarg);
                return GF_EXIT_USAGE;
            }
            break;
        case 'r':
            if (gf_cli_int("qualify", "--rounds", optarg, 2, &o->rounds) != 0)
                return GF_EXIT_USAGE;
            if (o->rounds > 1000) {
                fprintf(stderr, "gpuflock qualify: --rounds: between 2 and 1000\n");
                return GF_EXIT_USAGE;
            }
            break;
        case 'M': o->models = optarg; break;
        case 'e': o->evidence = optarg; break;
        case 'o': o->binding_out = optarg; break;
        case 'c': o->config = optarg; break;
        case 'h': usage(stdout); return -1;
        default: return gf_cli_opt_error("qualify", c, argc, argv, longopts);
        }
    }
    if (optind != argc) {
        fprintf(stderr, "gpuflock qualify: unexpected argument '%s'\n", argv[optind]);
        return GF_EXIT_USAGE;
    }
    return 0;
}

static void say_busy(const gf_lock *lock, void *arg)
{
    (void)arg;
    fprintf(stderr, "gpuflock qualify: waiting for %s (held by another job)\n", gf_lock_path(lock));
}

/* The card's exclusive lock, then the bench lock. */
static int take_locks(const gf_config *cfg, const gf_device_conf *dev, gf_lock **card,
                      gf_lock **bench)
{
    gf_lock_wait_opts w = { .stop = NULL, .on_busy = say_busy, .arg = NULL };
    *card = gf_lock_open(dev->lock, cfg->lock_owner_uid, NULL, 0);
    *bench = gf_lock_open(cfg->bench_lock, cfg->lock_owner_uid, NULL, 0);
    if (!*card || !*bench || gf_lock_wait(*card, GF_LOCK_EXCLUSIVE, -1, &w) != 0 ||
        gf_lock_wait(*bench, GF_LOCK_EXCLUSIVE, -1, &w) != 0) {
        fprintf(stderr, "gpuflock qualify: cannot take the locks of card %d\n", dev->index);
        return GF_EXIT_TEMPFAIL;
    }
    return 0;
}

/* Measure one candidate on every selected tuple, appending to entries. */
static int run_candidate(const gf_qualify_ctx *ctx, const gf_planner *pl, const opts *o,
                         const gf_candidate *cand, gf_qualify_entry *entries, size_t *n)
{
    int failures = 0;
    int tier = gf_gpu_cc(ctx->gpu) >= 90 ? 90 : 75;
    gf_module_id module;
    if (pl->modules->identity(pl->modules->ctx, cand->area, tier, ctx->card, &module) != 0) {
        fprintf(stderr, "gpuflock qualify: this build has no %s module for sm%d (built without "
                "nvcc?)\n", cand->area, tier);
        return 1;
    }
    for (int bi = 0; bi < GF_N_PRODUCTION_BATCHES; bi++) {
        int batch = gf_production_batches()[bi];
        if (o->batch && batch != o->batch)
            continue;
        for (int m = 0; m < GF_N_MATH; m++) {
            if (o->math >= 0 && m != o->math)
                continue;
            gf_route_request req = { cand->boundary, batch, (gf_math)m, cand->config,
                                     cand->n_config, cand->area };
            gf_route route;
            int rc = gf_plan_explicit(pl, &req, &module, &route);
            if (rc != 0) {
                fprintf(stderr, "gpuflock qualify: %s batch %d %s: %s (%s)\n", cand->boundary,
                        batch, gf_math_name((gf_math)m), route.detail, gf_strerror(rc));
                failures++;
                continue;
            }
            gf_qualify_entry *e = &entries[*n];
            memset(e, 0, sizeof *e);
            e->cand = cand;
            e->batch = batch;
            e->math = (gf_math)m;
            e->result.module = module;
            rc = gf_qualify_run(ctx, cand, batch, (gf_math)m, &e->result);
            if (rc == GF_EUNSUP) {
                fprintf(stderr, "gpuflock qualify: %s batch %d %s: refused on this card\n",
                        cand->boundary, batch, gf_math_name((gf_math)m));
                continue;
            }
            if (rc != 0) {
                fprintf(stderr, "gpuflock qualify: %s batch %d %s failed: %s\n", cand->boundary,
                        batch, gf_math_name((gf_math)m), gf_strerror(rc));
                failures++;
                continue;
            }
            (*n)++;
        }
    }
    return failures ? 1 : 0;
}

/* Whether area is one of the comma-separated names in list. */
static bool area_listed(const char *list, const char *area)
{
    size_t n = strlen(area);
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, area, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

int gf_cmd_qualify(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    gf_config *cfg = NULL;
    if (gf_config_load(o.config, &cfg) != 0)
        return GF_EXIT_CONFIG;
    int status = 0;
    gf_lock *card_lock = NULL, *bench_lock = NULL;
    gf_gpu *gpu = NULL;
    gf_blas_gpu *blas = NULL;
    FILE *binding = stdout;
    char *records = gf_strfmt("%s/records", o.evidence);
    char *seg = gf_strfmt("%s/segmentation.safetensors", o.models ? o.models : cfg->models_dir);
    char *emb = gf_strfmt("%s/embedding.safetensors", o.models ? o.models : cfg->models_dir);
    const gf_device_conf *dev = gf_config_device(cfg, o.gpu);
    gf_card_identity card;
    if (!dev || dev->kind != GF_DEVICE_CUDA) {
        fprintf(stderr, "gpuflock qualify: card %d is %s: qualification needs a CUDA card\n",
                o.gpu, dev ? "a declared CPU card" : "not in the configuration");
        status = GF_EXIT_UNAVAIL;
        goto out_free;
    }
    if ((status = take_locks(cfg, dev, &card_lock, &bench_lock)) != 0)
        goto out_free;
    if (gf_card_identify(dev, &card) != 0 || gf_gpu_open(dev->index, &gpu) != 0 ||
        gf_blas_gpu_open(gpu, &blas) != 0) {
        status = GF_EXIT_UNAVAIL;
        goto out_free;
    }
    if (o.binding_out && !(binding = fopen(o.binding_out, "w"))) {
        fprintf(stderr, "gpuflock qualify: %s: cannot write\n", o.binding_out);
        status = 1;
        goto out_free;
    }
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = gf_now_ns();
    bool have_seg = access(seg, R_OK) == 0, have_emb = access(emb, R_OK) == 0;
    gf_qualify_ctx ctx = { gpu, blas, &card, records, have_seg ? seg : NULL,
                           have_emb ? emb : NULL, o.rounds, seed, stderr };
    gf_planner pl = { NULL, &card, &gf_module_provider_embedded, gf_planner_force_library_env() };
    gf_qualify_set *set = gf_qualify_set_new(gf_gpu_cc(gpu));
    size_t nc = 0;
    const gf_candidate *cands = gf_qualify_set_candidates(set, &nc);
    gf_qualify_entry *entries = gf_calloc(nc * GF_N_PRODUCTION_BATCHES * GF_N_MATH,
                                          sizeof *entries);
    size_t ran = 0, n = 0, area_start = 0;
    fprintf(binding, "# Written by gpuflock qualify on %s (%s): review, then promote into\n"
            "# evidence/bindings/ (docs/evidence.md).\nbindings:\n", card.name, card.uuid);
    for (size_t i = 0; i < nc; i++) {
        if (o.area && !area_listed(o.area, cands[i].area))
            continue;
        ran++;
        if (run_candidate(&ctx, &pl, &o, &cands[i], entries, &n) != 0)
            status = 1;
        bool area_ends = i + 1 == nc || strcmp(cands[i + 1].area, cands[i].area) != 0;
        if (area_ends) {   /* one binding per area: every proof of its module */
            int proofs = gf_qualify_write_binding(binding, &card, entries + area_start,
                                                  n - area_start);
            fprintf(stderr, "gpuflock qualify: %s: %zu tuples measured, %d won\n",
                    cands[i].area, n - area_start, proofs);
            area_start = n;
        }
    }
    free(entries);
    gf_qualify_set_destroy(&set);
    if (ran == 0) {
        fprintf(stderr, "gpuflock qualify: no candidate of area %s\n", o.area ? o.area : "?");
        status = GF_EXIT_USAGE;
    }
out_free:
    if (binding && binding != stdout)
        fclose(binding);
    gf_blas_gpu_destroy(&blas);
    gf_gpu_destroy(&gpu);
    gf_lock_destroy(&bench_lock);
    gf_lock_destroy(&card_lock);
    gf_config_destroy(&cfg);
    free(records);
    free(seg);
    free(emb);
    return status;
}
