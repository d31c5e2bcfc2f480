/* cmd_diarize.c — `gpuflock diarize`: speaker turns (RTTM) for recordings.
 *
 * Which recordings and where their outputs go is cli/diarout's rule
 * (names that never meet, nothing overwritten unless --overwrite, a re-run
 * that skips what is done with --skip-existing), settled before any work.
 * By default every recording becomes one diarize job of gpuflockd
 * (cli/diarsubmit.c), run by the workers with their models loaded, in
 * shared lock mode, followed with progress bars until all have ended.
 * --local runs the pipeline in this process instead, through the library's
 * C API (api/gpuflock.h), one file after the other; there --gpu N puts the
 * two networks on CUDA card N, --any on card 0 when there is one. Either
 * way a file that fails is named with the reason, the others go on, and
 * the exit status says whether any failed. */
#include "cli/cli.h"
#include "cli/diarize_slurm.h"
#include "cli/diarknobs.h"
#include "cli/diarout.h"
#include "cli/diarsubmit.h"
#include "cli/cliopts.h"
#include "api/gpuflock.h"
#include "common/config.h"
#include "common/error.h"
#include "common/djouts.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/pipeline.h"
#include "diar/io/npy.h"
#include "diar/io/rttm.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
            "                        [--save-intermediates DIR] [-r] [--files-from LIST]\n"
            "                        [--overwrite | --skip-existing] [--exclusive]\n"
            "                        [--speaker-embeddings] [--local [--checkpoint-dir DIR]\n"
            "                        [--checkpoint-s N]] [--config FILE]\n"
            "                        FILE|DIR...\n"
            "       gpuflock diarize --slurm [--partition P] [--tasks N] [--gpus-per-task G]\n"
            "                        [--time T] [--no-wait] --out DIR [OPTIONS] FILE|DIR...\n"
            "\n"
            "Who spoke when: an RTTM of speaker turns per recording (pyannote community-1\n"
            "recipe). A DIR stands for the audio files in it.\n"
            "Without --local, one job per recording goes to gpuflockd (shared lock mode) and\n"
            "the command follows them with a progress bar per file and for all.\n"
            "  --local          run the pipeline in this process (no broker)\n"
            "  --slurm          one Slurm job array (sbatch) whose tasks each run --local over\n"
            "                   their share of the files on the card Slurm gave them; prints\n"
            "                   the job id, then follows it (docs/slurm.md)\n"
            "  --partition P    --slurm: the partition (default: Slurm's)\n"
            "  --tasks N        --slurm: array tasks (default: one per file, at most 8)\n"
            "  --gpus-per-task G  --slurm: gpu gres per task (default 1; 0: none)\n"
            "  --time T         --slurm: each task's time limit, as sbatch --time takes it\n"
            "  --no-wait        --slurm: return once submitted\n"
            "  --gpu N, --any   the card: through the broker, its worker runs the job (--any,\n"
            "                   the default: any card); with --local, the CUDA card for the\n"
            "                   networks (--any falls back to the CPU when there is no card)\n"
            "  --models DIR     model files (default: models_dir of the configuration, the\n"
            "                   worker's through the broker); without\n"
            "                   segmentation.safetensors and embedding.safetensors the pipeline\n"
            "                   runs in weight-free mode (trained or energy VAD, fbank statistics)\n"
            "                   and says so\n"
            "  --num-speakers N, --min-speakers A, --max-speakers B: speaker count constraints\n"
            "  --clustering-threshold X, --Fa X, --Fb X, --min-duration-off SEC,\n"
            "  --[no-]embedding-exclude-overlap, --segmentation-step F: the community-1\n"
            "                   knobs under pyannote's names (defaults: the configuration's\n"
            "                   diarize: section, else 0.6, 0.07, 0.8, 0 s, on, 0.1)\n"
            "  --out DIR        where outputs go (default: beside each input); a recording\n"
            "                   found in a DIR keeps its path below that DIR there\n"
            "  --json           also write NAME.json (input, turns with an overlap flag,\n"
            "                   exclusive turns, speakers and their centroid embeddings,\n"
            "                   parameters, mode, timings, devstats)\n"
            "  --exclusive      also NAME.exclusive.rttm: one speaker at a time (pyannote's\n"
            "                   exclusive_speaker_diarization)\n"
            "  --speaker-embeddings  also NAME.speakers.npy: each speaker's centroid\n"
            "                   embedding, [speakers x 256] float32, SPEAKER_00 first\n"
            "  --save-intermediates DIR  segmentations.npy, embeddings.npy and, with model\n"
            "                   files, segmentation_logits.npy (into DIR, or DIR/NAME/ for\n"
            "                   several inputs); `gpuflock cluster` reads those of model files\n"
            "  -r, --recursive  a DIR's subfolders too\n"
            "  --files-from LIST  the recordings (or DIRs) listed in LIST, one per line\n"
            "                   (- reads stdin), besides any given as arguments\n"
            "  --overwrite      replace outputs already there (by default the call is refused\n"
            "                   before any work, naming them)\n"
            "  --skip-existing  leave out the recordings whose RTTM is there (a re-run picks\n"
            "                   up where the last one stopped)\n"
            "  --checkpoint-dir DIR  --local: save each recording's progress in DIR every\n"
            "                   --checkpoint-s seconds (default 30); the same command run\n"
            "                   again goes on from where an interrupted one was; removed as\n"
            "                   each recording is done (the broker's jobs checkpoint anyway)\n"
            "Two recordings whose outputs would be one file are refused before any work.\n"
            "Exit status: 0 ok, 64 usage or an output name shared, 65 a recording failed\n"
            "(bad audio, failed stage), 66 an input missing, 69 no broker running (use\n"
            "--local or start gpuflockd) or --gpu card unusable, 73 an output already there\n"
            "or not writable, 78 configuration or model files unusable; through the broker\n"
            "also 1 when a job was cancelled; with --slurm 65 also when a task ended without\n"
            "a file's RTTM, 69 sbatch missing or refusing.\n");
}

