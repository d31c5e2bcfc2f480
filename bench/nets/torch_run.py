"""torch_run — the PyTorch reference networks on the same raw float32 files
and with the same arguments as build/tests/helpers/nets_run, for bench/nets.

  torch_run.py seg MODEL WAVE.f32 B OUT.f32 THREADS REPEAT
  torch_run.py emb MODEL FBANK.f32 B MASKS.f32 S OUT.f32 THREADS REPEAT

Prints "time_s=<mean seconds per run> maxrss_kb=<peak RSS>" to stderr after
one warm-up run, like nets_run."""
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "ref"))
import gfnets  # noqa: E402


def main():
    a = sys.argv
    if a[1] == "seg":
        model, wave_f, B, out_f, threads, repeat = a[2], a[3], int(a[4]), a[5], int(a[6]), int(a[7])
        torch.set_num_threads(threads)
        net = gfnets.Segmentation(gfnets.read_safetensors(model))
        x = torch.from_numpy(np.fromfile(wave_f, np.float32).reshape(B, gfnets.SEG_SAMPLES))
        run = lambda: net(x)
    else:
        model, fb_f, B, m_f, S, out_f = a[2], a[3], int(a[4]), a[5], int(a[6]), a[7]
        threads, repeat = int(a[8]), int(a[9])
        torch.set_num_threads(threads)
        net = gfnets.Embedding(gfnets.read_safetensors(model))
        fb = torch.from_numpy(np.fromfile(fb_f, np.float32).reshape(B, gfnets.EMB_FRAMES, gfnets.EMB_MELS))
        m = torch.from_numpy(np.fromfile(m_f, np.float32).reshape(B, S, gfnets.SEG_FRAMES))
        run = lambda: net(fb, m)
    out = run()
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = run()
    dt = (time.perf_counter() - t0) / repeat
    out.numpy().astype(np.float32).tofile(out_f)
    # VmHWM: ru_maxrss would carry the high-water mark of the parent process
    with open("/proc/self/status") as f:
        hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    print("time_s=%.6f maxrss_kb=%d" % (dt, hwm), file=sys.stderr)


if __name__ == "__main__":
    main()
