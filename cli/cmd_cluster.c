/* cmd_cluster.c — `gpuflock cluster`: run the community-1 clustering again
 * from saved intermediates (binarized segmentation and embeddings as .npy),
 * as pyannote users do when they tune clustering without recomputing the
 * networks; RTTM (or JSON) out. The recipe itself is diar/cluster/cluster.c. */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "cli/diarknobs.h"
#include "common/config.h"
#include "common/error.h"
#include "common/lock.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/cluster.h"
#include "diar/io/npy.h"
#include "diar/cluster/plda.h"
#include "diar/io/rttm.h"
#include "diar/pipeline.h"
#include "diar/cluster/ahc_gpu.h"
#include "gpu/device.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gf_cmd_cluster(int argc, char **argv, gf_cli_ctx *cli);

/* sysexits.h EX_CANTCREAT: the output file cannot be written */
enum { EXIT_CANTCREAT = 73 };

/* frames per 10 s window of segmentation-3.0 at 16 kHz; the frame grid
 * (duration 0.0619375 s, step 0.016875 s) belongs to that count */
#define SEG_FRAMES 589

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock cluster --segmentations SEG.npy --embeddings EMB.npy [--plda DIR]\n"
            "                        [--segmentation-step F | --step SEC]\n"
            "                        [--num-speakers N | --min-speakers A --max-speakers B]\n"
            "                        [--clustering-threshold X] [--Fa X] [--Fb X]\n"
            "                        [--min-duration-off SEC] [-o OUT] [--uri NAME]\n"
            "                        [--json] [--timings] [--gpu N] [--threads N]\n"
            "                        [--config FILE]\n"
            "\n"
            "Cluster saved intermediates with the community-1 recipe (powerset-decoded\n"
            "segmentation, AHC, PLDA + VBx) and write speaker turns.\n"
            "  --segmentations  windows x 589 x speakers binarized activity (0/1)\n"
            "  --embeddings     windows x speakers x 256 embeddings (NaN: inactive speaker)\n"
            "  --plda DIR       xvec_transform.npz and plda.npz (default: models_dir/plda\n"
            "                   of the configuration)\n"
            "  --segmentation-step F: the windows' step as a fraction of their 10 s\n"
            "                   (pyannote's segmentation_step; default: the configuration's\n"
            "                   diarize.segmentation_step, else 0.1), as diarize made them\n"
            "  --step SEC       the same in seconds (default 1.0)\n"
            "  --num-speakers N, --min-speakers A, --max-speakers B: as pyannote's\n"
            "  --clustering-threshold X, --Fa X, --Fb X, --min-duration-off SEC: the recipe's\n"
            "                   clustering.threshold (0.6), clustering.Fa (0.07), .Fb (0.8),\n"
            "                   segmentation.min_duration_off (0 s); default: the diarize:\n"
            "                   section of the configuration, else those\n"
            "  -o OUT           output file (default: standard output)\n"
            "  --uri NAME       recording name in the RTTM (default: SEG's base name)\n"
            "  --json           JSON turns instead of RTTM\n"
            "  --timings        print per-stage seconds and sizes on stderr (one JSON line)\n"
            "  --gpu N          run the AHC linkage on CUDA card N of the configuration,\n"
            "                   under its exclusive lock (the distance matrix then lives in\n"
            "                   the card's memory: n(n-1)/2 doubles for n embeddings)\n"
            "  --threads N      host threads for the stages after the AHC linkage (default:\n"
            "                   one per core, at most 16; the result does not depend on it)\n"
            "Exit status: 0 ok, 64 usage, 65 bad input data or PLDA, 66 input missing,\n"
            "69 card unavailable, 73 output not writable, 78 configuration error.\n");
}

static int parse_sec(const char *opt, const char *s, double lo, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v < lo) {
        fprintf(stderr, "gpuflock cluster: %s '%s': expected a number of seconds%s\n", opt, s,
                lo > 0 ? " > 0" : " >= 0");
        return -1;
    }
    if (lo > 0 && v == 0.0) {
        fprintf(stderr, "gpuflock cluster: %s must be > 0\n", opt);
        return -1;
    }
    *out = v;
    return 0;
}

/* The default PLDA directory: <models_dir>/plda from the configuration.
 * Returns a new string, or NULL after printing the configuration error. */
