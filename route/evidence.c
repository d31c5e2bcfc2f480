/* evidence.c — the evidence set: reading and validating the evidence tables
 * (see evidence.h).
 *
 * The validator is the gate between measurements and routes: the planner
 * only ever sees an evidence set in which every binding is well formed, every
 * record it names exists, hashes to its name and agrees with the binding
 * (tuple, module, configuration, card), and no two bindings contradict each
 * other. It runs in the build (make all), in `gpuflock evidence check` and at
 * worker start-up. It never stops at the first problem: every problem is
 * collected, each naming the file, line and binding. This file holds the set
 * and walks its directory; the tables, the records and the rules have files
 * of their own (evidence_parts.h). */
#include "route/evidence.h"
#include "route/evidence_parts.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- problems ---------------------------------------------------------- */

void gf_evidence_add_problem(gf_evidence *ev, char *line)
{
    ev->problems = gf_realloc(ev->problems, (ev->n_problems + 1) * sizeof *ev->problems);
    ev->problems[ev->n_problems++] = line;
}

void gf_evidence_vbad(pctx *c, size_t line, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    c->bad = true;
    if (line == 0)
        gf_evidence_add_problem(c->ev, gf_strfmt("%s: %s", c->file, msg));
    else if (c->id)
        gf_evidence_add_problem(c->ev, gf_strfmt("%s:%zu: binding '%s': %s", c->file, line,
                                                 c->id, msg));
    else
        gf_evidence_add_problem(c->ev, gf_strfmt("%s:%zu: %s", c->file, line, msg));
}

static int visible_filter(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

static bool is_yaml_name(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".yaml") == 0;
}

/* ---- the evidence set -------------------------------------------------- */

gf_evidence *gf_evidence_new(void)
{
    return gf_calloc(1, sizeof(gf_evidence));
}

void gf_evidence_destroy(gf_evidence **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_evidence *ev = *self_p;
    for (size_t i = 0; i < ev->n_problems; i++)
        free(ev->problems[i]);
    free(ev->problems);
    for (size_t i = 0; i < ev->n_bindings; i++)
        gf_evidence_binding_free(&ev->bindings[i]);
    free(ev->bindings);
    for (size_t i = 0; i < ev->n_precedence; i++)
        free(ev->precedence[i]);
    free(ev->precedence);
    free(ev->dir);
    free(ev);
    *self_p = NULL;
}

int gf_evidence_load(gf_evidence *ev, const char *dir)
{
    assert(!ev->loaded);
    ev->loaded = true;
    ev->dir = gf_strdup(dir);
    size_t n = strlen(ev->dir);
    while (n > 1 && ev->dir[n - 1] == '/')
        ev->dir[--n] = '\0';
    struct stat st;
    if (stat(ev->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        gf_evidence_add_problem(ev, gf_strfmt("%s: not an evidence directory (%s)", ev->dir,
                                              stat(ev->dir, &st) != 0 ? strerror(errno)
                                                                      : "not a directory"));
        return GF_ENOENT;
    }
    gf_evidence_read_precedence(ev);

    char *bdir = gf_strfmt("%s/bindings", ev->dir);
    struct dirent **names = NULL;
    int k = scandir(bdir, &names, visible_filter, alphasort);
    if (k < 0 && errno != ENOENT)
        gf_evidence_add_problem(ev, gf_strfmt("%s: cannot list (%s)", bdir, strerror(errno)));
    for (int i = 0; i < k; i++) {
        char *path = gf_strfmt("%s/%s", bdir, names[i]->d_name);
        /* A table the validator would skip must not pass silently. */
        if (is_yaml_name(names[i]->d_name))
            gf_evidence_read_table(ev, path);
        else
            gf_evidence_add_problem(ev, gf_strfmt("%s: not a binding table (tables are named "
                                                  "*.yaml)", path));
        free(path);
        free(names[i]);
    }
    free(names);
    free(bdir);

    gf_evidence_check_bindings(ev);
    return ev->n_problems ? GF_EINVAL : 0;
}

size_t gf_evidence_problem_count(const gf_evidence *self)
{
    return self->n_problems;
}

const char *gf_evidence_problem(const gf_evidence *self, size_t i)
{
    return i < self->n_problems ? self->problems[i] : NULL;
}

size_t gf_evidence_binding_count(const gf_evidence *self)
{
    return self->n_bindings;
}

const gf_binding *gf_evidence_binding(const gf_evidence *self, size_t i)
{
    return i < self->n_bindings ? &self->bindings[i] : NULL;
}

const char *gf_evidence_dir(const gf_evidence *self)
{
    return self->dir;
}

int gf_evidence_precedence(const gf_evidence *self, const char *area)
{
    for (size_t i = 0; i < self->n_precedence; i++)
        if (strcmp(self->precedence[i], area) == 0)
            return (int)i;
    return -1;
}

int gf_evidence_open(const char *dir, gf_evidence **out)
{
    *out = NULL;
    gf_evidence *ev = gf_evidence_new();
    int rc = gf_evidence_load(ev, dir);
    if (rc != 0) {
        for (size_t i = 0; i < ev->n_problems; i++)
            GF_ERROR("evidence: %s", ev->problems[i]);
        GF_ERROR("evidence: %s rejected (%zu problem%s)", dir, ev->n_problems,
                 ev->n_problems == 1 ? "" : "s");
        gf_evidence_destroy(&ev);
        return rc;
    }
    *out = ev;
    return 0;
}

#ifndef GF_EVIDENCE_DIR
#define GF_EVIDENCE_DIR "evidence"
#endif

/* An installed program (make install) has an `evidence` link beside it, to
 * the evidence folder installed with it (PREFIX/share/gpuflock/evidence); a
 * program of a build tree has none and takes the tree's (GF_EVIDENCE_DIR).
 * Found once per process, then never changed. */
static char *installed_evidence;
static pthread_once_t installed_evidence_once = PTHREAD_ONCE_INIT;

static void find_installed_evidence(void)
{
    char *beside = gf_beside_self("evidence");
    struct stat st;
    if (beside && stat(beside, &st) == 0 && S_ISDIR(st.st_mode)) {
        installed_evidence = realpath(beside, NULL);
        if (!installed_evidence)
            installed_evidence = gf_strdup(beside);
    }
    free(beside);
}

const char *gf_evidence_default_dir(void)
{
    const char *env = getenv("GPUFLOCK_EVIDENCE");
    if (env && env[0])
        return env;
    pthread_once(&installed_evidence_once, find_installed_evidence);
    return installed_evidence ? installed_evidence : GF_EVIDENCE_DIR;
}

