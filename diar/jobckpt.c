/* jobckpt.c — a diarize job's checkpoints (see jobckpt.h).
 *
 * Three threads touch one: the job's (hooks, capture, restore), the writer
 * (one image at a time: write, sync, rename; and the removal at the end,
 * with the worker's file identity) and the audio's hasher. They share the
 * image handed over, the writer's counters and the hasher's result, under
 * one mutex; the devstats table is written on the job's thread only. */
#include "diar/jobckpt.h"
#include "diar/io/audio.h"
#include "diar/weightfree.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "common/version.h"

#include <assert.h>
#include <cblas.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A periodic checkpoint waits longer than worker.checkpoint_s when taking
 * it would cost more than 1 % of the time between two on the pipeline's
 * thread (the copy of the windows since the last one) or 10 % on the
 * writer's (digest, write, syncs of the whole state, which grows with the
 * run: on the H200, two hours with logits are 190 MB), each predicted from
 * the last one. */
#define CAPTURE_SHARE 100
#define WRITE_SHARE 10

struct gf_jobckpt {
    char *path;                 /* the checkpoint file */
    uint64_t job;               /* job id */
    char who[256];              /* how the log names it: "job 12", or conf->who */
    uid_t uid;                  /* the file's owner */
    gid_t gid;
    int every_s;                /* seconds between periodic checkpoints, 0: none */
    int err_fd;                 /* the job's stderr spool, -1: none */
    gf_devstats *stats;         /* the job's devstats (job's thread only) */
    /* set by begin, the job's thread */
    bool begun;                 /* begin was called */
    gf_ckpt_id id;              /* this attempt's identity; audio fields once hashed */
    int batch;                  /* windows per network call */
    char route[GF_DEVSTATS_NAME_MAX];     /* devstats route of the checkpoint rows */
    char reason[GF_DEVSTATS_REASON_MAX];  /* why they hold no device time */
    char *audio;                /* the audio file */
    uint64_t last_ms;           /* monotonic ms of the last capture (or of the run's start) */
    uint64_t last_capture_ns;   /* how long the last capture took */
    size_t last_capture_windows;   /* the state's windows then */
    size_t last_copied_windows;    /* of which it copied (those after the image it reused) */
    gf_ckpt *restored;          /* the checkpoint resumed from; the pipeline reads its arrays */
    bool audio_known;           /* the audio fields of id are set */
    bool audio_failed;          /* no digest can be had: no checkpoints (said once) */
    bool hasher_joined;         /* the hasher thread was joined (or never started) */
    bool hasher_started;        /* started: at the first checkpoint due, a yield or a resume */
    pthread_t hasher;
    int old_fd;                 /* an earlier attempt's checkpoint, opened with the worker's
                                   identity at new (-1: none, or why not in old_why) */
    int old_rc;                 /* gf_ckpt_open's result */
    char old_why[256];
    bool writer_running;        /* the writer thread was started and not yet joined */
    pthread_t writer;
    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* the writer's work or its completion */
    gf_ckpt *pending;           /* image handed to the writer, not yet taken */
    gf_ckpt *spare;             /* an image written, kept for the next capture's memory */
    uint64_t last_write_ns;     /* the last write's digest, write and syncs */
    size_t last_write_windows;  /* the windows it held */
    bool writing;               /* the writer is writing one */
    uint64_t submitted, finished;  /* images handed over, and done with (written or not) */
    int last_rc;                /* the last write's result */
    bool quit;                  /* the writer stops once idle */
    bool remove;                /* ... removing the file first */
    bool hashed;                /* the hasher is done: the fields below are set */
    int hash_rc;                /* 0, or why there is no digest */
    char hash_why[256];
    char sha[GF_SHA256_HEX_LEN];
    long long size;
    long long mtime_ns;
    gf_jobckpt_stats n;        /* the counts (writer's under mu, the rest the job's) */
};

/* ---- the writer ------------------------------------------------------- */

