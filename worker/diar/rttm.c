/* rttm.c — RTTM reading and writing, JSON form (rttm.h). */
#include "worker/diar/rttm.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

gf_rttm *gf_rttm_new(void)
{
    return gf_calloc(1, sizeof(gf_rttm));
}

void gf_rttm_destroy(gf_rttm **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_rttm *r = *self_p;
    for (size_t i = 0; i < r->n; i++) {
        free(r->turns[i].uri);
        free(r->turns[i].speaker);
    }
    free(r->turns);
    free(r);
    *self_p = NULL;
}

void gf_rttm_add(gf_rttm *r, const char *uri, int channel, double start, double duration,
                 const char *speaker)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->turns = gf_realloc(r->turns, r->cap * sizeof *r->turns);
    }
    r->turns[r->n++] = (gf_turn){ gf_strdup(uri), channel, start, duration, gf_strdup(speaker) };
}

static int turn_cmp(const void *pa, const void *pb)
{
    const gf_turn *a = pa, *b = pb;
    int c = strcmp(a->uri, b->uri);
    if (c)
        return c;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    double ea = a->start + a->duration, eb = b->start + b->duration;
    if (ea != eb)
        return ea < eb ? -1 : 1;
    return strcmp(a->speaker, b->speaker);
}

void gf_rttm_sort(gf_rttm *r)
{
    if (r->n > 1)
        qsort(r->turns, r->n, sizeof *r->turns, turn_cmp);
}

static int parse_time(const char *name, size_t line, const char *what, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) {
        GF_ERROR("%s:%zu: %s '%s' is not a number", name, line, what, s);
        return GF_EINVAL;
    }
    *out = v;
    return 0;
}

int gf_rttm_parse(const char *name, const char *text, size_t len, gf_rttm **out)
{
    *out = NULL;
    gf_rttm *r = gf_rttm_new();
    size_t lineno = 0;
    const char *p = text, *end = text + len;
    char *buf = NULL;
    size_t bufcap = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lineno++;
        if (ll + 1 > bufcap) {
            bufcap = ll + 1;
            buf = gf_realloc(buf, bufcap);
        }
        memcpy(buf, p, ll);
        buf[ll] = '\0';
        p += ll + (nl ? 1 : 0);
        if (ll && buf[ll - 1] == '\r')
            buf[--ll] = '\0';
        char *f[12];
        int nf = 0;
        char *save = NULL;
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            if (nf < 12)
                f[nf] = tok;
            nf++;
        }
        if (nf == 0 || f[0][0] == '#')
            continue;
        if (strcmp(f[0], "SPEAKER") != 0)
            continue;   /* other RTTM record types */
        if (nf < 8) {
            GF_ERROR("%s:%zu: SPEAKER line with %d fields, expected 10", name, lineno, nf);
            goto fail;
        }
        double start, dur;
        if (parse_time(name, lineno, "start", f[3], &start)
            || parse_time(name, lineno, "duration", f[4], &dur))
            goto fail;
        if (dur < 0 || start < 0) {
            GF_ERROR("%s:%zu: negative %s", name, lineno, dur < 0 ? "duration" : "start");
            goto fail;
        }
        char *ce;
        long ch = strtol(f[2], &ce, 10);
        if (*ce && strcmp(f[2], "<NA>") != 0) {
            GF_ERROR("%s:%zu: channel '%s' is not an integer", name, lineno, f[2]);
            goto fail;
        }
        if (*ce)
            ch = 1;
        gf_rttm_add(r, f[1], (int)ch, start, dur, f[7]);
    }
    free(buf);
    *out = r;
    return 0;
fail:
    free(buf);
    gf_rttm_destroy(&r);
    return GF_EINVAL;
}

int gf_rttm_read(const char *path, gf_rttm **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        GF_ERROR("%s: cannot open: %s", path, strerror(e));
        return e == ENOENT ? GF_ENOENT : GF_EIO;
    }
    size_t cap = 4096, n = 0;
    char *b = gf_malloc(cap);
    size_t got;
    while ((got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            b = gf_realloc(b, cap *= 2);
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        GF_ERROR("%s: read error", path);
        free(b);
        return GF_EIO;
    }
    int rc = gf_rttm_parse(path, b, n, out);
    free(b);
    return rc;
}

char *gf_rttm_format(const gf_rttm *r)
{
    size_t cap = 256, len = 0;
    char *s = gf_malloc(cap);
    s[0] = '\0';
    for (size_t i = 0; i < r->n; i++) {
        const gf_turn *t = &r->turns[i];
        for (;;) {
            int w = snprintf(s + len, cap - len, "SPEAKER %s %d %.6f %.6f <NA> <NA> %s <NA> <NA>\n",
                             t->uri, t->channel, t->start, t->duration, t->speaker);
            if (w >= 0 && (size_t)w < cap - len) {
                len += (size_t)w;
                break;
            }
            s = gf_realloc(s, cap *= 2);
        }
    }
    return s;
}

static json_object *num6(double v)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.6f", v);
    return json_object_new_double_s(v, buf);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *gf_rttm_json(const gf_rttm *r)
{
    json_object *root = json_object_new_object(), *arr = json_object_new_array();
    const char **names = gf_malloc((r->n ? r->n : 1) * sizeof *names);
    size_t nn = 0;
    for (size_t i = 0; i < r->n; i++) {
        const gf_turn *t = &r->turns[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "uri", json_object_new_string(t->uri));
        json_object_object_add(o, "channel", json_object_new_int(t->channel));
        json_object_object_add(o, "start", num6(t->start));
        json_object_object_add(o, "end", num6(t->start + t->duration));
        json_object_object_add(o, "duration", num6(t->duration));
        json_object_object_add(o, "speaker", json_object_new_string(t->speaker));
        json_object_array_add(arr, o);
        names[nn++] = t->speaker;
    }
    qsort(names, nn, sizeof *names, str_cmp);
    json_object *spk = json_object_new_array();
    for (size_t i = 0; i < nn; i++)
        if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
            json_object_array_add(spk, json_object_new_string(names[i]));
    free(names);
    json_object_object_add(root, "turns", arr);
    json_object_object_add(root, "speakers", spk);
    char *s = gf_strfmt("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY
                                                                         | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(root);
    return s;
}

int gf_rttm_write_text(const char *path, const char *text)
{
    size_t len = strlen(text);
    if (strcmp(path, "-") == 0) {
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            GF_ERROR("stdout: write error");
            return GF_EIO;
        }
        return 0;
    }
    return gf_write_file_atomic(path, text, len);
}
