/* modcache.h — loaded kernel modules cached under a key, with a proof that
 * the key is complete.
 *
 * Every kernel module a card loads goes through one cache (gpu/modload.c
 * builds the requests of the embedded PTX; gpu/device.c is the loader). A
 * module is loaded once per key and reused. If the key forgot an input that
 * changes the module (the PTX bytes, a JIT option, the device the JIT
 * compiles for), a later request would be served a module built from other
 * inputs. In prove mode (debug and test builds: the default unless NDEBUG)
 * every request under an existing key makes its image again (the bytes and
 * JIT options it would hand the loader, and the device) and its fingerprint
 * must equal the one loaded under that key; otherwise the key is proven
 * incomplete, a broken invariant: the cache logs a message naming both
 * requests and aborts. Lookup mode (release builds) only looks the key up.
 * Loading is the backend's job (cuModuleLoadDataEx in gpu/device.c; a plain
 * function in tests). */
#ifndef GF_MODCACHE_H
#define GF_MODCACHE_H

#include "common/sha256.h"

#include <stddef.h>

typedef enum {
    GF_MODCACHE_LOOKUP = 0,    /* release: a hit is served without making the image again */
    GF_MODCACHE_PROVE = 1,     /* debug/test: a hit makes the image again and compares */
} gf_modcache_mode;

/* Most JIT options one image carries. */
#define GF_MODCACHE_MAX_JIT 8

/* What one request hands the loader: everything that determines the module. */
typedef struct {
    const void *data;          /* PTX text (NUL-terminated) or a cubin */
    size_t len;                /* bytes of data (a PTX text without its NUL) */
    const char *data_sha256;   /* data's SHA-256 where the maker knows it (immutable data
                                * hashed once), or NULL: the cache hashes data */
    int target;                /* the device the JIT compiles for: major*10+minor */
    unsigned n_jit;            /* JIT options passed with data (cuModuleLoadDataEx's) */
    int jit_opts[GF_MODCACHE_MAX_JIT];      /* CUjit_option numbers */
    long jit_values[GF_MODCACHE_MAX_JIT];   /* their integer values */
    void *owned;               /* freed by the cache after the request (may be NULL): a
                                * generated text that data points into */
} gf_modcache_image;

/* Make the image of one request into *img (zeroed by the cache): 0, or a
 * negative GF_E* code (then img->owned is still freed). */
typedef int (*gf_modcache_make_fn)(void *ctx, gf_modcache_image *img);

typedef struct {
    /* Load an image into a module handle: 0, or a negative GF_E* code. */
    int (*load)(void *ctx, const gf_modcache_image *img, void **module);
    /* Release a module handle (at destroy; may be NULL). */
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

/* The module for 'key'. 'request' describes the whole request for messages;
 * make/make_ctx make its image. On a miss the image is made and loaded; on
 * a hit, see the modes above (an incomplete key aborts in prove mode, after
 * logging "module key 'K' is incomplete: request B makes image x (...), but
 * the module under this key was loaded for request A from image y (...)").
 * Returns 0 and the module in *module (owned by the cache), or the error of
 * make or load (logged; nothing is cached then). Thread-safe. */
int gf_modcache_get(gf_modcache *self, const char *key, const char *request,
                    gf_modcache_make_fn make, void *make_ctx, void **module);

/* The fingerprint of an image, as the proof compares it: the SHA-256 of
 * its data's digest, its target and its JIT options, in hex. */
void gf_modcache_fingerprint(const gf_modcache_image *img, char out[GF_SHA256_HEX_LEN]);

/* Modules held, loads done, and hits proven so far. */
size_t gf_modcache_count(const gf_modcache *self);
size_t gf_modcache_loads(const gf_modcache *self);
size_t gf_modcache_proven(const gf_modcache *self);

#endif