static void *writer_main(void *arg)
{
    gf_jobckpt *self = arg;
    pthread_mutex_lock(&self->mu);
    for (;;) {
        while (!self->pending && !self->quit)
            pthread_cond_wait(&self->cv, &self->mu);
        if (self->pending && !(self->quit && self->remove)) {
            gf_ckpt *c = self->pending;
            self->pending = NULL;
            self->writing = true;
            pthread_mutex_unlock(&self->mu);
            uint64_t wns = 0, fns = 0;
            char why[512];
            int rc = gf_ckpt_write(c, self->path, self->uid, self->gid, &wns, &fns, why,
                                   sizeof why);
            size_t bytes = gf_ckpt_bytes(c);
            if (rc)
                GF_WARN("%s: checkpoint not written (%s); the previous one, if any, "
                        "stays", self->who, why);
            else
                GF_DEBUG("%s: checkpoint written (%zu bytes)",
                         self->who, bytes);
            pthread_mutex_lock(&self->mu);
            self->writing = false;
            self->last_rc = rc;
            self->last_write_ns = wns + fns;
            self->last_write_windows = gf_ckpt_state(c)->n_windows;
            if (!self->spare)
                self->spare = c;
            else
                gf_ckpt_destroy(&c);
            self->n.write_ns = gf_sat_add(self->n.write_ns, wns);
            self->n.fsync_ns = gf_sat_add(self->n.fsync_ns, fns);
            if (rc) {
                self->n.failed++;
            } else {
                self->n.written++;
                self->n.bytes = gf_sat_add(self->n.bytes, bytes);
            }
            self->finished++;
            pthread_cond_broadcast(&self->cv);
            continue;
        }
        if (self->quit)
            break;
    }
    if (self->pending) {   /* dropped: the file is to go */
        gf_ckpt_destroy(&self->pending);
        self->finished++;
    }
    bool remove = self->remove;
    pthread_mutex_unlock(&self->mu);
    if (remove) {
        char why[512];
        if (gf_ckpt_remove(self->path, why, sizeof why) != 0)
            GF_WARN("%s: checkpoint not removed: %s", self->who, why);
    }
    return NULL;
}

gf_jobckpt *gf_jobckpt_new(const gf_jobckpt_conf *conf)
{
    gf_jobckpt *self = gf_calloc(1, sizeof *self);
    self->path = gf_strdup(conf->path);
    self->job = conf->job;
    if (conf->who)
        snprintf(self->who, sizeof self->who, "%s", conf->who);
    else
        snprintf(self->who, sizeof self->who, "job %llu", (unsigned long long)conf->job);
    self->uid = conf->uid;
    self->gid = conf->gid;
    self->every_s = conf->every_s;
    self->err_fd = conf->err_fd;
    self->stats = conf->stats;
    self->hasher_joined = true;
    /* opened now, with the worker's identity: the spool folder is the
     * worker's (0711), and the job's thread may not be able to open a name
     * in it once it is the submitter */
    self->old_rc = gf_ckpt_open(self->path, &self->old_fd, self->old_why, sizeof self->old_why);
    pthread_mutex_init(&self->mu, NULL);
    pthread_cond_init(&self->cv, NULL);
    int rc = pthread_create(&self->writer, NULL, writer_main, self);
    if (rc == 0)
        self->writer_running = true;
    else   /* then the job runs without checkpoints */
        GF_WARN("%s: no checkpoints: cannot start the writer thread: %s",
                self->who, strerror(rc));
    return self;
}

/* Hand c to the writer (which frees it); with wait, until it is done with
 * it, returning the write's result. Without a writer c is dropped. */
static int submit(gf_jobckpt *self, gf_ckpt *c, bool wait)
{
    if (!self->writer_running) {
        gf_ckpt_destroy(&c);
        return GF_ESTATE;
    }
    pthread_mutex_lock(&self->mu);
    while (wait && (self->pending || self->writing))
        pthread_cond_wait(&self->cv, &self->mu);
    if (self->pending) {   /* the writer has not taken the last one yet: replace it */
        gf_ckpt_destroy(&self->pending);
        self->finished++;
        self->n.skipped++;
    }
    self->pending = c;
    uint64_t mine = ++self->submitted;
    pthread_cond_broadcast(&self->cv);
    int rc = 0;
    if (wait) {
        while (self->finished < mine)
            pthread_cond_wait(&self->cv, &self->mu);
        rc = self->last_rc;
    }
    pthread_mutex_unlock(&self->mu);
    return rc;
}

