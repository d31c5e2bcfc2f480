/* gpuflock_spank.c — the Slurm SPANK plugin: a job step holds the gpuflock
 * lock of every card Slurm gave it.
 *
 * Loaded by slurmstepd through plugstack.conf (docs/slurm.md). For each job
 * step on a node (the batch step too, not the extern step), before its tasks
 * start, slurmstepd takes the card lock files of the gpuflock configuration
 * with common/lock.c, exactly as `gpuflock exec` does: so a hand-run
 * flock(1), `gpuflock exec` and a Slurm step on one node respect each other.
 * slurmstepd keeps the descriptors until the step ends (they are
 * close-on-exec: the tasks do not hold them, the step's own process does;
 * `gpuflock locks` names it by the job and step of its process title,
 * "slurmstepd: [12.0]").
 *
 * Which cards: the step's GPU list as Slurm gives it (SLURM_STEP_GPUS, else
 * SLURM_JOB_GPUS for a batch step, else CUDA_VISIBLE_DEVICES), each entry
 * either a card index of the configuration (gres.conf's device order must be
 * the configuration's: docs/slurm.md) or a card UUID ("GPU-...", or "cpu-N"
 * for a declared card), matched against the identities of the configured
 * cards. A step with no GPU list takes nothing. Anything else in the list is
 * refused and the step fails, naming the entry.
 *
 * A card held outside Slurm makes the step wait, saying so on the step's
 * stderr, up to the plugin argument wait=SEC; then the step fails. Steps of
 * one job do not wait for each other: a card whose every holder is a
 * slurmstepd of this same job (its batch step, say) is the job's already.
 *
 * Plugin arguments (plugstack.conf): config=FILE (else $GPUFLOCK_CONFIG of
 * slurmd's environment, else /etc/gpuflock/gpuflock.yaml: never the job's
 * environment, which the user controls), wait=SEC (default 300; 0: try
 * once). Job options: --gpuflock=shared|exclusive (default exclusive),
 * --gpuflock-proof (the bench lock too, exclusively, and proof.scrub_env
 * removed from the tasks' environment, as `gpuflock exec --proof`).
 *
 * A SPANK plugin's callbacks share no handle of the plugin's own, so what
 * the options and arguments said and what the step holds live in one
 * file-level struct: one step per slurmstepd process. */
#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "common/card.h"
#include "common/config.h"
#include "common/error.h"
#include "common/lock.h"
#include "common/lockinfo.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

SPANK_PLUGIN(gpuflock, 1);

#define WHO "gpuflock"
#define DEFAULT_WAIT_S 300
#define MAX_WAIT_S (7 * 24 * 3600)
#define MAX_CARDS 64
#define LIST_MAX 4096      /* the longest GPU list read from the job's environment */
#define ENTRY_MAX 64       /* the longest entry of it ("GPU-" and a UUID is 40) */

static struct {
    char *config;          /* config=FILE; NULL: the default search */
    int wait_ms;           /* wait=SEC in milliseconds; 0: try once */
    gf_lock_mode mode;     /* --gpuflock=MODE; exclusive unless asked */
    bool proof;            /* --gpuflock-proof */
    gf_config *cfg;        /* loaded in the step, for as long as it holds */
    gf_lockset *set;       /* the step's cards, held until the step ends */
    gf_lock *bench;        /* --gpuflock-proof: the held bench lock */
    char step[48];         /* "12.0", "12.batch": for the messages */
    uint32_t job_id;       /* this step's job */
    int fail_status;       /* non-zero: the step fails with it (75 wait ran out, 69
                              card unavailable, 78 configuration), in its tasks */
    char pending[2048];    /* what was said before the step's stderr existed */
    bool stderr_ready;     /* user_init reached: say() reaches srun now */
} plug = { .wait_ms = DEFAULT_WAIT_S * 1000, .mode = GF_LOCK_EXCLUSIVE };

/* ---- options ------------------------------------------------------------ */

