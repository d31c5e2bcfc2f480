/* devstats.c — per-job device-timing statistics (see devstats.h).
 *
 * A job touches a few dozen (stage, route) pairs at most, so rows live in a
 * small array searched linearly; a job that would exceed the row limit folds
 * the extra pairs into one "(other)" row rather than losing counts. */
#include "common/devstats.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

struct gf_devstats {
    gf_devstats_row rows[GF_DEVSTATS_MAX_ROWS];   /* first-recorded order */
    size_t n_rows;                                /* rows in use */
};

uint64_t gf_sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

gf_devstats *gf_devstats_new(void)
{
    return gf_calloc(1, sizeof(gf_devstats));
}

void gf_devstats_destroy(gf_devstats **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}

static gf_devstats_row *row_for(gf_devstats *self, const char *stage, const char *route)
{
    for (size_t i = 0; i < self->n_rows; i++)
        if (strcmp(self->rows[i].stage, stage) == 0 && strcmp(self->rows[i].route, route) == 0)
            return &self->rows[i];
    if (self->n_rows == GF_DEVSTATS_MAX_ROWS) {
        /* Full: fold into the last row, renamed once. */
        gf_devstats_row *last = &self->rows[GF_DEVSTATS_MAX_ROWS - 1];
        snprintf(last->stage, sizeof last->stage, "(other)");
        snprintf(last->route, sizeof last->route, "(other)");
        return last;
    }
    gf_devstats_row *r = &self->rows[self->n_rows++];
    memset(r, 0, sizeof *r);
    snprintf(r->stage, sizeof r->stage, "%s", stage);
    snprintf(r->route, sizeof r->route, "%s", route);
    return r;
}

void gf_devstats_measured(gf_devstats *self, const char *stage, const char *route, uint64_t ns)
{
    gf_devstats_row *r = row_for(self, stage, route);
    r->count = gf_sat_add(r->count, 1);
    r->total_ns = gf_sat_add(r->total_ns, ns);
    if (ns > r->max_ns)
        r->max_ns = ns;
}

void gf_devstats_not_requested(gf_devstats *self, const char *stage, const char *route)
{
    gf_devstats_row *r = row_for(self, stage, route);
    r->not_requested = gf_sat_add(r->not_requested, 1);
}

void gf_devstats_unavailable(gf_devstats *self, const char *stage, const char *route,
                             const char *reason)
{
    gf_devstats_row *r = row_for(self, stage, route);
    r->unavailable = gf_sat_add(r->unavailable, 1);
    if (!r->reason[0] && reason)
        snprintf(r->reason, sizeof r->reason, "%s", reason);
}

void gf_devstats_failed(gf_devstats *self, const char *stage, const char *route)
{
    gf_devstats_row *r = row_for(self, stage, route);
    r->failed = gf_sat_add(r->failed, 1);
}

void gf_devstats_transfer(gf_devstats *self, const char *stage, const char *route,
                          uint64_t bytes, uint64_t copies)
{
    gf_devstats_row *r = row_for(self, stage, route);
    r->bytes = gf_sat_add(r->bytes, bytes);
    r->copies = gf_sat_add(r->copies, copies);
}

static void row_add(gf_devstats_row *to, const gf_devstats_row *from)
{
    to->count = gf_sat_add(to->count, from->count);
    to->total_ns = gf_sat_add(to->total_ns, from->total_ns);
    if (from->max_ns > to->max_ns)
        to->max_ns = from->max_ns;
    to->not_requested = gf_sat_add(to->not_requested, from->not_requested);
    to->unavailable = gf_sat_add(to->unavailable, from->unavailable);
    if (!to->reason[0] && from->reason[0])
        memcpy(to->reason, from->reason, sizeof to->reason);
    to->failed = gf_sat_add(to->failed, from->failed);
    to->bytes = gf_sat_add(to->bytes, from->bytes);
    to->copies = gf_sat_add(to->copies, from->copies);
}

void gf_devstats_merge(gf_devstats *self, const gf_devstats *other)
{
    for (size_t i = 0; i < other->n_rows; i++)
        row_add(row_for(self, other->rows[i].stage, other->rows[i].route), &other->rows[i]);
}

size_t gf_devstats_rows(const gf_devstats *self, const gf_devstats_row **rows)
{
    *rows = self->rows;
    return self->n_rows;
}

/* JSON numbers are doubles in many readers: counters travel as decimal strings
 * so a saturated UINT64_MAX survives the round trip exactly. */
static void put_u64(json_object *o, const char *key, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    json_object_object_add(o, key, json_object_new_string(buf));
}

char *gf_devstats_to_json(const gf_devstats *self)
{
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < self->n_rows; i++) {
        const gf_devstats_row *r = &self->rows[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "stage", json_object_new_string(r->stage));
        json_object_object_add(o, "route", json_object_new_string(r->route));
        put_u64(o, "count", r->count);
        put_u64(o, "total_ns", r->total_ns);
        put_u64(o, "max_ns", r->max_ns);
        put_u64(o, "not_requested", r->not_requested);
        put_u64(o, "unavailable", r->unavailable);
        json_object_object_add(o, "reason", json_object_new_string(r->reason));
        put_u64(o, "failed", r->failed);
        put_u64(o, "bytes", r->bytes);
        put_u64(o, "copies", r->copies);
        json_object_array_add(arr, o);
    }
    char *out = gf_strdup(json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN));
    json_object_put(arr);
    return out;
}

