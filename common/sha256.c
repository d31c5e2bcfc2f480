/* sha256.c — SHA-256 through OpenSSL's EVP interface (see sha256.h). */
#include "common/sha256.h"
#include "common/error.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void to_hex(const unsigned char *md, char out[GF_SHA256_HEX_LEN])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = digits[md[i] >> 4];
        out[2 * i + 1] = digits[md[i] & 15];
    }
    out[64] = '\0';
}

void gf_sha256_hex(const void *data, size_t len, char out[GF_SHA256_HEX_LEN])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
        fprintf(stderr, "gpuflock: SHA-256 unavailable in libcrypto\n");
        abort();
    }
    to_hex(md, out);
}

int gf_sha256_file_hex(const char *path, char out[GF_SHA256_HEX_LEN])
{
    int fd = gf_open_regular(path, 0, NULL);
    if (fd == GF_ENOENT)
        GF_ERROR("%s: cannot open: %s", path, strerror(ENOENT));
    if (fd < 0)
        return fd == GF_ENOENT ? GF_ENOENT : GF_EIO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        GF_ERROR("%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return GF_EIO;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        fprintf(stderr, "gpuflock: SHA-256 unavailable in libcrypto\n");
        abort();
    }
    unsigned char buf[1 << 16];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        EVP_DigestUpdate(ctx, buf, n);
    if (ferror(f)) {
        GF_ERROR("%s: read error while hashing", path);
        rc = GF_EIO;
    } else {
        unsigned char md[32];
        unsigned int mdlen = 0;
        EVP_DigestFinal_ex(ctx, md, &mdlen);
        to_hex(md, out);
    }
    EVP_MD_CTX_free(ctx);
    fclose(f);
    return rc;
}

int gf_sha256_fd_hex(int fd, const char *name, char out[GF_SHA256_HEX_LEN])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        fprintf(stderr, "gpuflock: SHA-256 unavailable in libcrypto\n");
        abort();
    }
    /* large reads: an hour of audio is a hundred megabytes */
    size_t cap = 1 << 20;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        fprintf(stderr, "gpuflock: out of memory\n");
        abort();
    }
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, cap);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            GF_ERROR("%s: read error while hashing: %s", name, strerror(errno));
            rc = GF_EIO;
            break;
        }
        if (n == 0)
            break;
        EVP_DigestUpdate(ctx, buf, (size_t)n);
    }
    if (rc == 0) {
        unsigned char md[32];
        unsigned int mdlen = 0;
        EVP_DigestFinal_ex(ctx, md, &mdlen);
        to_hex(md, out);
    }
    free(buf);
    EVP_MD_CTX_free(ctx);
    return rc;
}
