/* fuzz_npy.c — libFuzzer target for the .npy parser (diar/io/npy.c):
 * any bytes give an array or an error, never a crash. `make fuzz`, then
 * build/fuzz/fuzz_npy -max_total_time=30 tests/fuzz/corpus/npy */
#include "common/log.h"
#include "diar/io/npy.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gf_log_init("fuzz_npy", GF_LOG_OFF);
    gf_npy_array *a = NULL;
    if (gf_npy_parse("fuzz.npy", data, size, &a) == 0)
        gf_npy_destroy(&a);
    return 0;
}