static int opt_mode(int val, const char *optarg, int remote)
{
    (void)val;
    (void)remote;
    if (optarg && strcmp(optarg, "shared") == 0)
        plug.mode = GF_LOCK_SHARED;
    else if (optarg && strcmp(optarg, "exclusive") == 0)
        plug.mode = GF_LOCK_EXCLUSIVE;
    else {
        slurm_error(WHO ": --gpuflock: '%s' is not a lock mode (shared or exclusive)",
                    optarg ? optarg : "");
        return -1;
    }
    return 0;
}

static int opt_proof(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    (void)remote;
    plug.proof = true;
    return 0;
}

static struct spank_option options[] = {
    { "gpuflock", "MODE",
      "take the allocated cards' gpuflock locks shared or exclusive (the default)", 1, 0,
      opt_mode },
    { "gpuflock-proof", NULL,
      "also take the gpuflock bench lock and drop proof.scrub_env (as gpuflock exec --proof)",
      0, 0, opt_proof },
    SPANK_OPTIONS_TABLE_END
};

/* wait=SEC: a number of seconds, fractions allowed, 0 to MAX_WAIT_S. */
static int parse_wait(const char *text)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v) || v < 0 || v > MAX_WAIT_S) {
        slurm_error(WHO ": plugstack.conf: wait=%s is not a number of seconds from 0 to %d", text,
                    MAX_WAIT_S);
        return -1;
    }
    plug.wait_ms = (int)ceil(v * 1000.0);
    return 0;
}

static int parse_args(int ac, char **av)
{
    for (int i = 0; i < ac; i++) {
        if (strncmp(av[i], "wait=", 5) == 0) {
            if (parse_wait(av[i] + 5) != 0)
                return -1;
        } else if (strncmp(av[i], "config=", 7) == 0 && av[i][7] == '/') {
            free(plug.config);
            plug.config = gf_strdup(av[i] + 7);
        } else {
            slurm_error(WHO ": plugstack.conf: unknown argument '%s' (known: config=/ABSOLUTE/FILE, "
                        "wait=SEC)", av[i]);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    gf_log_init("gpuflock-spank", GF_LOG_OFF);   /* errors reach the step through say() */
    if (parse_args(ac, av) != 0)
        return -1;
    spank_context_t ctx = spank_context();
    if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
        return 0;
    for (struct spank_option *o = options; o->name; o++)
        if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
            slurm_error(WHO ": cannot register the option --%s", o->name);
            return -1;
        }
    return 0;
}

/* ---- the step's cards --------------------------------------------------- */

/* A line for the step's stderr (srun shows it) and slurmd's log. Before
 * user_init slurmstepd's messages reach slurmd's log alone, so they wait in
 * plug.pending until then. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (plug.stderr_ready) {
        slurm_spank_log(WHO ": step %s: %s", plug.step, text);
        return;
    }
    slurm_info(WHO ": step %s: %s", plug.step, text);
    size_t used = strlen(plug.pending);
    snprintf(plug.pending + used, sizeof plug.pending - used, "%s%s", used ? "\n" : "", text);
}

/* The step cannot run: say why once its stderr exists; its tasks end with
 * 'status' (slurm_spank_task_init_privileged). A failure returned from
 * init_post_opt or user_init would reach srun as a failed launch, which
 * srun 22.05 answers with exit status 0. */
static int fail_step(int status)
{
    if (!plug.fail_status)
        plug.fail_status = status;
    return 0;
}

/* The holders of 'path' in one line ("pid 12 (exclusive, flock ...); ..."). */
static void holders_text(const char *path, char *buf, size_t len)
{
    gf_lock_holder *h = NULL;
    size_t n = 0;
    snprintf(buf, len, "a process not in /proc/locks (it may have just let go)");
    if (gf_lock_holders(path, &h, &n) == 0) {
        size_t used = 0;
        for (size_t i = 0; i < n && used < len; i++) {
            char one[512];
            gf_lock_holder_describe(&h[i], one, sizeof one);
            used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "; " : "", one);
        }
    }
    gf_lock_holders_free(&h, n);
}

