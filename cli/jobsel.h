/* jobsel.h — the selection options of queue, history and cancel: --user,
 * --state, --name, --since, --card, read into the protocol's filter record
 * (net/proto.h, gf_job_filter) that the broker applies (broker/jobfilter.h),
 * and the dates --since and `purge --before` take.
 *
 * Users are names or numeric uids, comma-separated, resolved here (the
 * broker takes numbers only); states are pending, running, done, failed,
 * cancelled, comma-separated; a name is one exact job name (commas and all);
 * cards are indices, comma-separated. Each option may be given once. */
#ifndef GF_JOBSEL_H
#define GF_JOBSEL_H

#include "net/proto.h"

#include <stdbool.h>
#include <stdint.h>

struct option;

/* Which options a command takes (bits). */
enum {
    GF_SEL_USER = 1, GF_SEL_STATE = 2, GF_SEL_NAME = 4, GF_SEL_SINCE = 8, GF_SEL_CARD = 16,
    GF_SEL_ALL = 31,
};

/* The selection being read; NULL until an option is given. */
typedef struct {
    gf_job_filter *filter;   /* owned until taken (gf_jobsel_take) */
    unsigned given;          /* GF_SEL_* seen, each at most once */
} gf_jobsel;

/* getopt_long values of the options (above any a command uses itself). */
enum { GF_SEL_OPT_USER = 1000, GF_SEL_OPT_STATE, GF_SEL_OPT_NAME, GF_SEL_OPT_SINCE,
       GF_SEL_OPT_CARD };

/* The struct option entries for the options in `which` (GF_SEL_*), in
 * that order, written to opts (room for 5); returns how many. */
int gf_jobsel_options(unsigned which, struct option *opts);

/* Take option c (a GF_SEL_OPT_* value) with its argument for command cmd:
 * 0, or GF_EXIT_USAGE after saying what is wrong in the command's one
 * line. now_ms: the wall clock, for relative dates. */
int gf_jobsel_take_opt(gf_jobsel *s, const char *cmd, int c, const char *arg, int64_t now_ms);

/* The filter to send (ownership moves to the caller's message; NULL when
 * no option was given). */
gf_job_filter *gf_jobsel_take(gf_jobsel *s);

/* Free what is left. */
void gf_jobsel_clear(gf_jobsel *s);

/* Parse a state list ("failed,cancelled") into names; 0, or GF_EINVAL
 * with the word at fault in *bad (borrowed from s's copy: valid until the
 * next call). */
int gf_jobsel_states(const char *s, char ***names, size_t *n, char *bad, size_t badlen);

/* A date: "2026-11-30" (local midnight), "2026-11-30T08:15" or
 * "2026-11-30 08:15:30" (local time), "@1764500000" (seconds since the
 * epoch), "now", "now-3d" / "now-12h" / "now-30m" / "now-90s" / "now-2w".
 * Into *ms (since the epoch); 0, or GF_EINVAL. */
int gf_parse_date(const char *s, int64_t now_ms, int64_t *ms);

#endif
