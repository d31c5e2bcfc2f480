/* config.h — gpuflock's configuration: one YAML file (libyaml) or defaults.
 *
 * Found by --config FILE, else $GPUFLOCK_CONFIG, else
 * /etc/gpuflock/gpuflock.yaml, else built-in defaults. Parsing is strict: an
 * unknown key, a wrong type, a duplicate device index or lock path is an
 * error naming the file, line and key (the programs exit with
 * GF_EXIT_CONFIG, 78). config/gpuflock.example.yaml documents every key.
 *
 * gf_config is plain data, read by every program; it is filled once by
 * gf_config_load and freed by gf_config_destroy. */
#ifndef GF_CONFIG_H
#define GF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define GF_CONFIG_DEFAULT_PATH "/etc/gpuflock/gpuflock.yaml"
#define GF_CONFIG_NO_OWNER ((uid_t)-1)   /* lock_owner unset */
#define GF_CONFIG_MAX_BYTES (1 << 20)    /* a configuration file larger than this is refused */
#define GF_CONFIG_MAX_DEPTH 64           /* nesting deeper than this is refused */

typedef enum {
    GF_DEVICE_CPU  = 0,   /* a declared card with no GPU behind it (CI, laptops) */
    GF_DEVICE_CUDA = 1,   /* a CUDA card, identified through the driver */
} gf_device_kind;

typedef struct {
    int index;            /* card number, unique; ascending order is lock order */
    gf_device_kind kind;  /* cpu | cuda */
    char *lock;           /* lock file path: absolute, canonical, unique per card */
    int shared_slots;     /* how many shared holders the broker admits (>= 1) */
} gf_device_conf;