static void on_busy(const gf_lock *lock, void *arg)
{
    (void)arg;
    const char *path = gf_lock_path(lock);
    char what[64] = "the bench lock";
    for (size_t i = 0; i < plug.cfg->n_devices; i++)
        if (strcmp(plug.cfg->devices[i].lock, path) == 0)
            snprintf(what, sizeof what, "card %d", plug.cfg->devices[i].index);
    char holders[2048];
    holders_text(gf_lock_gated(lock) ? gf_lock_gate_path(lock) : path, holders, sizeof holders);
    say("%s (%s) is %s %s; waiting up to %g s (plugstack.conf wait=)", what, path,
        gf_lock_gated(lock) ? "awaited at its gate by" : "held by", holders,
        plug.wait_ms / 1000.0);
}

/* A process of root's: slurmstepd runs as root, and anyone may name a
 * process of theirs "slurmstepd: [12.0]". */
static bool run_by_root(pid_t pid)
{
    char dir[64];
    struct stat st;
    snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
    return stat(dir, &st) == 0 && st.st_uid == 0;
}

/* Is every holder of 'path' a slurmstepd of this job (the card is ours)? */
static bool held_by_this_job(const char *path)
{
    gf_lock_holder *h = NULL;
    size_t n = 0;
    bool ours = gf_lock_holders(path, &h, &n) == 0 && n > 0;
    for (size_t i = 0; ours && i < n; i++)
        ours = h[i].slurm_job == plug.job_id && h[i].slurm_job != 0 && run_by_root(h[i].pid);
    gf_lock_holders_free(&h, n);
    return ours;
}

/* The configured card one entry of the GPU list names, or NULL (said). */
static const gf_device_conf *card_of(const char *entry, const char *var)
{
    size_t len = strlen(entry);
    if (len == 0 || len > ENTRY_MAX) {
        say("%s: an entry %s (a card index or UUID, comma-separated)", var,
            len ? "too long" : "is empty");
        return NULL;
    }
    if (strspn(entry, "0123456789") == len) {
        errno = 0;
        long v = strtol(entry, NULL, 10);
        const gf_device_conf *dev = errno || v > INT_MAX ? NULL : gf_config_device(plug.cfg, (int)v);
        if (!dev)
            say("%s names card %s, which %s does not configure", var, entry,
                plug.cfg->path ? plug.cfg->path : "the built-in configuration");
        return dev;
    }
    for (size_t i = 0; i < len; i++)
        if (!(entry[i] == '-' || (entry[i] >= '0' && entry[i] <= '9') ||
              (entry[i] >= 'a' && entry[i] <= 'z') || (entry[i] >= 'A' && entry[i] <= 'Z'))) {
            say("%s: '%.*s' is neither a card index nor a card UUID", var, (int)len, entry);
            return NULL;
        }
    for (size_t i = 0; i < plug.cfg->n_devices; i++) {
        gf_card_identity id;
        if (gf_card_identify(&plug.cfg->devices[i], &id) == 0 && strcasecmp(id.uuid, entry) == 0)
            return &plug.cfg->devices[i];
    }
    say("%s names %s, which is no card of %s", var, entry,
        plug.cfg->path ? plug.cfg->path : "the built-in configuration");
    return NULL;
}

/* The step's GPU list into the set (cards the job holds already left out).
 * Returns 0, or the exit status the step fails with (said): 64 for a list
 * that names no configured card, 69 for a lock file that cannot be used. */
