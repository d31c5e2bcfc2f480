/* cmd_diarize.c — `gpuflock diarize`: speaker turns (RTTM) for recordings.
 *
 * Each FILE (a DIR gives the audio files in it) gets its RTTM (and JSON with
 * --json) beside it or in --out, written through a temporary file renamed
 * into place. By default every recording becomes one diarize job of
 * gpuflockd (cli/diarsubmit.c), run by the workers with their models
 * loaded, in shared lock mode, followed with progress bars until all have
 * ended. --local runs diar/pipeline in this process instead, one
 * file after the other; there --gpu N puts the two networks on CUDA card N
 * (diar/backend_gpu), --any on card 0 when there is one. Either way a file
 * that fails is named with the reason, the others go on, and the exit
 * status says whether any failed. */
#include "cli/cli.h"
#include "cli/diarsubmit.h"
#include "cli/cliopts.h"
#include "common/card.h"
#include "common/config.h"
#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "kernels/blas.h"
#include "diar/pipeline.h"
#include "diar/io/rttm.h"
#include "diar/backend_gpu.h"
#include "diar/kernel_plan.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int gf_cmd_diarize(int argc, char **argv, gf_cli_ctx *cli);

/* sysexits.h EX_CANTCREAT: an output file cannot be written */
enum { EXIT_CANTCREAT = 73 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpuflock diarize [--gpu N | --any] [--models DIR] [--num-speakers N |\n"
            "                        --min-speakers A --max-speakers B] [--out DIR] [--json]\n"
            "                        [--save-intermediates DIR] [--local] [--config FILE]\n"
            "                        FILE|DIR...\n"
            "\n"
            "Who spoke when: an RTTM of speaker turns per recording (pyannote community-1\n"
            "recipe). A DIR stands for the audio files in it.\n"
            "Without --local, one job per recording goes to gpuflockd (shared lock mode) and\n"
            "the command follows them with a progress bar per file and for all.\n"
            "  --local          run the pipeline in this process (no broker)\n"
            "  --gpu N, --any   the card: through the broker, its worker runs the job (--any,\n"
            "                   the default: any card); with --local, the CUDA card for the\n"
            "                   networks (--any falls back to the CPU when there is no card)\n"
            "  --models DIR     model files (default: models_dir of the configuration, the\n"
            "                   worker's through the broker); without\n"
            "                   segmentation.safetensors and embedding.safetensors the pipeline\n"
            "                   runs in weight-free mode (energy VAD, fbank statistics) and says so\n"
            "  --num-speakers N, --min-speakers A, --max-speakers B: speaker count constraints\n"
            "  --out DIR        where RTTM/JSON files go (default: beside each input)\n"
            "  --json           also write NAME.json (turns, speakers, mode, timings, devstats)\n"
            "  --save-intermediates DIR  segmentation_logits.npy, segmentations.npy and\n"
            "                   embeddings.npy (into DIR, or DIR/NAME/ for several inputs),\n"
            "                   readable by `gpuflock cluster`\n"
            "Exit status: 0 ok, 64 usage, 65 a recording failed (bad audio, failed stage),\n"
            "66 an input missing, 69 no broker running (use --local or start gpuflockd) or\n"
            "--gpu card unusable, 73 output not writable, 78 configuration or model files\n"
            "unusable; through the broker also 1 when a job was cancelled.\n");
}

/* ---- inputs ----------------------------------------------------------- */

typedef struct {
    char **paths;  /* recordings to diarize, in order */
    size_t n;      /* how many */
    size_t cap;    /* allocated */
} path_list;

static void paths_add(path_list *l, char *p)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 8;
        l->paths = gf_realloc(l->paths, l->cap * sizeof *l->paths);
    }
    l->paths[l->n++] = p;
}

static bool is_audio_name(const char *name)
{
    static const char *const ext[] = { ".wav", ".flac", ".ogg", ".oga", ".mp3", ".opus",
                                       ".aif", ".aiff", ".au", ".w64", ".caf", ".wave", NULL };
    const char *dot = strrchr(name, '.');
    if (!dot || name[0] == '.')
        return false;
    for (int i = 0; ext[i]; i++)
        if (strcasecmp(dot, ext[i]) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Expand a DIR argument into its audio files (sorted); a FILE goes as is
 * (the decoder judges it). Returns 0, or a GF_E* after printing why. */
static int expand(const char *arg, path_list *out)
{
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode)) {
        paths_add(out, gf_strdup(arg));
        return 0;
    }
    DIR *dir = opendir(arg);
    if (!dir) {
        fprintf(stderr, "gpuflock diarize: %s: cannot open directory: %s\n", arg,
                strerror(errno));
        return GF_EIO;
    }
    path_list found = { 0 };
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (!is_audio_name(de->d_name))
            continue;
        char *p = gf_strfmt("%s/%s", arg, de->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            paths_add(&found, p);
        else
            free(p);
    }
    closedir(dir);
    if (found.n == 0) {
        fprintf(stderr, "gpuflock diarize: %s: no audio files in this directory\n", arg);
        free(found.paths);
        return GF_ENOENT;
    }
    qsort(found.paths, found.n, sizeof *found.paths, cmp_str);
    for (size_t i = 0; i < found.n; i++)
        paths_add(out, found.paths[i]);
    free(found.paths);
    return 0;
}

