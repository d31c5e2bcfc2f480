/* util.h — allocation that aborts on out-of-memory, and small helpers.
 *
 * Out of memory is not an error gpuflock recovers from (house style, as in
 * Redis and CZMQ): these print a message and abort. */
#ifndef GF_UTIL_H
#define GF_UTIL_H

#include <stddef.h>
#include <stdint.h>

void *gf_malloc(size_t size);
void *gf_calloc(size_t n, size_t size);
void *gf_realloc(void *ptr, size_t size);
/* Copy of s (NULL gives NULL); the caller frees. */
char *gf_strdup(const char *s);
/* printf into a new string; the caller frees. */
char *gf_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t gf_now_ns(void);
uint64_t gf_now_ms(void);
/* Wall clock in milliseconds since the epoch. */
int64_t gf_wall_ms(void);

#define GF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
