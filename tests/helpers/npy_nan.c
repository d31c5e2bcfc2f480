/* npy_nan.c — test helper: copy a windows x speakers x dim float32 .npy,
 * setting the embedding of (window, speaker) to NaN (all dims, or only the
 * first with "partial"). usage: npy_nan IN OUT WINDOW SPEAKER [partial] */
#include "diar/io/npy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: npy_nan IN OUT WINDOW SPEAKER [partial]\n");
        return 64;
    }
    gf_npy_array *a = NULL;
    if (gf_npy_load(argv[1], &a) || a->dtype != GF_NPY_F32 || a->ndim != 3)
        return 65;
    size_t w = (size_t)atol(argv[3]), s = (size_t)atol(argv[4]);
    size_t dim = a->shape[2];
    float *e = (float *)a->data + (w * a->shape[1] + s) * dim;
    size_t n = argc > 5 && strcmp(argv[5], "partial") == 0 ? 1 : dim;
    for (size_t d = 0; d < n; d++)
        e[d] = NAN;
    int rc = gf_npy_save(argv[2], a);
    gf_npy_destroy(&a);
    return rc ? 74 : 0;
}