static char *default_plda_dir(const char *config_path)
{
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return NULL;
    char *dir = gf_strfmt("%s/plda", cfg->models_dir);
    gf_config_destroy(&cfg);
    return dir;
}

static void say_busy(const gf_lock *lock, void *arg)
{
    (void)arg;
    fprintf(stderr, "gpuflock cluster: waiting for %s (held by another job)\n",
            gf_lock_path(lock));
}

/* Card `index` of the configuration, under its exclusive lock, opened for
 * the linkage. Returns 0 or an exit status (message printed). */
static int take_card(const char *config_path, int index, gf_lock **lock, gf_gpu **gpu)
{
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return GF_EXIT_CONFIG;
    int status = 0;
    const gf_device_conf *dev = gf_config_device(cfg, index);
    gf_lock_wait_opts w = { .stop = NULL, .on_busy = say_busy, .arg = NULL };
    if (!dev || dev->kind != GF_DEVICE_CUDA) {
        fprintf(stderr, "gpuflock cluster: --gpu %d: card %d is %s\n", index, index,
                dev ? "a declared CPU card, not a CUDA card" : "not in the configuration");
        status = GF_EXIT_UNAVAIL;
    } else if (!(*lock = gf_lock_open(dev->lock, cfg->lock_owner_uid, NULL, 0)) ||
               gf_lock_wait(*lock, GF_LOCK_EXCLUSIVE, -1, &w) != 0) {
        fprintf(stderr, "gpuflock cluster: cannot take the lock of card %d\n", index);
        status = GF_EXIT_UNAVAIL;
    } else if (gf_gpu_open(dev->index, gpu) != 0) {
        fprintf(stderr, "gpuflock cluster: cannot open CUDA card %d\n", index);
        status = GF_EXIT_UNAVAIL;
    }
    gf_config_destroy(&cfg);
    return status;
}

static int exit_for(int rc)
{
    return rc == GF_ENOENT || rc == GF_EIO ? GF_EXIT_NOINPUT : GF_EXIT_DATAERR;
}

static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = gf_strdup(b);
    size_t n = strlen(s);
    if (n > 4 && strcmp(s + n - 4, ".npy") == 0)
        s[n - 4] = '\0';
    return s;
}