static const char *plural(size_t n, const char *one, const char *many)
{
    return n == 1 ? one : many;
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
    return rc == GF_ENOENT ? GF_EXIT_NOINPUT : rc == GF_EEXIST ? EXIT_CANTCREAT : GF_EXIT_DATAERR;
}

typedef struct {
    bool overwrite;          /* --overwrite */
    const char *models_dir;  /* for the weight-free notice */
    const char *ckpt_dir;    /* --checkpoint-dir, or NULL */
} run_conf;

/* The outputs' writer: one may replace a file only with --overwrite, or
 * when it is one this recording's earlier, interrupted run wrote (its
 * record in --checkpoint-dir, common/djouts.h: say a kill came between the
 * JSON and the RTTM); what it writes is recorded there in turn. */
typedef struct {
    bool overwrite;
    gf_djouts *rec;          /* NULL: no --checkpoint-dir */
} out_writer;

static bool may_replace(const out_writer *w, const char *path)
{
    return w->overwrite || gf_djouts_ours(w->rec, path);
}

static void wrote(out_writer *w, const char *path)
{
    gf_djouts_add(w->rec, path);
}

/* NAME.speakers.npy: each speaker's centroid, [speakers x dim] float32. */
static int save_speakers(const gf_diarize_result *res, const char *path, bool replace)
{
    size_t dim = 0;
    const float *emb = gf_diarize_result_embeddings(res, &dim);
    size_t shape[2] = { emb ? gf_diarize_result_speakers(res) : 0, dim };
    gf_npy_array *a = gf_npy_new(GF_NPY_F32, 2, shape);
    if (a->count)
        memcpy(a->data, emb, a->count * sizeof(float));
    int rc = gf_npy_save_as(path, a, replace);
    gf_npy_destroy(&a);
    return rc;
}

/* --checkpoint-dir: made (0700) when missing; a folder there is taken as it
 * is (the checkpoints in it are the user's own files, written through a
 * temporary file that never follows a link). 0, or -1 after saying why. */