static char *base_noext(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = gf_strdup(b);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return gf_strdup(".");
    if (slash == path)
        return gf_strdup("/");
    char *s = gf_strdup(path);
    s[slash - path] = '\0';
    return s;
}

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gpuflock diarize: %s: cannot create directory: %s\n", dir,
                strerror(errno));
        return GF_EIO;
    }
    return 0;
}

/* ---- progress ----------------------------------------------------------- */

typedef struct {
    bool tty;            /* stderr is a terminal: redraw one line */
    const char *name;    /* current file */
    size_t file_index;   /* 0-based */
    size_t n_files;      /* files in this call */
    size_t last_plain;   /* windows at the last plain line */
} progress_state;

static void progress(void *user, size_t done, size_t total)
{
    progress_state *p = user;
    if (p->tty) {
        enum { WIDTH = 30 };
        int fill = total ? (int)(done * WIDTH / total) : WIDTH;
        char bar[WIDTH + 1];
        for (int i = 0; i < WIDTH; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[WIDTH] = '\0';
        double overall = ((double)p->file_index + (total ? (double)done / (double)total : 1.0))
                         / (double)p->n_files;
        fprintf(stderr, "\r\033[K%s [%s] %zu/%zu windows | all files %3.0f%% (%zu/%zu)", p->name,
                bar, done, total, 100.0 * overall, p->file_index + 1, p->n_files);
        fflush(stderr);
    } else if (done == total || done - p->last_plain >= 32 || p->last_plain == 0) {
        fprintf(stderr, "%s: %zu/%zu windows (file %zu of %zu)\n", p->name, done, total,
                p->file_index + 1, p->n_files);
        p->last_plain = done;
    }
}

/* ---- one recording ------------------------------------------------------ */

static int exit_for(int rc)
{
    return rc == GF_ENOENT ? GF_EXIT_NOINPUT : GF_EXIT_DATAERR;
}

typedef struct {
    const char *out_dir;     /* --out, or NULL: beside the input */
    const char *save_dir;    /* --save-intermediates, or NULL */
    bool json;               /* --json */
    bool several;            /* more than one recording: intermediates in subdirectories */
    const char *models_dir;  /* for the weight-free notice */
} run_conf;

static int diarize_one(gf_diar *d, const char *path, const run_conf *rc_conf,
                       gf_diar_run_opts *o, progress_state *ps)
{
    char *name = base_noext(path);
    char *dir = rc_conf->out_dir ? gf_strdup(rc_conf->out_dir) : dir_of(path);
    char *save = NULL;
    int status = 0;
    if (rc_conf->save_dir) {
        save = rc_conf->several ? gf_strfmt("%s/%s", rc_conf->save_dir, name)
                                : gf_strdup(rc_conf->save_dir);
    }
    o->save_dir = save;
    gf_diar_result res;
    gf_devstats *st = gf_devstats_new();
    int rc = gf_diar_run(d, path, o, st, &res);
    if (ps->tty)
        fprintf(stderr, "\n");
    if (rc) {
        fprintf(stderr, "gpuflock diarize: %s: failed: %s\n", path, gf_strerror(rc));
        status = exit_for(rc);
        goto out_free;
    }
    char *rttm_path = gf_strfmt("%s/%s.rttm", dir, name);
    char *text = gf_rttm_format(res.rttm);
    if (gf_rttm_write_text(rttm_path, text) != 0)
        status = EXIT_CANTCREAT;
    free(text);
    if (!status && rc_conf->json) {
        char *json_path = gf_strfmt("%s/%s.json", dir, name);
        char *js = gf_diar_result_json(&res, rc_conf->models_dir, st);
        if (gf_rttm_write_text(json_path, js) != 0)
            status = EXIT_CANTCREAT;
        free(js);
        free(json_path);
    }
    if (!status)
        printf("%s: %zu turns, %zu speakers, %.1f s of audio in %.1f s -> %s%s\n", path,
               res.rttm->n, res.n_speakers, res.duration, res.t_total, rttm_path,
               res.weight_free ? " (weight-free mode)" : "");
    fflush(stdout);
    free(rttm_path);
    gf_diar_result_free(&res);
out_free:
    gf_devstats_destroy(&st);
    free(save);
    free(dir);
    free(name);
    return status;
}

/* Without --local: one job per recording through gpuflockd (cli/diarsubmit). */
static int via_broker(int argc, char **argv, gf_cli_ctx *cli, const char *config_path,
                      const char *models_arg, const run_conf *conf, int gpu,
                      const gf_diar_run_opts *ro)
{
    int status = 0;
    path_list inputs = { 0 };
    for (int i = optind; i < argc; i++) {
        int rc = expand(argv[i], &inputs);
        if (rc)
            status = exit_for(rc);
    }
    if (inputs.n) {
        gf_diarsubmit_opts o = {
            .config = config_path,
            .ctx = cli,
            .inputs = inputs.paths,
            .n_inputs = inputs.n,
            .out_dir = conf->out_dir,
            .save_dir = conf->save_dir,
            .models = models_arg,
            .json = conf->json,
            .gpu = gpu,
            .num_speakers = ro->cluster.num_speakers,
            .min_speakers = ro->cluster.min_speakers,
            .max_speakers = ro->cluster.max_speakers,
        };
        int st = gf_diarsubmit_run(&o);
        if (st && (!status || st == GF_EXIT_UNAVAIL))
            status = st;
    }
    for (size_t i = 0; i < inputs.n; i++)
        free(inputs.paths[i]);
    free(inputs.paths);
    return status;
}

/* The route plan of CUDA card `ordinal`, its identity read once, made as a
 * worker makes its own (diar/kernel_plan.h). Returns 0 and *out, or the
 * error (logged). */
static int plan_card(int ordinal, gf_route_plan **out)
{
    gf_device_conf conf = { .index = ordinal, .kind = GF_DEVICE_CUDA };
    gf_card_identity card;
    int rc = gf_card_identify(&conf, &card);
    if (rc != 0)
        return rc;
    *out = gf_kernel_plan_new(&card);
    return *out ? 0 : GF_EDEVICE;
}

int gf_cmd_diarize(int argc, char **argv, gf_cli_ctx *cli)
{
    enum { O_GPU = 1000, O_ANY, O_MODELS, O_NUM, O_MIN, O_MAX, O_OUT, O_JSON, O_SAVE, O_LOCAL,
           O_CONFIG, O_HELP };
    static const struct option opts[] = {
        { "gpu", required_argument, NULL, O_GPU },
        { "any", no_argument, NULL, O_ANY },
        { "models", required_argument, NULL, O_MODELS },
        { "num-speakers", required_argument, NULL, O_NUM },
        { "min-speakers", required_argument, NULL, O_MIN },
        { "max-speakers", required_argument, NULL, O_MAX },
        { "out", required_argument, NULL, O_OUT },
        { "json", no_argument, NULL, O_JSON },
        { "save-intermediates", required_argument, NULL, O_SAVE },
        { "local", no_argument, NULL, O_LOCAL },
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *models_arg = NULL, *config_path = NULL;
    run_conf conf = { 0 };
    bool local = false, any = false;
    int gpu = -1;
    gf_diar_run_opts ro = gf_diar_run_defaults();
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_GPU:
            if (gf_cli_int("diarize", "--gpu", optarg, 0, &gpu))
                return GF_EXIT_USAGE;
            break;
        case O_ANY: any = true; break;
        case O_MODELS: models_arg = optarg; break;
        case O_NUM:
            if (gf_cli_int("diarize", "--num-speakers", optarg, 1, &ro.cluster.num_speakers))
                return GF_EXIT_USAGE;
            break;
        case O_MIN:
            if (gf_cli_int("diarize", "--min-speakers", optarg, 1, &ro.cluster.min_speakers))
                return GF_EXIT_USAGE;
            break;
        case O_MAX:
            if (gf_cli_int("diarize", "--max-speakers", optarg, 1, &ro.cluster.max_speakers))
                return GF_EXIT_USAGE;
            break;
        case O_OUT: conf.out_dir = optarg; break;
        case O_JSON: conf.json = true; break;
        case O_SAVE: conf.save_dir = optarg; break;
        case O_LOCAL: local = true; break;
        case O_CONFIG: config_path = optarg; break;
        case 'h':
        case O_HELP: usage(stdout); return 0;
        case ':':
            fprintf(stderr, "gpuflock diarize: %s needs a value\n", argv[optind - 1]);
            usage(stderr);
            return GF_EXIT_USAGE;
        default:
            fprintf(stderr, "gpuflock diarize: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return GF_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "gpuflock diarize: no FILE or DIR given\n");
        usage(stderr);
        return GF_EXIT_USAGE;
    }
    if (gpu >= 0 && any) {
        fprintf(stderr, "gpuflock diarize: --gpu and --any exclude each other\n");
        return GF_EXIT_USAGE;
    }
    if (ro.cluster.num_speakers && (ro.cluster.min_speakers || ro.cluster.max_speakers)) {
        fprintf(stderr, "gpuflock diarize: --num-speakers excludes --min-speakers and "
                        "--max-speakers\n");
        return GF_EXIT_USAGE;
    }
    if (ro.cluster.min_speakers && ro.cluster.max_speakers
        && ro.cluster.min_speakers > ro.cluster.max_speakers) {
        fprintf(stderr, "gpuflock diarize: --min-speakers %d is above --max-speakers %d\n",
                ro.cluster.min_speakers, ro.cluster.max_speakers);
        return GF_EXIT_USAGE;
    }
    if (!local)
        return via_broker(argc, argv, cli, config_path, models_arg, &conf, gpu, &ro);
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return GF_EXIT_CONFIG;
    const char *models_dir = models_arg ? models_arg : cfg->models_dir;
    conf.models_dir = models_dir;
    gf_blas_set_threads(cfg->cpu_threads);

    int status = 0;
    path_list inputs = { 0 };
    gf_diar *d = NULL;
    gf_route_plan *plan = NULL;
    for (int i = optind; i < argc; i++) {
        int rc = expand(argv[i], &inputs);
        if (rc)
            status = exit_for(rc);
    }
    if (inputs.n == 0)
        goto out_free;
    if (conf.out_dir && make_dir(conf.out_dir) != 0) {
        status = EXIT_CANTCREAT;
        goto out_free;
    }
    conf.several = inputs.n > 1;
    if (conf.save_dir && make_dir(conf.save_dir) != 0) {
        status = EXIT_CANTCREAT;
        goto out_free;
    }
    bool weight_free = false;
    d = gf_diar_new(models_dir, cfg->batch_size, cfg->cpu_threads, &weight_free);
    if (!d) {
        fprintf(stderr, "gpuflock diarize: model files in %s unusable\n", models_dir);
        status = GF_EXIT_CONFIG;
        goto out_free;
    }
    if (weight_free) {
        fprintf(stderr, "gpuflock diarize: weight-free mode: no model files in %s (energy voice "
                        "activity and filterbank statistics; expect a much higher DER)\n",
                models_dir);
        if (gpu >= 0 || any)
            fprintf(stderr, "gpuflock diarize: note: the weight-free mode runs on the CPU; %s "
                            "ignored\n", any ? "--any" : "--gpu");
    } else if (gpu >= 0 || any) {
        /* the networks on a CUDA card: --gpu N must get card N, --any takes
         * card 0 when there is one and stays on the CPU otherwise */
        gf_diar_backend be;
        int brc = plan_card(gpu >= 0 ? gpu : 0, &plan);
        brc = brc ? brc : gf_diar_backend_gpu(plan, models_dir, cfg->batch_size,
                                              cfg->tf32 ? GF_MATH_TF32 : GF_MATH_FP32,
                                              cfg->overlap, &be);
        if (brc == 0) {
            gf_diar_set_backend(d, &be);
            fprintf(stderr, "gpuflock diarize: networks on CUDA card %d\n", gpu >= 0 ? gpu : 0);
        } else if (gpu >= 0) {
            fprintf(stderr, "gpuflock diarize: --gpu %d: no usable CUDA card %d\n", gpu, gpu);
            status = GF_EXIT_UNAVAIL;
            goto out_free;
        } else {
            fprintf(stderr, "gpuflock diarize: --any: no usable CUDA card; running on the CPU\n");
        }
    }
    progress_state ps = { .tty = isatty(STDERR_FILENO) == 1, .n_files = inputs.n };
    ro.progress = progress;
    ro.progress_user = &ps;
    for (size_t i = 0; i < inputs.n; i++) {
        ps.name = inputs.paths[i];
        ps.file_index = i;
        ps.last_plain = 0;
        int st = diarize_one(d, inputs.paths[i], &conf, &ro, &ps);
        if (st && !status)
            status = st;
    }
out_free:
    gf_diar_destroy(&d);
    gf_route_plan_destroy(&plan);   /* after the pipeline, whose backend applied it */
    for (size_t i = 0; i < inputs.n; i++)
        free(inputs.paths[i]);
    free(inputs.paths);
    gf_config_destroy(&cfg);
    return status;
}
