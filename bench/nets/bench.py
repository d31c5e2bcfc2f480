"""bench/nets — gpuflock's CPU networks against the PyTorch reference of the
same networks, side by side in one run, on 1 and 2 threads.

  /usr/bin/python3 bench/nets/bench.py [--build build] [--windows 4] [--rounds 3]

Random-but-sensible weights (tests/ref/gfnets.py) in our safetensors format,
speech-like audio, its fbank, three masks per window. Each measurement is a
fresh process (so peak RSS is that of the network alone, the Python
interpreter and torch included for the reference); rounds alternate between
the two sides and the best round counts, so that load from other processes
hurts both sides alike. Prints a Markdown table: ms per window, real-time
factor (a 10 s window every 1 s: time per window / 1 s of audio), peak RSS,
and the speed ratio torch/ours (above 1: ours is faster)."""
import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "ref"))
import gfnets  # noqa: E402


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench: %s failed:\n%s" % (" ".join(cmd), p.stderr))
    m = re.search(r"time_s=([0-9.]+) maxrss_kb=([0-9]+)", p.stderr)
    return float(m.group(1)), int(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    B, S = args.windows, 3
    helper = os.path.join(args.build, "tests", "helpers", "nets_run")
    torch_run = [sys.executable, os.path.join(HERE, "torch_run.py")]
    work = tempfile.mkdtemp(prefix="gf_bench_nets_")
    seg_m, emb_m = os.path.join(work, "seg.safetensors"), os.path.join(work, "emb.safetensors")
    gfnets.write_safetensors(seg_m, gfnets.seg_random_weights(1))
    gfnets.write_safetensors(emb_m, gfnets.emb_random_weights(2))
    wave = gfnets.random_audio(B, 3)
    wave_f, fb_f, m_f = (os.path.join(work, n) for n in ("wave.f32", "fbank.f32", "masks.f32"))
    wave.tofile(wave_f)
    np.stack([gfnets.fbank_features(w) for w in wave]).tofile(fb_f)
    gfnets.random_masks(B, 4, S).tofile(m_f)
    out = os.path.join(work, "out.f32")
    rep = str(args.repeat)

    cases = []
    for threads in (1, 2):
        th = str(threads)
        cases.append(("fbank (kernels/fbank/fbank_cpu vs torchaudio)", threads,
                      [helper, "fbank", "-", wave_f, str(B), out, th, rep],
                      torch_run + ["fbank", "-", wave_f, str(B), out, th, rep]))
        cases.append(("segmentation", threads,
                      [helper, "seg", seg_m, wave_f, str(B), out, th, rep],
                      torch_run + ["seg", seg_m, wave_f, str(B), out, th, rep]))
        cases.append(("embedding (trunk + 3 pools)", threads,
                      [helper, "emb", emb_m, fb_f, str(B), m_f, str(S), out, th, rep],
                      torch_run + ["emb", emb_m, fb_f, str(B), m_f, str(S), out, th, rep]))
    best = {}
    for r in range(args.rounds):
        for name, threads, ours, ref in cases:
            for side, cmd in (("gpuflock", ours), ("torch", ref)):
                t, rss = run(cmd)
                k = (name, threads, side)
                old = best.get(k)
                best[k] = (min(t, old[0]) if old else t, max(rss, old[1]) if old else rss)
    print("%d windows per batch, best of %d rounds of %d runs; %s, %s, torch %s" % (
        B, args.rounds, args.repeat, platform.machine(), platform.platform(),
        __import__("torch").__version__))
    print()
    print("| network | threads | gpuflock ms/window | torch ms/window | speed ratio torch/gpuflock "
          "| gpuflock RTF | torch RTF | gpuflock peak RSS | torch peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, threads, _, _ in cases:
        o, t = best[(name, threads, "gpuflock")], best[(name, threads, "torch")]
        print("| %s | %d | %.1f | %.1f | %.2f | %.3f | %.3f | %.0f MB | %.0f MB |" % (
            name, threads, 1e3 * o[0] / B, 1e3 * t[0] / B, t[0] / o[0], o[0] / B, t[0] / B,
            o[1] / 1024, t[1] / 1024))


if __name__ == "__main__":
    main()