int gf_cmd_cluster(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    enum { O_SEG = 1000, O_EMB, O_PLDA, O_STEP, O_NUM, O_MIN, O_MAX, O_URI, O_JSON,
           O_CONFIG, O_TIMINGS, O_GPU, O_THREADS, O_HELP };
    static const struct option opts[] = {
        { "segmentations", required_argument, NULL, O_SEG },
        { "embeddings", required_argument, NULL, O_EMB },
        { "plda", required_argument, NULL, O_PLDA },
        { "step", required_argument, NULL, O_STEP },
        { "num-speakers", required_argument, NULL, O_NUM },
        { "min-speakers", required_argument, NULL, O_MIN },
        { "max-speakers", required_argument, NULL, O_MAX },
        GF_KNOB_CLUSTER_OPTIONS,
        { "output", required_argument, NULL, 'o' },
        { "uri", required_argument, NULL, O_URI },
        { "json", no_argument, NULL, O_JSON },
        { "config", required_argument, NULL, O_CONFIG },
        { "timings", no_argument, NULL, O_TIMINGS },
        { "gpu", required_argument, NULL, O_GPU },
        { "threads", required_argument, NULL, O_THREADS },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *seg_path = NULL, *emb_path = NULL, *plda_arg = NULL, *out_path = "-";
    const char *uri_arg = NULL, *config_path = NULL;
    bool json = false, timings = false;
    int gpu_index = -1;
    gf_cluster_opts o = gf_cluster_defaults();
    gf_knobs knobs = gf_knobs_none();
    double step_s = 0.0;   /* --step SEC (0: not given) */
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        int taken = gf_knobs_take(&knobs, "cluster", c, optarg);
        if (taken < 0)
            return GF_EXIT_USAGE;
        if (taken)
            continue;
        switch (c) {
        case O_SEG: seg_path = optarg; break;
        case O_EMB: emb_path = optarg; break;
        case O_PLDA: plda_arg = optarg; break;
        case O_STEP:
            if (parse_sec("--step", optarg, 1e-9, &step_s))
                return GF_EXIT_USAGE;
            break;
        case O_NUM:
            if (gf_cli_int("cluster", "--num-speakers", optarg, 1, &o.num_speakers))
                return GF_EXIT_USAGE;
            break;
        case O_MIN:
            if (gf_cli_int("cluster", "--min-speakers", optarg, 1, &o.min_speakers))
                return GF_EXIT_USAGE;
            break;
        case O_MAX:
            if (gf_cli_int("cluster", "--max-speakers", optarg, 1, &o.max_speakers))
                return GF_EXIT_USAGE;
            break;
        case 'o': out_path = optarg; break;
        case O_URI: uri_arg = optarg; break;
        case O_JSON: json = true; break;
        case O_TIMINGS: timings = true; break;
        case O_GPU:
            if (gf_cli_int("cluster", "--gpu", optarg, 0, &gpu_index))
                return GF_EXIT_USAGE;
            break;
        case O_THREADS:
            if (gf_cli_int("cluster", "--threads", optarg, 1, &o.threads))
                return GF_EXIT_USAGE;
            if (o.threads > 4096) {   /* worker.cpu_threads' range */
                fprintf(stderr, "gpuflock cluster: --threads %d: at most 4096\n", o.threads);
                return GF_EXIT_USAGE;
            }
            break;
        case O_CONFIG: config_path = optarg; break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        default:
            return gf_cli_opt_error("cluster", c, argc, argv, opts);
        }
    }
    if (optind < argc) {
        return gf_cli_usage_error("cluster", "unexpected argument '%s'", argv[optind]);
    }
    if (!seg_path || !emb_path) {
        return gf_cli_usage_error("cluster", "--segmentations and --embeddings are required "
                                             "(usage: gpuflock cluster --segmentations SEG.npy "
                                             "--embeddings EMB.npy [OPTIONS])");
    }
    if (o.num_speakers && (o.min_speakers || o.max_speakers)) {
        fprintf(stderr, "gpuflock cluster: --num-speakers excludes --min-speakers and "
                        "--max-speakers\n");
        return GF_EXIT_USAGE;
    }
    if (o.min_speakers && o.max_speakers && o.min_speakers > o.max_speakers) {
        fprintf(stderr, "gpuflock cluster: --min-speakers %d is above --max-speakers %d\n",
                o.min_speakers, o.max_speakers);
        return GF_EXIT_USAGE;
    }
    if (uri_arg && (!*uri_arg || strpbrk(uri_arg, " \t\n"))) {
        fprintf(stderr, "gpuflock cluster: --uri '%s': must be one word\n", uri_arg);
        return GF_EXIT_USAGE;
    }

    /* the knobs: the command line's, else the configuration's (one given
     * must load; none found: the recipe's) */
    gf_config *kcfg = NULL;
    if (gf_config_load_no_devices(config_path, &kcfg) != 0) {
        if (config_path)
            return GF_EXIT_CONFIG;
        kcfg = NULL;
    }
    if (step_s > 0.0 && !isnan(knobs.step)) {
        gf_config_destroy(&kcfg);
        return gf_cli_usage_error("cluster", "--step and --segmentation-step: one or the other");
    }
    gf_knobs_apply(&knobs, kcfg, &o, NULL);
    gf_config_destroy(&kcfg);
    if (step_s > 0.0)   /* --step SEC, in place of --segmentation-step's fraction */
        o.chunks.step = step_s;

    int status = 0;
    gf_lock *card_lock = NULL;
    gf_gpu *gpu = NULL;
    gf_npy_array *seg = NULL, *emb = NULL;
    gf_plda *plda = NULL;
    char *plda_dir = NULL, *uri = NULL;
    float *segf = NULL, *embf = NULL;
    int rc = gf_npy_load(seg_path, &seg);
    if (rc) {
        status = exit_for(rc);
        goto out_free;
    }
    rc = gf_npy_load(emb_path, &emb);
    if (rc) {
        status = exit_for(rc);
        goto out_free;
    }
    size_t want_seg[] = { (size_t)-1, SEG_FRAMES, (size_t)-1 };
    if (gf_npy_check_shape(seg_path, seg, 3, want_seg) != 0 || seg->shape[0] == 0
        || seg->shape[2] == 0) {
        if (seg->ndim == 3 && (seg->shape[0] == 0 || seg->shape[2] == 0))
            GF_ERROR("%s: no windows or no speakers", seg_path);
        status = GF_EXIT_DATAERR;
        goto out_free;
    }
    size_t C = seg->shape[0], F = seg->shape[1], S = seg->shape[2];
    size_t want_emb[] = { C, S, (size_t)-1 };
    if (gf_npy_check_shape(emb_path, emb, 3, want_emb) != 0) {
        GF_ERROR("%s: must be windows x speakers x dim = (%zu, %zu, dim) to match %s", emb_path,
                 C, S, seg_path);
        status = GF_EXIT_DATAERR;
        goto out_free;
    }
    if (emb->dtype != GF_NPY_F32 && emb->dtype != GF_NPY_F64) {
        GF_ERROR("%s: embeddings must be float32 or float64, not %s", emb_path,
                 gf_npy_dtype_name(emb->dtype));
        status = GF_EXIT_DATAERR;
        goto out_free;
    }
    size_t D = emb->shape[2];
    if (D != GF_DIAR_EMB_DIM) {
        /* said before the PLDA is looked for: what was given, and why not */
        fprintf(stderr, "gpuflock cluster: %s holds %zu-dimensional embeddings%s; the "
                        "community-1 recipe (PLDA + VBx) takes the embedding network's %d\n",
                emb_path, D,
                D == GF_DIAR_WF_DIM ? " (filterbank statistics: the intermediates of `diarize` "
                                      "in weight-free mode, without model files)" : "",
                GF_DIAR_EMB_DIM);
        status = GF_EXIT_DATAERR;
        goto out_free;
    }
    if (plda_arg) {
        plda_dir = gf_strdup(plda_arg);
    } else {
        plda_dir = default_plda_dir(config_path);
        if (!plda_dir) {
            status = GF_EXIT_CONFIG;
            goto out_free;
        }
    }
    rc = gf_plda_load(plda_dir, &plda);
    if (rc) {
        fprintf(stderr, "gpuflock cluster: PLDA in %s unusable\n", plda_dir);
        status = exit_for(rc);
        goto out_free;
    }
    segf = gf_npy_to_f32(seg);
    embf = gf_npy_to_f32(emb);
    if (gf_cluster_check(seg_path, segf, emb_path, embf, C, F, S, D, plda) != 0) {
        status = GF_EXIT_DATAERR;
        goto out_free;
    }
    if (gpu_index >= 0) {
        if ((status = take_card(config_path, gpu_index, &card_lock, &gpu)) != 0)
            goto out_free;
        o.ahc_link = gf_ahc_link_gpu;
        o.ahc_ctx = gpu;
    }
    gf_cluster_result res;
    rc = gf_cluster_run(segf, embf, C, F, S, D, plda, &o, &res);
    if (rc) {
        status = rc == GF_EINVAL ? GF_EXIT_USAGE : GF_EXIT_DATAERR;
        goto out_free;
    }
    if (timings)
        fprintf(stderr,
                "{\"windows\": %zu, \"embeddings\": %zu, \"ahc_clusters\": %zu, "
                "\"clusters\": %zu, \"turns\": %zu, \"count_s\": %.6f, \"ahc_s\": %.6f, "
                "\"plda_s\": %.6f, \"vbx_s\": %.6f, \"assign_s\": %.6f, "
                "\"reconstruct_s\": %.6f}\n",
                C, res.n_train, res.n_ahc, res.n_centroids, res.n_turns, res.t_count, res.t_ahc,
                res.t_plda, res.t_vbx, res.t_assign, res.t_reconstruct);
    uri = uri_arg ? gf_strdup(uri_arg) : base_name(seg_path);
    gf_rttm *r = gf_rttm_new();
    for (size_t i = 0; i < res.n_turns; i++) {
        char name[32];
        snprintf(name, sizeof name, "SPEAKER_%02d", res.turns[i].label);
        gf_rttm_add(r, uri, 1, res.turns[i].start, res.turns[i].end - res.turns[i].start, name);
    }
    gf_cluster_result_free(&res);
    char *text = json ? gf_rttm_json(r) : gf_rttm_format(r);
    if (gf_rttm_write_text(out_path, text, true) != 0)
        status = EXIT_CANTCREAT;
    free(text);
    gf_rttm_destroy(&r);
out_free:
    gf_gpu_destroy(&gpu);
    gf_lock_destroy(&card_lock);
    free(uri);
    free(segf);
    free(embf);
    free(plda_dir);
    gf_plda_destroy(&plda);
    gf_npy_destroy(&seg);
    gf_npy_destroy(&emb);
    return status;
}
