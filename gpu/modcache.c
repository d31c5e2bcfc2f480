/* modcache.c — the module cache and its key-completeness proof (see
 * modcache.h).
 *
 * Each entry keeps, besides the module, the fingerprint of the image it was
 * loaded from and the request that first asked for it, so a later request
 * whose image differs can be named next to the first. A small chained hash
 * table; the cache holds few modules (one per area a card runs), so it
 * never resizes below its bucket count. */
#include "gpu/modcache.h"
#include "common/error.h"
#include "common/log.h"
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
    char *request;                     /* the request that loaded it */
    char print[GF_SHA256_HEX_LEN];     /* fingerprint of the image loaded */
    char *image;                       /* that image, described for messages */
    void *module;                      /* backend handle */
    struct entry *next;                /* bucket chain */
} entry;

struct gf_modcache {
    gf_modcache_mode mode;
    gf_modcache_backend be;            /* load / unload */
    entry *buckets[N_BUCKETS];
    size_t count;                      /* entries */
    size_t loads;                      /* successful loads */
    size_t proven;                     /* hits whose image was made again and matched */
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
    assert(backend && backend->load);
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
            free(e->image);
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

/* The canonical text the fingerprint hashes, which messages show too:
 * "data <sha256> target sm_<t> jit {<opt>=<value>,...}" (options in the order
 * passed: the loader takes them in that order). */
static char *image_text(const gf_modcache_image *img)
{
    char dsha[GF_SHA256_HEX_LEN];
    if (img->data_sha256)
        snprintf(dsha, sizeof dsha, "%s", img->data_sha256);
    else
        gf_sha256_hex(img->data, img->len, dsha);
    char jit[GF_MODCACHE_MAX_JIT * 32 + 8] = "";
    size_t n = 0;
    assert(img->n_jit <= GF_MODCACHE_MAX_JIT);
    for (unsigned i = 0; i < img->n_jit; i++)
        n += (size_t)snprintf(jit + n, sizeof jit - n, "%s%d=%ld", i ? "," : "",
                              img->jit_opts[i], img->jit_values[i]);
    return gf_strfmt("data %s (%zu bytes) target sm_%d jit {%s}", dsha, img->len, img->target,
                     jit);
}

void gf_modcache_fingerprint(const gf_modcache_image *img, char out[GF_SHA256_HEX_LEN])
{
    char *text = image_text(img);
    gf_sha256_hex(text, strlen(text), out);
    free(text);
}

int gf_modcache_get(gf_modcache *c, const char *key, const char *request,
                    gf_modcache_make_fn make, void *make_ctx, void **module)
{
    *module = NULL;
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    gf_modcache_image img;
    memset(&img, 0, sizeof img);
    char *text = NULL;
    entry *e = find(c, key);
    if (e && c->mode == GF_MODCACHE_LOOKUP) {
        *module = e->module;
        goto out_unlock;
    }
    if ((rc = make(make_ctx, &img)) != 0) {
        GF_ERROR("module cache: making the image of %s failed: %s", request, gf_strerror(rc));
        goto out_unlock;
    }
    text = image_text(&img);
    char print[GF_SHA256_HEX_LEN];
    gf_sha256_hex(text, strlen(text), print);
    if (e) {
        if (strcmp(print, e->print) != 0) {
            /* A broken invariant, not an outside error: the module served
             * under this key would not be the one this request asks for. */
            GF_ERROR("module cache: module key '%s' is incomplete: request %s makes image %.16s "
                     "(%s), but the module under this key was loaded for request %s from image "
                     "%.16s (%s)", key, request, print, text, e->request, e->print, e->image);
            abort();
        }
        c->proven++;
        *module = e->module;
        goto out_unlock;
    }
    void *m = NULL;
    if ((rc = c->be.load(c->be.ctx, &img, &m)) != 0) {
        GF_ERROR("module cache: loading the image of %s failed: %s", request, gf_strerror(rc));
        goto out_unlock;
    }
    e = gf_calloc(1, sizeof *e);
    e->key = gf_strdup(key);
    e->request = gf_strdup(request);
    memcpy(e->print, print, sizeof print);
    e->image = text;
    text = NULL;
    e->module = m;
    size_t b = hash(key);
    e->next = c->buckets[b];
    c->buckets[b] = e;
    c->count++;
    c->loads++;
    *module = m;
out_unlock:
    pthread_mutex_unlock(&c->lock);
    free(text);
    free(img.owned);
    return rc;
}

size_t gf_modcache_count(const gf_modcache *self)
{
    return self->count;
}

size_t gf_modcache_loads(const gf_modcache *self)
{
    return self->loads;
}

size_t gf_modcache_proven(const gf_modcache *self)
{
    return self->proven;
}
