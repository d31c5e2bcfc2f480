/* result.c — a diarization's result (result.h): its JSON form, the turns
 * built from the clustering, and the intermediates written as .npy files.
 * The run loop (pipeline.c) fills the rest of the result as it goes. */
#include "diar/result.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "diar/io/npy.h"
#include "diar/pipeline.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void gf_diar_result_free(gf_diar_result *r)
{
    gf_rttm_destroy(&r->rttm);
    gf_rttm_destroy(&r->exclusive);
    free(r->centroids);
    memset(r, 0, sizeof *r);
}

/* {"path", "size", "mtime", "sha256"} of the recording; what cannot be
 * read is null. */
static json_object *input_json(const char *audio)
{
    json_object *in = json_object_new_object();
    char *abs = realpath(audio, NULL);
    json_object_object_add(in, "path", json_object_new_string(abs ? abs : audio));
    free(abs);
    struct stat st;
    bool ok = stat(audio, &st) == 0;
    json_object_object_add(in, "size", ok ? json_object_new_int64((int64_t)st.st_size) : NULL);
    json_object_object_add(in, "mtime", ok ? json_object_new_double((double)st.st_mtim.tv_sec
                                                                    + 1e-9 * (double)st.st_mtim.tv_nsec)
                                           : NULL);
    char hex[GF_SHA256_HEX_LEN];
    json_object_object_add(in, "sha256", gf_sha256_file_hex(audio, hex) == 0
                                             ? json_object_new_string(hex) : NULL);
    return in;
}

/* The recipe's values, under pyannote's names; what the weight-free mode
 * does not use (VBx, the PLDA) is null. */
static json_object *params_json(const gf_diar_result *r)
{
    const gf_cluster_opts *c = &r->used;
    json_object *p = json_object_new_object(), *cl = json_object_new_object(),
                *sg = json_object_new_object();
    json_object_object_add(cl, "method", json_object_new_string(
                               r->weight_free ? "spectral (weight-free)" : "AHC + PLDA + VBx"));
    json_object_object_add(cl, "threshold", json_object_new_double(c->threshold));
    json_object_object_add(cl, "Fa", r->weight_free ? NULL : json_object_new_double(c->vbx.Fa));
    json_object_object_add(cl, "Fb", r->weight_free ? NULL : json_object_new_double(c->vbx.Fb));
    json_object_object_add(p, "clustering", cl);
    json_object_object_add(sg, "min_duration_off", json_object_new_double(c->min_duration_off));
    json_object_object_add(sg, "step", json_object_new_double(c->chunks.step / c->chunks.duration));
    json_object_object_add(p, "segmentation", sg);
    json_object_object_add(p, "embedding_exclude_overlap",
                           r->weight_free ? NULL : json_object_new_boolean(r->exclude_overlap));
    json_object_object_add(p, "num_speakers", c->num_speakers ? json_object_new_int(c->num_speakers)
                                                              : NULL);
    json_object_object_add(p, "min_speakers", c->min_speakers ? json_object_new_int(c->min_speakers)
                                                              : NULL);
    json_object_object_add(p, "max_speakers", c->max_speakers ? json_object_new_int(c->max_speakers)
                                                              : NULL);
    return p;
}

