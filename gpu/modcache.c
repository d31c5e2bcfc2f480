/* modcache.c — the module cache and its key-completeness proof (see
 * modcache.h).
 *
 * Each entry keeps, besides the module, the SHA-256 of the PTX it was
 * compiled from and the request that first asked for it, so a later request
 * whose PTX differs can be named next to the first. A small chained hash
 * table; the cache holds few modules (one per area and configuration), so
 * it never resizes below its bucket count. */
#include "gpu/modcache.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_BUCKETS 64

typedef struct entry {
    char *key;                         /* the cache key */
    char *request;                     /* the request that compiled it */
    char ptx_sha[GF_SHA256_HEX_LEN];   /* of the PTX compiled */
    void *module;                      /* backend handle */
    struct entry *next;                /* bucket chain */
} entry;

struct gf_modcache {
    gf_modcache_mode mode;
    gf_modcache_backend be;            /* compile / unload */
    entry *buckets[N_BUCKETS];
    size_t count;                      /* entries */
    size_t compiles;                   /* successful compilations */
    char last_error[1024];             /* the last incomplete-key message */
    pthread_mutex_t lock;              /* guards everything above */
};

static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)(h % N_BUCKETS);
}

gf_modcache_mode gf_modcache_default_mode(void)
{
#ifdef NDEBUG
    return GF_MODCACHE_LOOKUP;
#else
    return GF_MODCACHE_PROVE;
#endif
}

gf_modcache *gf_modcache_new(gf_modcache_mode mode, const gf_modcache_backend *backend)
{
    assert(backend && backend->compile);
    gf_modcache *c = gf_calloc(1, sizeof *c);
    c->mode = mode;
    c->be = *backend;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void gf_modcache_destroy(gf_modcache **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_modcache *c = *self_p;
    for (size_t i = 0; i < N_BUCKETS; i++) {
        entry *e = c->buckets[i];
        while (e) {
            entry *next = e->next;
            if (c->be.unload)
                c->be.unload(c->be.ctx, e->module);
            free(e->key);
            free(e->request);
            free(e);
            e = next;
        }
    }
    pthread_mutex_destroy(&c->lock);
    free(c);
    *self_p = NULL;
}

static entry *find(gf_modcache *c, const char *key)
{
    for (entry *e = c->buckets[hash(key)]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

int gf_modcache_get(gf_modcache *c, const char *key, const char *request,
                    gf_modcache_gen_fn gen, void *gen_ctx, void **module)
{
    *module = NULL;
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    char *ptx = NULL;
    size_t len = 0;
    entry *e = find(c, key);
    if (e && c->mode == GF_MODCACHE_LOOKUP) {
        *module = e->module;
        goto out;
    }
    if ((rc = gen(gen_ctx, &ptx, &len)) != 0) {
        GF_ERROR("module cache: generating the PTX of %s failed: %s", request, gf_strerror(rc));
        goto out;
    }
    char sha[GF_SHA256_HEX_LEN];
    gf_sha256_hex(ptx, len, sha);
    if (e) {
        if (strcmp(sha, e->ptx_sha) != 0) {
            snprintf(c->last_error, sizeof c->last_error,
                     "module key '%s' is incomplete: request %s generates PTX %.16s, but the "
                     "module under this key was compiled for request %s from PTX %.16s",
                     key, request, sha, e->request, e->ptx_sha);
            GF_ERROR("module cache: %s", c->last_error);
            rc = GF_ESTATE;
            goto out;
        }
        *module = e->module;
        goto out;
    }
    void *m = NULL;
    if ((rc = c->be.compile(c->be.ctx, ptx, len, &m)) != 0) {
        GF_ERROR("module cache: compiling the PTX of %s failed: %s", request, gf_strerror(rc));
        goto out;
    }
    e = gf_calloc(1, sizeof *e);
    e->key = gf_strdup(key);
    e->request = gf_strdup(request);
    memcpy(e->ptx_sha, sha, sizeof sha);
    e->module = m;
    size_t b = hash(key);
    e->next = c->buckets[b];
    c->buckets[b] = e;
    c->count++;
    c->compiles++;
    *module = m;
out:
    pthread_mutex_unlock(&c->lock);
    free(ptx);
    return rc;
}

const char *gf_modcache_last_error(const gf_modcache *self)
{
    return self->last_error;
}

size_t gf_modcache_count(const gf_modcache *self)
{
    return self->count;
}

size_t gf_modcache_compiles(const gf_modcache *self)
{
    return self->compiles;
}
