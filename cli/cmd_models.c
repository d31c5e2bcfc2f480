/* cmd_models.c — `gpuflock models check [DIR]`: verify a models directory
 * (by default the configuration's models_dir) and print what it holds.
 *
 * Every check goes through the code the worker loads models with: the
 * networks' constructors (every expected tensor, its shape, finiteness,
 * nothing unexpected, the file's digest against the manifest), the manifest
 * reader, and a look at the PLDA files (present, zip archives, digests).
 * Then the voice activity detector's file (diar/vad.h): DIR's own
 * silero_vad.safetensors when it has one, else the one the pipeline finds by
 * default, loaded through gf_vad_load (its digest against the pinned
 * GF_VAD_SHA256); its absence is said, not an error (the weight-free mode
 * then uses the energy detector). */
#include "cli/cli.h"
#include "cli/cliopts.h"
#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "diar/embedding.h"
#include "diar/models.h"
#include "diar/io/safetensors.h"
#include "diar/segmentation.h"
#include "diar/vad.h"
#include "diar/wf_vad.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int gf_cmd_models(int argc, char **argv, gf_cli_ctx *cli);

static void usage(FILE *f)
{
    fprintf(f, "usage: gpuflock models check [--config FILE] [DIR]\n"
               "  Verify a models directory (segmentation.safetensors, embedding.safetensors,\n"
               "  plda/xvec_transform.npz, plda/plda.npz, MANIFEST.sha256) and print what it\n"
               "  holds. DIR defaults to the configuration's models_dir. Then the voice activity\n"
               "  detector's file: DIR/silero_vad.safetensors if there is one, else the default\n"
               "  (tools/fetch-vad), its SHA-256 checked against the pinned one; without it\n"
               "  the weight-free mode uses the energy detector (not an error).\n"
               "  Exit 0: all good; 65: a file is missing or wrong; 66: no such directory;\n"
               "  78: configuration error.\n");
}

/* "1,473,265" */
static void with_commas(long long v, char *buf, size_t len)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%lld", v);
    size_t n = strlen(raw), o = 0;
    for (size_t i = 0; i < n && o + 2 < len; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
}

static int is_buffer(const char *name)
{
    static const char *suffixes[] = { "running_mean", "running_var", ".window_", ".n_" };
    size_t n = strlen(name);
    for (size_t i = 0; i < GF_ARRAY_LEN(suffixes); i++) {
        size_t m = strlen(suffixes[i]);
        if (n >= m && strcmp(name + n - m, suffixes[i]) == 0)
            return 1;
    }
    return 0;
}

/* Load one network file through its constructor and print a line. */
static int check_net(const char *dir, const char *rel, const gf_manifest *man, int is_seg)
{
    char *path = gf_strfmt("%s/%s", dir, rel);
    const char *sha = gf_manifest_sha256(man, rel);
    int ok = 0;
    if (!sha) {
        GF_ERROR("%s: not listed in %s/%s", path, dir, GF_MODELS_MANIFEST);
        goto out_report;
    }
    if (is_seg) {
        gf_segmentation *s = gf_segmentation_new(path, sha, 1, 1);
        ok = s != NULL;
        gf_segmentation_destroy(&s);
    } else {
        gf_embedding *e = gf_embedding_new(path, sha, GF_EMB_FRAMES, 1, 1);
        ok = e != NULL;
        gf_embedding_destroy(&e);
    }
    if (!ok)
        goto out_report;
    gf_safetensors *st = gf_safetensors_open(path, NULL);
    if (!st) {
        ok = 0;
        goto out_report;
    }
    long long params = 0;
    for (size_t i = 0; i < gf_safetensors_count(st); i++) {
        const gf_safetensors_tensor *t = gf_safetensors_at(st, i);
        if (strcmp(t->dtype, "F32") == 0 && !is_buffer(t->name))
            params += t->numel;
    }
    char pc[32];
    with_commas(params, pc, sizeof pc);
    printf("%-26s %-13s %4zu tensors  %9s parameters  sha256 %s  ok\n", rel,
           is_seg ? "segmentation" : "embedding", gf_safetensors_count(st), pc, sha);
    gf_safetensors_destroy(&st);
out_report:
    if (!ok)
        printf("%-26s FAILED (see the messages above)\n", rel);
    free(path);
    return ok;
}

/* A file the manifest lists: present and with the listed digest. */
static int check_file(const char *dir, const char *rel, const gf_manifest *man, int want_zip)
{
    char *path = gf_strfmt("%s/%s", dir, rel);
    const char *sha = gf_manifest_sha256(man, rel);
    int ok = 0;
    struct stat st;
    char got[GF_SHA256_HEX_LEN];
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        GF_ERROR("%s: missing", path);
        goto out_report;
    }
    if (!sha) {
        GF_ERROR("%s: not listed in %s/%s", path, dir, GF_MODELS_MANIFEST);
        goto out_report;
    }
    if (want_zip) {
        unsigned char magic[4] = { 0 };
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(magic, 1, 4, f) : 0;
        if (f)
            fclose(f);
        if (n != 4 || memcmp(magic, "PK\x03\x04", 4) != 0) {
            GF_ERROR("%s: not a NumPy .npz (zip) archive", path);
            goto out_report;
        }
    }
    if (gf_sha256_file_hex(path, got) != 0)
        goto out_report;
    if (strcmp(got, sha) != 0) {
        GF_ERROR("%s: SHA-256 %s does not match the manifest's %s", path, got, sha);
        goto out_report;
    }
    ok = 1;
    printf("%-26s %-13s %10lld bytes                       sha256 %s  ok\n", rel,
           want_zip ? "plda" : "other", (long long)st.st_size, sha);