static int get_str(json_object *o, const char *key, char *dst, size_t len, size_t row)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)) {
        GF_ERROR("device statistics: row %zu: '%s' missing or not a string", row, key);
        return GF_EINVAL;
    }
    const char *s = json_object_get_string(v);
    if (strlen(s) >= len) {
        GF_ERROR("device statistics: row %zu: '%s' longer than %zu bytes", row, key, len - 1);
        return GF_EINVAL;
    }
    memcpy(dst, s, strlen(s) + 1);
    return 0;
}

static int get_u64(json_object *o, const char *key, uint64_t *dst, size_t row)
{
    char buf[24];
    int rc = get_str(o, key, buf, sizeof buf, row);
    if (rc)
        return rc;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (!buf[0] || *end || errno || buf[0] == '-') {
        GF_ERROR("device statistics: row %zu: '%s' is not a counter: '%s'", row, key, buf);
        return GF_EINVAL;
    }
    *dst = v;
    return 0;
}

/* A row's keys in its JSON object, in the order gf_devstats_to_json writes
 * them: strings (len: the field's size) or unsigned counters (len 0). */
static const struct {
    const char *key;
    size_t off, len;
} row_keys[] = {
    { "stage", offsetof(gf_devstats_row, stage), GF_DEVSTATS_NAME_MAX },
    { "route", offsetof(gf_devstats_row, route), GF_DEVSTATS_NAME_MAX },
    { "count", offsetof(gf_devstats_row, count), 0 },
    { "total_ns", offsetof(gf_devstats_row, total_ns), 0 },
    { "max_ns", offsetof(gf_devstats_row, max_ns), 0 },
    { "not_requested", offsetof(gf_devstats_row, not_requested), 0 },
    { "unavailable", offsetof(gf_devstats_row, unavailable), 0 },
    { "reason", offsetof(gf_devstats_row, reason), GF_DEVSTATS_REASON_MAX },
    { "failed", offsetof(gf_devstats_row, failed), 0 },
    { "bytes", offsetof(gf_devstats_row, bytes), 0 },
    { "copies", offsetof(gf_devstats_row, copies), 0 },
};

int gf_devstats_from_json(const char *text, gf_devstats **out)
{
    *out = NULL;
    json_object *arr = json_tokener_parse(text);
    if (!arr || !json_object_is_type(arr, json_type_array)) {
        GF_ERROR("device statistics: not a JSON array");
        json_object_put(arr);
        return GF_EINVAL;
    }
    size_t n = json_object_array_length(arr);
    if (n > GF_DEVSTATS_MAX_ROWS) {
        GF_ERROR("device statistics: %zu rows, at most %d", n, GF_DEVSTATS_MAX_ROWS);
        json_object_put(arr);
        return GF_EINVAL;
    }
    gf_devstats *s = gf_devstats_new();
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        gf_devstats_row r;
        memset(&r, 0, sizeof r);
        if (!json_object_is_type(o, json_type_object)) {
            GF_ERROR("device statistics: row %zu is not an object", i);
            rc = GF_EINVAL;
            break;
        }
        for (size_t k = 0; k < GF_ARRAY_LEN(row_keys) && !rc; k++) {
            void *at = (char *)&r + row_keys[k].off;
            rc = row_keys[k].len ? get_str(o, row_keys[k].key, at, row_keys[k].len, i)
                                 : get_u64(o, row_keys[k].key, at, i);
        }
        if (!rc)
            row_add(row_for(s, r.stage, r.route), &r);
    }
    json_object_put(arr);
    if (rc) {
        gf_devstats_destroy(&s);
        return rc;
    }
    *out = s;
    return 0;
}

char *gf_devstats_format(const gf_devstats *self)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return gf_strdup("");
    fprintf(f, "%-28s %-8s %8s %12s %12s %8s %8s %8s  %s\n", "stage", "route", "samples",
            "total_ms", "max_ms", "not_req", "unavail", "failed", "notes");
    for (size_t i = 0; i < self->n_rows; i++) {
        const gf_devstats_row *r = &self->rows[i];
        fprintf(f, "%-28s %-8s %8llu %12.3f %12.3f %8llu %8llu %8llu ", r->stage, r->route,
                (unsigned long long)r->count, (double)r->total_ns / 1e6,
                (double)r->max_ns / 1e6, (unsigned long long)r->not_requested,
                (unsigned long long)r->unavailable, (unsigned long long)r->failed);
        if (r->reason[0])
            fprintf(f, " unavailable: %s", r->reason);
        if (r->bytes || r->copies)
            fprintf(f, " %llu bytes in %llu copies", (unsigned long long)r->bytes,
                    (unsigned long long)r->copies);
        fputc('\n', f);
    }
    fclose(f);
    return buf;
}
