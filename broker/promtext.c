/* promtext.c — the text exposition format, written (see promtext.h).
 *
 * One growing buffer. Metric and label names are checked against the
 * format's rules ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without the colon and
 * not starting with __) by assert; label values are escaped on the way in.
 * A histogram's buckets are written cumulative, the +Inf bucket equal to
 * its count, so that what a scraper reads is consistent by construction. */
#include "broker/promtext.h"

#include "common/utf8.h"
#include "common/util.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_promtext {
    char *buf;     /* the text, NUL-terminated */
    size_t len;    /* bytes in it */
    size_t cap;    /* bytes allocated */
};

void gf_prom_hist_init(gf_prom_hist *h, const double *bounds, size_t n)
{
    assert(n <= GF_PROM_MAX_BUCKETS);
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->n_bounds = n;
    for (size_t i = 1; i < n; i++)
        assert(bounds[i] > bounds[i - 1]);
}

void gf_prom_hist_observe(gf_prom_hist *h, double v)
{
    if (isnan(v))
        return;
    size_t b = 0;
    while (b < h->n_bounds && v > h->bounds[b])
        b++;
    h->in[b]++;
    h->sum += v;
    h->count++;
}

gf_promtext *gf_promtext_new(void)
{
    gf_promtext *self = gf_calloc(1, sizeof *self);
    self->cap = 4096;
    self->buf = gf_malloc(self->cap);
    self->buf[0] = '\0';
    return self;
}

void gf_promtext_destroy(gf_promtext **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->buf);
    free(*self_p);
    *self_p = NULL;
}

static void put(gf_promtext *self, const char *s, size_t n)
{
    if (self->len + n + 1 > self->cap) {
        while (self->len + n + 1 > self->cap)
            self->cap *= 2;
        self->buf = gf_realloc(self->buf, self->cap);
    }
    memcpy(self->buf + self->len, s, n);
    self->len += n;
    self->buf[self->len] = '\0';
}

static void puts_(gf_promtext *self, const char *s)
{
    put(self, s, strlen(s));
}

static bool name_ok(const char *s, bool label)
{
    if (!*s || (*s >= '0' && *s <= '9') || (label && s[0] == '_' && s[1] == '_'))
        return false;
    for (; *s; s++) {
        char c = *s;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || (!label && c == ':');
        if (!ok)
            return false;
    }
    return true;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

/* Text with backslash and newline escaped, and (in label values) the
 * double quote: the format's two escapings. */
static void escaped(gf_promtext *self, const char *s, bool quote)
{
    char *safe = gf_utf8_valid(s, strlen(s)) ? NULL : gf_utf8_escape_dup(s);
    for (const char *p = safe ? safe : s; *p; p++) {
        if (*p == '\\')
            put(self, "\\\\", 2);
        else if (*p == '\n')
            put(self, "\\n", 2);
        else if (*p == '"' && quote)
            put(self, "\\\"", 2);
        else
            put(self, p, 1);
    }
    free(safe);
}

void gf_promtext_number(double v, char *buf, size_t len)
{
    if (isnan(v))
        snprintf(buf, len, "NaN");
    else if (isinf(v))
        snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        snprintf(buf, len, "%.0f", v);
    else {
        /* the fewest digits that read back as v */
        for (int p = 1; p <= 17; p++) {
            snprintf(buf, len, "%.*g", p, v);
            if (strtod(buf, NULL) == v)
                return;
        }
    }
}

void gf_promtext_family(gf_promtext *self, const char *name, gf_prom_type type, const char *help)
{
    static const char *types[] = { "counter", "gauge", "histogram" };
    assert(name_ok(name, false));
    assert(type != GF_PROM_COUNTER || ends_with(name, "_total"));
    puts_(self, "# HELP ");
    puts_(self, name);
    puts_(self, " ");
    escaped(self, help, false);
    puts_(self, "\n# TYPE ");
    puts_(self, name);
    puts_(self, " ");
    puts_(self, types[type]);
    puts_(self, "\n");
}

/* name{labels[,extra_name="extra"]} value */
static void line(gf_promtext *self, const char *name, const char *suffix,
                 const char *const *labels, const char *extra_name, const char *extra,
                 double value)
{
    puts_(self, name);
    puts_(self, suffix);
    bool any = (labels && labels[0]) || extra_name;
    if (any) {
        puts_(self, "{");
        bool first = true;
        for (size_t i = 0; labels && labels[i]; i += 2) {
            assert(name_ok(labels[i], true) && labels[i + 1]);
            if (!first)
                puts_(self, ",");
            first = false;
            puts_(self, labels[i]);
            puts_(self, "=\"");
            escaped(self, labels[i + 1], true);
            puts_(self, "\"");
        }
        if (extra_name) {
            if (!first)
                puts_(self, ",");
            puts_(self, extra_name);
            puts_(self, "=\"");
            puts_(self, extra);
            puts_(self, "\"");
        }
        puts_(self, "}");
    }
    char num[40];
    gf_promtext_number(value, num, sizeof num);
    puts_(self, " ");
    puts_(self, num);
    puts_(self, "\n");
}

void gf_promtext_sample(gf_promtext *self, const char *name, const char *const *labels,
                        double value)
{
    assert(name_ok(name, false));
    line(self, name, "", labels, NULL, NULL, value);
}

void gf_promtext_histogram(gf_promtext *self, const char *name, const char *const *labels,
                           const gf_prom_hist *h)
{
    assert(name_ok(name, false));
    uint64_t cum = 0;
    char le[40];
    for (size_t b = 0; b < h->n_bounds; b++) {
        cum += h->in[b];
        gf_promtext_number(h->bounds[b], le, sizeof le);
        line(self, name, "_bucket", labels, "le", le, (double)cum);
    }
    line(self, name, "_bucket", labels, "le", "+Inf", (double)h->count);
    line(self, name, "_sum", labels, NULL, NULL, h->sum);
    line(self, name, "_count", labels, NULL, NULL, (double)h->count);
}

const char *gf_promtext_text(const gf_promtext *self, size_t *len)
{
    if (len)
        *len = self->len;
    return self->buf;
}

char *gf_promtext_take(gf_promtext *self, size_t *len)
{
    char *text = self->buf;
    if (len)
        *len = self->len;
    self->cap = 4096;
    self->len = 0;
    self->buf = gf_malloc(self->cap);
    self->buf[0] = '\0';
    return text;
}