static bool writer_busy(gf_jobckpt *self)
{
    pthread_mutex_lock(&self->mu);
    bool b = self->pending || self->writing;
    pthread_mutex_unlock(&self->mu);
    return b;
}

/* ---- the audio's digest ----------------------------------------------- */

static void *hasher_main(void *arg)
{
    gf_jobckpt *self = arg;
    uint64_t t0 = gf_now_ns();
    char sha[GF_SHA256_HEX_LEN] = "";
    char why[256] = "";
    struct stat a, b;
    int rc = 0;
    /* O_NONBLOCK: a FIFO is refused below, not waited on */
    int fd = open(self->audio, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, sizeof why, "cannot open the audio: %s", strerror(errno));
        rc = GF_EIO;
    } else {
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            snprintf(why, sizeof why, "the audio is not a regular file");
            rc = GF_EUNSUP;
        } else {
            rc = gf_sha256_fd_hex(fd, self->audio, sha);
        }
        if (rc == GF_EIO && !why[0])
            snprintf(why, sizeof why, "the audio could not be read to its end");
        /* the digest is of the file those size and mtime describe */
        if (rc == 0 && (fstat(fd, &b) != 0 || b.st_size != a.st_size
                        || b.st_mtim.tv_sec != a.st_mtim.tv_sec
                        || b.st_mtim.tv_nsec != a.st_mtim.tv_nsec)) {
            snprintf(why, sizeof why, "the audio file changed while it was hashed");
            rc = GF_ESTATE;
        }
        close(fd);
    }
    pthread_mutex_lock(&self->mu);
    self->hashed = true;
    self->hash_rc = rc;
    snprintf(self->hash_why, sizeof self->hash_why, "%s", why);
    memcpy(self->sha, sha, sizeof sha);
    if (rc == 0) {
        self->size = (long long)a.st_size;
        self->mtime_ns = (long long)a.st_mtim.tv_sec * 1000000000LL + a.st_mtim.tv_nsec;
    }
    self->n.digest_ns = gf_now_ns() - t0;
    pthread_mutex_unlock(&self->mu);
    return NULL;
}

/* The hasher, started when a digest is first wanted: most jobs end before
 * their first checkpoint is due (a 30 s recording takes some 15 ms on an
 * H200) and never need one, so they do not read their audio a second time. */
static void start_hasher(gf_jobckpt *self)
{
    if (self->hasher_started || self->audio_failed)
        return;
    self->hasher_started = true;
    int rc = pthread_create(&self->hasher, NULL, hasher_main, self);
    if (rc == 0) {
        self->hasher_joined = false;
    } else {
        self->audio_failed = true;
        GF_WARN("%s: no checkpoints: cannot start the hash thread: %s",
                self->who, strerror(rc));
    }
}

/* Whether the audio's fields of the identity are set (starting the hasher
 * when it has not run); with wait, waits for it. A digest that cannot be
 * had turns checkpoints off, said once. */
static bool audio_identity(gf_jobckpt *self, bool wait)
{
    if (self->audio_known)
        return true;
    start_hasher(self);
    if (self->audio_failed || self->hasher_joined)
        return false;
    pthread_mutex_lock(&self->mu);
    bool done = self->hashed;
    pthread_mutex_unlock(&self->mu);
    if (!done && !wait)
        return false;
    pthread_join(self->hasher, NULL);
    self->hasher_joined = true;
    if (self->hash_rc) {
        self->audio_failed = true;
        GF_WARN("%s: no checkpoints: %s", self->who, self->hash_why);
        if (self->err_fd >= 0)
            dprintf(self->err_fd, "gpuflock: no checkpoints: %s\n", self->hash_why);
        return false;
    }
    gf_ckpt_id_set(&self->id, GF_CKPT_AUDIO_SIZE, "%lld", self->size);
    gf_ckpt_id_set(&self->id, GF_CKPT_AUDIO_MTIME, "%lld", self->mtime_ns);
    gf_ckpt_id_set(&self->id, GF_CKPT_AUDIO_SHA256, "%s", self->sha);
    self->audio_known = true;
    return true;
}

