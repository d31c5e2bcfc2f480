/* users.c — uid to name and groups, cached (see users.h). A short list,
 * searched linearly: a box has few users submitting at once. */
#include "broker/users.h"

#include "common/util.h"

#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#define MAX_GROUPS 1024

typedef struct {
    uint32_t uid, gid;        /* the key: groups depend on the base gid too */
    char *name;               /* passwd name, or the uid as text */
    uint32_t *groups;         /* supplementary groups, gid included */
    size_t n_groups;
    uint64_t at_ms;           /* monotonic time of the lookup */
} entry;

struct gf_users {
    uint64_t ttl_ms;          /* how long an entry is believed */
    entry *e;                 /* entries, unordered */
    size_t n, cap;
};

gf_users *gf_users_new(uint64_t ttl_ms)
{
    gf_users *self = gf_calloc(1, sizeof(*self));
    self->ttl_ms = ttl_ms;
    return self;
}

static void clear(entry *x)
{
    free(x->name);
    free(x->groups);
    memset(x, 0, sizeof(*x));
}

void gf_users_destroy(gf_users **self_p)
{
    gf_users *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->n; i++)
        clear(&self->e[i]);
    free(self->e);
    free(self);
    *self_p = NULL;
}

static void lookup(entry *x)
{
    struct passwd pw, *res = NULL;
    char buf[4096];
    gid_t groups[MAX_GROUPS];
    int ng = MAX_GROUPS;
    bool known = getpwuid_r(x->uid, &pw, buf, sizeof(buf), &res) == 0 && res;
    x->name = known ? gf_strdup(pw.pw_name) : gf_strfmt("%u", x->uid);
    if (!known || getgrouplist(pw.pw_name, x->gid, groups, &ng) < 0) {
        groups[0] = x->gid;
        ng = 1;
    }
    x->groups = gf_calloc((size_t)ng, sizeof(uint32_t));
    for (int i = 0; i < ng; i++)
        x->groups[i] = groups[i];
    x->n_groups = (size_t)ng;
    x->at_ms = gf_now_ms();
}

/* The fresh entry for (uid, gid), looked up now if missing or stale. */
static const entry *get(gf_users *self, uint32_t uid, uint32_t gid)
{
    uint64_t now = gf_now_ms();
    for (size_t i = 0; i < self->n; i++) {
        entry *x = &self->e[i];
        if (x->uid != uid || x->gid != gid)
            continue;
        if (now - x->at_ms >= self->ttl_ms) {
            clear(x);
            x->uid = uid;
            x->gid = gid;
            lookup(x);
        }
        return x;
    }
    if (self->n == self->cap) {
        self->cap = self->cap ? 2 * self->cap : 8;
        self->e = gf_realloc(self->e, self->cap * sizeof(entry));
    }
    entry *x = &self->e[self->n++];
    memset(x, 0, sizeof(*x));
    x->uid = uid;
    x->gid = gid;
    lookup(x);
    return x;
}

char *gf_users_name(gf_users *self, uint32_t uid, uint32_t gid)
{
    return gf_strdup(get(self, uid, gid)->name);
}

void gf_users_groups(gf_users *self, uint32_t uid, uint32_t gid, uint32_t **out, size_t *n)
{
    const entry *x = get(self, uid, gid);
    *out = gf_calloc(x->n_groups, sizeof(uint32_t));
    memcpy(*out, x->groups, x->n_groups * sizeof(uint32_t));
    *n = x->n_groups;
}
