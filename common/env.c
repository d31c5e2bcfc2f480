/* env.c — an environment under construction (see env.h).
 *
 * A growable NULL-terminated array of "NAME=value" strings, which is
 * exactly what execve wants, so handing it over costs nothing. Environments
 * are small (tens to hundreds of entries): lookups are linear. */
#include "common/env.h"
#include "common/util.h"

#include <stdlib.h>
#include <string.h>

struct gf_env {
    char **vars;   /* "NAME=value" strings, NULL-terminated */
    size_t n;      /* entries before the NULL */
    size_t cap;    /* slots allocated, the NULL included */
};

static void push(gf_env *self, char *entry)
{
    if (self->n + 2 > self->cap) {
        self->cap = self->cap ? self->cap * 2 : 16;
        self->vars = gf_realloc(self->vars, self->cap * sizeof *self->vars);
    }
    self->vars[self->n++] = entry;
    self->vars[self->n] = NULL;
}

/* Position of the name of len bytes at name, or -1. */
static long find_n(const gf_env *self, const char *name, size_t len)
{
    for (size_t i = 0; i < self->n; i++)
        if (self->vars[i][0] == name[0] && strncmp(self->vars[i], name, len) == 0 &&
            self->vars[i][len] == '=')
            return (long)i;
    return -1;
}

static long find(const gf_env *self, const char *name)
{
    return find_n(self, name, strlen(name));
}

/* Put entry ("NAME=value", owned) in place of NAME's value, or at the end. */
static void place(gf_env *self, char *entry, size_t name_len)
{
    long at = find_n(self, entry, name_len);
    if (at < 0) {
        push(self, entry);
        return;
    }
    free(self->vars[at]);
    self->vars[at] = entry;
}

gf_env *gf_env_new(char *const *envp)
{
    gf_env *self = gf_calloc(1, sizeof *self);
    self->cap = 16;
    self->vars = gf_calloc(self->cap, sizeof *self->vars);
    for (size_t i = 0; envp && envp[i]; i++)
        if (strchr(envp[i], '='))
            push(self, gf_strdup(envp[i]));
    return self;
}

void gf_env_destroy(gf_env **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_env *self = *self_p;
    for (size_t i = 0; i < self->n; i++)
        free(self->vars[i]);
    free(self->vars);
    free(self);
    *self_p = NULL;
}

void gf_env_set(gf_env *self, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    char *entry = gf_malloc(n + v + 2);
    memcpy(entry, name, n);
    entry[n] = '=';
    memcpy(entry + n + 1, value, v + 1);
    place(self, entry, n);
}

bool gf_env_put(gf_env *self, const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (!eq || eq == entry)
        return false;
    place(self, gf_strdup(entry), (size_t)(eq - entry));
    return true;
}

bool gf_env_unset(gf_env *self, const char *name)
{
    bool found = false;
    for (long at; (at = find(self, name)) >= 0;) {   /* every copy of a repeated name */
        free(self->vars[at]);
        memmove(&self->vars[at], &self->vars[at + 1], (self->n - (size_t)at) * sizeof *self->vars);
        self->n--;
        found = true;
    }
    return found;
}

const char *gf_env_get(const gf_env *self, const char *name)
{
    long at = find(self, name);
    return at < 0 ? NULL : self->vars[at] + strlen(name) + 1;
}

char *const *gf_env_array(const gf_env *self)
{
    return self->vars;
}
