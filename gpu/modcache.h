/* modcache.h — compiled modules cached under a key, with a proof that the
 * key is complete.
 *
 * A kernel whose PTX is generated from parameters (tile sizes, unrolling,
 * head counts) is compiled once per key and reused. If the key forgets a
 * parameter that is baked into the PTX, a later request would be served a
 * stale module. In prove mode (debug and test builds: the default unless
 * NDEBUG) every request under an existing key regenerates its PTX and must
 * produce the same text as the one compiled there; otherwise the request
 * fails with GF_ESTATE and a message naming both requests. Requests that
 * differ only in launch geometry generate the same PTX and pass. Lookup mode
 * (release builds) only looks the key up. Compiling is the backend's job
 * (cuModuleLoadData in the GPU code; a plain function in tests). */
#ifndef GF_MODCACHE_H
#define GF_MODCACHE_H

#include <stddef.h>

typedef enum {
    GF_MODCACHE_LOOKUP = 0,    /* release: a hit is served without generating PTX */
    GF_MODCACHE_PROVE = 1,     /* debug/test: a hit regenerates and compares the PTX */
} gf_modcache_mode;

/* Generate the PTX text of one request: 0 and a new NUL-terminated string in
 * *ptx (length *len; the cache frees it), or a negative GF_E* code. */
typedef int (*gf_modcache_gen_fn)(void *ctx, char **ptx, size_t *len);

typedef struct {
    /* Compile PTX into a module handle: 0, or a negative GF_E* code. */
    int (*compile)(void *ctx, const char *ptx, size_t len, void **module);
    /* Release a module handle (at destroy). */
    void (*unload)(void *ctx, void *module);
    void *ctx;
} gf_modcache_backend;

typedef struct gf_modcache gf_modcache;

/* PROVE unless the build defines NDEBUG (then LOOKUP). */
gf_modcache_mode gf_modcache_default_mode(void);

/* A new, empty cache over a backend (copied). */
gf_modcache *gf_modcache_new(gf_modcache_mode mode, const gf_modcache_backend *backend);
/* Unloads every module. Accepts NULL; sets *self_p to NULL. */
void gf_modcache_destroy(gf_modcache **self_p);

/* The module for 'key'. 'request' describes the whole request, launch
 * geometry included, for messages; gen/gen_ctx make its PTX. On a miss the
 * PTX is generated and compiled; on a hit, see the modes above. Returns 0
 * and the module in *module (owned by the cache); GF_ESTATE when the key is
 * proven incomplete (logged, naming both requests); or the error of gen or
 * compile (nothing is cached then). Thread-safe. */
int gf_modcache_get(gf_modcache *self, const char *key, const char *request,
                    gf_modcache_gen_fn gen, void *gen_ctx, void **module);

/* The last GF_ESTATE message (borrowed; "" when none). */
const char *gf_modcache_last_error(const gf_modcache *self);

/* Modules held, and compilations done so far. */
size_t gf_modcache_count(const gf_modcache *self);
size_t gf_modcache_compiles(const gf_modcache *self);

#endif