static int make_ckdir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "gpuflock diarize: --checkpoint-dir %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gpuflock diarize: --checkpoint-dir %s: not a folder\n", dir);
        return -1;
    }
    return 0;
}

/* One recording: the pipeline, then its outputs, the JSON first and the
 * RTTM last (an RTTM there marks a finished recording; a JSON is never
 * left without its RTTM). */
static int diarize_one(gf_diarize *h, const gf_diarout *it, const run_conf *rc_conf,
                       gf_diarize_call *call, progress_state *ps)
{
    int status = 0;
    call->intermediates = it->save;
    call->overwrite = rc_conf->overwrite;
    gf_diarize_result *res = NULL;
    int rc = gf_diarize_file(h, it->input, call, &res);
    if (ps->tty)
        fprintf(stderr, "\n");
    if (rc) {
        fprintf(stderr, "gpuflock diarize: %s: failed: %s%s\n", it->input, gf_diarize_errmsg(h),
                call->checkpoint ? " (a checkpoint written is kept: the same command goes on "
                                   "from it)"
                                 : "");
        return exit_for(rc);
    }
    if (gf_diarize_result_resumed(res))
        fprintf(stderr, "gpuflock diarize: %s: went on from its checkpoint at window %zu\n",
                it->input, gf_diarize_result_resumed(res));
    /* what this call made, to take back if the RTTM cannot follow */
    const char *made[3] = { NULL, NULL, NULL };
    out_writer w = { .overwrite = rc_conf->overwrite };
    char *rec_base = rc_conf->ckpt_dir ? gf_diarout_ckpt_file(rc_conf->ckpt_dir, it->rttm, ".out")
                                       : NULL;
    if (rec_base)
        w.rec = gf_djouts_open(rec_base);
    if (it->json) {
        char *js = gf_diarize_result_json(res);
        rc = gf_rttm_write_text(it->json, js, may_replace(&w, it->json));
        gf_diarize_free(js);
        made[0] = rc ? NULL : it->json;
        if (!rc)
            wrote(&w, it->json);
    }
    if (!rc && it->exclusive) {
        char *text = gf_diarize_result_exclusive_rttm(res, NULL);
        rc = gf_rttm_write_text(it->exclusive, text, may_replace(&w, it->exclusive));
        gf_diarize_free(text);
        made[1] = rc ? NULL : it->exclusive;
        if (!rc)
            wrote(&w, it->exclusive);
    }
    if (!rc && it->speakers) {
        rc = save_speakers(res, it->speakers, may_replace(&w, it->speakers));
        made[2] = rc ? NULL : it->speakers;
        if (!rc)
            wrote(&w, it->speakers);
    }
    if (!rc) {
        char *text = gf_diarize_result_rttm(res, NULL);
        rc = gf_rttm_write_text(it->rttm, text, may_replace(&w, it->rttm));
        gf_diarize_free(text);
    }
    /* the recording is done (its RTTM there): the record goes with it */
    gf_djouts_close(&w.rec, rc == 0);
    free(rec_base);
    if (rc)
        for (size_t k = 0; k < 3; k++)
            if (made[k])
                unlink(made[k]);
    if (rc) {
        fprintf(stderr, "gpuflock diarize: %s: %s\n", it->input,
                gf_log_last_error()[0] ? gf_log_last_error() : gf_strerror(rc));
        status = EXIT_CANTCREAT;
    } else {
        size_t n = gf_diarize_result_turns(res, NULL), ns = gf_diarize_result_speakers(res);
        printf("%s: %zu %s, %zu %s, %.1f s of audio in %.1f s -> %s%s\n", it->input, n,
               plural(n, "turn", "turns"), ns, plural(ns, "speaker", "speakers"),
               gf_diarize_result_duration(res), gf_diarize_result_elapsed(res), it->rttm,
               gf_diarize_result_mode(res) == GF_DIARIZE_MODE_WEIGHT_FREE ? " (weight-free mode)"
                                                                         : "");
    }
    fflush(stdout);
    gf_diarize_result_destroy(&res);
    return status;
}

