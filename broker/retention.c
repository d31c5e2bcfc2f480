/* retention.c — the retention's rules (see retention.h). */
#include "broker/retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gf_retention_step gf_retention_next(const gf_retention_policy *p, int64_t now_ms,
                                    uint64_t n_ended, int64_t purge_before_ms, size_t batch,
                                    unsigned resting)
{
    gf_retention_step s = { .how = GF_RETAIN_NOTHING, .limit = 0, .cut_ms = 0 };
    /* over the count first: the jobs past it go whatever their age */
    if (p->keep_jobs > 0 && n_ended > (uint64_t)p->keep_jobs &&
        !(resting & GF_RETAIN_REST_OLDEST)) {
        uint64_t over = n_ended - (uint64_t)p->keep_jobs;
        s.how = GF_RETAIN_OLDEST;
        s.limit = over < batch ? (size_t)over : batch;
        return s;
    }
    int64_t cut = p->keep_days > 0 ? now_ms - (int64_t)p->keep_days * GF_DAY_MS : 0;
    if (purge_before_ms > cut)
        cut = purge_before_ms;
    if (cut > 0 && n_ended > 0 && !(resting & GF_RETAIN_REST_BEFORE)) {
        s.how = GF_RETAIN_BEFORE;
        s.limit = batch;
        s.cut_ms = cut;
    }
    return s;
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t gf_retention_drop_kept(gf_store_old *rows, size_t n, uint64_t *keep, size_t n_keep)
{
    if (n_keep)
        qsort(keep, n_keep, sizeof(uint64_t), by_id);
    size_t left = 0;
    for (size_t i = 0; i < n; i++) {
        if (n_keep && bsearch(&rows[i].id, keep, n_keep, sizeof(uint64_t), by_id)) {
            free(rows[i].out_path);
            free(rows[i].err_path);
            continue;
        }
        rows[left++] = rows[i];
    }
    return left;
}

bool gf_retention_spool_name(const char *path, uint64_t id, const char *suffix)
{
    if (!path || path[0] != '/')
        return false;
    char want[48];
    snprintf(want, sizeof want, "/%llu%s", (unsigned long long)id, suffix);
    size_t n = strlen(path), w = strlen(want);
    return n > w && strcmp(path + n - w, want) == 0;
}
