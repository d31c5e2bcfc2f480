/* diarize.c — the public C API (api/gpuflock.h) over the diarization
 * pipeline (diar/pipeline.h).
 *
 * A handle is one gf_diar with what the caller asked of it: the speaker
 * constraints, and on a CUDA card its route plan, made as the CLI and the
 * worker make theirs (diar/kernel_plan.h) and kept until the pipeline that
 * applied it is gone. A result is the pipeline's gf_diar_result with the
 * device timings of its call, its turns in the public form and its labels.
 * Messages are the log's last error of the calling thread, copied into the
 * handle when a call fails, so a handle used by one thread reads its own.
 * This is the only room whose names the shared library exports
 * (api/libgpuflock.map); everything below stays hidden in it. */
#include "api/gpuflock.h"

#include "common/card.h"
#include "common/config.h"
#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/mathmode.h"
#include "common/util.h"
#include "common/version.h"
#include "diar/backend_gpu.h"
#include "diar/io/audio.h"
#include "diar/io/rttm.h"
#include "diar/jobckpt.h"
#include "diar/kernel_plan.h"
#include "diar/models.h"
#include "diar/pipeline.h"
#include "kernels/blas.h"
#include "route/plan.h"

#include <assert.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The public numbers are the project's own: a code passes through as it is. */
_Static_assert((int)GF_DIARIZE_EINVAL == (int)GF_EINVAL
                   && (int)GF_DIARIZE_EIO == (int)GF_EIO
                   && (int)GF_DIARIZE_ENOENT == (int)GF_ENOENT
                   && (int)GF_DIARIZE_ECONFIG == (int)GF_ECONFIG
                   && (int)GF_DIARIZE_ETOOBIG == (int)GF_ETOOBIG
                   && (int)GF_DIARIZE_EUNSUP == (int)GF_EUNSUP
                   && (int)GF_DIARIZE_EDEVICE == (int)GF_EDEVICE
                   && (int)GF_DIARIZE_EINTR == (int)GF_EINTR
                   && (int)GF_DIARIZE_ESTATE == (int)GF_ESTATE
                   && (int)GF_DIARIZE_ENOSPC == (int)GF_ENOSPC
                   && (int)GF_DIARIZE_EEXIST == (int)GF_EEXIST,
               "the public error codes are gpuflock's");
_Static_assert(GF_DIARIZE_MIN_RATE == GF_AUDIO_MIN_RATE
                   && GF_DIARIZE_MAX_RATE == GF_AUDIO_MAX_RATE,
               "the public sample rates are the memory reader's");
_Static_assert((int)GF_DIARIZE_MATH_FP32 == (int)GF_MATH_FP32
                   && (int)GF_DIARIZE_MATH_TF32 == (int)GF_MATH_TF32,
               "the public math modes are gpuflock's");
_Static_assert((int)GF_DIARIZE_LOG_DEBUG == (int)GF_LOG_DEBUG
                   && (int)GF_DIARIZE_LOG_OFF == (int)GF_LOG_OFF,
               "the public log levels are gpuflock's");

/* The option structs as ABI 0 defined them: a smaller size is refused. */
#define OPTS_SIZE_0 (offsetof(gf_diarize_opts, embedding_include_overlap) + sizeof(int))
#define CALL_SIZE_0 (offsetof(gf_diarize_call, max_speakers) + sizeof(int))

/* The most windows per network call and threads taken (the configuration's
 * bounds, common/config_read.c). */
#define MAX_BATCH 65536
#define MAX_THREADS 4096

#define DEFAULT_URI "waveform"   /* samples without a uri */

struct gf_diarize {
    int status;              /* 0: open; else the code the open failed with */
    gf_diar *diar;           /* the pipeline; NULL when the open failed */
    gf_route_plan *plan;     /* the card's route plan (NULL on the CPU): its backend
                                applied it, so it goes after the pipeline */
    int device;              /* the card the networks run on, or GF_DIARIZE_CPU */
    char *models;            /* the models folder as given (NULL: none), for the JSON */
    gf_cluster_opts cluster; /* speaker constraints, the recipe's knobs, clustering threads */
    bool exclude_overlap;    /* embedding_exclude_overlap */
    double step;             /* segmentation_step (0: the recipe's) */
    char math[8], overlap[8];   /* as a checkpoint's identity says them (diar/jobckpt.h) */
    char seg_sha[96], emb_sha[96];   /* the network files' digests, "-": weight-free */
    char err[512];           /* the last failed call's message, "" after a success */
};

