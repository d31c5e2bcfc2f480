/* jobsel.c — the selection options and dates (see jobsel.h). */
#include "cli/jobsel.h"

#include "cli/cliopts.h"
#include "common/error.h"
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int gf_jobsel_options(unsigned which, struct option *opts)
{
    static const struct option all[] = {
        { "user", required_argument, NULL, GF_SEL_OPT_USER },
        { "state", required_argument, NULL, GF_SEL_OPT_STATE },
        { "name", required_argument, NULL, GF_SEL_OPT_NAME },
        { "since", required_argument, NULL, GF_SEL_OPT_SINCE },
        { "card", required_argument, NULL, GF_SEL_OPT_CARD },
    };
    int n = 0;
    for (int i = 0; i < 5; i++)
        if (which & (1u << i))
            opts[n++] = all[i];
    return n;
}

static gf_job_filter *filter(gf_jobsel *s)
{
    if (!s->filter)
        s->filter = gf_calloc(1, sizeof(gf_job_filter));
    return s->filter;
}

/* A number in [0, max], the whole word. */
static bool number(const char *w, long long max, long long *v)
{
    if (!*w || !isdigit((unsigned char)*w))
        return false;
    char *end;
    errno = 0;
    *v = strtoll(w, &end, 10);
    return !errno && !*end && *v <= max;
}

/* The words of a comma list, into a new array of copies (empty words
 * left out). */
static char **words(const char *s, size_t *n)
{
    char *copy = gf_strdup(s), *save = NULL;
    char **v = NULL;
    *n = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        v = gf_realloc(v, (*n + 1) * sizeof(char *));
        v[(*n)++] = gf_strdup(t);
    }
    free(copy);
    return v;
}