out_report:
    if (!ok)
        printf("%-26s FAILED (see the messages above)\n", rel);
    free(path);
    return ok;
}

/* The VAD's file, the one the pipeline takes for DIR (gf_diar_vad_file). 1
 * when good or absent (unless $GPUFLOCK_VAD named it). */
static int check_vad(const char *dir)
{
    bool named;
    char *in_dir = gf_diar_vad_file(dir, &named);
    if (!in_dir) {
        printf("%-26s %-13s GPUFLOCK_VAD=energy: the weight-free mode uses the energy detector\n",
               GF_VAD_FILE_NAME, "vad");
        return 1;
    }
    const char *path = in_dir;
    gf_vad *vad = NULL;
    int rc = gf_vad_load(path, &vad), ok = 1;
    if (rc == GF_ENOENT && named) {
        printf("%-26s FAILED: GPUFLOCK_VAD=%s: no such file\n", GF_VAD_FILE_NAME, path);
        ok = 0;
        goto out;
    }
    if (rc == GF_ENOENT) {
        printf("%-26s %-13s not found at %s (tools/fetch-vad): the weight-free mode uses the "
               "energy detector\n", GF_VAD_FILE_NAME, "vad", path);
        goto out;
    }
    gf_safetensors *st = rc == 0 ? gf_safetensors_open(path, NULL) : NULL;
    if (!st) {
        printf("%-26s FAILED: %s (see the messages above)\n", GF_VAD_FILE_NAME, path);
        ok = 0;
        goto out;
    }
    long long params = 0;
    for (size_t i = 0; i < gf_safetensors_count(st); i++)
        params += gf_safetensors_at(st, i)->numel;
    char pc[32];
    with_commas(params, pc, sizeof pc);
    printf("%-26s %-13s %4zu tensors  %9s parameters  sha256 %s  ok (%s)\n", GF_VAD_FILE_NAME,
           "vad", gf_safetensors_count(st), pc, gf_vad_sha256(vad), path);
    gf_safetensors_destroy(&st);
out:
    gf_vad_destroy(&vad);
    free(in_dir);
    return ok;
}

static int models_check(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        GF_ERROR("%s: no such models directory", dir);
        return GF_EXIT_NOINPUT;
    }
    gf_manifest *man = NULL;
    int rc = gf_manifest_load(dir, &man);
    if (rc == GF_ENOENT) {
        GF_ERROR("%s/%s: missing (tools/convert-checkpoints writes it)", dir, GF_MODELS_MANIFEST);
        return GF_EXIT_DATAERR;
    }
    if (rc != 0)
        return GF_EXIT_DATAERR;
    printf("models directory %s (%s lists %zu files)\n", dir, GF_MODELS_MANIFEST,
           gf_manifest_count(man));
    int ok = check_net(dir, GF_MODELS_SEGMENTATION, man, 1);
    ok = check_net(dir, GF_MODELS_EMBEDDING, man, 0) && ok;
    ok = check_file(dir, GF_MODELS_XVEC, man, 1) && ok;
    ok = check_file(dir, GF_MODELS_PLDA, man, 1) && ok;
    for (size_t i = 0; i < gf_manifest_count(man); i++) {
        const char *rel = gf_manifest_path_at(man, i);
        if (strcmp(rel, GF_MODELS_SEGMENTATION) && strcmp(rel, GF_MODELS_EMBEDDING) &&
            strcmp(rel, GF_MODELS_XVEC) && strcmp(rel, GF_MODELS_PLDA))
            ok = check_file(dir, rel, man, 0) && ok;
    }
    gf_manifest_destroy(&man);
    ok = check_vad(dir) && ok;
    printf("%s\n", ok ? "all good" : "models directory has problems");
    return ok ? 0 : GF_EXIT_DATAERR;
}

int gf_cmd_models(int argc, char **argv, gf_cli_ctx *cli)
{
    (void)cli;     /* no broker client here */
    const char *config_path = NULL, *verb = NULL, *dir = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--config") == 0) {
            if (i + 1 == argc)
                return gf_cli_usage_error("models", "option '--config' needs a value");
            config_path = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            config_path = a + 9;
        } else if (a[0] == '-' && a[1]) {
            return gf_cli_usage_error("models", "unknown option '%s' (`gpuflock models --help` "
                                      "lists them)", a);
        } else if (!verb) {
            verb = a;
        } else if (!dir) {
            dir = a;
        } else {
            return gf_cli_usage_error("models", "one models directory, not '%s' too", a);
        }
    }
    if (!verb)
        return gf_cli_usage_error("models", "no verb given (usage: gpuflock models check [DIR])");
    if (strcmp(verb, "check") != 0)
        return gf_cli_usage_error("models", "unknown verb '%s' (usage: gpuflock models check "
                                  "[DIR])", verb);
    if (dir)
        return models_check(dir);
    gf_config *cfg = NULL;
    if (gf_config_load(config_path, &cfg) != 0)
        return GF_EXIT_CONFIG;
    int rc = models_check(cfg->models_dir);
    gf_config_destroy(&cfg);
    return rc;
}
