"""torch_nets — the same two networks in PyTorch on the same card, at the
same batch, for the side-by-side in bench/gpu/run: device time per stage
(CUDA events, median of repeats after warm-up), fp32 and tf32.
Usage: torch_nets.py MODELS_DIR [BATCH] [REPEATS]. Needs torch with CUDA."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ref"))
import gfnets  # noqa: E402


def timed(fn, reps):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return float(np.median(times))


def main(argv):
    d = argv[1]
    B = int(argv[2]) if len(argv) > 2 else 32
    reps = int(argv[3]) if len(argv) > 3 else 5
    dev = torch.device("cuda")
    seg = gfnets.Segmentation(gfnets.read_safetensors(os.path.join(d, "segmentation.safetensors")))
    seg.t = {k: v.to(dev) for k, v in seg.t.items()}
    seg.lstm.to(dev)
    emb = gfnets.Embedding(gfnets.read_safetensors(os.path.join(d, "embedding.safetensors"))).to(dev)
    g = torch.Generator().manual_seed(7)
    wave = (0.1 * torch.randn(B, 160000, generator=g)).to(dev)
    feats = torch.randn(B, 998, 80, generator=g).to(dev)
    masks = (torch.rand(B, 3, 125, generator=g) > 0.5).float().to(dev)
    R = emb.resnet

    print("pytorch %s, batch %d windows, median of %d repeats" % (torch.__version__, B, reps))
    for mode in ("fp32", "tf32"):
        tf32 = mode == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        with torch.no_grad():
            t_seg = timed(lambda: seg(wave), reps)
            feat = R.trunk(feats)
            t_trunk = timed(lambda: R.trunk(feats), reps)
            t_pool = timed(lambda: R.pool_batched(feat, masks), reps)
        total = t_seg + t_trunk + t_pool
        print("plan pytorch %s:" % mode)
        print("    segmentation (whole network)  %10.3f ms/batch" % t_seg)
        print("    embedding trunk (resnet)      %10.3f ms/batch" % t_trunk)
        print("    pooling + seg_1               %10.3f ms/batch" % t_pool)
        print("    total %.3f ms per batch: networks at %.0fx real time" % (total, B * 1000.0 / total))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
