/* rttm.c — RTTM reading and writing, JSON form (rttm.h). */
#include "diar/io/rttm.h"

#include "common/error.h"
#include "common/log.h"
#include "common/utf8.h"
#include "common/util.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
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

/* s for a message: printable ASCII kept, every other byte as \xNN, cut to
 * about 40 characters, so that whatever a file holds, the terminal shows
 * plain text. Returns buf. */
static const char *quote(char *buf, size_t cap, const char *s)
{
    assert(cap >= 8);
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (o + 8 > cap || o >= 40) {
            memcpy(buf + o, "...", 4);
            return buf;
        }
        if (*p >= 0x20 && *p < 0x7F && *p != '\\')
            buf[o++] = (char)*p;
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02X", *p);
    }
    buf[o] = '\0';
    return buf;
}

int gf_rttm_parse_time(const char *name, size_t line, const char *what, const char *s,
                       double *out)
{
    char q[64];
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || isnan(v)) {
        GF_ERROR("%s:%zu: %s '%s' is not a number", name, line, what, quote(q, sizeof q, s));
        return GF_EINVAL;
    }
    if (v < 0) {
        GF_ERROR("%s:%zu: negative %s '%s'", name, line, what, quote(q, sizeof q, s));
        return GF_EINVAL;
    }
    /* Also inf, and overflow (strtod gives HUGE_VAL with ERANGE); an
     * underflow's tiny value is kept. */
    if (!(v <= GF_RTTM_MAX_TIME)) {
        GF_ERROR("%s:%zu: %s '%s' is out of range: times are 0 to %.0f s (about 115 days)",
                 name, line, what, quote(q, sizeof q, s), GF_RTTM_MAX_TIME);
        return GF_EINVAL;
    }
    *out = v + 0.0; /* -0 is 0 */
    return 0;
}

/* The length of the UTF-8 sequence at p[0..n), or 0: not valid UTF-8, or
 * a C1 control (U+0080..U+009F, C2 80..9F), which is no text either. */
static size_t text_len(const unsigned char *p, size_t n)
{
    if (p[0] == 0xC2 && n > 1 && p[1] < 0xA0)
        return 0;
    return gf_utf8_seq_len(p, n);
}