char *gf_diar_result_json(const gf_diar_result *r, const char *audio, const char *models_dir,
                          const gf_devstats *st)
{
    char *turns = gf_rttm_json(r->rttm);
    json_object *o = json_tokener_parse(turns);
    free(turns);
    if (!o)
        o = json_object_new_object();
    json_object_object_add(o, "input", audio ? input_json(audio) : NULL);
    if (r->exclusive) {
        char *ex = gf_rttm_json(r->exclusive);
        json_object *eo = json_tokener_parse(ex), *et = NULL;
        free(ex);
        if (eo && json_object_object_get_ex(eo, "turns", &et))
            json_object_object_add(o, "exclusive_turns", json_object_get(et));
        json_object_put(eo);
    }
    json_object *se = json_object_new_array();
    for (size_t i = 0; r->centroids && i < r->n_speakers; i++) {
        json_object *row = json_object_new_array();
        for (size_t d = 0; d < r->dim; d++)
            json_object_array_add(row, json_object_new_double(r->centroids[i * r->dim + d]));
        json_object_array_add(se, row);
    }
    json_object_object_add(o, "speaker_embeddings", se);
    json_object_object_add(o, "mode", json_object_new_string(r->weight_free ? "weight-free"
                                                                             : "neural"));
    if (r->weight_free) {
        char *msg = gf_strfmt("weight-free mode: no model files in %s", models_dir);
        json_object_object_add(o, "notice", json_object_new_string(msg));
        free(msg);
        json_object_object_add(o, "vad", json_object_new_string(r->vad ? r->vad : "energy"));
    }
    json_object_object_add(o, "parameters", params_json(r));
    json_object_object_add(o, "duration", json_object_new_double(r->duration));
    json_object_object_add(o, "windows", json_object_new_int64((int64_t)r->n_windows));
    json_object *t = json_object_new_object();
    json_object_object_add(t, "decode", json_object_new_double(r->t_decode));
    json_object_object_add(t, "segmentation", json_object_new_double(r->t_segmentation));
    json_object_object_add(t, "fbank", json_object_new_double(r->t_fbank));
    json_object_object_add(t, "embedding", json_object_new_double(r->t_embedding));
    json_object_object_add(t, "clustering", json_object_new_double(r->t_clustering));
    json_object_object_add(t, "total", json_object_new_double(r->t_total));
    json_object_object_add(o, "timings", t);
    if (st) {
        char *ds = gf_devstats_to_json(st);
        json_object *dj = json_tokener_parse(ds);
        free(ds);
        if (dj)
            json_object_object_add(o, "devstats", dj);
    }
    char *s = gf_strfmt("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

static char *uri_of(const char *path)
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

void gf_diar_result_turns(gf_diar_result *r, const char *path, const gf_cluster_result *cres)
{
    char *uri = uri_of(path);
    r->rttm = gf_rttm_new();
    r->exclusive = gf_rttm_new();
    int max_label = -1;
    for (size_t i = 0; i < cres->n_turns; i++) {
        char name[32];
        snprintf(name, sizeof name, "SPEAKER_%02d", cres->turns[i].label);
        gf_rttm_add(r->rttm, uri, 1, cres->turns[i].start,
                    cres->turns[i].end - cres->turns[i].start, name);
        if (cres->turns[i].label > max_label)
            max_label = cres->turns[i].label;
    }
    for (size_t i = 0; i < cres->n_excl_turns; i++) {
        char name[32];
        snprintf(name, sizeof name, "SPEAKER_%02d", cres->excl_turns[i].label);
        gf_rttm_add(r->exclusive, uri, 1, cres->excl_turns[i].start,
                    cres->excl_turns[i].end - cres->excl_turns[i].start, name);
    }
    r->n_speakers = (size_t)(max_label + 1);
    r->dim = cres->dim;
    size_t rows = r->n_speakers < cres->n_speakers ? r->n_speakers : cres->n_speakers;
    r->centroids = gf_calloc((r->n_speakers ? r->n_speakers : 1) * (r->dim ? r->dim : 1),
                             sizeof *r->centroids);
    if (cres->centroids && rows)
        memcpy(r->centroids, cres->centroids, rows * r->dim * sizeof *r->centroids);
    free(uri);
}

int gf_diar_result_save_speakers(const gf_diar_result *r, const char *path, bool replace)
{
    size_t shape[2] = { r->n_speakers, r->dim };
    gf_npy_array *a = gf_npy_new(GF_NPY_F32, 2, shape);
    if (a->count)
        memcpy(a->data, r->centroids, a->count * sizeof(float));
    int rc = gf_npy_save_as(path, a, replace);
    gf_npy_destroy(&a);
    return rc;
}

static int save_array(const char *dir, const char *name, const float *data, size_t n0, size_t n1,
                      size_t n2, bool replace)
{
    size_t shape[3] = { n0, n1, n2 };
    gf_npy_array *a = gf_npy_new(GF_NPY_F32, 3, shape);
    memcpy(a->data, data, a->count * sizeof(float));
    char *path = gf_strfmt("%s/%s", dir, name);
    int rc = gf_npy_save_as(path, a, replace);
    free(path);
    gf_npy_destroy(&a);
    return rc;
}

int gf_diar_save_intermediates(const char *dir, const float *logits, const float *seg,
                               const float *emb, size_t n, size_t dim, bool replace)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        GF_ERROR("%s: cannot create the intermediates directory: %s", dir, strerror(errno));
        return GF_EIO;
    }
    if (logits)
        GF_TRY(save_array(dir, "segmentation_logits.npy", logits, n, GF_DIAR_FRAMES,
                          GF_DIAR_CLASSES, replace));
    GF_TRY(save_array(dir, "segmentations.npy", seg, n, GF_DIAR_FRAMES, GF_DIAR_SPEAKERS,
                      replace));
    return save_array(dir, "embeddings.npy", emb, n, GF_DIAR_SPEAKERS, dim, replace);
}

