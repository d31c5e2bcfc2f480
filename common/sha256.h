/* sha256.h — SHA-256 digests (OpenSSL's libcrypto underneath).
 *
 * Used wherever gpuflock addresses something by content: model files against
 * their manifest, PTX modules, evidence records. Digests are written as 64
 * lower-case hex characters. */
#ifndef GF_SHA256_H
#define GF_SHA256_H

#include <stddef.h>

#define GF_SHA256_HEX_LEN 65   /* 64 hex characters and the terminating NUL */

/* Digest of a buffer, as hex into out[GF_SHA256_HEX_LEN]. */
void gf_sha256_hex(const void *data, size_t len, char out[GF_SHA256_HEX_LEN]);

/* Digest of a whole file, read in blocks. Returns 0, or GF_EIO / GF_ENOENT
 * after logging a message naming the file. */
int gf_sha256_file_hex(const char *path, char out[GF_SHA256_HEX_LEN]);

/* Digest of what is left to read on fd (from its offset to its end), for a
 * caller that must know the bytes hashed are those of the file it fstat-ed;
 * name is for the message. Returns 0, or GF_EIO after logging. */
int gf_sha256_fd_hex(int fd, const char *name, char out[GF_SHA256_HEX_LEN]);

#endif
