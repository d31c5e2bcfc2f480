/* test_config.c — the configuration loader: defaults, the example file, and
 * every kind of error naming its file, line and key. */
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "tests/unit/tmpdir.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parse 'text' as file "t.yaml" with stderr captured; returns the code and
 * what was logged (caller frees). */
static int parse_capture(const char *text, gf_config **cfg, char **logged)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    int rc = gf_config_parse("t.yaml", text, strlen(text), cfg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t n = lseek(fileno(tmp), 0, SEEK_END);
    assert_true(n >= 0);
    rewind(tmp);
    char *buf = gf_calloc((size_t)n + 1, 1);
    size_t got = fread(buf, 1, (size_t)n, tmp);
    buf[got] = '\0';
    fclose(tmp);
    *logged = buf;
    return rc;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void assert_defaults_except_devices(const gf_config *c)
{
    assert_string_equal(c->run_dir, "/run/gpuflock");
    assert_string_equal(c->state_dir, "/var/lib/gpuflock");
    assert_string_equal(c->bench_lock, "/run/lock/gpuflock/bench.lock");
    assert_string_equal(c->models_dir, "/var/lib/gpuflock/models");
    assert_string_equal(c->log_level, "info");
    assert_int_equal(c->n_scrub_env, 2);
    assert_string_equal(c->scrub_env[0], "GPUFLOCK_FORCE_LIBRARY");
    assert_string_equal(c->scrub_env[1], "CUDA_LAUNCH_BLOCKING");
    assert_string_equal(c->client_endpoint, "ipc:///run/gpuflock/client.sock");
    assert_string_equal(c->worker_endpoint, "ipc:///run/gpuflock/worker.sock");
    assert_null(c->socket_owner);
    assert_null(c->socket_group);
    assert_int_equal(c->socket_mode, 0666);
    assert_null(c->curve_public_key);
    assert_null(c->curve_secret_key);
    assert_int_equal(c->heartbeat_interval_ms, 1000);
    assert_int_equal(c->heartbeat_liveness, 3);
    assert_int_equal(c->max_attempts, 3);
    assert_int_equal(c->shutdown_deadline_s, 30);
    assert_int_equal(c->kill_grace_s, 10);
    assert_null(c->worker_program);
    assert_true(c->spawn_workers);
    assert_int_equal(c->batch_size, 32);
    assert_int_equal(c->cpu_threads, 0);
    assert_false(c->tf32);
    assert_true(c->overlap);
    assert_true(c->batch_jobs);
    assert_int_equal(c->model_sets, 2);
    assert_true(c->cgroups);
    assert_int_equal(c->checkpoint_s, 30);
    assert_int_equal(c->yield_after_s, 5);
    assert_int_equal(c->history_keep_days, 30);
    assert_int_equal(c->history_keep_jobs, 100000);
    assert_null(c->lock_owner);
    assert_int_equal(c->lock_owner_uid, GF_CONFIG_NO_OWNER);
    assert_string_equal(c->spool_dir, "/var/lib/gpuflock/spool");
    assert_int_equal(c->spool_max_bytes, 64LL << 20);
    assert_null(c->log_file);
    assert_null(c->metrics_listen);
    assert_false(c->metrics_allow_remote);
    assert_null(c->metrics_textfile);
    assert_int_equal(c->metrics_textfile_interval_s, 5);
}

static void test_defaults(void **state)
{
    (void)state;
    gf_config *c = gf_config_defaults();
    assert_null(c->path);
    assert_false(c->devices_declared);
    assert_defaults_except_devices(c);
    for (size_t i = 0; i < c->n_devices; i++) {   /* one per CUDA card found, if any */
        char *want = gf_strfmt("/run/lock/gpuflock/gpu%zu.lock", i);
        assert_int_equal(c->devices[i].kind, GF_DEVICE_CUDA);
        assert_string_equal(c->devices[i].lock, want);
        assert_int_equal(c->devices[i].shared_slots, 4);
        free(want);
    }
    gf_config_destroy(&c);
    assert_null(c);
    gf_config_destroy(&c);   /* safe twice */
}

/* The example documents every key at its default: reading it back gives the
 * defaults, plus the two devices it declares. */
static void test_example_round_trip(void **state)
{
    (void)state;
    gf_config *c = NULL;
    assert_int_equal(gf_config_load("config/gpuflock.example.yaml", &c), 0);
    assert_string_equal(c->path, "config/gpuflock.example.yaml");
    assert_defaults_except_devices(c);
    assert_true(c->devices_declared);
    assert_int_equal(c->n_devices, 2);
    for (int i = 0; i < 2; i++) {
        char *want = gf_strfmt("/run/lock/gpuflock/gpu%d.lock", i);
        assert_int_equal(c->devices[i].index, i);
        assert_int_equal(c->devices[i].kind, GF_DEVICE_CUDA);
        assert_string_equal(c->devices[i].lock, want);
        assert_int_equal(c->devices[i].shared_slots, 4);
        free(want);
    }
    gf_config_destroy(&c);
}

static void test_cpu2(void **state)
{
    (void)state;
    gf_config *c = NULL;
    assert_int_equal(gf_config_load("config/cpu2.yaml", &c), 0);
    assert_int_equal(c->n_devices, 2);
    assert_int_equal(c->devices[1].kind, GF_DEVICE_CPU);
    assert_string_equal(c->devices[1].lock, "/tmp/gpuflock-demo/lock/gpu1.lock");
    assert_int_equal(c->devices[1].shared_slots, 2);
    assert_string_equal(c->client_endpoint, "ipc:///tmp/gpuflock-demo/run/client.sock");
    gf_config_destroy(&c);
}

static void test_values_and_derived(void **state)
{
    (void)state;
    const char *text =
        "run_dir: /tmp/r\n"
        "state_dir: /tmp/s\n"
        "log_level: debug\n"
        "proof: {scrub_env: [A_B, _x1]}\n"
        "devices:\n"
        "  - {index: 3, kind: cpu}\n"
        "  - {index: 1, kind: cpu, lock: /tmp/l1, shared_slots: 2}\n"
        "broker:\n"
        "  socket_owner: gpuflock\n"
        "  socket_group: 'video'\n"
        "  socket_mode: 0660\n"
        "  heartbeat_interval_ms: 250\n"
        "  spawn_workers: false\n"
        "  worker_program: /opt/gf/worker\n"
        "worker: {batch_size: 8, cpu_threads: 2, math: tf32, overlap: false, batch_jobs: false,\n"
        "         model_sets: 5}\n";
    gf_config *c = NULL;
    char *logged = NULL;
    assert_int_equal(parse_capture(text, &c, &logged), 0);
    free(logged);
    assert_string_equal(c->client_endpoint, "ipc:///tmp/r/client.sock");
    assert_string_equal(c->models_dir, "/tmp/s/models");
    assert_string_equal(c->log_level, "debug");
    assert_int_equal(c->n_scrub_env, 2);
    assert_string_equal(c->scrub_env[1], "_x1");
    assert_int_equal(c->n_devices, 2);
    assert_int_equal(c->devices[0].index, 1);   /* sorted by index */
    assert_string_equal(c->devices[0].lock, "/tmp/l1");
    assert_int_equal(c->devices[1].index, 3);
    assert_string_equal(c->devices[1].lock, "/run/lock/gpuflock/gpu3.lock");
    assert_int_equal(c->devices[1].shared_slots, 4);
    assert_non_null(gf_config_device(c, 3));
    assert_null(gf_config_device(c, 2));
    assert_string_equal(c->socket_owner, "gpuflock");
    assert_string_equal(c->socket_group, "video");
    assert_int_equal(c->socket_mode, 0660);
    assert_int_equal(c->heartbeat_interval_ms, 250);
    assert_false(c->spawn_workers);
    assert_string_equal(c->worker_program, "/opt/gf/worker");
    assert_int_equal(c->batch_size, 8);
    assert_int_equal(c->cpu_threads, 2);
    assert_true(c->tf32);
    assert_false(c->overlap);
    assert_false(c->batch_jobs);
    assert_int_equal(c->model_sets, 5);
    gf_config_destroy(&c);
}

static void test_socket_mode_forms(void **state)
{
    (void)state;
    const char *forms[] = { "0660", "'0660'", "660", "\"660\"", "0o660" };
    for (size_t i = 0; i < GF_ARRAY_LEN(forms); i++) {
        char *text = gf_strfmt("broker: {socket_mode: %s}\ndevices: []\n", forms[i]);
        gf_config *c = NULL;
        char *logged = NULL;
        assert_int_equal(parse_capture(text, &c, &logged), 0);
        assert_int_equal(c->socket_mode, 0660);
        gf_config_destroy(&c);
        free(logged);
        free(text);
    }
}

static void test_empty_file_is_defaults(void **state)
{
    (void)state;
    const char *texts[] = { "", "# nothing here\n", "---\n" };
    for (size_t i = 0; i < GF_ARRAY_LEN(texts); i++) {
        gf_config *c = NULL;
        char *logged = NULL;
        assert_int_equal(parse_capture(texts[i], &c, &logged), 0);
        assert_defaults_except_devices(c);
        gf_config_destroy(&c);
        free(logged);
    }
}

typedef struct {
    const char *text;     /* the YAML */
    const char *where;    /* expected "t.yaml:LINE: key 'K':" */
    const char *problem;  /* and a word of the problem */
} bad_case;

static const bad_case bad_cases[] = {
    { "run_dir: /r\nrundir: /x\n", "t.yaml:2: key 'rundir':", "unknown key" },
    { "broker:\n  heartbeat_ms: 5\n", "t.yaml:2: key 'broker.heartbeat_ms':", "unknown key" },
    { "worker:\n  batch_size: 8\n  gpu: 1\n", "t.yaml:3: key 'worker.gpu':", "unknown key" },
    { "devices:\n  - index: 0\n    colour: red\n", "t.yaml:3: key 'devices[0].colour':",
      "unknown key" },
    { "run_dir: [a, b]\n", "t.yaml:1: key 'run_dir':", "found a list" },
    { "state_dir:\n", "t.yaml:1: key 'state_dir':", "found null" },
    { "broker:\n  heartbeat_interval_ms: fast\n", "t.yaml:2: key 'broker.heartbeat_interval_ms':",
      "expected an integer" },
    { "worker:\n  batch_size: \"32\"\n", "t.yaml:2: key 'worker.batch_size':",
      "expected an integer" },
    { "worker:\n  batch_size: 0\n", "t.yaml:2: key 'worker.batch_size':", "out of range" },
    { "worker:\n  model_sets: 0\n", "t.yaml:2: key 'worker.model_sets':", "out of range" },
    { "history:\n  keep_days: -1\n", "t.yaml:2: key 'history.keep_days':", "out of range" },
    { "history:\n  keep_jobs: many\n", "t.yaml:2: key 'history.keep_jobs':", "an integer" },
    { "history:\n  keep: 3\n", "t.yaml:2: key 'history.keep':", "unknown key" },
    { "broker:\n  spawn_workers: maybe\n", "t.yaml:2: key 'broker.spawn_workers':",
      "true or false" },
    { "broker:\n  socket_mode: 0999\n", "t.yaml:2: key 'broker.socket_mode':", "octal" },
    { "broker:\n  socket_mode: 017777\n", "t.yaml:2: key 'broker.socket_mode':", "07777" },
    { "log_level: loud\n", "t.yaml:1: key 'log_level':", "expected debug" },
    { "worker:\n  math: tf16\n", "t.yaml:2: key 'worker.math':", "expected fp32 or tf32" },
    { "worker:\n  batch_jobs: maybe\n", "t.yaml:2: key 'worker.batch_jobs':",
      "expected true or false" },
    { "proof:\n  scrub_env: CUDA_LAUNCH_BLOCKING\n", "t.yaml:2: key 'proof.scrub_env':",
      "expected a list" },
    { "proof:\n  scrub_env:\n    - OK\n    - 'NOT-OK'\n", "t.yaml:4: key 'proof.scrub_env[1]':",
      "variable name" },
    { "proof: [a]\n", "t.yaml:1: key 'proof':", "expected a mapping" },
    { "devices: {index: 0}\n", "t.yaml:1: key 'devices':", "expected a list" },
    { "devices:\n  - kind: cpu\n", "t.yaml:2: key 'devices[0].index':", "required key missing" },
    { "devices:\n  - {index: 0, kind: gpu}\n", "t.yaml:2: key 'devices[0].kind':",
      "expected cpu or cuda" },
    { "devices:\n  - {index: 0, shared_slots: 0}\n", "t.yaml:2: key 'devices[0].shared_slots':",
      "out of range" },
    { "devices:\n  - {index: -1}\n", "t.yaml:2: key 'devices[0].index':", "out of range" },
    { "devices:\n  - index: 0\n    kind: cpu\n  - index: 0\n    kind: cpu\n",
      "t.yaml:4: key 'devices[1].index':", "duplicate device index 0 (also at line 2)" },
    { "devices:\n  - {index: 0, lock: /l/a}\n  - {index: 1, lock: /l/a}\n",
      "t.yaml:3: key 'devices[1].lock':", "duplicate lock file /l/a" },
    { "devices:\n  - {index: 0}\n  - {index: 1, lock: /run/lock/gpuflock/gpu0.lock}\n",
      "t.yaml:3: key 'devices[1].lock':", "duplicate lock file" },
    { "devices:\n  - {index: 0, lock: rel.lock}\n", "t.yaml:2: key 'devices[0].lock':",
      "is relative" },
    { "devices:\n  - {index: 0, lock: ''}\n", "t.yaml:2: key 'devices[0].lock':",
      "is empty" },
    { "devices:\n  - {index: 0, lock: /l/../l/a}\n", "t.yaml:2: key 'devices[0].lock':",
      "not canonical" },
    { "devices:\n  - {index: 0, lock: /l/./a}\n", "t.yaml:2: key 'devices[0].lock':",
      "not canonical" },
    { "devices:\n  - {index: 0, lock: /l//a}\n", "t.yaml:2: key 'devices[0].lock':",
      "empty component" },
    { "devices:\n  - {index: 0, lock: /l/a/}\n", "t.yaml:2: key 'devices[0].lock':",
      "ends with /" },
    { "bench_lock: bench.lock\n", "t.yaml:1: key 'bench_lock':", "is relative" },
    { "devices:\n  - {index: 0, lock: /l/gpu0.lock.gate}\n", "t.yaml:2: key 'devices[0].lock':",
      "fairness gate" },
    { "devices:\n  - {index: 0, lock: /l/a}\nbench_lock: /l/a\n", "t.yaml:3: key 'bench_lock':",
      "same file as devices[0].lock" },
    { "lock_owner: no-such-user-here\n", "t.yaml:1: key 'lock_owner':", "no user" },
    { "spool:\n  max_bytes: lots\n", "t.yaml:2: key 'spool.max_bytes':", "size in bytes" },
    { "spool:\n  max_bytes: -1\n", "t.yaml:2: key 'spool.max_bytes':", "size in bytes" },
    { "spool:\n  max_bytes: 9999999999T\n", "t.yaml:2: key 'spool.max_bytes':", "too large" },
    { "a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
      "t.yaml:1: YAML nesting deeper than 64", "" },
    { "log_file: gpuflockd.log\n", "t.yaml:1: key 'log_file':", "is relative" },
    { "log_file: /var/log/gpuflock/\n", "t.yaml:1: key 'log_file':", "names a folder" },
    { "log_file: /var/log/../x.log\n", "t.yaml:1: key 'log_file':", ". or .. component" },
    { "metrics:\n  listen: 9464\n", "t.yaml:2: key 'metrics.listen':", "HOST:PORT" },
    { "metrics:\n  listen: gpuhost:9464\n", "t.yaml:2: key 'metrics.listen':",
      "not an IPv4 address" },
    { "metrics:\n  listen: 127.0.0.1:70000\n", "t.yaml:2: key 'metrics.listen':",
      "out of range" },
    { "metrics:\n  listen: '[::1:9464'\n", "t.yaml:2: key 'metrics.listen':", "brackets" },
    { "metrics:\n  listen: 0.0.0.0:9464\n", "t.yaml:2: key 'metrics.listen':",
      "not a loopback address" },
    { "metrics:\n  listen: '[::]:9464'\n  allow_remote: false\n",
      "t.yaml:2: key 'metrics.listen':", "set metrics.allow_remote: true" },
    { "metrics:\n  textfile: /var/lib/node/gpuflock.txt\n", "t.yaml:2: key 'metrics.textfile':",
      "does not end in .prom" },
    { "metrics:\n  textfile: /var/lib/node/.prom\n", "t.yaml:2: key 'metrics.textfile':",
      "does not end in .prom" },
    { "metrics:\n  textfile_interval_s: 0\n", "t.yaml:2: key 'metrics.textfile_interval_s':",
      "out of range" },
    { "metrics:\n  port: 9464\n", "t.yaml:2: key 'metrics.port':", "unknown key" },
    { "run_dir: /a\nstate_dir: /b\nrun_dir: /c\n", "t.yaml:3: key 'run_dir':",
      "duplicate key (first at line 1)" },
    { "broker:\n  max_attempts: 2\n  max_attempts: 3\n", "t.yaml:3: key 'broker.max_attempts':",
      "duplicate key" },
};

static void test_errors_name_file_line_key(void **state)
{
    (void)state;
    for (size_t i = 0; i < GF_ARRAY_LEN(bad_cases); i++) {
        gf_config *c = (gf_config *)&c;   /* must come back NULL */
        char *logged = NULL;
        int rc = parse_capture(bad_cases[i].text, &c, &logged);
        if (rc != GF_ECONFIG || !strstr(logged, bad_cases[i].where) ||
            !strstr(logged, bad_cases[i].problem))
            fail_msg("case %zu: rc %d, logged '%s', wanted '%s ... %s'", i, rc, logged,
                     bad_cases[i].where, bad_cases[i].problem);
        assert_null(c);
        free(logged);
    }
}

static void test_yaml_syntax_errors(void **state)
{
    (void)state;
    const char *texts[] = { "run_dir: /a\n  bad: [\n", "a: b\n---\nc: d\n", "- 1\n- 2\n",
                            "run_dir: *nope\n" };
    for (size_t i = 0; i < GF_ARRAY_LEN(texts); i++) {
        gf_config *c = NULL;
        char *logged = NULL;
        assert_int_equal(parse_capture(texts[i], &c, &logged), GF_ECONFIG);
        assert_non_null(strstr(logged, "t.yaml:"));
        assert_null(c);
        free(logged);
    }
}

/* 'text' with each '@' replaced by dir (caller frees). */
static char *at_folder(const char *text, const char *dir)
{
    char *out = gf_strdup("");
    for (const char *p = text; *p; p++) {
        char *next = *p == '@' ? gf_strfmt("%s%s", out, dir) : gf_strfmt("%s%c", out, *p);
        free(out);
        out = next;
    }
    return out;
}

/* Lock paths on disk: a symlinked folder, a symlink at the path, and two
 * paths naming one inode are configuration errors naming the key. */
static void test_lock_paths_on_disk(void **state)
{
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-config-locks"), 0);
    char *real = realpath(dir, NULL);
    assert_non_null(real);
    char *cmd = gf_strfmt("mkdir %s/l && ln -s %s/l %s/alias && touch %s/l/a && "
                          "ln %s/l/a %s/l/hard && ln -s %s/l/a %s/l/sym",
                          real, real, real, real, real, real, real, real);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    /* '@' stands for the folder */
    struct { const char *text; const char *want; } cases[] = {
        { "devices:\n  - {index: 0, lock: @/alias/b}\n", "resolves to" },
        { "devices:\n  - {index: 0, lock: @/l/sym}\n", "is a symlink" },
        { "devices:\n  - {index: 0, lock: @/l/a}\n  - {index: 1, lock: @/l/hard}\n",
          "one device and inode" },
        { "devices:\n  - {index: 0, lock: @/l/new}\nbench_lock: @/l/new\n",
          "same file" },
    };
    for (size_t i = 0; i < GF_ARRAY_LEN(cases); i++) {
        char *text = at_folder(cases[i].text, real);
        gf_config *c = NULL;
        char *logged = NULL;
        int rc = parse_capture(text, &c, &logged);
        if (rc != GF_ECONFIG || !strstr(logged, cases[i].want))
            fail_msg("case %zu: rc %d, logged '%s', wanted '%s'", i, rc, logged, cases[i].want);
        free(logged);
        free(text);
    }
    /* the job commands never open lock files: they are not stopped by them */
    char *yaml = gf_strfmt("%s/sym.yaml", real), *text0 = at_folder(cases[1].text, real);
    write_file(yaml, text0);
    gf_config *c0 = NULL;
    assert_int_equal(gf_config_load_no_devices(yaml, &c0), 0);
    gf_config_destroy(&c0);
    free(text0);
    free(yaml);
    /* a plain lock in a plain folder, and one not made yet, are fine */
    char *text = at_folder("devices:\n  - {index: 0, lock: @/l/a}\n"
                           "  - {index: 1, lock: @/later/gpu1.lock}\n", real);
    gf_config *c = NULL;
    char *logged = NULL;
    assert_int_equal(parse_capture(text, &c, &logged), 0);
    gf_config_destroy(&c);
    free(logged);
    free(text);
    assert_int_equal(gf_test_rmtree(real), 0);
    free(real);
}

/* diarize: the community-1 knobs under pyannote's names; out of range, a
 * step the pipeline does not run and unknown keys are refused, named */
static void test_diarize_knobs(void **state)
{
    (void)state;
    gf_config *c = NULL;
    char *logged = NULL;
    assert_int_equal(parse_capture("state_dir: /s\n", &c, &logged), 0);
    assert_true(c->diar_threshold == 0.6 && c->diar_fa == 0.07 && c->diar_fb == 0.8);
    assert_true(c->diar_min_duration_off == 0.0 && c->diar_exclude_overlap);
    assert_true(c->diar_segmentation_step == 0.1);
    gf_config_destroy(&c);
    free(logged);
    assert_int_equal(parse_capture("diarize:\n  clustering: {threshold: 0.7, Fa: 0.1, Fb: 0.5}\n"
                                   "  segmentation: {min_duration_off: 0.25}\n"
                                   "  embedding_exclude_overlap: false\n"
                                   "  segmentation_step: 0.05\n", &c, &logged), 0);
    assert_true(c->diar_threshold == 0.7 && c->diar_fa == 0.1 && c->diar_fb == 0.5);
    assert_true(c->diar_min_duration_off == 0.25 && !c->diar_exclude_overlap);
    assert_true(c->diar_segmentation_step == 0.05);
    gf_config_destroy(&c);
    free(logged);
    static const struct { const char *yaml, *words; } bad[] = {
        { "diarize:\n  clustering: {threshold: 0}\n", "key 'diarize.clustering.threshold': 0 is out of range (0, 2]" },
        { "diarize:\n  clustering: {Fa: -1}\n", "out of range" },
        { "diarize:\n  clustering: {Fb: x}\n", "expected a number, found 'x'" },
        { "diarize:\n  segmentation: {min_duration_off: -0.5}\n", "out of range [0, 3600]" },
        { "diarize:\n  segmentation_step: 1.5\n", "1.5 is out of range (0, 1]" },
        { "diarize:\n  segmentation_step: 0.0005\n", "whole number of 10 ms" },
        { "diarize:\n  segmentation_step: 0.005\n", "in [0.01, 1]" },
        { "diarize:\n  segmentation_step: 0.1234\n", "whole number of 10 ms" },
        { "diarize:\n  segmentation_step: 0\n", "segmentation_step" },
        { "diarize:\n  clustering: {Fc: 1}\n", "unknown key" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_not_equal(parse_capture(bad[i].yaml, &c, &logged), 0);
        if (!logged || !strstr(logged, bad[i].words))
            fail_msg("'%s': logged '%s', not '%s'", bad[i].yaml, logged ? logged : "", bad[i].words);
        gf_config_destroy(&c);
        free(logged);
        logged = NULL;
    }
}

static void test_new_keys(void **state)
{
    (void)state;
    gf_config *c = NULL;
    char *logged = NULL;
    assert_int_equal(parse_capture("state_dir: /s\nlock_owner: root\nspool:\n  max_bytes: 8M\n"
                                   "worker:\n  cgroups: false\n", &c, &logged), 0);
    assert_string_equal(c->spool_dir, "/s/spool");
    assert_int_equal(c->lock_owner_uid, 0);
    assert_int_equal(c->spool_max_bytes, 8LL << 20);
    assert_false(c->cgroups);
    gf_config_destroy(&c);
    free(logged);
    assert_int_equal(parse_capture("spool_dir: /sp\nlock_owner: 4321\nspool:\n  max_bytes: 0\n",
                                   &c, &logged), 0);
    assert_string_equal(c->spool_dir, "/sp");
    assert_int_equal(c->lock_owner_uid, 4321);
    assert_int_equal(c->spool_max_bytes, 0);
    assert_true(c->cgroups);
    gf_config_destroy(&c);
    free(logged);
    /* history: 0 keeps forever (either cap alone) */
    assert_int_equal(parse_capture("history:\n  keep_days: 0\n  keep_jobs: 500\n", &c, &logged), 0);
    assert_int_equal(c->history_keep_days, 0);
    assert_int_equal(c->history_keep_jobs, 500);
    gf_config_destroy(&c);
    free(logged);
}

/* log_file and metrics.*: a loopback listen address is taken as written;
 * one off the loopback only with allow_remote, before or after it. */
static void test_log_and_metrics_keys(void **state)
{
    (void)state;
    gf_config *c = NULL;
    char *logged = NULL;
    assert_int_equal(parse_capture("log_file: /var/log/gpuflock/gpuflockd.log\n"
                                   "metrics:\n  listen: 127.0.0.1:9464\n"
                                   "  textfile: /var/lib/prometheus/node-exporter/gpuflock.prom\n"
                                   "  textfile_interval_s: 15\n", &c, &logged), 0);
    assert_string_equal(c->log_file, "/var/log/gpuflock/gpuflockd.log");
    assert_string_equal(c->metrics_listen, "127.0.0.1:9464");
    assert_false(c->metrics_allow_remote);
    assert_string_equal(c->metrics_textfile, "/var/lib/prometheus/node-exporter/gpuflock.prom");
    assert_int_equal(c->metrics_textfile_interval_s, 15);
    gf_config_destroy(&c);
    free(logged);
    static const char *const ok[] = {
        "metrics: {listen: 'localhost:0'}\n",
        "metrics: {listen: '[::1]:9464'}\n",
        "metrics: {listen: '127.3.2.1:1'}\n",
        "metrics: {allow_remote: true, listen: '0.0.0.0:9464'}\n",
        "metrics: {listen: '[::]:9464', allow_remote: true}\n",
        "metrics: {listen: null}\nlog_file: null\n",
    };
    for (size_t i = 0; i < GF_ARRAY_LEN(ok); i++) {
        if (parse_capture(ok[i], &c, &logged) != 0)
            fail_msg("'%s' refused: %s", ok[i], logged);
        gf_config_destroy(&c);
        free(logged);
    }
}

static void test_load_search_order(void **state)
{
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-config"), 0);
    char *a = gf_strfmt("%s/a.yaml", dir), *b = gf_strfmt("%s/b.yaml", dir);
    char *missing = gf_strfmt("%s/missing.yaml", dir);
    write_file(a, "run_dir: /from/a\ndevices: []\n");
    write_file(b, "run_dir: /from/b\ndevices: []\n");
    gf_config *c = NULL;

    setenv("GPUFLOCK_CONFIG", b, 1);
    assert_int_equal(gf_config_load(NULL, &c), 0);      /* $GPUFLOCK_CONFIG */
    assert_string_equal(c->run_dir, "/from/b");
    assert_string_equal(c->path, b);
    gf_config_destroy(&c);
    assert_int_equal(gf_config_load(a, &c), 0);         /* --config wins */
    assert_string_equal(c->run_dir, "/from/a");
    gf_config_destroy(&c);

    gf_log_level lv = gf_log_get_level();
    gf_log_init(NULL, GF_LOG_OFF);
    assert_int_equal(gf_config_load(missing, &c), GF_ECONFIG);   /* named: must exist */
    assert_null(c);
    setenv("GPUFLOCK_CONFIG", missing, 1);
    assert_int_equal(gf_config_load(NULL, &c), GF_ECONFIG);
    assert_null(c);
    gf_log_init(NULL, lv);
    unsetenv("GPUFLOCK_CONFIG");

    assert_int_equal(gf_test_rmtree(dir), 0);
    free(a);
    free(b);
    free(missing);
}

/* The job commands' load: the same file, the same search order and errors,
 * declared devices as they are, but no list made up from the driver. */
static void test_load_no_devices(void **state)
{
    (void)state;
    char dir[256];
    assert_int_equal(gf_test_mkdtemp(dir, sizeof dir, "gf-test-config"), 0);
    char *none = gf_strfmt("%s/none.yaml", dir), *two = gf_strfmt("%s/two.yaml", dir);
    write_file(none, "run_dir: /r\n");
    write_file(two, "run_dir: /r\ndevices:\n  - {index: 1, kind: cuda, lock: /l/1}\n"
                    "  - {index: 0, kind: cpu, lock: /l/0, shared_slots: 2}\n");
    gf_config *c = NULL;
    assert_int_equal(gf_config_load_no_devices(none, &c), 0);
    assert_string_equal(c->run_dir, "/r");
    assert_false(c->devices_declared);
    assert_int_equal(c->n_devices, 0);
    assert_string_equal(c->client_endpoint, "ipc:///r/client.sock");
    gf_config_destroy(&c);
    assert_int_equal(gf_config_load_no_devices(two, &c), 0);
    assert_true(c->devices_declared);
    assert_int_equal(c->n_devices, 2);
    assert_int_equal(c->devices[0].index, 0);   /* sorted, as gf_config_load sorts them */
    assert_int_equal(c->devices[0].shared_slots, 2);
    assert_int_equal(c->devices[1].kind, GF_DEVICE_CUDA);
    gf_config_destroy(&c);
    setenv("GPUFLOCK_CONFIG", none, 1);
    assert_int_equal(gf_config_load_no_devices(NULL, &c), 0);
    assert_string_equal(c->path, none);
    gf_config_destroy(&c);
    unsetenv("GPUFLOCK_CONFIG");
    gf_log_level lv = gf_log_get_level();
    gf_log_init(NULL, GF_LOG_OFF);
    write_file(none, "run_dir: [\n");
    assert_int_equal(gf_config_load_no_devices(none, &c), GF_ECONFIG);
    assert_null(c);
    gf_log_init(NULL, lv);
    assert_int_equal(gf_test_rmtree(dir), 0);
    free(none);
    free(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_example_round_trip),
        cmocka_unit_test(test_cpu2),
        cmocka_unit_test(test_values_and_derived),
        cmocka_unit_test(test_socket_mode_forms),
        cmocka_unit_test(test_empty_file_is_defaults),
        cmocka_unit_test(test_errors_name_file_line_key),
        cmocka_unit_test(test_yaml_syntax_errors),
        cmocka_unit_test(test_load_search_order),
        cmocka_unit_test(test_lock_paths_on_disk),
        cmocka_unit_test(test_diarize_knobs),
        cmocka_unit_test(test_new_keys),
        cmocka_unit_test(test_log_and_metrics_keys),
        cmocka_unit_test(test_load_no_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
