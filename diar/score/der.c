/* der.c — diarization error rate (see der.h).
 *
 * The scoring stage of the pipeline, for tests, benchmarks and users who
 * check a diarization against a reference. Per file it builds the scored
 * region with interval arithmetic, then sweeps the sorted turn boundaries
 * twice: once to add up how long each (hypothesis, reference) speaker pair
 * co-occurs, which the shared linear sum assignment (diar/cluster/lsa, the
 * algorithm and tie-breaking of scipy's linear_sum_assignment, which
 * pyannote.metrics calls) turns into the optimal one-to-one mapping, and
 * once to count the errors under that mapping. Definitions
 * follow pyannote.metrics (DiarizationErrorRate with its uemify/extrude and
 * IdentificationErrorRate): docs/der.md. */
#include "diar/score/der.h"

#include "common/error.h"
#include "common/log.h"
#include "common/util.h"
#include "diar/cluster/lsa.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- spans: sorted, disjoint [start, end) intervals ---- */

typedef struct {
    double s, e;
} span;

typedef struct {
    span *v;     /* the spans */
    size_t n;    /* how many */
    size_t cap;  /* allocated */
} span_list;

static void spans_add(span_list *l, double s, double e)
{
    if (!(e > s))
        return;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = gf_realloc(l->v, l->cap * sizeof(span));
    }
    l->v[l->n++] = (span){ s, e };
}

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : 0;
}

/* Sort and merge overlapping or touching spans in place. */
static void spans_normalise(span_list *l)
{
    if (l->n < 2)
        return;
    qsort(l->v, l->n, sizeof(span), span_cmp);
    size_t k = 0;
    for (size_t i = 1; i < l->n; i++) {
        if (l->v[i].s <= l->v[k].e) {
            if (l->v[i].e > l->v[k].e)
                l->v[k].e = l->v[i].e;
        } else {
            l->v[++k] = l->v[i];
        }
    }
    l->n = k + 1;
}

/* a minus b, both normalised; the result is normalised. */
static span_list spans_subtract(const span_list *a, const span_list *b)
{
    span_list out = { 0 };
    size_t j = 0;
    for (size_t i = 0; i < a->n; i++) {
        double s = a->v[i].s, e = a->v[i].e;
        while (j < b->n && b->v[j].e <= s)
            j++;
        size_t k = j;
        while (k < b->n && b->v[k].s < e) {
            if (b->v[k].s > s)
                spans_add(&out, s, b->v[k].s);
            if (b->v[k].e > s)
                s = b->v[k].e;
            k++;
        }
        if (e > s)
            spans_add(&out, s, e);
    }
    return out;
}

/* ---- one file ---- */

typedef struct {
    double t;      /* time */
    int delta;     /* +1 start, -1 end */
    int kind;      /* 0 reference turn, 1 hypothesis turn, 2 scored span */
    int spk;       /* speaker index within its side */
} event;

static int event_cmp(const void *a, const void *b)
{
    const event *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t ? 1 : 0;
}

typedef struct {
    const char **names;  /* labels, borrowed */
    size_t n;            /* how many */
} label_set;

static int label_index(label_set *ls, const char *name)
{
    for (size_t i = 0; i < ls->n; i++)
        if (strcmp(ls->names[i], name) == 0)
            return (int)i;
    ls->names = gf_realloc(ls->names, (ls->n + 1) * sizeof(char *));
    ls->names[ls->n] = name;
    return (int)ls->n++;
}

typedef struct {
    event *ev;          /* sorted events */
    size_t n_ev;        /* how many */
    size_t n_ref;       /* reference speakers */
    size_t n_hyp;       /* hypothesis speakers */
} sweep_ctx;

/* Walk the stretches between events inside the scored region. With cooc,
 * add d * count_h * count_r per pair; with map, add the error components. */
