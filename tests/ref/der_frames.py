"""der_frames — diarization error rate of HYP.rttm against REF.rttm on a
10 ms frame grid (no collar, overlap scored), speakers mapped one to one to
maximise agreement (exhaustive over the
mappings: fine for the few speakers of tests and the demo; numpy only). A fallback scorer for tests and the demo
where `gpuflock der` is not built in; prints "DER 0.1234 (miss .. fa ..
confusion .. of .. s)". Usage: der_frames.py REF.rttm HYP.rttm"""
import itertools
import sys

import numpy as np

STEP = 0.01


def load(path):
    turns = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if not p or p[0] != "SPEAKER":
                continue
            turns.append((float(p[3]), float(p[3]) + float(p[4]), p[7]))
    return turns


def grid(turns, n, names):
    m = np.zeros((n, len(names)), dtype=bool)
    for s, e, spk in turns:
        m[int(round(s / STEP)):int(round(e / STEP)), names.index(spk)] = True
    return m


def main(argv):
    ref, hyp = load(argv[1]), load(argv[2])
    end = max([e for _, e, _ in ref + hyp] + [0.0])
    n = int(round(end / STEP)) + 1
    rn = sorted({t[2] for t in ref})
    hn = sorted({t[2] for t in hyp})
    r, h = grid(ref, n, rn), grid(hyp, n, hn)
    nr, nh = r.sum(1), h.sum(1)
    total = nr.sum()
    miss = np.maximum(nr - nh, 0).sum()
    fa = np.maximum(nh - nr, 0).sum()
    match = 0
    if rn and hn:
        co = r.astype(np.int64).T @ h.astype(np.int64)
        if len(rn) > len(hn):
            co = co.T
        rows = range(co.shape[0])
        match = max(sum(co[i, j] for i, j in zip(rows, perm))
                    for perm in itertools.permutations(range(co.shape[1]), co.shape[0]))
    conf = np.minimum(nr, nh).sum() - match
    der = (miss + fa + conf) / total if total else 0.0
    print("DER %.4f (miss %.2f s, false alarm %.2f s, confusion %.2f s, of %.2f s speech)"
          % (der, miss * STEP, fa * STEP, conf * STEP, total * STEP))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
