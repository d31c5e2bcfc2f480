/* devstats.h — device-timing and checkpoint statistics of one job.
 *
 * Per (stage, route) pair, device execution time is kept as measured samples
 * (count, total, max) from device events, and every launch that was not
 * measured is counted by why: not requested, unavailable (with the reason,
 * e.g. "cpu card"), or failed-or-unproven (a failed launch or a transfer of
 * unknown completion never counts as device time). A measured zero is a
 * sample, distinct from "unavailable". Checkpoint capture and restore keep the
 * same, plus bytes and copies. All counters saturate at UINT64_MAX.
 *
 * Workers fill one per job and send it in RESULT as JSON; the broker stores
 * it; `gpuflock show` prints it. */
#ifndef GF_DEVSTATS_H
#define GF_DEVSTATS_H

#include <stddef.h>
#include <stdint.h>

#define GF_DEVSTATS_NAME_MAX   48   /* stage and route names, NUL included */
#define GF_DEVSTATS_REASON_MAX 64   /* unavailable reason, NUL included */
#define GF_DEVSTATS_MAX_ROWS   256  /* distinct (stage, route) pairs per job */

typedef struct {
    char stage[GF_DEVSTATS_NAME_MAX];    /* "segmentation", "checkpoint.capture", ... */
    char route[GF_DEVSTATS_NAME_MAX];    /* "library", "own", "cpu" */
    uint64_t count;                      /* measured samples */
    uint64_t total_ns;                   /* sum of measured device time */
    uint64_t max_ns;                     /* largest measured sample */
    uint64_t not_requested;              /* launches run without timing asked for */
    uint64_t unavailable;                /* launches where timing could not exist */
    char reason[GF_DEVSTATS_REASON_MAX]; /* why unavailable (first reason seen) */
    uint64_t failed;                     /* failed launches or unproven timings */
    uint64_t bytes;                      /* checkpoint rows: bytes captured/restored */
    uint64_t copies;                     /* checkpoint rows: copies made */
} gf_devstats_row;

typedef struct gf_devstats gf_devstats;

gf_devstats *gf_devstats_new(void);
void gf_devstats_destroy(gf_devstats **self_p);

/* One measured sample of ns nanoseconds (0 is a valid sample). */
void gf_devstats_measured(gf_devstats *self, const char *stage, const char *route, uint64_t ns);
/* One launch whose time was not asked for. */
void gf_devstats_not_requested(gf_devstats *self, const char *stage, const char *route);
/* One launch whose time cannot be had; reason is kept (the first one). */
void gf_devstats_unavailable(gf_devstats *self, const char *stage, const char *route,
                             const char *reason);
/* One failed launch, or a timing that cannot be trusted: never device time. */
void gf_devstats_failed(gf_devstats *self, const char *stage, const char *route);
/* Checkpoint traffic: bytes moved and copies made, on a stage row. */
void gf_devstats_transfer(gf_devstats *self, const char *stage, const char *route,
                          uint64_t bytes, uint64_t copies);

/* Add every row of other into self (saturating). */
void gf_devstats_merge(gf_devstats *self, const gf_devstats *other);

/* Rows in first-recorded order; borrowed, valid until the next change. */
size_t gf_devstats_rows(const gf_devstats *self, const gf_devstats_row **rows);

/* JSON text of the table; the caller frees. */
char *gf_devstats_to_json(const gf_devstats *self);
/* Parse JSON made by gf_devstats_to_json. Returns 0 or GF_EINVAL (logged,
 * naming what is wrong); *out is new on success. */
int gf_devstats_from_json(const char *text, gf_devstats **out);

/* Human-readable table, one row per line, into a new string; caller frees. */
char *gf_devstats_format(const gf_devstats *self);

/* Saturating add, exposed for tests and callers keeping their own counters. */
uint64_t gf_sat_add(uint64_t a, uint64_t b);

#endif