static void sweep(const sweep_ctx *x, double *cooc, const int *map, gf_der_components *c)
{
    int *cr = gf_calloc(x->n_ref + 1, sizeof(int)), *ch = gf_calloc(x->n_hyp + 1, sizeof(int));
    int scored = 0;
    size_t i = 0;
    while (i < x->n_ev) {
        double t = x->ev[i].t;
        for (; i < x->n_ev && x->ev[i].t == t; i++) {
            const event *e = &x->ev[i];
            if (e->kind == 0)
                cr[e->spk] += e->delta;
            else if (e->kind == 1)
                ch[e->spk] += e->delta;
            else
                scored += e->delta;
        }
        if (i == x->n_ev || scored <= 0)
            continue;
        double d = x->ev[i].t - t;
        if (cooc) {
            for (size_t h = 0; h < x->n_hyp; h++) {
                if (!ch[h])
                    continue;
                for (size_t r = 0; r < x->n_ref; r++)
                    if (cr[r])
                        cooc[h * x->n_ref + r] += d * ch[h] * cr[r];
            }
        }
        if (c) {
            long nr = 0, nh = 0, ok = 0;
            for (size_t r = 0; r < x->n_ref; r++)
                nr += cr[r];
            for (size_t h = 0; h < x->n_hyp; h++) {
                nh += ch[h];
                if (map[h] >= 0 && ch[h] && cr[map[h]])
                    ok += ch[h] < cr[map[h]] ? ch[h] : cr[map[h]];
            }
            c->total += d * (double)nr;
            c->correct += d * (double)ok;
            c->missed += d * (double)(nr > nh ? nr - nh : 0);
            c->false_alarm += d * (double)(nh > nr ? nh - nr : 0);
            c->confusion += d * (double)((nr < nh ? nr : nh) - ok);
        }
    }
    free(cr);
    free(ch);
}

/* Order of labels as pyannote sees them (Annotation.labels() is sorted). */
static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t *sorted_order(const label_set *ls)
{
    const char **names = gf_malloc((ls->n + 1) * sizeof(char *));
    memcpy(names, ls->names, ls->n * sizeof(char *));
    if (ls->n > 1)
        qsort(names, ls->n, sizeof(char *), name_cmp);
    size_t *order = gf_malloc((ls->n + 1) * sizeof(size_t));
    for (size_t i = 0; i < ls->n; i++) {
        size_t k = 0;
        while (ls->names[k] != names[i])
            k++;
        order[i] = k;
    }
    free(names);
    return order;
}

/* The hypothesis -> reference assignment maximising co-occurrence, solved on
 * the matrix with rows and columns in sorted label order, as pyannote builds
 * it, so that ties resolve as they do there. Returns col[h] (a reference
 * index or -1) for each hypothesis index; the caller frees. */
static int *optimal_mapping(const double *cooc, const label_set *hl, const label_set *rl)
{
    size_t nh = hl->n, nr = rl->n;
    int *col = gf_malloc((nh + 1) * sizeof(int));
    for (size_t h = 0; h < nh; h++)
        col[h] = -1;
    if (nh == 0 || nr == 0)
        return col;
    size_t *ho = sorted_order(hl), *ro = sorted_order(rl);
    double *m = gf_malloc(nh * nr * sizeof(double));
    for (size_t i = 0; i < nh; i++)
        for (size_t j = 0; j < nr; j++)
            m[i * nr + j] = cooc[ho[i] * nr + ro[j]];
    int *c = gf_malloc(nh * sizeof(int));
    int rc = gf_lsa_solve(m, nh, nr, true, c);
    assert(rc == 0); /* co-occurrences are finite sums of finite durations */
    (void)rc;
    for (size_t i = 0; i < nh; i++)
        if (c[i] >= 0)
            col[ho[i]] = (int)ro[c[i]];
    free(c);
    free(m);
    free(ho);
    free(ro);
    return col;
}