/* Without --local: one job per recording through gpuflockd (cli/diarsubmit). */
static int via_broker(gf_cli_ctx *cli, const char *config_path, const char *models_arg,
                      const gf_diarout_plan *plan, const gf_diarout_opts *oo, bool overwrite,
                      int gpu,
                      const gf_diar_run_opts *ro)
{
    gf_diarsubmit_opts o = {
        .config = config_path,
        .ctx = cli,
        .items = plan->items,
        .n_items = plan->n,
        .models = models_arg,
        .json = oo->json,
        .exclusive = oo->exclusive,
        .speakers = oo->speakers,
        .overwrite = overwrite,
        .gpu = gpu,
        .num_speakers = ro->cluster.num_speakers,
        .min_speakers = ro->cluster.min_speakers,
        .max_speakers = ro->cluster.max_speakers,
        .threshold = ro->cluster.threshold,
        .fa = ro->cluster.vbx.Fa,
        .fb = ro->cluster.vbx.Fb,
        .min_duration_off = ro->cluster.min_duration_off,
        .segmentation_step = gf_knobs_step_fraction(&ro->cluster),
        .exclude_overlap = ro->exclude_overlap,
    };
    return gf_diarsubmit_run(&o);
}

static void free_args(char **args, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(args[i]);
    free(args);
}

