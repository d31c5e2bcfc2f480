/* evidence_orphans.c — the records no proof cites, and their removal (see
 * evidence.h).
 *
 * Qualification writes a record for every measurement it makes; a binding
 * cites only those of the kernels that won. The rest stay in records/ as
 * orphans: nothing reads them, and they grow the tree by the megabyte.
 * `gpuflock evidence check` reports them and `gpuflock evidence prune`
 * removes them, from a set that validated (only then are its citations
 * known). Removal is careful about what it touches: the records/ folder
 * must be a real folder, each entry a regular file under a record's name,
 * not cited, and is removed by name inside that folder (unlinkat on a
 * folder descriptor opened without following links), so neither a link
 * named like a record nor a records/ that is a link leads it elsewhere. */
#include "route/evidence.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_SUFFIX ".json"

/* "<64 lower-case hex>.json": the name of a record. */
static bool is_record_name(const char *name)
{
    size_t n = strlen(name);
    if (n != GF_SHA256_HEX_LEN - 1 + strlen(RECORD_SUFFIX) ||
        strcmp(name + GF_SHA256_HEX_LEN - 1, RECORD_SUFFIX) != 0)
        return false;
    for (size_t i = 0; i < GF_SHA256_HEX_LEN - 1; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    return true;
}

/* Call f(sha, arg) for every record a proof of the set cites. */
static void each_cited(const gf_evidence *ev, void (*f)(const char *sha, void *arg), void *arg)
{
    for (size_t i = 0; i < gf_evidence_binding_count(ev); i++) {
        const gf_binding *b = gf_evidence_binding(ev, i);
        for (size_t j = 0; j < b->n_proofs; j++) {
            const gf_proof *p = &b->proofs[j];
            f(p->accuracy, arg);
            if (!p->measured)
                continue;
            for (size_t k = 0; k < p->n_speed; k++)
                f(p->speed[k], arg);
            f(p->end_to_end, arg);
        }
    }
}

typedef struct {
    char (*shas)[GF_SHA256_HEX_LEN];   /* cited record names, without .json */
    size_t n, cap;
} sha_set;

static void sha_set_add(const char *sha, void *arg)
{
    sha_set *s = arg;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->shas = gf_realloc(s->shas, s->cap * sizeof *s->shas);
    }
    memcpy(s->shas[s->n++], sha, GF_SHA256_HEX_LEN);
}