static void score_file(const char *uri, const gf_der_turn *ref, size_t n_ref,
                       const gf_der_turn *hyp, size_t n_hyp, const gf_der_span *uem,
                       size_t n_uem, bool uem_given, const gf_der_options *opt,
                       gf_der_file *out)
{
    label_set rl = { 0 }, hl = { 0 };
    span_list base = { 0 }, removed = { 0 };
    event *ev = NULL;
    size_t n_ev = 0, cap = 0;
#define PUSH(T, D, K, S)                                                   \
    do {                                                                   \
        if (n_ev == cap) {                                                 \
            cap = cap ? 2 * cap : 64;                                      \
            ev = gf_realloc(ev, cap * sizeof(event));                      \
        }                                                                  \
        ev[n_ev++] = (event){ (T), (D), (K), (S) };                       \
    } while (0)

    double lo = HUGE_VAL, hi = -HUGE_VAL;
    for (size_t i = 0; i < n_ref; i++) {
        const gf_der_turn *t = &ref[i];
        if (strcmp(t->uri, uri) != 0 || !(t->end > t->start))
            continue;
        int s = label_index(&rl, t->speaker);
        PUSH(t->start, +1, 0, s);
        PUSH(t->end, -1, 0, s);
        lo = fmin(lo, t->start);
        hi = fmax(hi, t->end);
        if (opt->collar > 0) {
            spans_add(&removed, t->start - 0.5 * opt->collar, t->start + 0.5 * opt->collar);
            spans_add(&removed, t->end - 0.5 * opt->collar, t->end + 0.5 * opt->collar);
        }
    }
    for (size_t i = 0; i < n_hyp; i++) {
        const gf_der_turn *t = &hyp[i];
        if (strcmp(t->uri, uri) != 0 || !(t->end > t->start))
            continue;
        int s = label_index(&hl, t->speaker);
        PUSH(t->start, +1, 1, s);
        PUSH(t->end, -1, 1, s);
        lo = fmin(lo, t->start);
        hi = fmax(hi, t->end);
    }
    if (n_ev > 1)
        qsort(ev, n_ev, sizeof(event), event_cmp);

    if (opt->skip_overlap) {
        /* Where two or more reference turns are active (any speakers). */
        int active = 0;
        for (size_t i = 0; i < n_ev;) {
            double t = ev[i].t;
            for (; i < n_ev && ev[i].t == t; i++)
                if (ev[i].kind == 0)
                    active += ev[i].delta;
            if (active >= 2 && i < n_ev) {
                /* Extend to the next reference event. */
                size_t k = i;
                while (k < n_ev && ev[k].kind != 0)
                    k++;
                if (k < n_ev)
                    spans_add(&removed, t, ev[k].t);
            }
        }
    }
    if (uem_given) {
        for (size_t i = 0; i < n_uem; i++)
            if (strcmp(uem[i].uri, uri) == 0)
                spans_add(&base, uem[i].start, uem[i].end);
    } else if (lo < hi) {
        spans_add(&base, lo, hi);
    }
    spans_normalise(&base);
    spans_normalise(&removed);
    span_list scored = spans_subtract(&base, &removed);
    for (size_t i = 0; i < scored.n; i++) {
        PUSH(scored.v[i].s, +1, 2, 0);
        PUSH(scored.v[i].e, -1, 2, 0);
    }
#undef PUSH
    if (n_ev > 1)
        qsort(ev, n_ev, sizeof(event), event_cmp);

    sweep_ctx x = { ev, n_ev, rl.n, hl.n };
    double *cooc = gf_calloc(hl.n * rl.n + 1, sizeof(double));
    sweep(&x, cooc, NULL, NULL);
    int *col = optimal_mapping(cooc, &hl, &rl);
    memset(&out->c, 0, sizeof out->c);
    out->uri = gf_strdup(uri);
    out->n_map = 0;
    out->map_hyp = gf_calloc(hl.n + 1, sizeof(char *));
    out->map_ref = gf_calloc(hl.n + 1, sizeof(char *));
    for (size_t h = 0; h < hl.n; h++) {
        /* pyannote maps only pairs that actually co-occur. */
        if (col[h] >= 0 && cooc[h * rl.n + (size_t)col[h]] > 0) {
            out->map_hyp[out->n_map] = gf_strdup(hl.names[h]);
            out->map_ref[out->n_map] = gf_strdup(rl.names[col[h]]);
            out->n_map++;
        } else {
            col[h] = -1;
        }
    }
    sweep(&x, NULL, col, &out->c);

    free(col);
    free(cooc);
    free(ev);
    free(base.v);
    free(removed.v);
    free(scored.v);
    free(rl.names);
    free(hl.names);
}