typedef struct {
    char *path;                 /* file it was read from; NULL for built-in defaults */
    char *run_dir;              /* sockets and pid files */
    char *state_dir;            /* job store (and the spool, unless spool_dir says otherwise) */
    char *spool_dir;            /* job output files; default <state_dir>/spool */
    long long spool_max_bytes;  /* spool.max_bytes: cap of each captured stream, 0: none */
    char *bench_lock;           /* box-wide lock taken exclusively by --proof jobs */
    char *lock_owner;           /* user trusted besides root to own lock folders; NULL: none */
    uid_t lock_owner_uid;       /* lock_owner resolved, GF_CONFIG_NO_OWNER when unset */
    char *models_dir;           /* model files (safetensors) and plda/ */
    char *log_level;            /* debug | info | warn | error */
    char *log_file;             /* log_file: the daemons append their lines there too; NULL: none */

    char **scrub_env;           /* proof.scrub_env: variables removed for --proof */
    size_t n_scrub_env;

    gf_device_conf *devices;    /* sorted by index */
    size_t n_devices;
    bool devices_declared;      /* false: one entry per CUDA card found was made up */

    /* broker: */
    char *client_endpoint;      /* default ipc://<run_dir>/client.sock */
    char *worker_endpoint;      /* default ipc://<run_dir>/worker.sock */
    char *socket_owner;         /* user name for the ipc socket files; NULL: unchanged */
    char *socket_group;         /* group name for the ipc socket files; NULL: unchanged */
    mode_t socket_mode;         /* mode of the ipc socket files, default 0666 */
    char *curve_public_key;     /* Z85 server public key (required for tcp://) */
    char *curve_secret_key;     /* Z85 server secret key (required for tcp://) */
    int heartbeat_interval_ms;  /* default 1000 */
    int heartbeat_liveness;     /* missed beats before a peer is dead, default 3 */
    int max_attempts;           /* runs of a job before it fails, default 3 */
    int shutdown_deadline_s;    /* SIGTERM: how long running jobs may finish, default 30 */
    int kill_grace_s;           /* --time / cancel: SIGTERM to SIGKILL delay, default 10 */
    char *worker_program;       /* path of gpuflock-worker; NULL: beside gpuflockd */
    bool spawn_workers;         /* the broker starts one worker per device, default true */
    bool sync_acks;             /* fdatasync the job store before acknowledging, default true */

    /* metrics (Prometheus), off by default: */
    char *metrics_listen;       /* metrics.listen: HOST:PORT of the HTTP endpoint; NULL: none */
    bool metrics_allow_remote;  /* metrics.allow_remote: a listen address off the loopback is meant */
    char *metrics_textfile;     /* metrics.textfile: a .prom file for node_exporter; NULL: none */
    int metrics_textfile_interval_s; /* metrics.textfile_interval_s: seconds between its writes */

    /* worker: */
    int batch_size;             /* windows per network batch, default 32 */
    int cpu_threads;            /* BLAS threads, 0: one per core */
    bool tf32;                  /* worker.math: tf32 (true) or fp32 (false, default) on CUDA cards */
    bool overlap;               /* worker.overlap: embedding trunk beside the segmentation, default true */
    bool batch_jobs;            /* worker.batch_jobs: shared diarize jobs on a card share its
                                   network batches (diar/batcher.h), default true */
    int model_sets;             /* worker.model_sets: models directories whose pipelines a
                                   worker keeps loaded while idle, default 2 */
    bool cgroups;               /* worker.cgroups: a cgroup v2 per job where writable, default true */
    int checkpoint_s;           /* worker.checkpoint_s: diarize progress saved this often, 0 never */

    /* diarize: the community-1 knobs, defaults of `diarize` and `cluster` */
    double diar_threshold;      /* diarize.clustering.threshold: AHC cut, default 0.6 */
    double diar_fa, diar_fb;    /* diarize.clustering.Fa, Fb: VBx, default 0.07, 0.8 */
    double diar_min_duration_off; /* diarize.segmentation.min_duration_off, s, default 0 */
    double diar_segmentation_step; /* diarize.segmentation_step, of the window, default 0.1 */
    bool diar_exclude_overlap;  /* diarize.embedding_exclude_overlap, default true */

    /* scheduler: */
    int yield_after_s;          /* sched.yield_after_s: an exclusive job's wait before yieldable
                                 * holders of its card are asked to yield; 0: never */

    /* history: how long the job store keeps ended jobs (docs/operations.md, "History") */
    int history_keep_days;      /* history.keep_days: ended longer ago are removed; 0: forever */
    int history_keep_jobs;      /* history.keep_jobs: the most recent this many ended jobs are
                                 * kept, older ones removed; 0: no such cap */
} gf_config;

/* Load the configuration. explicit_path: from --config, or NULL to look at
 * $GPUFLOCK_CONFIG and then the default path, then fall back to defaults.
 * Returns 0 and a new config in *out, or GF_ECONFIG after logging
 * "FILE:LINE: key 'K': problem". The caller destroys the result. */
int gf_config_load(const char *explicit_path, gf_config **out);

/* The same for programs that only talk to the broker (the job commands):
 * where no devices are declared the list stays empty (devices_declared
 * false) instead of being made up from the CUDA driver, whose loading and
 * cuInit cost more than such a whole call. Declared devices are read and
 * checked as by gf_config_load, but for the lock files on disk (symlinks,
 * one file by two paths): the broker and `exec` check those, these never
 * open them. */
int gf_config_load_no_devices(const char *explicit_path, gf_config **out);

/* Parse YAML text as if it came from 'name' (tests, --config -). */
int gf_config_parse(const char *name, const char *text, size_t len, gf_config **out);

/* Built-in defaults (devices: one per CUDA card found, else none). */
gf_config *gf_config_defaults(void);

/* The device with this index, or NULL. */
const gf_device_conf *gf_config_device(const gf_config *cfg, int index);

void gf_config_destroy(gf_config **self_p);

/* The filesystem path of an ipc:// endpoint, or NULL for other transports. */
const char *gf_config_ipc_path(const char *endpoint);

#endif
