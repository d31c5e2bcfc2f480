/* modload.h — the kernel modules of one card: for each area, the embedded
 * PTX of the best tier the card loads, loaded through the module cache
 * (gpu/modcache.h) under a complete key.
 *
 * This is the one path a kernel module load takes (gpu/device.c asks it for
 * every kernel it looks up). It holds no driver state: the cache's backend
 * loads, so the choice of tier, the key and the image are testable without
 * a GPU. docs/evidence.md says what the key holds and why it is complete. */
#ifndef GF_MODLOAD_H
#define GF_MODLOAD_H

#include "gpu/modcache.h"
#include "gpu/modules.h"

typedef struct gf_modules gf_modules;

/* The PTX of 'area' in 'blobs' (a table like gf_ptx_blobs, terminated by an
 * entry with area NULL) that a card of compute capability cc (major*10 +
 * minor) loads: the highest tier no newer than the card; a tier whose text
 * targets an arch-specific architecture (".target sm_90a") on exactly that
 * capability only. NULL when none loads there. */
const gf_ptx_blob *gf_modules_pick(const gf_ptx_blob *blobs, int cc, const char *area);

/* The modules of a card of compute capability cc, from 'blobs' (gf_ptx_blobs
 * in production), loaded through 'cache' (borrowed: it must outlive the
 * object); 'who' names the card in messages ("cuda device 0", copied). Not
 * thread-safe (one card, one worker thread). */
gf_modules *gf_modules_new(int cc, const gf_ptx_blob *blobs, gf_modcache *cache, const char *who);
/* Accepts NULL; sets *self_p to NULL. The modules stay with the cache. */
void gf_modules_destroy(gf_modules **self_p);

/* The module of 'area', loaded on its first request: 0 and the handle in
 * *module (owned by the cache), the tier ("sm90") and the module's
 * identity (SHA-256 of its PTX text) in *tier and *sha256 (each may be NULL;
 * borrowed, valid while the object lives). GF_EUNSUP when no PTX of 'area'
 * loads on this card (logged), else the loader's error. */
int gf_modules_get(gf_modules *self, const char *area, void **module, const char **tier,
                   const char **sha256);

/* The cache key of the request for 'area' on this card, "lstm sm90 ptx-jit
 * <sha256> target sm_90 jit {}" (the caller frees), or NULL when no PTX of
 * 'area' loads here. */
char *gf_modules_key(gf_modules *self, const char *area);

#endif
