/* conv_gpu.h — one 2-D convolution layer of the embedding network on a CUDA
 * card, with its two routes.
 *
 * The weights arrive with batch norm already folded in (w [cout, cin·k·k],
 * bias [cout]). Library route: im2col into a workspace, cuBLAS batched GEMM,
 * then the bias + residual + ReLU epilogue kernel. Own route: the
 * implicit-GEMM tf32 kernel of kernels/resnet/resnet.cu, epilogue fused, no im2col
 * matrix in device memory; for layers of 16k input channels it reads a second
 * copy of the weights, packed (cout, tap, cin) and rounded to tf32 at upload. */
#ifndef GF_CONV_GPU_H
#define GF_CONV_GPU_H

#include "gpu/blas.h"
#include "gpu/device.h"
#include "route/planner.h"

typedef struct {
    int cin, cout;   /* channels */
    int k;           /* square kernel: 3 (pad 1) or 1 (pad 0) */
    int stride;      /* both axes */
} gf_conv_shape;

typedef struct gf_conv_gpu gf_conv_gpu;

/* A variant of the own kernel: its version (1, 3, 4, 5: kernels/resnet/resnet.cu),
 * entry points (1x1, 3x3; NULL where it has none), block tile (output
 * channels x output positions), input channels per K step, shared-memory
 * stages, whether it reads the packed tf32 weights, for the halo variants
 * (v4, v5: 3x3, stride 1) the block's output rows and columns (0 for the
 * others, whose positions run flat), and the one compute capability it
 * runs on (0: any from 8.0; v5's wgmma needs 9.0 exactly), for v4
 * whether its halo is laid out channel-major (v4c), and whether it computes
 * in 3xTF32 (f3: math mode fp32 on the tensor cores, float32's accuracy;
 * kernels/resnet/resnet.cuh split_tf32), which also names its module
 * (gf_conv_own_module). */
typedef struct {
    int version;
    const char *name1, *name3;
    int tile_m, tile_n, tile_k, stages;
    bool packed;
    int tile_rows, tile_cols;
    int only_cc;
    bool channel_major;   /* v4c: the halo channel-major in shared memory */
    bool f3;              /* 3xTF32: the fp32 variants, in the resnet32 module */
} gf_conv_own_kernel;

/* The module, and evidence area, a variant lives in: "resnet32" for the
 * 3xTF32 variants, "resnet" for the others (resnet.conv1's direct kernel
 * serves both math modes from there). */
static inline const char *gf_conv_own_module(const gf_conv_own_kernel *k)
{
    return k->f3 ? "resnet32" : "resnet";
}

/* The variant the own route runs for a layer of this shape on a card of
 * compute capability cc (major * 10 + minor) in math mode `math`; NULL
 * where there is none (fp32: channel counts that are not a multiple of 16);
 * qualify pins its configuration from the same answer. */
const gf_conv_own_kernel *gf_conv_gpu_own_kernel(gf_conv_shape shape, int cc, gf_math math);
/* Bytes of dynamic shared memory a variant launches with (0: static only). */
int gf_conv_own_smem(const gf_conv_own_kernel *kernel);

/* Upload one layer. boundary: its planner name ("resnet.layer2.0.conv1").
 * NULL on a device error (logged). */
gf_conv_gpu *gf_conv_gpu_new(gf_gpu *gpu, gf_blas_gpu *blas, const char *boundary,
                             gf_conv_shape shape, const float *w, const float *bias);
void gf_conv_gpu_destroy(gf_conv_gpu **self_p);

const char *gf_conv_gpu_boundary(const gf_conv_gpu *self);
gf_conv_shape gf_conv_gpu_shape(const gf_conv_gpu *self);
gf_route_kind gf_conv_gpu_route(const gf_conv_gpu *self);

/* The own route's planning step: whether it runs a layer of this shape in
 * `math` on a card of compute capability cc (major * 10 + minor) that offers
 * smem_optin bytes of shared memory a block (0: not known, not checked), with
 * the kernels of module `area` ("resnet" or "resnet32"; NULL: whichever the
 * variant lives in). It needs cc >= 8.0, a variant for the shape
 * (gf_conv_gpu_own_kernel) with an entry for it, in that module, within the
 * card's shared memory. Returns 0, or GF_EUNSUP with the reason in why (the
 * planner's hook, diar/kernel_plan.h, and the route switch below apply
 * this one rule). */
int gf_conv_gpu_plan(gf_conv_shape shape, gf_math math, int cc, int smem_optin, const char *area,
                     char *why, size_t len);

/* Choose the route. The own route is refused (GF_EUNSUP, logged) where
 * gf_conv_gpu_plan refuses it on this card, or the card offers less shared
 * memory than the variant needs. On success with the own route,
 * *module_sha256 (may be NULL) is the identity of the module that loaded
 * (resnet or resnet32). */
int gf_conv_gpu_set_route(gf_conv_gpu *self, gf_route_kind kind, gf_math math,
                          const char **module_sha256);

/* Every variant, for benchmarks that compare them (bench/gpu/bench_gpu_conv). */
const gf_conv_own_kernel *gf_conv_own_kernels(size_t *count);
/* The own route with a given variant instead of the one
 * gf_conv_gpu_own_kernel picks: GF_EUNSUP where it cannot run this layer on
 * this card (logged). The caller answers for the shape fitting the
 * variant's tiles (v5: Cout a multiple of tile_m, Cin of 8; v4: 3x3 stride 1). */
int gf_conv_gpu_set_own_variant(gf_conv_gpu *self, const gf_conv_own_kernel *kernel,
                                const char **module_sha256);

/* Output extent of an input extent n. */
int gf_conv_gpu_out(const gf_conv_gpu *self, int n);
/* Floats of library-route workspace for a batch of B inputs of h x w. */
size_t gf_conv_gpu_col_floats(const gf_conv_gpu *self, int B, int h, int w);

/* out [B, cout, ho, wo] = act(conv(x [B, cin, h, w]) + bias (+ residual));
 * residual 0 for none; col: the library route's workspace (ignored by the
 * own route). Returns 0 or GF_EDEVICE. */
int gf_conv_gpu_run(gf_conv_gpu *self, gf_math math, int B, gf_cu_ptr x, int h, int w,
                    gf_cu_ptr out, gf_cu_ptr residual, int relu, gf_cu_ptr col);

#endif