static int add_cards(spank_t sp)
{
    static const char *vars[] = { "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "CUDA_VISIBLE_DEVICES" };
    char list[LIST_MAX];
    const char *var = NULL;
    for (size_t i = 0; i < sizeof vars / sizeof *vars && !var; i++) {
        spank_err_t e = spank_getenv(sp, vars[i], list, sizeof list);
        if (e == ESPANK_SUCCESS && list[0])
            var = vars[i];
        else if (e == ESPANK_NOSPACE) {
            say("%s is longer than %d bytes: not a list of cards", vars[i], LIST_MAX - 1);
            return GF_EXIT_USAGE;
        }
    }
    if (!var)
        return 0;   /* no GPUs in this step: nothing to lock */
    if (strcmp(list, "NoDevFiles") == 0) {
        say("%s=NoDevFiles: the gpu gres has no File= in gres.conf, so which card the step "
            "got is unknown (docs/slurm.md)", var);
        return GF_EXIT_USAGE;
    }
    if (list[0] == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,")) {
        say("%s='%s': an empty entry in the list of cards", var, list);
        return GF_EXIT_USAGE;
    }
    size_t n = 0;
    for (char *save = NULL, *p = list;; p = NULL) {
        char *entry = strtok_r(p, ",", &save);
        if (!entry)
            break;
        const gf_device_conf *dev = card_of(entry, var);
        if (!dev)
            return GF_EXIT_USAGE;
        if (++n > MAX_CARDS) {
            say("%s names more than %d cards", var, MAX_CARDS);
            return GF_EXIT_USAGE;
        }
        if (held_by_this_job(dev->lock))
            continue;
        int rc = gf_lockset_add(plug.set, dev->index, dev->lock, plug.cfg->lock_owner_uid);
        if (rc == GF_EINVAL)
            continue;   /* named twice */
        if (rc) {
            say("card %d: %s", dev->index, gf_log_last_error());
            return GF_EXIT_UNAVAIL;
        }
    }
    return 0;
}

/* The step's environment: which cards it holds; for a proof step, the
 * scrubbed variables gone (named on stderr, as exec --proof does). */
static void export_env(spank_t sp)
{
    char *devices = NULL, *files = NULL;
    for (size_t i = 0; i < gf_lockset_count(plug.set); i++) {
        char *d = gf_strfmt("%s%s%d", devices ? devices : "", devices ? "," : "",
                            gf_lockset_index(plug.set, i));
        char *f = gf_strfmt("%s%s%s", files ? files : "", files ? "," : "",
                            gf_lock_path(gf_lockset_lock(plug.set, i)));
        free(devices);
        free(files);
        devices = d;
        files = f;
    }
    if (devices) {
        spank_setenv(sp, "GPUFLOCK_DEVICE", devices, 1);
        spank_setenv(sp, "GPUFLOCK_LOCK_FILE", files, 1);
    }
    free(devices);
    free(files);
    if (!plug.proof)
        return;
    char removed[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < plug.cfg->n_scrub_env; i++) {
        char probe[2];
        spank_err_t e = spank_getenv(sp, plug.cfg->scrub_env[i], probe, sizeof probe);
        if (e != ESPANK_SUCCESS && e != ESPANK_NOSPACE)
            continue;
        spank_unsetenv(sp, plug.cfg->scrub_env[i]);
        if (used < sizeof removed)
            used += (size_t)snprintf(removed + used, sizeof removed - used, "%s%s", used ? "," : "",
                                     plug.cfg->scrub_env[i]);
    }
    say("--gpuflock-proof: bench lock held; removed from the environment: %s",
        used ? removed : "nothing (none of proof.scrub_env was set)");
}

static void let_go(void)
{
    gf_lockset_destroy(&plug.set);
    gf_lock_destroy(&plug.bench);
    gf_config_destroy(&plug.cfg);
}

/* Open a lock file as root, its gate made beside it: the wait happens in
 * user_init, where slurmstepd has dropped to the job's user, who may not
 * create either. Returns 0 or -1 (said). */
static int prepare(const char *path, const char *what)
{
    char why[512];
    if (gf_lock_prepare(path, plug.cfg->lock_owner_uid, why, sizeof why) != 0) {
        say("%s: %s", what, why);
        return -1;
    }
    return 0;
}

/* In slurmstepd, as root, after the options: which cards, their files open. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (!spank_remote(sp))
        return 0;
    uint32_t step_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &plug.job_id) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS) {
        slurm_error(WHO ": cannot read the job and step id");
        return -1;
    }
    if (step_id == SLURM_EXTERN_CONT)
        return 0;   /* the extern step runs no task of the user's */
    if (step_id == SLURM_BATCH_SCRIPT)
        snprintf(plug.step, sizeof plug.step, "%u.batch", plug.job_id);
    else
        snprintf(plug.step, sizeof plug.step, "%u.%u", plug.job_id, step_id);
    if (gf_config_load(plug.config, &plug.cfg) != 0) {
        say("the gpuflock configuration: %s", gf_log_last_error());
        return fail_step(GF_EXIT_CONFIG);
    }
    plug.set = gf_lockset_new();
    int rc = add_cards(sp);
    if (rc != 0)
        goto fail;
    rc = GF_EXIT_UNAVAIL;
    for (size_t i = 0; i < gf_lockset_count(plug.set); i++)
        if (prepare(gf_lock_path(gf_lockset_lock(plug.set, i)), "a card's lock file") != 0)
            goto fail;
    if (plug.proof) {
        if (prepare(plug.cfg->bench_lock, "the bench lock") != 0)
            goto fail;
        char why[512];
        plug.bench = gf_lock_open(plug.cfg->bench_lock, plug.cfg->lock_owner_uid, why, sizeof why);
        if (!plug.bench) {
            say("the bench lock: %s", why);
            goto fail;
        }
    }
    return 0;
fail:
    let_go();
    return fail_step(rc);
}

