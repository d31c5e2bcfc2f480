/* sincnet_ref.h — the SincNet filterbank stage in float64 on the host, by
 * the definition in sincnet_gpu.h, whose shapes (GF_SINC_*) it shares. */
#ifndef GF_KERNELS_SINCNET_REF_H
#define GF_KERNELS_SINCNET_REF_H

#include "kernels/sincnet/sincnet_gpu.h"

#include <stddef.h>

/* Output o (flat index into [B][80][5325]) of the definition in
 * sincnet_gpu.h, in float64 on the host: the reference the checks compare
 * both routes with. */
double gf_sinc_ref(const double *filters, const float *wave, size_t o);

#endif
