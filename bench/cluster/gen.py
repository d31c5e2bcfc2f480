#!/usr/bin/python3
"""gen.py — synthetic clustering inputs for the benchmark (ours).

Writes SEG.npy (windows x 589 x 3 float32 0/1) and EMB.npy (windows x 3 x
256 float32, NaN for empty local-speaker slots) for HOURS hours: a few
speakers take turns of 1.5-8 s with short gaps or overlaps; 10 s windows
every 1 s see up to three of them in a random local order; each embedding
is its speaker's centroid plus noise. Also writes META.json with the count
of embeddings the recipe will keep (>= 20% clean frames).

usage: gen.py HOURS OUTDIR [--speakers N] [--seed S]
"""
import argparse
import json
import os

import numpy as np

STEP = 0.016875          # frame step of segmentation-3.0
FRAMES = 589             # frames per 10 s window
DIM = 256


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hours", type=float)
    ap.add_argument("outdir")
    ap.add_argument("--speakers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    total = a.hours * 3600.0
    n_frames = int(np.ceil(total / STEP)) + FRAMES + 64
    act = np.zeros((n_frames, a.speakers), dtype=bool)
    t, prev = 0.0, -1
    while t < total:
        s = int(rng.integers(a.speakers - 1))
        s = s + 1 if s >= prev else s            # another speaker than the last
        dur = rng.uniform(1.5, 8.0)
        f0, f1 = int(t / STEP), int(min(t + dur, total) / STEP)
        act[f0:f1, s] = True
        prev = s
        t += dur + rng.uniform(-0.6, 1.0)        # a gap, or an overlap
    centroids = rng.normal(0.0, 1.0, size=(a.speakers, DIM)).astype(np.float32)
    n_win = int(total) - 9                       # 10 s windows every 1 s
    seg = np.zeros((n_win, FRAMES, 3), dtype=np.float32)
    emb = np.full((n_win, 3, DIM), np.nan, dtype=np.float32)
    for c in range(n_win):
        off = int(np.rint(c / STEP))
        w = act[off:off + FRAMES]
        amount = w.sum(axis=0)
        present = [g for g in np.argsort(-amount, kind="stable")[:3] if amount[g] > 0]
        slots = rng.permutation(3)[: len(present)]
        for g, slot in zip(present, slots):
            seg[c, :, slot] = w[:, g]
            emb[c, slot] = centroids[g] + rng.normal(0.0, 0.6, size=DIM)
    single = seg.sum(axis=2, keepdims=True) == 1
    clean = (seg * single).sum(axis=1)
    kept = int(((clean >= 0.2 * FRAMES) & ~np.isnan(emb).any(axis=2)).sum())
    os.makedirs(a.outdir, exist_ok=True)
    np.save(os.path.join(a.outdir, "seg.npy"), seg)
    np.save(os.path.join(a.outdir, "emb.npy"), emb)
    with open(os.path.join(a.outdir, "meta.json"), "w") as f:
        json.dump({"hours": a.hours, "windows": n_win, "speakers": a.speakers, "kept": kept}, f)
    print(json.dumps({"hours": a.hours, "windows": n_win, "kept": kept}))


if __name__ == "__main__":
    main()