void gf_jobckpt_begin(gf_jobckpt *self, const gf_ckpt_id *id, const char *audio, int batch,
                      const char *route, const char *reason)
{
    assert(!self->begun);
    self->begun = true;
    self->id = *id;
    self->batch = batch > 0 ? batch : 1;
    snprintf(self->route, sizeof self->route, "%s", route);
    snprintf(self->reason, sizeof self->reason, "%s", reason);
    self->audio = gf_strdup(audio);
    self->last_ms = gf_now_ms();
    if (self->old_rc == 0)
        start_hasher(self);          /* a resume compares it: beside the first batches */
}

/* ---- resume ----------------------------------------------------------- */

static void refuse(gf_jobckpt *self, const char *why)
{
    self->n.refused = true;
    GF_WARN("%s: checkpoint not reused: %s; starting at the first window",
            self->who, why);
    if (self->err_fd >= 0)
        dprintf(self->err_fd, "gpuflock: checkpoint not reused: %s; starting at the first "
                              "window\n", why);
}

/* The state agrees with its own identity and fits this run's batches:
 * what a valid digest does not prove of a file its owner may rewrite. */
static bool consistent(const gf_jobckpt *self, const gf_ckpt *c, size_t total)
{
    const gf_diar_state *st = gf_ckpt_state(c);
    const gf_ckpt_id *id = gf_ckpt_identity(c);
    bool wf = strcmp(id->v[GF_CKPT_MODE], "weight-free") == 0;
    bool logits = strcmp(id->v[GF_CKPT_LOGITS], "kept") == 0;
    return st->weight_free == wf && (st->logits != NULL) == (logits && !wf)
           && (st->n_windows % (size_t)self->batch == 0 || st->n_windows >= total);
}

const gf_diar_state *gf_jobckpt_resume(gf_jobckpt *self, size_t total_windows)
{
    assert(self->begun);
    uint64_t t0 = gf_now_ns();
    gf_ckpt *c = NULL;
    char why[512];
    /* the header may undercount by one window */
    int rc = self->old_rc;
    snprintf(why, sizeof why, "%s", self->old_why);
    if (rc == 0)
        rc = gf_ckpt_read_fd(self->old_fd, geteuid() == 0 ? self->uid : geteuid(),
                             total_windows + 1, &c, why, sizeof why);
    if (self->old_fd >= 0)
        close(self->old_fd);
    self->old_fd = -1;
    const gf_diar_state *st = NULL;
    char diff[1024];
    if (rc == GF_ENOENT) {
        goto out;
    } else if (rc) {
        refuse(self, why);
    } else if (!audio_identity(self, true)) {
        refuse(self, "the audio file's digest could not be made");
    } else if (gf_ckpt_id_diff(gf_ckpt_identity(c), &self->id, diff, sizeof diff) > 0) {
        refuse(self, diff);
    } else if (!consistent(self, c, total_windows)) {
        refuse(self, "damaged (its contents do not match its identity)");
    } else {
        st = gf_ckpt_state(c);
        self->restored = c;
        c = NULL;
        self->n.resumed_at = st->n_windows;
        uint64_t copies = 1 + (st->emb != NULL) + (st->logits != NULL) + (st->n_blocks > 0);
        if (self->stats) {
            gf_devstats_unavailable(self->stats, "checkpoint.restore", self->route, self->reason);
            gf_devstats_transfer(self->stats, "checkpoint.restore", self->route,
                                 gf_ckpt_bytes(self->restored), copies);
        }
        GF_INFO("%s: resumed from its checkpoint at window %zu of %zu",
                self->who, st->n_windows, total_windows);
        if (self->err_fd >= 0)
            dprintf(self->err_fd, "gpuflock: resumed from the checkpoint of an earlier attempt "
                                  "at window %zu of %zu\n", st->n_windows, total_windows);
    }
out:
    gf_ckpt_destroy(&c);
    self->n.restore_ns = gf_now_ns() - t0;
    self->last_ms = gf_now_ms();   /* the next checkpoint is every_s from here */
    return st;
}

/* ---- capture ---------------------------------------------------------- */

/* ns scaled from `at` windows to n: what the same work costs for n. */
static uint64_t scaled(uint64_t ns, size_t at, size_t n)
{
    return at ? (uint64_t)((double)ns * (double)n / (double)at) : ns;
}

