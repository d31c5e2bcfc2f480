/* fuzz_rttm.c — libFuzzer target for the RTTM reader (diar/io/rttm.c):
 * any bytes give turns or an error, never a crash. `make fuzz`, then
 * build/fuzz/fuzz_rttm -max_total_time=30 tests/fuzz/corpus/rttm */
#include "common/log.h"
#include "diar/io/rttm.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gf_log_init("fuzz_rttm", GF_LOG_OFF);
    gf_rttm *r = NULL;
    if (gf_rttm_parse("fuzz.rttm", (const char *)data, size, &r) == 0)
        gf_rttm_destroy(&r);
    return 0;
}
