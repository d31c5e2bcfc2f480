/* util.h — allocation that aborts on out-of-memory, and small helpers.
 *
 * Out of memory is not an error gpuflock recovers from (house style, as in
 * Redis and CZMQ): these print a message and abort. */
#ifndef GF_UTIL_H
#define GF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <stdint.h>

void *gf_malloc(size_t size);
void *gf_calloc(size_t n, size_t size);
void *gf_realloc(void *ptr, size_t size);
/* Copy of s (NULL gives NULL); the caller frees. */
char *gf_strdup(const char *s);
/* printf into a new string; the caller frees. */
char *gf_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Write len bytes to path whole or not at all: into path.tmp.<pid>.<tid>
 * (made new, O_EXCL and O_NOFOLLOW: never through a link planted there),
 * then renamed over path. Returns 0, or GF_EIO after logging the path and
 * the reason (the temporary file is removed). */
int gf_write_file_atomic(const char *path, const void *buf, size_t len);

/* As gf_write_file_atomic when replace is true; when false, an existing
 * path (a file, a link, anything) is never replaced: the whole file is
 * linked into place only where nothing is (link(2), atomic against a
 * writer racing for the same name), and GF_EEXIST is returned after
 * logging "PATH exists: not replaced". */
int gf_write_file(const char *path, const void *buf, size_t len, bool replace);

/* Open path for reading as a regular file of at most max bytes (0: any
 * size), so that what a user names as an input cannot hang the reader (a
 * FIFO with no writer: the open does not block, O_NONBLOCK) nor feed it
 * forever (/dev/zero) nor make it read a sparse file of terabytes. Returns
 * the descriptor (close-on-exec, blocking reads; *st filled when st is not
 * NULL), or GF_ENOENT without logging when nothing is there, GF_EPERM /
 * GF_EIO after logging "PATH: cannot open: reason", GF_EUNSUP after "PATH:
 * not a regular file (a FIFO, a device, a socket or a folder)", GF_ETOOBIG
 * after "PATH: N bytes, over the limit of M". */
int gf_open_regular(const char *path, long long max, struct stat *st);

/* The path of program `name` in the folder of the running executable
 * (/proc/self/exe), or NULL when that cannot be read; the caller frees. */
char *gf_beside_self(const char *name);

/* Create the folder path and its missing parents with mode (umask applied).
 * Returns 0 (also when it exists), or GF_EIO with errno set and, in *failed
 * (may be NULL; the caller frees), the folder that could not be made. */
int gf_mkdir_p(const char *path, mode_t mode, char **failed);
/* gf_mkdir_p, and each folder it creates then gets exactly mode, past the
 * umask (a chmod that fails is warned about, not fatal): for folders shared
 * by every user, such as the lock files' (01777). */
int gf_mkdir_p_exact(const char *path, mode_t mode, char **failed);

/* Monotonic clock in nanoseconds / milliseconds. */
uint64_t gf_now_ns(void);
uint64_t gf_now_ms(void);
/* Wall clock in milliseconds since the epoch. */
int64_t gf_wall_ms(void);

/* splitmix64: the next value of the stream in *s (well mixed from any
 * seed; for checks, benchmarks and test data, not for secrets). */
uint64_t gf_splitmix64(uint64_t *s);
/* Uniform in [-a, a] from that stream, never exactly zero. */
float gf_rand_sym(uint64_t *s, float a);

#define GF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
