/* npsum.c — numpy-order pairwise summation (see npsum.h).
 *
 * The order follows numpy's pairwise_sum: fewer than 8 terms are added in
 * sequence; up to 128 terms go through eight interleaved accumulators that
 * are combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the remainder;
 * longer runs are split at a multiple of 8 near the middle and recursed. */
#include "diar/cluster/npsum.h"

#define PW_BLOCK 128

#define PAIRWISE(T, NAME)                                                      \
    T NAME(const T *a, size_t n, size_t stride)                                \
    {                                                                          \
        if (n < 8) {                                                           \
            T res = (T)0;                                                      \
            for (size_t i = 0; i < n; i++)                                     \
                res += a[i * stride];                                          \
            return res;                                                        \
        }                                                                      \
        if (n <= PW_BLOCK) {                                                   \
            T r[8];                                                            \
            for (int k = 0; k < 8; k++)                                        \
                r[k] = a[(size_t)k * stride];                                  \
            size_t i;                                                          \
            for (i = 8; i < n - (n % 8); i += 8)                               \
                for (int k = 0; k < 8; k++)                                    \
                    r[k] += a[(i + (size_t)k) * stride];                       \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
            for (; i < n; i++)                                                 \
                res += a[i * stride];                                          \
            return res;                                                        \
        }                                                                      \
        size_t n2 = n / 2;                                                     \
        n2 -= n2 % 8;                                                          \
        return NAME(a, n2, stride) + NAME(a + n2 * stride, n - n2, stride);    \
    }

PAIRWISE(double, gf_npsum_f64)
PAIRWISE(float, gf_npsum_f32)