int gf_rttm_check_text(const char *name, size_t line, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if ((c < 0x20 && c != '\t') || c == 0x7F) {
            GF_ERROR("%s:%zu: not text: byte \\x%02X at column %zu is a control character%s",
                     name, line, c, i + 1, c == 0 ? " (NUL: a binary file?)" : "");
            return GF_EINVAL;
        }
        size_t k = text_len(p + i, len - i);
        if (k == 0) {
            GF_ERROR("%s:%zu: not text: byte \\x%02X at column %zu is not %s", name, line, c,
                     i + 1, c == 0xC2 && i + 1 < len && p[i + 1] >= 0x80 && p[i + 1] < 0xA0
                                ? "printable (a C1 control character)"
                                : "valid UTF-8");
            return GF_EINVAL;
        }
        i += k;
    }
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
    /* The first non-blank line that is not a SPEAKER record, for the message
     * when there is none. */
    size_t n_other = 0, first_other = 0;
    char first_word[64] = "";
    /* A UTF-8 byte order mark (some editors write one) is not part of the
     * first field. */
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;
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
        /* Before any field is looked at: a NUL would hide the rest of the
         * line from strtok, and a binary file's bytes must not reach a
         * message. */
        if (gf_rttm_check_text(name, lineno, buf, ll) != 0)
            goto fail;
        char *f[12];
        int nf = 0;
        char *save = NULL;
        for (char *tok = strtok_r(buf, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            if (nf < 12)
                f[nf] = tok;
            nf++;
        }
        if (nf == 0)
            continue;
        if (f[0][0] == '#' || strcmp(f[0], "SPEAKER") != 0) {
            /* a comment or another RTTM record type */
            if (n_other++ == 0) {
                first_other = lineno;
                quote(first_word, sizeof first_word, f[0]);
            }
            continue;
        }
        if (nf < 8) {
            GF_ERROR("%s:%zu: SPEAKER line with %d fields, expected 10", name, lineno, nf);
            goto fail;
        }
        double start, dur;
        if (gf_rttm_parse_time(name, lineno, "start", f[3], &start)
            || gf_rttm_parse_time(name, lineno, "duration", f[4], &dur))
            goto fail;
        char *ce;
        errno = 0;
        long ch = strtol(f[2], &ce, 10);
        if (strcmp(f[2], "<NA>") == 0) {
            ch = 1;
        } else if (*ce || errno || ch < INT_MIN || ch > INT_MAX) {
            char q[64];
            GF_ERROR("%s:%zu: channel '%s' is not an integer", name, lineno,
                     quote(q, sizeof q, f[2]));
            goto fail;
        }
        gf_rttm_add(r, f[1], (int)ch, start, dur, f[7]);
    }
    if (r->n == 0 && n_other > 0) {
        GF_ERROR("%s holds no SPEAKER records (%zu non-blank line%s; line %zu begins '%s')",
                 name, n_other, n_other == 1 ? "" : "s", first_other, first_word);
        goto fail;
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
    /* one byte past the bound says "too large" without reading /dev/zero to its end */
    while (n <= GF_RTTM_MAX_BYTES && (got = fread(b + n, 1, cap - n, f)) > 0) {
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
    if (n > GF_RTTM_MAX_BYTES) {
        GF_ERROR("%s: larger than %d MiB: not an RTTM file gpuflock reads", path,
                 GF_RTTM_MAX_BYTES >> 20);
        free(b);
        return GF_EINVAL;
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

static int cmp_start(const void *a, const void *b, void *arg)
{
    const gf_turn *t = arg;
    double x = t[*(const size_t *)a].start, y = t[*(const size_t *)b].start;
    return (x > y) - (x < y);
}

/* For each turn, whether another speaker's turn shares part of its time. */
static bool *overlaps(const gf_rttm *r)
{
    bool *ov = gf_calloc(r->n ? r->n : 1, sizeof *ov);
    size_t *ix = gf_malloc((r->n ? r->n : 1) * sizeof *ix);
    for (size_t i = 0; i < r->n; i++)
        ix[i] = i;
    qsort_r(ix, r->n, sizeof *ix, cmp_start, r->turns);
    /* by start: every later turn that starts before this one ends meets it */
    for (size_t a = 0; a < r->n; a++) {
        const gf_turn *ta = &r->turns[ix[a]];
        double end = ta->start + ta->duration;
        for (size_t b = a + 1; b < r->n && r->turns[ix[b]].start < end; b++)
            if (strcmp(r->turns[ix[b]].speaker, ta->speaker) != 0
                && r->turns[ix[b]].duration > 0 && ta->duration > 0)
                ov[ix[a]] = ov[ix[b]] = true;
    }
    free(ix);
    return ov;
}

char *gf_rttm_json(const gf_rttm *r)
{
    json_object *root = json_object_new_object(), *arr = json_object_new_array();
    const char **names = gf_malloc((r->n ? r->n : 1) * sizeof *names);
    bool *ov = overlaps(r);
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
        json_object_object_add(o, "overlap", json_object_new_boolean(ov[i]));
        json_object_array_add(arr, o);
        names[nn++] = t->speaker;
    }
    free(ov);
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

int gf_rttm_write_text(const char *path, const char *text, bool replace)
{
    size_t len = strlen(text);
    if (strcmp(path, "-") == 0) {
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            GF_ERROR("stdout: write error");
            return GF_EIO;
        }
        return 0;
    }
    return gf_write_file(path, text, len, replace);
}

char *gf_rttm_beside(const char *rttm, const char *suffix)
{
    size_t n = strlen(rttm);
    if (n > 5 && strcmp(rttm + n - 5, ".rttm") == 0)
        return gf_strfmt("%.*s%s", (int)(n - 5), rttm, suffix);
    return gf_strfmt("%s%s", rttm, suffix);
}