/* Milliseconds from one periodic checkpoint to the next for a state of n
 * windows: every_s, or more when the copy (of the windows since the last
 * capture) or the write (of the whole state) would take more than its
 * share of the time between two. */
static uint64_t gap_ms(gf_jobckpt *self, size_t n)
{
    pthread_mutex_lock(&self->mu);
    uint64_t w = scaled(self->last_write_ns, self->last_write_windows, n);
    pthread_mutex_unlock(&self->mu);
    size_t since = n > self->last_capture_windows ? n - self->last_capture_windows : 0;
    uint64_t c = scaled(self->last_capture_ns, self->last_copied_windows, since);
    uint64_t gap = (uint64_t)self->every_s * 1000;
    c = c / 1000000 * CAPTURE_SHARE;
    w = w / 1000000 * WRITE_SHARE;
    return gap > c ? (gap > w ? gap : w) : (c > w ? c : w);
}

bool gf_jobckpt_boundary(gf_jobckpt *self, const gf_diar_state *st, bool yield)
{
    if (!self->begun)
        return false;
    if (!yield) {
        if (self->every_s <= 0 || st->last
            || gf_now_ms() - self->last_ms < gap_ms(self, st->n_windows))
            return false;
        if (!audio_identity(self, false) || writer_busy(self)) {
            if (!self->audio_failed)
                self->n.skipped++;   /* due, but not now: at the next boundary */
            return false;
        }
    } else if (!audio_identity(self, true)) {
        return false;
    }
    uint64_t t0 = gf_now_ns();
    pthread_mutex_lock(&self->mu);
    gf_ckpt *reuse = self->spare;
    self->spare = NULL;
    pthread_mutex_unlock(&self->mu);
    gf_ckpt_copied cp;
    gf_ckpt *c = gf_ckpt_capture(&self->id, st, reuse, &cp);
    self->last_capture_ns = gf_now_ns() - t0;
    self->last_capture_windows = st->n_windows;
    self->last_copied_windows = cp.windows;
    self->n.capture_ns = gf_sat_add(self->n.capture_ns, self->last_capture_ns);
    if (self->stats) {
        gf_devstats_unavailable(self->stats, "checkpoint.capture", self->route, self->reason);
        gf_devstats_transfer(self->stats, "checkpoint.capture", self->route, cp.bytes, cp.copies);
    }
    self->last_ms = gf_now_ms();
    return submit(self, c, yield) == 0 && yield;
}

void gf_jobckpt_settle(gf_jobckpt *self)
{
    if (!self->writer_running)
        return;
    pthread_mutex_lock(&self->mu);
    if (self->pending) {
        gf_ckpt_destroy(&self->pending);
        self->finished++;
        self->n.skipped++;
    }
    while (self->writing)
        pthread_cond_wait(&self->cv, &self->mu);
    pthread_mutex_unlock(&self->mu);
}

static void stop_writer(gf_jobckpt *self, bool remove)
{
    if (!self->writer_running)
        return;
    pthread_mutex_lock(&self->mu);
    self->quit = true;
    self->remove = remove;
    pthread_cond_broadcast(&self->cv);
    pthread_mutex_unlock(&self->mu);
    pthread_join(self->writer, NULL);
    self->writer_running = false;
}

void gf_jobckpt_end(gf_jobckpt *self, bool keep)
{
    gf_jobckpt_settle(self);
    if (self->writer_running) {
        stop_writer(self, !keep);
        return;
    }
    char why[512];   /* no writer: from here, as far as this thread may */
    if (!keep && gf_ckpt_remove(self->path, why, sizeof why) != 0)
        GF_WARN("%s: checkpoint not removed: %s", self->who, why);
}

void gf_jobckpt_counts(gf_jobckpt *self, gf_jobckpt_stats *out)
{
    pthread_mutex_lock(&self->mu);
    *out = self->n;
    pthread_mutex_unlock(&self->mu);
}

void gf_jobckpt_destroy(gf_jobckpt **self_p)
{
    gf_jobckpt *self = self_p ? *self_p : NULL;
    if (!self)
        return;
    stop_writer(self, false);
    if (!self->hasher_joined)
        pthread_join(self->hasher, NULL);
    if (self->old_fd >= 0)
        close(self->old_fd);
    gf_ckpt_destroy(&self->pending);
    gf_ckpt_destroy(&self->spare);
    gf_ckpt_destroy(&self->restored);
    pthread_cond_destroy(&self->cv);
    pthread_mutex_destroy(&self->mu);
    free(self->audio);
    free(self->path);
    free(self);
    *self_p = NULL;
}

