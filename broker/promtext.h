/* promtext.h — Prometheus's text exposition format (version 0.0.4),
 * written: families (HELP and TYPE lines), samples with their labels, and
 * histograms with cumulative buckets, _sum and _count. Pure text, no I/O:
 * the broker's metrics (broker/metrics.h) are rendered through it, and a
 * test reads what it writes.
 *
 * Names are the program's own (metric and label names are checked with
 * assert: a bad one is a programmer's error); label values may come from
 * outside (a card's stage names as its worker reports them) and are
 * escaped as the format asks (backslash, double quote, newline), bytes
 * that are not UTF-8 written \xNN first. */
#ifndef GF_PROMTEXT_H
#define GF_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

typedef struct gf_promtext gf_promtext;

typedef enum { GF_PROM_COUNTER, GF_PROM_GAUGE, GF_PROM_HISTOGRAM } gf_prom_type;

#define GF_PROM_MAX_BUCKETS 24   /* upper bounds a histogram may have (+Inf besides) */

/* A histogram's state: counts per bucket (not cumulative: the text makes
 * them so), their sum and count. */
typedef struct {
    const double *bounds;      /* upper bounds, ascending (borrowed: a static table) */
    size_t n_bounds;           /* at most GF_PROM_MAX_BUCKETS */
    uint64_t in[GF_PROM_MAX_BUCKETS + 1];   /* observations per bucket; [n_bounds]: above all */
    double sum;                /* of every observation */
    uint64_t count;            /* observations */
} gf_prom_hist;

/* An empty histogram over bounds[0..n) (ascending, finite). */
void gf_prom_hist_init(gf_prom_hist *h, const double *bounds, size_t n);

/* One observation v (NaN is ignored; below 0 counts in the first bucket). */
void gf_prom_hist_observe(gf_prom_hist *h, double v);

gf_promtext *gf_promtext_new(void);
void gf_promtext_destroy(gf_promtext **self_p);

/* "# HELP name help" and "# TYPE name type"; then the family's samples.
 * A counter's name ends in _total; help is escaped as the format asks. */
void gf_promtext_family(gf_promtext *self, const char *name, gf_prom_type type,
                        const char *help);

/* "name{k="v",...} value": labels are pairs (name, value) ending in NULL,
 * or NULL for none. Integral values within 2^53 are written as integers,
 * others with the digits that give them back; NaN and infinities as the
 * format spells them. */
void gf_promtext_sample(gf_promtext *self, const char *name, const char *const *labels,
                        double value);

/* A histogram's lines: name_bucket{labels,le="B"} for each bound and
 * le="+Inf" (cumulative counts), name_sum and name_count. */
void gf_promtext_histogram(gf_promtext *self, const char *name, const char *const *labels,
                           const gf_prom_hist *h);

/* The text so far (borrowed, NUL-terminated), its length in *len. */
const char *gf_promtext_text(const gf_promtext *self, size_t *len);

/* The text, handed over (the caller frees); the writer is empty again. */
char *gf_promtext_take(gf_promtext *self, size_t *len);

/* A number as the format writes it, into buf (32 bytes hold any). */
void gf_promtext_number(double v, char *buf, size_t len);

#endif