int gf_cmd_diarize(int argc, char **argv, gf_cli_ctx *cli)
{
    enum { O_GPU = 1000, O_ANY, O_MODELS, O_NUM, O_MIN, O_MAX, O_OUT, O_JSON, O_SAVE, O_LOCAL,
           O_CONFIG, O_HELP, O_FROM, O_OVERWRITE, O_SKIP, O_EXCL, O_SPK, O_CKDIR, O_CKS,
           O_SLURM, O_PART, O_TASKS, O_GPT, O_TIME, O_NOWAIT, O_STASK };
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
        { "recursive", no_argument, NULL, 'r' },
        { "files-from", required_argument, NULL, O_FROM },
        { "overwrite", no_argument, NULL, O_OVERWRITE },
        { "skip-existing", no_argument, NULL, O_SKIP },
        { "exclusive", no_argument, NULL, O_EXCL },
        { "speaker-embeddings", no_argument, NULL, O_SPK },
        { "checkpoint-dir", required_argument, NULL, O_CKDIR },
        { "checkpoint-s", required_argument, NULL, O_CKS },
        GF_KNOB_DIARIZE_OPTIONS,
        { "local", no_argument, NULL, O_LOCAL },
        { "slurm", no_argument, NULL, O_SLURM },
        { "partition", required_argument, NULL, O_PART },
        { "tasks", required_argument, NULL, O_TASKS },
        { "gpus-per-task", required_argument, NULL, O_GPT },
        { "time", required_argument, NULL, O_TIME },
        { "no-wait", no_argument, NULL, O_NOWAIT },
        { "slurm-task", required_argument, NULL, O_STASK },   /* the array's own: not in --help */
        { "config", required_argument, NULL, O_CONFIG },
        { "help", no_argument, NULL, O_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *models_arg = NULL, *config_path = NULL;
    gf_diarout_opts oo = { 0 };
    bool local = false, any = false, overwrite = false, skip = false;
    const char *ckdir = NULL;   /* --checkpoint-dir */
    int ck_s = 0;               /* --checkpoint-s (0: the library's 30) */
    int gpu = -1;
    gf_diar_run_opts ro = gf_diar_run_defaults();
    gf_knobs knobs = gf_knobs_none();
    /* --slurm: the options each task's --local run is given again */
    bool slurm = false;
    const char *slurm_task = NULL;
    gf_diarize_slurm_opts so = { .gpus_per_task = 1 };
    char **pass = gf_calloc((size_t)argc * 2 + 1, sizeof *pass);
    size_t n_pass = 0;
    optind = 1;
    opterr = 0;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, ":hr", opts, &li)) != -1) {
        if (li >= 0 && c != O_OUT && c != O_FROM && c != O_OVERWRITE && c != O_SKIP && c != O_GPU &&
            c != O_ANY && c != O_LOCAL && c != 'r' && c != O_CKDIR &&
            !(c >= O_SLURM && c <= O_STASK)) {
            pass[n_pass++] = gf_strfmt("--%s", opts[li].name);
            if (opts[li].has_arg == required_argument)
                pass[n_pass++] = gf_strdup(optarg);
        }
        li = -1;
        int taken = gf_knobs_take(&knobs, "diarize", c, optarg);
        if (taken < 0)
            goto out_usage;
        if (taken)
            continue;
        switch (c) {
        case O_GPU:
            if (gf_cli_int("diarize", "--gpu", optarg, 0, &gpu))
                goto out_usage;
            break;
        case O_ANY: any = true; break;
        case O_MODELS: models_arg = optarg; break;
        case O_NUM:
            if (gf_cli_int("diarize", "--num-speakers", optarg, 1, &ro.cluster.num_speakers))
                goto out_usage;
            break;
        case O_MIN:
            if (gf_cli_int("diarize", "--min-speakers", optarg, 1, &ro.cluster.min_speakers))
                goto out_usage;
            break;
        case O_MAX:
            if (gf_cli_int("diarize", "--max-speakers", optarg, 1, &ro.cluster.max_speakers))
                goto out_usage;
            break;
        case O_OUT: oo.out_dir = optarg; break;
        case O_JSON: oo.json = true; break;
        case O_SAVE: oo.save_dir = optarg; break;
        case 'r': oo.recursive = true; break;
        case O_FROM: oo.files_from = optarg; break;
        case O_OVERWRITE: overwrite = true; break;
        case O_SKIP: skip = true; break;
        case O_EXCL: oo.exclusive = true; break;
        case O_SPK: oo.speakers = true; break;
        case O_CKDIR: ckdir = optarg; break;
        case O_CKS:
            if (gf_cli_int("diarize", "--checkpoint-s", optarg, 1, &ck_s) || ck_s > 86400) {
                if (ck_s > 86400)
                    fprintf(stderr, "gpuflock diarize: --checkpoint-s %s: at most 86400\n",
                            optarg);
                goto out_usage;
            }
            break;
        case O_LOCAL: local = true; break;
        case O_SLURM: slurm = true; break;
        case O_PART: so.partition = optarg; break;
        case O_TASKS:
            if (gf_cli_int("diarize", "--tasks", optarg, 1, &so.tasks))
                goto out_usage;
            break;
        case O_GPT:
            if (gf_cli_int("diarize", "--gpus-per-task", optarg, 0, &so.gpus_per_task))
                goto out_usage;
            break;
        case O_TIME: so.time = optarg; break;
        case O_NOWAIT: so.no_wait = true; break;
        case O_STASK: slurm_task = optarg; break;
        case O_CONFIG: config_path = optarg; break;
        case 'h':
        case O_HELP: usage(stdout); free_args(pass, n_pass); return 0;
        default:
            free_args(pass, n_pass);
            return gf_cli_opt_error("diarize", c, argc, argv, opts);
        }
    }
    if (slurm_task) {   /* one task of a --slurm array: RUN K */
        free_args(pass, n_pass);
        if (optind + 1 != argc)
            return gf_cli_usage_error("diarize", "--slurm-task RUN TASK");
        return gf_diarize_slurm_task(slurm_task, argv[optind]);
    }
    so.out_dir = oo.out_dir;
    so.overwrite = overwrite;
    so.local_args = pass;
    so.n_local_args = n_pass;
    if (slurm && local) {
        fprintf(stderr, "gpuflock diarize: --slurm and --local exclude each other\n");
        goto out_usage;
    }
    if (!slurm && (so.partition || so.tasks || so.gpus_per_task != 1 || so.time || so.no_wait)) {
        fprintf(stderr, "gpuflock diarize: --partition, --tasks, --gpus-per-task, --time and "
                        "--no-wait go with --slurm\n");
        goto out_usage;
    }
    if (slurm && (gpu >= 0 || any)) {
        fprintf(stderr, "gpuflock diarize: --slurm: Slurm picks the cards (--gpus-per-task), "
                        "not --gpu or --any\n");
        goto out_usage;
    }
    if ((ckdir || ck_s) && !local && !slurm) {
        fprintf(stderr, "gpuflock diarize: --checkpoint-dir and --checkpoint-s go with --local "
                        "(through the broker, its workers checkpoint: worker.checkpoint_s)\n");
        goto out_usage;
    }
    if (ckdir && slurm) {
        fprintf(stderr, "gpuflock diarize: --slurm: the tasks checkpoint in the run's folder, "
                        "not --checkpoint-dir\n");
        goto out_usage;
    }
    if (slurm && oo.save_dir) {
        fprintf(stderr, "gpuflock diarize: --slurm does not take --save-intermediates\n");
        goto out_usage;
    }
    if (slurm && gf_diarize_slurm_check(&so) != 0)
        goto out_usage;
    if (optind >= argc && !oo.files_from) {
        free_args(pass, n_pass);
        return gf_cli_usage_error("diarize", "no FILE or DIR given, nor --files-from "
                                             "(usage: gpuflock diarize [OPTIONS] FILE|DIR...)");
    }
    if (gpu >= 0 && any) {
        fprintf(stderr, "gpuflock diarize: --gpu and --any exclude each other\n");
        goto out_usage;
    }
    if (overwrite && skip) {
        fprintf(stderr, "gpuflock diarize: --overwrite and --skip-existing exclude each other\n");
        goto out_usage;
    }
    if (ro.cluster.num_speakers && (ro.cluster.min_speakers || ro.cluster.max_speakers)) {
        fprintf(stderr, "gpuflock diarize: --num-speakers excludes --min-speakers and "
                        "--max-speakers\n");
        goto out_usage;
    }
    if (ro.cluster.min_speakers && ro.cluster.max_speakers
        && ro.cluster.min_speakers > ro.cluster.max_speakers) {
        fprintf(stderr, "gpuflock diarize: --min-speakers %d is above --max-speakers %d\n",
                ro.cluster.min_speakers, ro.cluster.max_speakers);
        goto out_usage;
    }
    oo.existing = overwrite ? GF_DIAROUT_OVERWRITE : skip ? GF_DIAROUT_SKIP : GF_DIAROUT_REFUSE;
    oo.ckpt_dir = local ? ckdir : NULL;

    /* the recordings and their outputs, settled before any work */
    gf_diarout_plan plan;
    int status = gf_diarout_make(&oo, argv + optind, (size_t)(argc - optind), &plan);
    if (status) {
        free_args(pass, n_pass);
        return status;
    }
    if (plan.n_missing)
        status = GF_EXIT_NOINPUT;
    if (plan.n == 0) {
        gf_diarout_free(&plan);
        free_args(pass, n_pass);
        return status;
    }
    gf_config *cfg = NULL;
    gf_diarize *h = NULL;
    /* the broker path asks the configuration only for the knobs' defaults */
    if ((local ? gf_config_load(config_path, &cfg) : gf_config_load_no_devices(config_path, &cfg))
        != 0) {
        status = GF_EXIT_CONFIG;
        goto out_free;
    }
    gf_knobs_apply(&knobs, cfg, &ro.cluster, &ro.exclude_overlap);
    if (slurm) {
        int st = gf_diarize_slurm_run(&so, &plan);
        status = st ? st : status;
        goto out_free;
    }
    if (!local) {
        int st = via_broker(cli, config_path, models_arg, &plan, &oo, overwrite, gpu, &ro);
        status = st && (!status || st == GF_EXIT_UNAVAIL) ? st : status;
        goto out_free;
    }
    const char *models_dir = models_arg ? models_arg : cfg->models_dir;
    run_conf conf = { .overwrite = overwrite, .models_dir = models_dir, .ckpt_dir = ckdir };
    /* the networks on a CUDA card: --gpu N must get card N, --any takes card
     * 0 when there is one and stays on the CPU otherwise */
    gf_diarize_opts dopts;
    gf_diarize_opts_init(&dopts, sizeof dopts);
    dopts.models = models_dir;
    dopts.num_speakers = ro.cluster.num_speakers;
    dopts.min_speakers = ro.cluster.min_speakers;
    dopts.max_speakers = ro.cluster.max_speakers;
    dopts.batch_size = cfg->batch_size;
    dopts.threads = cfg->cpu_threads;
    dopts.device = gpu >= 0 ? gpu : any ? GF_DIARIZE_ANY_CARD : GF_DIARIZE_CPU;
    dopts.math = cfg->tf32 ? GF_DIARIZE_MATH_TF32 : GF_DIARIZE_MATH_FP32;
    dopts.two_streams = cfg->overlap;
    dopts.clustering_threshold = ro.cluster.threshold;
    dopts.fa = ro.cluster.vbx.Fa;
    dopts.fb = ro.cluster.vbx.Fb;
    dopts.min_duration_off = ro.cluster.min_duration_off;
    dopts.segmentation_step = gf_knobs_step_fraction(&ro.cluster);
    dopts.embedding_include_overlap = !ro.exclude_overlap;
    int orc = gf_diarize_open(&dopts, &h);
    if (orc == GF_DIARIZE_EDEVICE) {
        fprintf(stderr, "gpuflock diarize: --gpu %d: no usable CUDA card %d\n", gpu, gpu);
        status = GF_EXIT_UNAVAIL;
        goto out_free;
    }
    if (orc == GF_DIARIZE_ECONFIG) {
        fprintf(stderr, "gpuflock diarize: model files in %s unusable\n", models_dir);
        status = GF_EXIT_CONFIG;
        goto out_free;
    }
    if (orc) {
        fprintf(stderr, "gpuflock diarize: %s\n", gf_diarize_errmsg(h));
        status = GF_EXIT_CONFIG;
        goto out_free;
    }
    if (gf_diarize_mode(h) == GF_DIARIZE_MODE_WEIGHT_FREE) {
        fprintf(stderr, "gpuflock diarize: weight-free mode: no model files in %s (%s voice "
                        "activity and filterbank statistics; expect a much higher DER)\n",
                models_dir, strcmp(gf_diarize_vad(h), "energy") ? "trained" : "energy");
        if (gpu >= 0 || any)
            fprintf(stderr, "gpuflock diarize: note: the weight-free mode runs on the CPU; %s "
                            "ignored\n", any ? "--any" : "--gpu");
    } else if (gf_diarize_device(h) != GF_DIARIZE_CPU) {
        fprintf(stderr, "gpuflock diarize: networks on CUDA card %d\n", gf_diarize_device(h));
    } else if (any) {
        fprintf(stderr, "gpuflock diarize: --any: no usable CUDA card; running on the CPU\n");
    }
    if (ckdir && make_ckdir(ckdir) != 0) {
        status = EXIT_CANTCREAT;
        goto out_free;
    }
    progress_state ps = { .tty = isatty(STDERR_FILENO) == 1, .n_files = plan.n };
    gf_diarize_call call;
    gf_diarize_call_init(&call, sizeof call);
    call.progress = progress;
    call.progress_user = &ps;
    call.checkpoint_s = ck_s;
    for (size_t i = 0; i < plan.n; i++) {
        ps.name = plan.items[i].input;
        ps.file_index = i;
        ps.last_plain = 0;
        char *ck = ckdir ? gf_diarout_ckpt_file(ckdir, plan.items[i].rttm, ".ckpt") : NULL;
        call.checkpoint = ck;
        int st = diarize_one(h, &plan.items[i], &conf, &call, &ps);
        free(ck);
        if (st && !status)
            status = st;
    }
out_free:
    gf_diarize_close(&h);
    gf_diarout_free(&plan);
    gf_config_destroy(&cfg);
    free_args(pass, n_pass);
    return status;
out_usage:
    free_args(pass, n_pass);
    return GF_EXIT_USAGE;
}