/* ---- the program's identity ------------------------------------------ */

/* The GNU build id of the program (the first object dl_iterate_phdr
 * reports), as hex into data (at least 65 bytes); "" when it has none. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    char *out = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        size_t at = 0, n = ph->p_memsz;
        while (at + sizeof(ElfW(Nhdr)) <= n) {
            ElfW(Nhdr) nh;
            memcpy(&nh, p + at, sizeof nh);
            size_t name = at + sizeof nh;
            size_t desc = name + ((nh.n_namesz + 3) & ~(size_t)3);
            size_t next = desc + ((nh.n_descsz + 3) & ~(size_t)3);
            if (next > n)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(p + name, "GNU", 4) == 0) {
                size_t k = nh.n_descsz < 32 ? nh.n_descsz : 32;
                for (size_t j = 0; j < k; j++)
                    sprintf(out + 2 * j, "%02x", p[desc + j]);
                return 1;
            }
            at = next;
        }
    }
    return 1;   /* the program only, not its libraries */
}

void gf_jobckpt_program(gf_ckpt_id *id)
{
    char build[65] = "";
    dl_iterate_phdr(find_build_id, build);
    gf_ckpt_id_set(id, GF_CKPT_PROGRAM, "gpuflock %s build %s", GF_VERSION,
                   build[0] ? build : "unknown");
    gf_ckpt_id_set(id, GF_CKPT_LIBRARIES, "%s, %s, %s", sf_version_string(), soxr_version(),
                   openblas_get_config());
}

void gf_jobckpt_identity(gf_ckpt_id *id, const gf_diar *d, const gf_diar_run_opts *o,
                         const char *job, const char *math, const char *overlap,
                         const char *seg_sha, const char *emb_sha)
{
    bool wf = gf_diar_weight_free(d);
    memset(id, 0, sizeof *id);
    gf_ckpt_id_set(id, GF_CKPT_JOB, "%s", job);
    gf_jobckpt_program(id);
    gf_ckpt_id_set(id, GF_CKPT_ROUTE, "%s", gf_diar_identity(d));
    gf_ckpt_id_set(id, GF_CKPT_MODE, "%s", wf ? "weight-free" : "neural");
    gf_ckpt_id_set(id, GF_CKPT_MATH, "%s", math);
    gf_ckpt_id_set(id, GF_CKPT_OVERLAP, "%s", overlap);
    gf_ckpt_id_set(id, GF_CKPT_BATCH, "%d", gf_diar_batch(d));
    gf_ckpt_id_set(id, GF_CKPT_LOGITS, "%s", o->save_dir && !wf ? "kept" : "not kept");
    gf_ckpt_id_set(id, GF_CKPT_THRESHOLD, "%.17g", wf ? GF_DIAR_WF_SAME : o->cluster.threshold);
    gf_ckpt_id_set(id, GF_CKPT_EXCLUDE_OVERLAP, "%s", wf || o->exclude_overlap ? "on" : "off");
    size_t step = 0;
    gf_diar_step_samples(o->segmentation_step, &step);   /* the run refuses a bad one */
    gf_ckpt_id_set(id, GF_CKPT_STEP, "%.17g", (double)step / GF_AUDIO_RATE);
    gf_ckpt_id_set(id, GF_CKPT_NUM_SPEAKERS, "%d", o->cluster.num_speakers);
    gf_ckpt_id_set(id, GF_CKPT_MIN_SPEAKERS, "%d", o->cluster.min_speakers);
    gf_ckpt_id_set(id, GF_CKPT_MAX_SPEAKERS, "%d", o->cluster.max_speakers);
    gf_ckpt_id_set(id, GF_CKPT_SEG_MODEL, "%s", seg_sha);
    gf_ckpt_id_set(id, GF_CKPT_EMB_MODEL, "%s", emb_sha);
    gf_ckpt_id_set(id, GF_CKPT_VAD_MODEL, "%s", gf_diar_vad_sha256(d));
}