double gf_der_rate(const gf_der_components *c)
{
    double err = c->missed + c->false_alarm + c->confusion;
    if (c->total == 0.0)
        return err == 0.0 ? 0.0 : 1.0;
    return err / c->total;
}

static bool turns_valid(const char *what, const gf_der_turn *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(t[i].start) || !isfinite(t[i].end)) {
            GF_ERROR("der: %s turn %zu (%s, %s) has a non-finite time", what, i + 1, t[i].uri,
                     t[i].speaker);
            return false;
        }
    }
    return true;
}

int gf_der_score(const gf_der_turn *ref, size_t n_ref, const gf_der_turn *hyp, size_t n_hyp,
                 const gf_der_span *uem, size_t n_uem, bool uem_given,
                 const gf_der_options *opt, gf_der_report **out)
{
    assert(out && opt);
    *out = NULL;
    if (!(opt->collar >= 0) || !isfinite(opt->collar)) {
        GF_ERROR("der: collar %g must be a finite number >= 0", opt->collar);
        return GF_EINVAL;
    }
    if (!turns_valid("reference", ref, n_ref) || !turns_valid("hypothesis", hyp, n_hyp))
        return GF_EINVAL;
    for (size_t i = 0; i < n_uem; i++) {
        if (!isfinite(uem[i].start) || !isfinite(uem[i].end) || uem[i].end < uem[i].start) {
            GF_ERROR("der: UEM span %zu of %s (%g to %g) is not a valid interval", i + 1,
                     uem[i].uri, uem[i].start, uem[i].end);
            return GF_EINVAL;
        }
    }
    uem_given = uem_given || n_uem > 0;

    /* Files in order of first appearance: reference, then hypothesis. */
    const char **uris = NULL;
    size_t n_uris = 0;
    for (size_t pass = 0; pass < 2; pass++) {
        const gf_der_turn *t = pass ? hyp : ref;
        size_t n = pass ? n_hyp : n_ref;
        for (size_t i = 0; i < n; i++) {
            size_t k = 0;
            while (k < n_uris && strcmp(uris[k], t[i].uri) != 0)
                k++;
            if (k == n_uris) {
                uris = gf_realloc(uris, (n_uris + 1) * sizeof(char *));
                uris[n_uris++] = t[i].uri;
            }
        }
    }
    if (uem_given) {
        for (size_t k = 0; k < n_uris; k++) {
            size_t i = 0;
            while (i < n_uem && strcmp(uem[i].uri, uris[k]) != 0)
                i++;
            if (i == n_uem) {
                GF_ERROR("der: file %s has turns but no UEM span", uris[k]);
                free(uris);
                return GF_EINVAL;
            }
        }
    }

    gf_der_report *rep = gf_calloc(1, sizeof *rep);
    rep->files = gf_calloc(n_uris + 1, sizeof(gf_der_file));
    rep->n_files = n_uris;
    for (size_t k = 0; k < n_uris; k++) {
        gf_der_file *f = &rep->files[k];
        score_file(uris[k], ref, n_ref, hyp, n_hyp, uem, n_uem, uem_given, opt, f);
        rep->total.total += f->c.total;
        rep->total.correct += f->c.correct;
        rep->total.missed += f->c.missed;
        rep->total.false_alarm += f->c.false_alarm;
        rep->total.confusion += f->c.confusion;
    }
    free(uris);
    *out = rep;
    return 0;
}

void gf_der_report_destroy(gf_der_report **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_der_report *self = *self_p;
    for (size_t k = 0; k < self->n_files; k++) {
        gf_der_file *f = &self->files[k];
        for (size_t i = 0; i < f->n_map; i++) {
            free(f->map_hyp[i]);
            free(f->map_ref[i]);
        }
        free(f->map_hyp);
        free(f->map_ref);
        free(f->uri);
    }
    free(self->files);
    free(self);
    *self_p = NULL;
}
