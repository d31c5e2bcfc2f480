/* modload.c — a card's kernel modules, through the module cache (see
 * modload.h).
 *
 * A request is (area, the card's compute capability). It picks the PTX to
 * load, and from there two things are built apart: the cache key, from the
 * request's fields, and the image, from what the loader will be handed (the
 * PTX bytes, the JIT options passed with them, the device it compiles
 * for). In prove mode the cache checks that a key never stands for two
 * images. The PTX table is immutable, so each text is hashed once per
 * object and the proof costs a short hash per request, not a pass over a
 * megabyte of PTX. */
#include "gpu/modload.h"
#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"

#include <assert.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gf_modules {
    int cc;                             /* the card: major*10+minor */
    const gf_ptx_blob *blobs;           /* the PTX table (borrowed) */
    size_t n_blobs;
    char (*digests)[GF_SHA256_HEX_LEN]; /* per blob: SHA-256 of its text, "" until needed */
    gf_modcache *cache;                 /* where modules load (borrowed) */
    char *who;                          /* the card, for messages */
};

/* One request: what to load, and the JIT options to load it with. No area
 * passes options today (the driver's defaults: -O4, the context's device);
 * an option added here goes into the key and the image alike. */
typedef struct {
    gf_modules *self;
    size_t blob;                        /* index into self->blobs */
    unsigned n_jit;
    int jit_opts[GF_MODCACHE_MAX_JIT];
    long jit_values[GF_MODCACHE_MAX_JIT];
} request;

static int tier_cc(const gf_ptx_blob *b)
{
    return atoi(b->tier + 2);   /* "sm90" -> 90 */
}

/* Whether PTX of this tier JIT-compiles for a card of compute capability cc:
 * a tier no newer than the card, and an arch-specific target (".target
 * sm_90a": features of that architecture only) on exactly its own. */
static bool loads_on(const gf_ptx_blob *b, int cc)
{
    int t = tier_cc(b);
    if (t > cc)
        return false;
    if (t == cc)
        return true;
    /* the directive is in the header, a few lines in: no scan of the text */
    const char *s = strstr(b->text, ".target sm_");
    if (!s)
        return true;
    s += strlen(".target sm_");
    while (*s >= '0' && *s <= '9')
        s++;
    return *s != 'a';
}

const gf_ptx_blob *gf_modules_pick(const gf_ptx_blob *blobs, int cc, const char *area)
{
    const gf_ptx_blob *best = NULL;
    for (const gf_ptx_blob *b = blobs; b->area; b++) {
        if (strcmp(b->area, area) != 0 || !loads_on(b, cc))
            continue;
        if (!best || tier_cc(b) > tier_cc(best))
            best = b;
    }
    return best;
}

gf_modules *gf_modules_new(int cc, const gf_ptx_blob *blobs, gf_modcache *cache, const char *who)
{
    assert(blobs && cache);
    gf_modules *self = gf_calloc(1, sizeof *self);
    self->cc = cc;
    self->blobs = blobs;
    while (blobs[self->n_blobs].area)
        self->n_blobs++;
    self->digests = gf_calloc(self->n_blobs ? self->n_blobs : 1, sizeof *self->digests);
    self->cache = cache;
    self->who = gf_strdup(who ? who : "card");
    return self;
}

void gf_modules_destroy(gf_modules **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_modules *self = *self_p;
    free(self->digests);
    free(self->who);
    free(self);
    *self_p = NULL;
}

static const char *digest(gf_modules *self, size_t i)
{
    if (!self->digests[i][0])
        gf_sha256_hex(self->blobs[i].text, self->blobs[i].len, self->digests[i]);
    return self->digests[i];
}

static bool request_for(gf_modules *self, const char *area, request *r)
{
    const gf_ptx_blob *b = gf_modules_pick(self->blobs, self->cc, area);
    if (!b)
        return false;
    memset(r, 0, sizeof *r);
    r->self = self;
    r->blob = (size_t)(b - self->blobs);
    return true;
}

/* The JIT options as the key and the messages show them. */
static void jit_text(const request *r, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "{");
    for (unsigned i = 0; i < r->n_jit && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%d=%ld", i ? "," : "", r->jit_opts[i],
                              r->jit_values[i]);
    if (n < len)
        snprintf(buf + n, len - n, "}");
}

/* The key: every input of the image, by name: the area and tier (which the
 * evidence names), the artifact and its digest (the bytes), the device the
 * JIT compiles for, the JIT options. */
static char *key_of(const request *r)
{
    const gf_ptx_blob *b = &r->self->blobs[r->blob];
    char jit[GF_MODCACHE_MAX_JIT * 32 + 8];
    jit_text(r, jit, sizeof jit);
    return gf_strfmt("%s %s ptx-jit %s target sm_%d jit %s", b->area, b->tier,
                     digest(r->self, r->blob), r->self->cc, jit);
}

/* The image: what the loader is handed. */
static int make_image(void *ctx, gf_modcache_image *img)
{
    const request *r = ctx;
    const gf_ptx_blob *b = &r->self->blobs[r->blob];
    img->data = b->text;
    img->len = b->len;
    img->data_sha256 = digest(r->self, r->blob);
    img->target = r->self->cc;
    img->n_jit = r->n_jit;
    memcpy(img->jit_opts, r->jit_opts, sizeof img->jit_opts);
    memcpy(img->jit_values, r->jit_values, sizeof img->jit_values);
    return 0;
}

char *gf_modules_key(gf_modules *self, const char *area)
{
    request r;
    return request_for(self, area, &r) ? key_of(&r) : NULL;
}

int gf_modules_get(gf_modules *self, const char *area, void **module, const char **tier,
                   const char **sha256)
{
    *module = NULL;
    request r;
    if (!request_for(self, area, &r)) {
        GF_ERROR("%s: no embedded PTX for area '%s' at cc %d.%d (built without nvcc?)", self->who,
                 area, self->cc / 10, self->cc % 10);
        return GF_EUNSUP;
    }
    const gf_ptx_blob *b = &self->blobs[r.blob];
    char *key = key_of(&r);
    char *what = gf_strfmt("%s/%s for %s (cc %d.%d)", area, b->tier, self->who, self->cc / 10,
                           self->cc % 10);
    size_t loads = gf_modcache_loads(self->cache);
    int rc = gf_modcache_get(self->cache, key, what, make_image, &r, module);
    if (rc == 0 && gf_modcache_loads(self->cache) != loads)
        GF_DEBUG("%s: loaded module %s/%s sha256 %s", self->who, area, b->tier,
                 digest(self, r.blob));
    free(what);
    free(key);
    if (rc)
        return rc;
    if (tier)
        *tier = b->tier;
    if (sha256)
        *sha256 = digest(self, r.blob);
    return 0;
}