static void free_words(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int gf_jobsel_states(const char *s, char ***names, size_t *n, char *bad, size_t badlen)
{
    static const char *const known[] = { "pending", "running", "done", "failed", "cancelled" };
    *names = words(s, n);
    for (size_t i = 0; i < *n; i++) {
        bool ok = false;
        for (size_t k = 0; k < 5 && !ok; k++)
            ok = strcmp((*names)[i], known[k]) == 0;
        if (!ok) {
            snprintf(bad, badlen, "%s", (*names)[i]);
            free_words(*names, *n);
            *names = NULL;
            *n = 0;
            return GF_EINVAL;
        }
    }
    if (*n == 0) {
        snprintf(bad, badlen, "%s", s);
        return GF_EINVAL;
    }
    return 0;
}

static int take_users(gf_jobsel *s, const char *cmd, const char *arg)
{
    size_t n;
    char **w = words(arg, &n);
    int rc = n ? 0 : gf_cli_usage_error(cmd, "--user '%s': no user named", arg);
    gf_job_filter *f = filter(s);
    f->users = gf_calloc(n ? n : 1, sizeof(uint32_t));
    for (size_t i = 0; i < n && !rc; i++) {
        long long v;
        struct passwd pw, *pp = NULL;
        char buf[4096];
        if (getpwnam_r(w[i], &pw, buf, sizeof buf, &pp) == 0 && pp)
            f->users[f->n_users++] = (uint32_t)pw.pw_uid;
        else if (number(w[i], UINT32_MAX - 1, &v))
            f->users[f->n_users++] = (uint32_t)v;
        else
            rc = gf_cli_usage_error(cmd, "--user: no user '%s' (a name or a numeric uid)", w[i]);
    }
    free_words(w, n);
    return rc;
}

static int take_cards(gf_jobsel *s, const char *cmd, const char *arg)
{
    size_t n;
    char **w = words(arg, &n);
    int rc = n && n <= GF_PROTO_MAX_CARDS ? 0
             : gf_cli_usage_error(cmd, "--card '%s': one to %u card numbers", arg,
                                  GF_PROTO_MAX_CARDS);
    gf_job_filter *f = filter(s);
    f->cards = gf_calloc(n ? n : 1, sizeof(int32_t));
    for (size_t i = 0; i < n && !rc; i++) {
        long long v;
        if (!number(w[i], 1023, &v))
            rc = gf_cli_usage_error(cmd, "--card: '%s' is not a card number", w[i]);
        else
            f->cards[f->n_cards++] = (int32_t)v;
    }
    free_words(w, n);
    return rc;
}

int gf_jobsel_take_opt(gf_jobsel *s, const char *cmd, int c, const char *arg, int64_t now_ms)
{
    static const char *const names[] = { "--user", "--state", "--name", "--since", "--card" };
    int k = c - GF_SEL_OPT_USER;
    if (k < 0 || k > 4)
        return gf_cli_usage_error(cmd, "not a selection option");
    if (s->given & (1u << k))
        return gf_cli_usage_error(cmd, "%s given twice (a comma list takes several)", names[k]);
    s->given |= 1u << k;
    gf_job_filter *f = filter(s);
    switch (c) {
    case GF_SEL_OPT_USER:
        return take_users(s, cmd, arg);
    case GF_SEL_OPT_STATE: {
        char bad[128];
        if (gf_jobsel_states(arg, &f->states, &f->n_states, bad, sizeof bad) != 0)
            return gf_cli_usage_error(cmd, "--state: unknown state '%s' (pending, running, done, "
                                      "failed, cancelled)", bad);
        return 0;
    }
    case GF_SEL_OPT_NAME:
        if (strlen(arg) > GF_PROTO_MAX_NAME)
            return gf_cli_usage_error(cmd, "--name: longer than %u bytes", GF_PROTO_MAX_NAME);
        f->name = gf_strdup(arg);
        return 0;
    case GF_SEL_OPT_SINCE:
        if (gf_parse_date(arg, now_ms, &f->since_ms) != 0)
            return gf_cli_usage_error(cmd, "--since '%s': not a date (2026-11-30, 2026-11-30T08:15, "
                                      "@SECONDS, now-3d, now-12h)", arg);
        if (f->since_ms <= 0)
            f->since_ms = 1;   /* before the epoch: every job; 0 would be none at all */
        return 0;
    default:
        return take_cards(s, cmd, arg);
    }
}

gf_job_filter *gf_jobsel_take(gf_jobsel *s)
{
    gf_job_filter *f = s->filter;
    s->filter = NULL;
    return f;
}

void gf_jobsel_clear(gf_jobsel *s)
{
    gf_job_filter *f = s->filter;
    if (f) {
        free(f->users);
        for (size_t i = 0; i < f->n_states; i++)
            free(f->states[i]);
        free(f->states);
        free(f->name);
        free(f->cards);
        free(f);
    }
    s->filter = NULL;
    s->given = 0;
}

/* "now-3d": now less a count of units (s, m, h, d, w). */
static int relative(const char *s, int64_t now_ms, int64_t *ms)
{
    if (strcmp(s, "now") == 0) {
        *ms = now_ms;
        return 0;
    }
    if (strncmp(s, "now-", 4) != 0 || !isdigit((unsigned char)s[4]))
        return GF_EINVAL;
    char *end;
    errno = 0;
    long long n = strtoll(s + 4, &end, 10);
    static const struct { char unit; int64_t ms; } units[] = {
        { 's', 1000 }, { 'm', 60000 }, { 'h', 3600000 }, { 'd', 86400000 }, { 'w', 604800000 },
    };
    for (size_t i = 0; i < 5; i++)
        if (!errno && end[0] == units[i].unit && end[1] == '\0' &&
            n <= INT64_MAX / units[i].ms) {
            *ms = now_ms - (int64_t)n * units[i].ms;
            return 0;
        }
    return GF_EINVAL;
}

int gf_parse_date(const char *s, int64_t now_ms, int64_t *ms)
{
    if (s[0] == 'n')
        return relative(s, now_ms, ms);
    if (s[0] == '@') {
        long long v;
        if (!number(s + 1, INT64_MAX / 1000, &v))
            return GF_EINVAL;
        *ms = (int64_t)v * 1000;
        return 0;
    }
    /* YYYY-MM-DD, then [T ]HH:MM[:SS], read field by field: every digit
     * where one belongs, nothing after */
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h = 0, mi = 0, sec = 0, used = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &used) != 3 || used != 10)
        return GF_EINVAL;
    const char *t = s + 10;
    if (*t == 'T' || *t == ' ') {
        int u2 = 0;
        if (sscanf(t + 1, "%2d:%2d%n", &h, &mi, &u2) != 2 || u2 != 5)
            return GF_EINVAL;
        t += 1 + u2;
        if (*t == ':') {
            int u3 = 0;
            if (sscanf(t + 1, "%2d%n", &sec, &u3) != 1 || u3 != 2)
                return GF_EINVAL;
            t += 1 + u3;
        }
    }
    for (const char *p = s; p < t; p++)
        if (!isdigit((unsigned char)*p) && *p != '-' && *p != ':' && *p != 'T' && *p != ' ')
            return GF_EINVAL;
    if (*t || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return GF_EINVAL;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    tm.tm_isdst = -1;
    time_t when = mktime(&tm);
    /* mktime normalises 2026-02-31 into March: that is not a date */
    if (when == (time_t)-1 || tm.tm_mday != d || tm.tm_mon != mo - 1)
        return GF_EINVAL;
    *ms = (int64_t)when * 1000;
    return 0;
}
