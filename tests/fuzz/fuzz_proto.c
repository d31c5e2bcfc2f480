/* fuzz_proto.c — libFuzzer target for the wire decoder (net/proto.c).
 *
 * Any byte string either decodes (and then must re-encode, and the
 * re-encoding must decode to the same bytes again) or is refused with an
 * error message. Crashes, leaks and sanitizer reports are findings.
 *   make fuzz && build/fuzz/fuzz_proto -max_total_time=60 tests/fuzz/corpus/proto */
#include "common/error.h"
#include "common/log.h"
#include "net/proto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gf_msg m;
    char err[256];
    int rc = gf_proto_decode(data, size, &m, err, sizeof(err));
    if (rc != 0) {
        if ((rc != GF_EPROTO && rc != GF_ETOOBIG) || err[0] == 0)
            abort();
        return 0;
    }
    uint8_t *a = NULL, *b = NULL;
    size_t alen, blen;
    if (gf_proto_encode(&m, &a, &alen) != 0)
        abort();
    gf_msg m2;
    if (gf_proto_decode(a, alen, &m2, err, sizeof(err)) != 0)
        abort();
    if (gf_proto_encode(&m2, &b, &blen) != 0 || blen != alen || memcmp(a, b, alen) != 0)
        abort();
    free(a);
    free(b);
    gf_msg_clear(&m);
    gf_msg_clear(&m2);
    return 0;
}
