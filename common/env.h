/* env.h — an environment under construction for a command we start.
 *
 * A copy of a "NAME=value" list (usually our own environ) that variables can
 * be set in and removed from, then handed to execve. Names are compared
 * exactly; the order of first appearance is kept. */
#ifndef GF_ENV_H
#define GF_ENV_H

#include <stdbool.h>
#include <stddef.h>

typedef struct gf_env gf_env;

/* A copy of 'envp' (NULL-terminated "NAME=value" strings; NULL: empty). */
gf_env *gf_env_new(char *const *envp);
void gf_env_destroy(gf_env **self_p);

/* Set NAME to value, replacing any earlier value. */
void gf_env_set(gf_env *self, const char *name, const char *value);

/* The same from one "NAME=value" string (copied); false, and nothing set,
 * for one without '=' or with an empty name. */
bool gf_env_put(gf_env *self, const char *entry);

/* Remove NAME; returns whether it was there. */
bool gf_env_unset(gf_env *self, const char *name);

/* The value of NAME, or NULL; borrowed until the next change. */
const char *gf_env_get(const gf_env *self, const char *name);

/* NULL-terminated "NAME=value" array for execve; borrowed until the next
 * change or destroy. */
char *const *gf_env_array(const gf_env *self);

#endif