struct gf_diarize_result {
    gf_diar_result res;      /* the pipeline's: turns as RTTM (uri set), mode, timings */
    gf_devstats *stats;      /* device timings of the call */
    gf_diarize_turn *turns;  /* [n_turns] the turns in the public form */
    size_t n_turns;          /* res.rttm->n */
    gf_diarize_turn *excl;   /* [n_excl] the exclusive turns */
    size_t n_excl;           /* res.exclusive->n */
    char (*labels)[32];      /* [res.n_speakers] "SPEAKER_NN" */
    char *uri;               /* the recording's name in the RTTM */
    char *input;             /* the file diarized (absolute or as given); NULL: samples */
    char *models;            /* the handle's models folder, for the JSON's notice */
    size_t resumed;          /* windows taken from the call's checkpoint */
};

/* ---- messages ------------------------------------------------------------ */

/* The handle's message from this thread's last logged error, else from
 * what (a code's name when what is NULL). Returns code. */
static int failed(gf_diarize *h, int code, const char *what)
{
    const char *last = gf_log_last_error();
    snprintf(h->err, sizeof h->err, "%s", last[0] ? last : what ? what : gf_strerror(code));
    return code;
}

/* A message detected here: logged once, as the project's errors are, and
 * kept in the handle. Returns code. */
