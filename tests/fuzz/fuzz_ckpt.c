/* fuzz_ckpt.c — libFuzzer target for the checkpoint reader
 * (diar/ckpt.c): any bytes give a checkpoint or a refusal with a
 * reason, never a crash, and every array a checkpoint that is accepted
 * points at lies inside it (each element is read). Each input is tried as
 * it is and with its digest made right, so that the checks behind the
 * digest (counts, identity lines) are reached too. `make fuzz`, then
 * build/fuzz/fuzz_ckpt -max_total_time=30 tests/fuzz/corpus/ckpt */
#include "common/log.h"
#include "common/sha256.h"
#include "diar/ckpt.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static float sum(const float *p, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; p && i < n; i++)
        s += p[i];
    return s;
}

static void try_one(const uint8_t *data, size_t size)
{
    gf_ckpt *c = NULL;
    char why[512];
    if (gf_ckpt_decode(data, size, 64, &c, why, sizeof why) != 0) {
        if (!why[0])
            abort();   /* a refusal always says why */
        return;
    }
    const gf_diar_state *st = gf_ckpt_state(c);
    size_t k = st->n_windows;
    volatile float s = sum(st->seg, k * GF_DIAR_FRAMES * GF_DIAR_SPEAKERS)
                       + sum(st->emb, k * GF_DIAR_SPEAKERS * st->dim)
                       + sum(st->logits, k * GF_DIAR_FRAMES * GF_DIAR_CLASSES)
                       + sum(st->blocks, st->n_blocks * GF_DIAR_WF_DIM);
    (void)s;
    char diff[1024];
    if (gf_ckpt_id_diff(gf_ckpt_identity(c), gf_ckpt_identity(c), diff, sizeof diff) != 0)
        abort();
    gf_ckpt_destroy(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gf_log_init("fuzz_ckpt", GF_LOG_OFF);
    try_one(data, size);
    if (size > GF_CKPT_DIGEST_BYTES) {
        uint8_t *b = malloc(size);
        memcpy(b, data, size);
        char hex[GF_SHA256_HEX_LEN];
        gf_sha256_hex(b, size - GF_CKPT_DIGEST_BYTES, hex);
        memcpy(b + size - GF_CKPT_DIGEST_BYTES, hex, GF_CKPT_DIGEST_BYTES);
        try_one(b, size);
        free(b);
    }
    return 0;
}
