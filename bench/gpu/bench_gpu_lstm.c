/* bench_gpu_lstm.c — the segmentation network's LSTM stack (4 bidirectional
 * layers of 128, 60 inputs, 589 steps) on each kernel of its own route side
 * by side with the library route (cuBLAS GEMM + cell kernel a step), in one
 * run: device time by events, median of R after two warm-ups, for batches
 * 1, 8 and 32, in tf32 math. The own kernels are gf_lstm_rec_v1 (float32,
 * a block of 512 threads a sequence and direction) and, on cc >= 9.0,
 * gf_lstm_rec_cluster (the recurrence on the tensor cores) with 8, 16 or
 * 32 sequences a cluster of 8 blocks; the blocks each launches (so the
 * multiprocessors it holds, at most) are
 * printed beside it, since that, not its time alone, is what the ResNet
 * trunk running beside it on the card loses. The variant the route picks by
 * default is marked. Random weights and inputs (the time does not depend on
 * them). Usage: bench_gpu_lstm [R] */
#include "common/devstats.h"
#include "common/util.h"
#include "gpu/blas.h"
#include "gpu/device.h"
#include "diar/segmentation.h"
#include "kernels/lstm/lstm_gpu.h"
#include "bench/gpu/devtime.h"

#include <stdio.h>
#include <stdlib.h>

/* the segmentation network's stack */
#define LAYERS GF_SEG_LSTM_LAYERS
#define IN GF_SEG_LSTM_IN
#define H GF_SEG_LSTM_HIDDEN
#define T GF_SEG_FRAMES
#define MAX_B 32

typedef struct {
    gf_lstm_gpu *l;
    gf_cu_ptr x;
    int B;
} stack_run;

static int run_stack(void *arg)
{
    stack_run *r = arg;
    gf_cu_ptr out = 0;
    return gf_lstm_gpu_run(r->l, GF_MATH_TF32, r->x, r->B, &out);
}

static double time_stack(gf_gpu *gpu, gf_lstm_gpu *l, gf_cu_ptr x, int B, int reps)
{
    stack_run r = { l, x, B };
    return bench_median_ms(gpu, run_stack, &r, reps);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 10;
    gf_gpu *gpu = NULL;
    gf_blas_gpu *blas = NULL;
    if (gf_gpu_open(0, &gpu) != 0 || gf_blas_gpu_open(gpu, &blas) != 0) {
        fprintf(stderr, "bench_gpu_lstm: no CUDA card 0\n");
        return 1;
    }
    uint64_t seed = 20261201u;
    gf_lstm_weights w;
    gf_lstm_weights_random(&w, LAYERS, IN, H, &seed);
    size_t nx = (size_t)MAX_B * T * IN;
    float *x = gf_malloc(sizeof(float) * nx);
    for (size_t i = 0; i < nx; i++)
        x[i] = gf_rand_sym(&seed, 1.0f);
    gf_cu_ptr dx = 0;
    gf_lstm_gpu *l = gf_lstm_gpu_new(gpu, blas, LAYERS, IN, H, w.dirs, MAX_B, T);
    if (!l || gf_gpu_alloc(gpu, sizeof(float) * nx, &dx) || gf_gpu_upload(gpu, dx, x, sizeof(float) * nx))
        return 1;
    printf("LSTM stack, tf32 input projections, device ms (median of %d) and blocks launched:\n",
           reps);
    printf("%-38s %14s %14s %14s\n", "kernel", "batch 1", "batch 8", "batch 32");
    int variants[] = { -1, 0, 8, 16, 32 };
    int def = -2, def_narrow = -2;   /* the route's choice alone, and beside other work */
    if (gf_lstm_gpu_set_route(l, GF_ROUTE_OWN, NULL) == 0) {
        def = gf_lstm_gpu_seqs_per_cluster(l);
        gf_lstm_gpu_set_narrow(l, true);
        def_narrow = gf_lstm_gpu_seqs_per_cluster(l);
        gf_lstm_gpu_set_narrow(l, false);
    }
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        int sv = variants[v];
        if (sv < 0) {
            gf_lstm_gpu_set_route(l, GF_ROUTE_LIBRARY, NULL);
        } else if (gf_lstm_gpu_set_route(l, GF_ROUTE_OWN, NULL) != 0 ||
                   gf_lstm_gpu_set_seqs_per_cluster(l, sv) != 0) {
            continue;
        }
        char name[64];
        if (sv < 0)
            snprintf(name, sizeof name, "library (cuBLAS a step)");
        else if (sv == 0)
            snprintf(name, sizeof name, "own v1%s", def == 0 ? " *" : "");
        else
            snprintf(name, sizeof name, "own cluster, %d seqs a cluster%s%s", sv,
                     def == sv ? " *" : "", def_narrow == sv ? " **" : "");
        printf("%-38s", name);
        int batches[] = { 1, 8, 32 };
        for (int bi = 0; bi < 3; bi++) {
            int B = batches[bi];
            int held = sv == 0 ? 2 * B : 2 * 8 * ((B + sv - 1) / sv);
            if (sv < 0)
                printf(" %8.3f (all)", time_stack(gpu, l, dx, B, reps));
            else
                printf(" %8.3f (%3d)", time_stack(gpu, l, dx, B, reps), held);
        }
        printf("\n");
    }
    printf("(* the kernel the own route runs alone on this card, ** beside other work: the "
           "pipeline's stages overlapped)\n");
    gf_gpu_free(gpu, dx);
    gf_lstm_gpu_destroy(&l);
    gf_blas_gpu_destroy(&blas);
    gf_gpu_destroy(&gpu);
    gf_lstm_weights_free(&w);
    free(x);
    return 0;
}