__attribute__((format(printf, 3, 4)))
static int refuse(gf_diarize *h, int code, const char *fmt, ...)
{
    char msg[sizeof h->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    GF_ERROR("%s", msg);
    snprintf(h->err, sizeof h->err, "%s", msg);
    return code;
}

/* Codes the header names pass through; anything else is GF_DIARIZE_EIO. */
static int public_code(int rc)
{
    switch (rc) {
    case GF_OK: case GF_EINVAL: case GF_EIO: case GF_ENOENT: case GF_ECONFIG: case GF_ETOOBIG:
    case GF_EUNSUP: case GF_EDEVICE: case GF_EINTR: case GF_ESTATE: case GF_ENOSPC:
    case GF_EEXIST:
        return rc;
    default:
        return GF_EIO;
    }
}

/* Whether a caller's struct of `size` bytes (ABI 0's at least) can be read
 * as ours of `known` bytes: the bytes beyond ours, fields of a newer
 * header, must be zero (their default). 0 or the code (message in h). */
static int check_size(gf_diarize *h, const void *p, size_t size, size_t min, size_t known,
                      const char *what)
{
    if (size < min)
        return refuse(h, GF_EINVAL, "%s: size %zu is smaller than any version's (%zu): "
                      "initialise it with its _init function", what, size, min);
    const unsigned char *b = p;
    for (size_t i = known; i < size; i++)
        if (b[i])
            return refuse(h, GF_EUNSUP, "%s: options of a newer gpuflock.h are set (byte %zu "
                          "of %zu; this library knows %zu): not supported by libgpuflock %s",
                          what, i, size, known, GF_VERSION);
    return 0;
}

/* ---- the pipeline ------------------------------------------------------ */

#define FITS(size, type, field) ((size) >= offsetof(type, field) + sizeof(((type *)0)->field))

void gf_diarize_opts_init(gf_diarize_opts *opts, size_t size)
{
    if (!opts || size < sizeof opts->size)
        return;
    memset(opts, 0, size);
    opts->size = size;
    if (FITS(size, gf_diarize_opts, device))
        opts->device = GF_DIARIZE_CPU;
    if (FITS(size, gf_diarize_opts, two_streams))
        opts->two_streams = 1;
}

void gf_diarize_call_init(gf_diarize_call *call, size_t size)
{
    if (!call || size < sizeof call->size)
        return;
    memset(call, 0, size);
    call->size = size;
}

/* The route plan of CUDA card `ordinal`, made as a worker makes its own
 * (diar/kernel_plan.h). 0 and *out, or the error (logged). */
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

/* Speaker constraints as pyannote takes them. 0 or GF_EINVAL (message in h). */
static int check_speakers(gf_diarize *h, int num, int min, int max)
{
    if (num < 0 || min < 0 || max < 0)
        return refuse(h, GF_EINVAL, "speaker counts must not be negative (num %d, min %d, "
                      "max %d)", num, min, max);
    if (num && (min || max))
        return refuse(h, GF_EINVAL, "num_speakers excludes min_speakers and max_speakers");
    if (min && max && min > max)
        return refuse(h, GF_EINVAL, "min_speakers %d is above max_speakers %d", min, max);
    return 0;
}

/* The options taken: what a caller's struct sets, the defaults for the
 * rest. 0 or the code (message in h). */
static int read_opts(gf_diarize *h, const gf_diarize_opts *given, gf_diarize_opts *o)
{
    gf_diarize_opts_init(o, sizeof *o);
    if (!given)
        return 0;
    int rc = check_size(h, given, given->size, OPTS_SIZE_0, sizeof *o, "gf_diarize_opts");
    if (rc)
        return rc;
    memcpy(o, given, given->size < sizeof *o ? given->size : sizeof *o);
    o->size = sizeof *o;
    rc = check_speakers(h, o->num_speakers, o->min_speakers, o->max_speakers);
    if (rc)
        return rc;
    if (o->batch_size < 0 || o->batch_size > MAX_BATCH)
        return refuse(h, GF_EINVAL, "batch_size %d: outside 0..%d", o->batch_size, MAX_BATCH);
    if (o->threads < 0 || o->threads > MAX_THREADS)
        return refuse(h, GF_EINVAL, "threads %d: outside 0..%d", o->threads, MAX_THREADS);
    if (o->device < GF_DIARIZE_ANY_CARD)
        return refuse(h, GF_EINVAL, "device %d: not a card index, GF_DIARIZE_CPU or "
                      "GF_DIARIZE_ANY_CARD", o->device);
    if (o->math != GF_DIARIZE_MATH_FP32 && o->math != GF_DIARIZE_MATH_TF32)
        return refuse(h, GF_EINVAL, "math %d: not GF_DIARIZE_MATH_FP32 or _TF32", o->math);
    /* the bounds `gpuflock diarize` takes them in (cli/diarknobs.c); 0: the recipe's */
    const struct {
        const char *name;
        double v, hi;
    } knobs[] = {
        { "clustering_threshold", o->clustering_threshold, 2.0 },
        { "fa", o->fa, 1e3 },
        { "fb", o->fb, 1e3 },
        { "min_duration_off", o->min_duration_off, 3600.0 },
        { "segmentation_step", o->segmentation_step, 1.0 },
    };
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
        if (!(knobs[i].v >= 0.0 && knobs[i].v <= knobs[i].hi))
            return refuse(h, GF_EINVAL, "%s %g: outside 0..%g (0: the recipe's)", knobs[i].name,
                          knobs[i].v, knobs[i].hi);
    size_t step;
    if (gf_diar_step_samples(o->segmentation_step, &step))
        return refuse(h, GF_EINVAL, "segmentation_step %g: not in [%g, 1] or not a whole number "
                      "of 10 ms of the 10 s window (0.001 of it)", o->segmentation_step,
                      GF_DIAR_STEP_MIN);
    return 0;
}

/* The networks on a CUDA card: o->device must get that card, ANY_CARD
 * takes card 0 when it can and stays on the CPU otherwise. 0 or the code. */
static int open_card(gf_diarize *h, const gf_diarize_opts *o)
{
    int card = o->device >= 0 ? o->device : 0;
    gf_diar_backend be;
    int rc = plan_card(card, &h->plan);
    rc = rc ? rc : gf_diar_backend_gpu(h->plan, o->models, gf_diar_batch(h->diar),
                                       o->math == GF_DIARIZE_MATH_TF32 ? GF_MATH_TF32
                                                                       : GF_MATH_FP32,
                                       o->two_streams != 0, &be);
    if (rc == 0) {
        gf_diar_set_backend(h->diar, &be);
        h->device = card;
        return 0;
    }
    gf_route_plan_destroy(&h->plan);
    if (o->device == GF_DIARIZE_ANY_CARD) {
        gf_log_clear_last_error();   /* the CPU it is: no error of this open */
        return 0;
    }
    /* why was logged where it was found (the driver, the card, the plan) */
    const char *why = gf_log_last_error()[0] ? gf_log_last_error() : gf_strerror(rc);
    snprintf(h->err, sizeof h->err, "CUDA card %d cannot be used: %s", card, why);
    return GF_EDEVICE;
}

int gf_diarize_open(const gf_diarize_opts *opts, gf_diarize **out)
{
    if (!out)
        return GF_EINVAL;
    gf_diarize *h = gf_calloc(1, sizeof *h);
    *out = h;
    h->device = GF_DIARIZE_CPU;
    gf_log_clear_last_error();
    gf_diarize_opts o;
    int rc = read_opts(h, opts, &o);
    if (rc)
        goto fail;
    h->cluster = gf_cluster_defaults();
    h->cluster.num_speakers = o.num_speakers;
    h->cluster.min_speakers = o.min_speakers;
    h->cluster.max_speakers = o.max_speakers;
    if (o.clustering_threshold > 0.0)
        h->cluster.threshold = o.clustering_threshold;
    if (o.fa > 0.0)
        h->cluster.vbx.Fa = o.fa;
    if (o.fb > 0.0)
        h->cluster.vbx.Fb = o.fb;
    h->cluster.min_duration_off = o.min_duration_off;
    h->exclude_overlap = !o.embedding_include_overlap;
    h->step = o.segmentation_step;
    gf_blas_set_threads(o.threads);
    bool weight_free = true;
    h->models = o.models ? gf_strdup(o.models) : NULL;
    if (o.models && o.models[0]) {
        h->diar = gf_diar_new(o.models, o.batch_size, o.threads, &weight_free);
        if (!h->diar) {
            rc = failed(h, GF_ECONFIG, "model files unusable");
            goto fail;
        }
    } else {
        h->diar = gf_diar_new_weight_free(o.batch_size);
        if (!h->diar) {
            rc = failed(h, GF_ECONFIG, "the voice activity detector's file unusable");
            goto fail;
        }
        /* its clustering pool takes its size from the run (pipeline.c) */
        h->cluster.threads = o.threads;
    }
    if (!weight_free && o.device != GF_DIARIZE_CPU && (rc = open_card(h, &o)) != 0)
        goto fail;
    bool on_card = h->device != GF_DIARIZE_CPU;
    snprintf(h->math, sizeof h->math, "%s",
             on_card && o.math == GF_DIARIZE_MATH_TF32 ? "tf32" : "fp32");
    snprintf(h->overlap, sizeof h->overlap, "%s",
             !on_card ? "-" : o.two_streams ? "on" : "off");
    snprintf(h->seg_sha, sizeof h->seg_sha, "-");
    snprintf(h->emb_sha, sizeof h->emb_sha, "-");
    if (!weight_free) {
        gf_manifest *man = NULL;
        gf_manifest_load(o.models, &man);   /* loaded already: a bad one failed the open */
        gf_models_digest(o.models, man, GF_MODELS_SEGMENTATION, h->seg_sha, sizeof h->seg_sha);
        gf_models_digest(o.models, man, GF_MODELS_EMBEDDING, h->emb_sha, sizeof h->emb_sha);
        gf_manifest_destroy(&man);
    }
    h->err[0] = '\0';
    return 0;

fail:
    gf_diar_destroy(&h->diar);
    gf_route_plan_destroy(&h->plan);
    h->status = rc;
    return public_code(rc);
}

void gf_diarize_close(gf_diarize **h_p)
{
    gf_diarize *h = h_p ? *h_p : NULL;
    if (!h)
        return;
    gf_diar_destroy(&h->diar);
    gf_route_plan_destroy(&h->plan);   /* after the pipeline, whose backend applied it */
    free(h->models);
    free(h);
    *h_p = NULL;
}

const char *gf_diarize_errmsg(const gf_diarize *h)
{
    return h ? h->err : "no handle (gf_diarize_open was given no place for it)";
}

int gf_diarize_mode(const gf_diarize *h)
{
    if (!h || h->status)
        return GF_ESTATE;
    return gf_diar_weight_free(h->diar) ? GF_DIARIZE_MODE_WEIGHT_FREE : GF_DIARIZE_MODE_NEURAL;
}

int gf_diarize_device(const gf_diarize *h)
{
    return h ? h->device : GF_DIARIZE_CPU;
}

/* ---- one recording ----------------------------------------------------- */

/* The name of a recording in an RTTM: blanks and control characters
 * become '_'. Caller frees. */
static char *clean_uri(const char *s)
{
    char *u = gf_strdup(s);
    for (char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            *p = '_';
    return u;
}

/* A file's uri as the pipeline names its turns (diar/result.c, the RTTM
 * `gpuflock diarize` writes): the base name without its extension, blanks
 * as '_', "recording" for a name that is empty. */
static char *file_uri(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = gf_strdup(*b ? b : "recording");
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    for (char *p = s; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n')
            *p = '_';
    return s;
}

/* The turns of rt in the public form (a new array of rt->n), each with the
 * uri on it. */
static gf_diarize_turn *public_turns(gf_rttm *rt, const char *uri, size_t n_speakers)
{
    gf_diarize_turn *out = gf_calloc(rt->n ? rt->n : 1, sizeof *out);
    for (size_t i = 0; i < rt->n; i++) {
        gf_turn *t = &rt->turns[i];
        int k = -1;
        sscanf(t->speaker, "SPEAKER_%d", &k);
        assert(k >= 0 && (size_t)k < n_speakers);   /* diar/result.c names them so */
        (void)n_speakers;
        out[i] = (gf_diarize_turn){ .start = t->start, .end = t->start + t->duration,
                                    .speaker = k };
        if (strcmp(t->uri, uri) != 0) {
            free(t->uri);
            t->uri = gf_strdup(uri);
        }
    }
    return out;
}

/* The public form of a pipeline result: labels, turns, exclusive turns. */
static void fill_result(gf_diarize_result *r)
{
    size_t ns = r->res.n_speakers;
    r->labels = gf_calloc(ns ? ns : 1, sizeof *r->labels);
    for (size_t k = 0; k < ns; k++)
        snprintf(r->labels[k], sizeof r->labels[k], "SPEAKER_%02d", (int)k);
    r->n_turns = r->res.rttm->n;
    r->turns = public_turns(r->res.rttm, r->uri, ns);
    r->n_excl = r->res.exclusive->n;
    r->excl = public_turns(r->res.exclusive, r->uri, ns);
}

/* The pipeline's hooks on a run's checkpoints (diar/jobckpt.h). */
static const gf_diar_state *ck_resume(void *user, size_t total)
{
    return gf_jobckpt_resume(user, total);
}

static int ck_boundary(void *user, const gf_diar_state *st)
{
    gf_jobckpt_boundary(user, st, false);
    return 0;
}

/* A call's checkpoints at c->checkpoint, put behind o's hooks. */
static gf_jobckpt *checkpoints(gf_diarize *h, const gf_diarize_call *c, const char *path,
                               gf_diar_run_opts *o, gf_devstats *stats)
{
    gf_jobckpt_conf cc = { .path = c->checkpoint, .who = path, .uid = getuid(),
                           .gid = getgid(), .every_s = c->checkpoint_s ? c->checkpoint_s : 30,
                           .err_fd = -1, .stats = stats };
    gf_jobckpt *ck = gf_jobckpt_new(&cc);
    gf_ckpt_id id;
    gf_jobckpt_identity(&id, h->diar, o, "local", h->math, h->overlap, h->seg_sha, h->emb_sha);
    bool card = h->device != GF_DIARIZE_CPU;
    gf_jobckpt_begin(ck, &id, path, gf_diar_batch(h->diar), card ? "host" : "cpu",
                     card ? "results on the host: no card copy" : "cpu card");
    o->resume = ck_resume;
    o->resume_user = ck;
    o->boundary = ck_boundary;
    o->boundary_user = ck;
    return ck;
}

/* One call: the file at path, or n samples x at rate when file is false. */
static int run(gf_diarize *h, bool file, const char *path, const float *x, size_t n, int rate,
               const gf_diarize_call *given, gf_diarize_result **out)
{
    if (!h)
        return GF_EINVAL;
    gf_log_clear_last_error();
    if (h->status)
        return GF_ESTATE;   /* its message stays the open's */
    h->err[0] = '\0';
    if (!out)
        return refuse(h, GF_EINVAL, "no place for the result (out is NULL)");
    *out = NULL;
    if (file ? !path : !x)
        return refuse(h, GF_EINVAL, "no %s (NULL)", file ? "path" : "samples");
    gf_diarize_call c;
    gf_diarize_call_init(&c, sizeof c);
    if (given) {
        int src = check_size(h, given, given->size, CALL_SIZE_0, sizeof c, "gf_diarize_call");
        if (src)
            return public_code(src);
        memcpy(&c, given, given->size < sizeof c ? given->size : sizeof c);
    }
    if (c.uri && !c.uri[0])
        return refuse(h, GF_EINVAL, "an empty uri");
    int rc = check_speakers(h, c.num_speakers, c.min_speakers, c.max_speakers);
    if (rc)
        return rc;
    gf_diar_run_opts o = gf_diar_run_defaults();
    o.cluster = h->cluster;
    o.exclude_overlap = h->exclude_overlap;
    o.segmentation_step = h->step;
    if (c.num_speakers || c.min_speakers || c.max_speakers) {
        o.cluster.num_speakers = c.num_speakers;
        o.cluster.min_speakers = c.min_speakers;
        o.cluster.max_speakers = c.max_speakers;
    }
    o.save_dir = c.intermediates;
    o.overwrite = c.overwrite != 0;
    o.progress = c.progress;
    o.progress_user = c.progress_user;
    o.cancel = c.cancel;
    o.cancel_user = c.cancel_user;

    if (c.checkpoint && (!file || !c.checkpoint[0]))
        return refuse(h, GF_EINVAL, "a checkpoint %s", file ? "file named \"\"" :
                      "of samples in memory (a file has the identity one needs)");
    if (c.checkpoint_s < 0 || c.checkpoint_s > 86400)
        return refuse(h, GF_EINVAL, "checkpoint_s %d: outside 0..86400", c.checkpoint_s);

    gf_diarize_result *r = gf_calloc(1, sizeof *r);
    r->stats = gf_devstats_new();
    r->uri = c.uri ? clean_uri(c.uri) : file ? file_uri(path) : gf_strdup(DEFAULT_URI);
    gf_jobckpt *ck = c.checkpoint ? checkpoints(h, &c, path, &o, r->stats) : NULL;
    rc = file ? gf_diar_run(h->diar, path, &o, r->stats, &r->res)
              : gf_diar_run_samples(h->diar, x, n, rate, r->uri, &o, r->stats, &r->res);
    if (ck) {   /* kept for the next call when this one did not get through */
        gf_jobckpt_settle(ck);
        gf_jobckpt_end(ck, rc != 0);
        gf_jobckpt_stats cs;
        gf_jobckpt_counts(ck, &cs);
        r->resumed = cs.resumed_at;
        gf_jobckpt_destroy(&ck);
    }
    if (rc) {
        failed(h, rc, NULL);
        gf_diarize_result_destroy(&r);
        return public_code(rc);
    }
    r->input = file ? gf_strdup(path) : NULL;
    r->models = h->models ? gf_strdup(h->models) : NULL;
    fill_result(r);
    *out = r;
    return 0;
}

int gf_diarize_file(gf_diarize *h, const char *path, const gf_diarize_call *call,
                    gf_diarize_result **out)
{
    return run(h, true, path, NULL, 0, 0, call, out);
}

int gf_diarize_samples(gf_diarize *h, const float *samples, size_t n, int sample_rate,
                       const gf_diarize_call *call, gf_diarize_result **out)
{
    return run(h, false, NULL, samples, n, sample_rate, call, out);
}

/* ---- results ------------------------------------------------------------ */

size_t gf_diarize_result_turns(const gf_diarize_result *r, const gf_diarize_turn **turns)
{
    if (turns)
        *turns = r ? r->turns : NULL;
    return r ? r->n_turns : 0;
}

size_t gf_diarize_result_exclusive(const gf_diarize_result *r, const gf_diarize_turn **turns)
{
    if (turns)
        *turns = r ? r->excl : NULL;
    return r ? r->n_excl : 0;
}

const float *gf_diarize_result_embeddings(const gf_diarize_result *r, size_t *dim)
{
    if (dim)
        *dim = r ? r->res.dim : 0;
    return r && r->res.n_speakers && r->res.dim ? r->res.centroids : NULL;
}

size_t gf_diarize_result_speakers(const gf_diarize_result *r)
{
    return r ? r->res.n_speakers : 0;
}

const char *gf_diarize_result_label(const gf_diarize_result *r, size_t k)
{
    return r && k < r->res.n_speakers ? r->labels[k] : NULL;
}

const char *gf_diarize_vad(const gf_diarize *h)
{
    return !h || h->status ? "" : gf_diar_vad(h->diar);
}

double gf_diarize_result_duration(const gf_diarize_result *r)
{
    return r ? r->res.duration : 0.0;
}

int gf_diarize_result_mode(const gf_diarize_result *r)
{
    if (!r)
        return GF_EINVAL;
    return r->res.weight_free ? GF_DIARIZE_MODE_WEIGHT_FREE : GF_DIARIZE_MODE_NEURAL;
}

size_t gf_diarize_result_resumed(const gf_diarize_result *r)
{
    return r ? r->resumed : 0;
}

const char *gf_diarize_result_vad(const gf_diarize_result *r)
{
    return r && r->res.vad ? r->res.vad : r ? "-" : "";
}

double gf_diarize_result_elapsed(const gf_diarize_result *r)
{
    return r ? r->res.t_total : 0.0;
}

const char *gf_diarize_result_uri(const gf_diarize_result *r)
{
    return r ? r->uri : NULL;
}

/* rt's RTTM text under uri (NULL: as it is). */
static char *rttm_text(const gf_rttm *rt, const char *uri)
{
    if (!uri)
        return gf_rttm_format(rt);
    char *u = clean_uri(uri);
    gf_rttm *other = gf_rttm_new();
    for (size_t i = 0; i < rt->n; i++) {
        const gf_turn *t = &rt->turns[i];
        gf_rttm_add(other, u, t->channel, t->start, t->duration, t->speaker);
    }
    char *text = gf_rttm_format(other);
    gf_rttm_destroy(&other);
    free(u);
    return text;
}

char *gf_diarize_result_rttm(const gf_diarize_result *r, const char *uri)
{
    return r && (!uri || uri[0]) ? rttm_text(r->res.rttm, uri) : NULL;
}

char *gf_diarize_result_exclusive_rttm(const gf_diarize_result *r, const char *uri)
{
    return r && (!uri || uri[0]) ? rttm_text(r->res.exclusive, uri) : NULL;
}

char *gf_diarize_result_json(const gf_diarize_result *r)
{
    if (!r)
        return NULL;
    const char *models = r->models ? r->models : "(no models folder given)";
    /* samples: no file to name ("input": null) */
    return gf_diar_result_json(&r->res, r->input, models, r->stats);
}

void gf_diarize_result_destroy(gf_diarize_result **r_p)
{
    gf_diarize_result *r = r_p ? *r_p : NULL;
    if (!r)
        return;
    gf_diar_result_free(&r->res);
    gf_devstats_destroy(&r->stats);
    free(r->turns);
    free(r->excl);
    free(r->labels);
    free(r->uri);
    free(r->input);
    free(r->models);
    free(r);
    *r_p = NULL;
}

/* ---- the rest ------------------------------------------------------------ */

void gf_diarize_free(void *p)
{
    free(p);
}

const char *gf_diarize_strerror(int code)
{
    return gf_strerror(code);
}

const char *gf_diarize_version(void)
{
    return GF_VERSION;
}

void gf_diarize_set_log_level(int level)
{
    if (level < GF_DIARIZE_LOG_DEBUG)
        level = GF_DIARIZE_LOG_DEBUG;
    if (level > GF_DIARIZE_LOG_OFF)
        level = GF_DIARIZE_LOG_OFF;
    gf_log_init(NULL, (gf_log_level)level);
}