static int sha_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Whether 'name' (a record's name) is the record 'sha'. */
static bool names_sha(const char *name, const char *sha)
{
    return strncmp(name, sha, GF_SHA256_HEX_LEN - 1) == 0;
}

typedef struct {
    const char *name;          /* the entry asked about */
    bool found;
} cite_probe;

static void probe_one(const char *sha, void *arg)
{
    cite_probe *p = arg;
    if (names_sha(p->name, sha))
        p->found = true;
}

/* Whether a bound module's artifact hash is 'sha'. */
static bool module_bound(const gf_evidence *ev, const char *sha)
{
    for (size_t i = 0; i < gf_evidence_binding_count(ev); i++)
        if (strcmp(gf_evidence_binding(ev, i)->module.sha256, sha) == 0)
            return true;
    return false;
}

/* The module hash a record file names ("" when it is no JSON record with a
 * module): read through a descriptor that does not follow a link. */
static void record_module(int dfd, const char *name, char sha[GF_SHA256_HEX_LEN])
{
    sha[0] = '\0';
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 24)) {
        close(fd);
        return;
    }
    size_t len = (size_t)st.st_size;
    char *text = gf_malloc(len + 1);
    size_t got = 0;
    while (got < len) {
        ssize_t r = read(fd, text + got, len - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    text[got] = '\0';
    json_object *o = json_tokener_parse(text);
    json_object *m, *s;
    if (o && json_object_object_get_ex(o, "module", &m) &&
        json_object_object_get_ex(m, "sha256", &s) && json_object_is_type(s, json_type_string))
        snprintf(sha, GF_SHA256_HEX_LEN, "%s", json_object_get_string(s));
    json_object_put(o);
    free(text);
}

static int orphan_cmp(const void *a, const void *b)
{
    return strcmp(((const gf_orphan *)a)->name, ((const gf_orphan *)b)->name);
}

int gf_evidence_orphans(const gf_evidence *ev, gf_orphan **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!gf_evidence_dir(ev) || gf_evidence_problem_count(ev) != 0)
        return GF_ESTATE;
    char *rdir = gf_strfmt("%s/records", gf_evidence_dir(ev));
    struct stat lst;
    bool linked = lstat(rdir, &lst) == 0 && S_ISLNK(lst.st_mode);
    int dfd = open(rdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int err = errno;
        free(rdir);
        if (err == ENOENT)
            return 0;
        GF_ERROR("evidence: cannot list %s/records: %s", gf_evidence_dir(ev), strerror(err));
        return GF_EIO;
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        GF_ERROR("evidence: cannot list %s: %s", rdir, strerror(errno));
        close(dfd);
        free(rdir);
        return GF_EIO;
    }
    sha_set cited = { 0 };
    each_cited(ev, sha_set_add, &cited);
    qsort(cited.shas, cited.n, sizeof *cited.shas, sha_cmp);

    gf_orphan *list = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (name[0] == '.')
            continue;
        bool record = is_record_name(name);
        if (record) {
            char sha[GF_SHA256_HEX_LEN];
            memcpy(sha, name, GF_SHA256_HEX_LEN - 1);
            sha[GF_SHA256_HEX_LEN - 1] = '\0';
            if (bsearch(sha, cited.shas, cited.n, sizeof *cited.shas, sha_cmp))
                continue;
        }
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;   /* gone meanwhile */
        if (count == cap) {
            cap = cap ? 2 * cap : 256;
            list = gf_realloc(list, cap * sizeof *list);
        }
        gf_orphan *o = &list[count++];
        *o = (gf_orphan){ .name = gf_strdup(name), .kind = GF_ORPHAN_STRAY,
                          .bytes = (unsigned long long)st.st_size };
        if (S_ISLNK(st.st_mode))
            o->why_kept = "a symbolic link (never followed)";
        else if (!S_ISREG(st.st_mode))
            o->why_kept = S_ISDIR(st.st_mode) ? "a folder" : "not a regular file";
        else if (!record)
            o->why_kept = "not named <sha256>.json";
        else if (linked)
            o->why_kept = "records/ is a symbolic link";
        o->removable = o->why_kept == NULL;
        if (!record || !S_ISREG(st.st_mode))
            continue;
        char msha[GF_SHA256_HEX_LEN];
        record_module(dfd, name, msha);
        if (msha[0])
            o->kind = module_bound(ev, msha) ? GF_ORPHAN_UNCITED : GF_ORPHAN_UNBOUND;
    }
    closedir(d);
    free(cited.shas);
    free(rdir);
    if (count)
        qsort(list, count, sizeof *list, orphan_cmp);
    *out = list;
    *n = count;
    return 0;
}

void gf_evidence_orphans_free(gf_orphan **list_p, size_t n)
{
    if (!list_p || !*list_p)
        return;
    for (size_t i = 0; i < n; i++)
        free((*list_p)[i].name);
    free(*list_p);
    *list_p = NULL;
}

int gf_evidence_orphan_remove(const gf_evidence *ev, const gf_orphan *o)
{
    assert(o && o->name && !strchr(o->name, '/'));
    if (!o->removable || !is_record_name(o->name) || gf_evidence_problem_count(ev) != 0) {
        errno = EINVAL;
        return GF_EINVAL;
    }
    cite_probe probe = { o->name, false };
    each_cited(ev, probe_one, &probe);
    if (probe.found) {
        errno = EINVAL;
        return GF_EINVAL;
    }
    char *rdir = gf_strfmt("%s/records", gf_evidence_dir(ev));
    /* O_NOFOLLOW: a records/ that is a link is refused (ELOOP). */
    int dfd = open(rdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    free(rdir);
    if (dfd < 0) {
        int err = errno;
        errno = err;
        return err == ELOOP || err == ENOTDIR ? GF_EINVAL : GF_EIO;
    }
    int rc = 0;
    struct stat st;
    if (fstatat(dfd, o->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = GF_EIO;
    } else if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        rc = GF_EINVAL;
    } else if (unlinkat(dfd, o->name, 0) != 0) {   /* removes a name, never a link's target */
        rc = GF_EIO;
    }
    int err = errno;
    close(dfd);
    errno = err;
    return rc;
}

const char *gf_orphan_kind_describe(gf_orphan_kind kind)
{
    switch (kind) {
    case GF_ORPHAN_UNBOUND:
        return "a record of a module no binding names";
    case GF_ORPHAN_UNCITED:
        return "a record of a bound module, cited by no proof";
    case GF_ORPHAN_STRAY:
        return "not a record";
    }
    return "?";
}
