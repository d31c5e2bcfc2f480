// resnet32.cu — the ResNet convolutions in math mode fp32 (the resnet32
// area): the kernels of kernels/resnet/resnet.cu in 3xTF32 (split_tf32 in
// kernels/resnet/resnet.cuh): each operand split into its tf32 high part and the
// tf32-rounded remainder, three MMAs a product (hi·hi' + hi·lo' + lo·hi')
// with float32 accumulation, so the sums keep float32's accuracy (2^-22 of a
// product left out, against tf32's 2^-11) on the tensor cores. The packed
// weights carry their low parts after the high ones (kernels/resnet/resnet_gpu.c
// pack_tap_major). A module of its own, so that changing these kernels
// leaves the tf32 module's PTX, and so its evidence, as it was.
//
// Needs sm_80 (mma.sync tf32); the sm_75 build traps, and the planner
// refuses the kernels on such cards.

#include "kernels/resnet/resnet.cuh"

// f3_v4s: stage 1 (32 channels), v4s's channel-major halo on 16 x 16 tiles
// (the weights' low parts double each weight stage; 16 x 32 tiles spill 20
// bytes at 128 registers and measured the same, docs/gpu.md), 2 blocks an SM.
CONV_ENTRY_HALO(gf_conv3_f3_v4s, 2, conv3_tf32_v4<32, 16, 16, 8, 1, true, 3, true>)
// f3_v4: stages 2-4 (64-256 channels), v4's position-major halo in 8-channel
// slabs (2 blocks an SM in 96 KB). The wgmma kernels read both operands from
// shared memory, where the split would double the halo too.
CONV_ENTRY_HALO(gf_conv3_f3_v4, 2, conv3_tf32_v4<64, 4, 32, 8, 2, false, 9, true>)
// f3_v3: the strided 3x3 layers and the 1x1 shortcuts, v3's 64 x 128 block,
// the gathered input float32 in shared memory and split as read.
CONV_ENTRY_V3(gf_conv3_f3_v3, 3, 64, 128, 2 + V3_F3, 2)
CONV_ENTRY_V3(gf_conv1_f3_v3, 1, 64, 128, 2 + V3_F3, 2)
