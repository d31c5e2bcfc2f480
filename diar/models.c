/* models.c — the manifest of a models directory.
 *
 * The loaders take a digest per file from here (gf_segmentation_new and
 * gf_embedding_new check it while the file is mapped), and `gpuflock models
 * check` walks it. */
#include "diar/models.h"

#include "common/error.h"
#include "common/log.h"
#include "common/sha256.h"
#include "common/util.h"
#include "diar/vad.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GF_MANIFEST_MAX (1 << 20)   /* a manifest of a few lines: more is not one */

typedef struct {
    char *path;                     /* relative to the directory */
    char sha[GF_SHA256_HEX_LEN];    /* lower-case hex */
} mentry;

struct gf_manifest {
    mentry *e;      /* entries in file order */
    size_t n, cap;  /* used, allocated */
};

void gf_manifest_destroy(gf_manifest **self_p)
{
    if (!self_p || !*self_p)
        return;
    gf_manifest *m = *self_p;
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].path);
    free(m->e);
    free(m);
    *self_p = NULL;
}

int gf_manifest_load(const char *dir, gf_manifest **out)
{
    *out = NULL;
    char *file = gf_strfmt("%s/%s", dir, GF_MODELS_MANIFEST);
    int fd = gf_open_regular(file, GF_MANIFEST_MAX, NULL);   /* logged but for ENOENT */
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (!f) {
        int rc = fd == GF_ENOENT ? GF_ENOENT : GF_EIO;
        if (fd >= 0) {
            GF_ERROR("%s: cannot open: %s", file, strerror(errno));
            close(fd);
        }
        free(file);
        return rc;
    }
    gf_manifest *m = gf_calloc(1, sizeof *m);
    char line[4096];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        int hex_ok = len > 66;
        for (int i = 0; hex_ok && i < 64; i++)
            hex_ok = isxdigit((unsigned char)line[i]);
        /* "<hex>  path" (text mode) or "<hex> *path" (binary mode) */
        if (!hex_ok || line[64] != ' ' || (line[65] != ' ' && line[65] != '*')) {
            GF_ERROR("%s:%d: expected \"<64 hex digits>  <path>\"", file, lineno);
            rc = GF_EINVAL;
            break;
        }
        const char *path = line + 66;
        if (path[0] == '/' || strstr(path, "..")) {
            GF_ERROR("%s:%d: path '%s' must be relative, inside the directory", file, lineno, path);
            rc = GF_EINVAL;
            break;
        }
        if (gf_manifest_sha256(m, path)) {
            GF_ERROR("%s:%d: '%s' listed twice", file, lineno, path);
            rc = GF_EINVAL;
            break;
        }
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 8;
            m->e = gf_realloc(m->e, m->cap * sizeof *m->e);
        }
        mentry *e = &m->e[m->n++];
        e->path = gf_strdup(path);
        for (int i = 0; i < 64; i++)
            e->sha[i] = (char)tolower((unsigned char)line[i]);
        e->sha[64] = '\0';
    }
    if (rc == 0 && ferror(f)) {
        GF_ERROR("%s: read error", file);
        rc = GF_EIO;
    }
    fclose(f);
    free(file);
    if (rc != 0) {
        gf_manifest_destroy(&m);
        return rc;
    }
    *out = m;
    return 0;
}

const char *gf_manifest_sha256(const gf_manifest *self, const char *relpath)
{
    for (size_t i = 0; i < self->n; i++)
        if (strcmp(self->e[i].path, relpath) == 0)
            return self->e[i].sha;
    return NULL;
}

size_t gf_manifest_count(const gf_manifest *self)
{
    return self->n;
}

const char *gf_manifest_path_at(const gf_manifest *self, size_t i)
{
    return i < self->n ? self->e[i].path : NULL;
}


void gf_models_digest(const char *dir, const gf_manifest *man, const char *name, char *out,
                      size_t len)
{
    const char *listed = man ? gf_manifest_sha256(man, name) : NULL;
    char hex[GF_SHA256_HEX_LEN];
    char *path = gf_strfmt("%s/%s", dir, name);
    if (listed)
        snprintf(out, len, "%s", listed);
    else if (gf_sha256_file_hex(path, hex) == 0)
        snprintf(out, len, "%s", hex);
    else
        snprintf(out, len, "unreadable at %lld", (long long)gf_wall_ms());
    free(path);
}

int gf_models_id_take(const char *dir, gf_models_id *out)
{
    static const char *const names[GF_MODELS_ID_FILES] = {
        GF_MODELS_SEGMENTATION, GF_MODELS_EMBEDDING, GF_MODELS_XVEC,
        GF_MODELS_PLDA,         GF_MODELS_MANIFEST,  GF_VAD_FILE_NAME,
    };
    memset(out, 0, sizeof *out);
    for (int i = 0; i < GF_MODELS_ID_FILES; i++) {
        char *path = gf_strfmt("%s/%s", dir, names[i]);
        struct stat st;
        int fd = -1;
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            /* a FIFO, a device, a folder: recorded, never opened (the loader
             * refuses it by name) */
        } else if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) < 0 &&
                   (errno == ENOENT || errno == ENOTDIR)) {
            free(path);
            continue;
        } else if (fd < 0 || fstat(fd, &st) != 0) {
            int e = errno;
            GF_ERROR("%s: cannot read: %s", path, strerror(e));
            if (fd >= 0)
                close(fd);
            free(path);
            return e == EACCES || e == EPERM ? GF_EPERM : GF_EIO;
        }
        if (fd >= 0)
            close(fd);
        free(path);
        out->f[i].present = true;
        out->f[i].dev = (unsigned long long)st.st_dev;
        out->f[i].ino = (unsigned long long)st.st_ino;
        out->f[i].size = (long long)st.st_size;
        out->f[i].mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
        out->f[i].ctime_ns = (long long)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    }
    return 0;
}

bool gf_models_id_equal(const gf_models_id *a, const gf_models_id *b)
{
    for (int i = 0; i < GF_MODELS_ID_FILES; i++) {
        const gf_models_file *x = &a->f[i], *y = &b->f[i];
        if (x->present != y->present || (x->present && (x->dev != y->dev || x->ino != y->ino ||
                                                        x->size != y->size ||
                                                        x->mtime_ns != y->mtime_ns ||
                                                        x->ctime_ns != y->ctime_ns)))
            return false;
    }
    return true;
}