/* In slurmstepd, as the job's user, its stderr the step's now: wait for the
 * cards (and the bench lock first, for a proof step). */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    plug.stderr_ready = true;
    if (plug.fail_status) {
        for (char *save = NULL, *p = plug.pending;; p = NULL) {
            char *line = strtok_r(p, "\n", &save);
            if (!line)
                break;
            say("%s", line);
        }
        say("the step fails (exit status %d)", plug.fail_status);
        return 0;
    }
    if (!plug.cfg || (gf_lockset_count(plug.set) == 0 && !plug.bench))
        return 0;
    gf_lock_wait_opts opts = { .stop = NULL, .on_busy = on_busy, .arg = NULL };
    uint64_t start = gf_now_ms();
    int rc = plug.bench ? gf_lock_wait(plug.bench, GF_LOCK_EXCLUSIVE, plug.wait_ms, &opts) : 0;
    if (rc == 0) {
        uint64_t spent = gf_now_ms() - start;
        int left = spent >= (uint64_t)plug.wait_ms ? 0 : plug.wait_ms - (int)spent;
        rc = gf_lockset_take(plug.set, plug.mode, left, &opts);
    }
    if (rc == GF_ETIMEDOUT) {
        say("gave up after %g s waiting for its cards (plugstack.conf wait=); the step fails "
            "(exit status %d)", plug.wait_ms / 1000.0, GF_EXIT_TEMPFAIL);
        let_go();
        return fail_step(GF_EXIT_TEMPFAIL);
    }
    if (rc) {
        say("cannot lock its cards: %s; the step fails (exit status %d)", gf_log_last_error(),
            GF_EXIT_UNAVAIL);
        let_go();
        return fail_step(GF_EXIT_UNAVAIL);
    }
    export_env(sp);
    return 0;
}

/* In each task, as root, just before it execs the user's program: a step
 * that could not have its cards ends here, with the status of `gpuflock
 * exec` for the same failure. _exit, not a return: Slurm would turn -1 into
 * status 1 and say it of its own plugin stack; this is the task's process,
 * forked for this one program, with nothing of the user's running yet. */
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    if (plug.fail_status)
        _exit(plug.fail_status);
    return 0;
}

/* The step ends: the locks go (they would with the process anyway). */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)sp;
    (void)ac;
    (void)av;
    let_go();
    free(plug.config);
    plug.config = NULL;
    return 0;
}
