/* stwrite.h — a minimal safetensors writer for the network unit tests
 * (header-only, static; the tests write their own model files). */
#ifndef GF_TEST_STWRITE_H
#define GF_TEST_STWRITE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STW_MAX 300

typedef struct {
    char name[STW_MAX][96];   /* tensor names */
    int ndim[STW_MAX];        /* dimensions */
    int shape[STW_MAX][4];    /* extents */
    float *data[STW_MAX];     /* owned */
    int n;                    /* tensors */
} stw;

static long stw_numel(const stw *w, int i)
{
    long n = 1;
    for (int d = 0; d < w->ndim[i]; d++)
        n *= w->shape[i][d];
    return n;
}

/* Add a tensor filled by fill(index) and return its data. */
static float *stw_add(stw *w, const char *name, int ndim, const int *shape)
{
    int i = w->n++;
    snprintf(w->name[i], sizeof w->name[i], "%s", name);
    w->ndim[i] = ndim;
    memcpy(w->shape[i], shape, sizeof(int) * (size_t)ndim);
    w->data[i] = calloc((size_t)stw_numel(w, i), sizeof(float));
    return w->data[i];
}

static int stw_write(const stw *w, const char *path)
{
    size_t cap = 64 + (size_t)w->n * 200, len = 0;
    char *h = malloc(cap);
    long off = 0;
    len += (size_t)snprintf(h + len, cap - len, "{");
    for (int i = 0; i < w->n; i++) {
        long bytes = 4 * stw_numel(w, i);
        len += (size_t)snprintf(h + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
                                i ? "," : "", w->name[i]);
        for (int d = 0; d < w->ndim[i]; d++)
            len += (size_t)snprintf(h + len, cap - len, "%s%d", d ? "," : "", w->shape[i][d]);
        len += (size_t)snprintf(h + len, cap - len, "],\"data_offsets\":[%ld,%ld]}", off,
                                off + bytes);
        off += bytes;
    }
    len += (size_t)snprintf(h + len, cap - len, "}");
    while (len % 8)
        h[len++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(h);
        return -1;
    }
    uint64_t hl = len;
    unsigned char lb[8];
    for (int i = 0; i < 8; i++)
        lb[i] = (unsigned char)(hl >> (8 * i));
    fwrite(lb, 1, 8, f);
    fwrite(h, 1, len, f);
    for (int i = 0; i < w->n; i++)
        fwrite(w->data[i], sizeof(float), (size_t)stw_numel(w, i), f);
    free(h);
    return fclose(f);
}

static void stw_free(stw *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->data[i]);
    w->n = 0;
}

#endif
