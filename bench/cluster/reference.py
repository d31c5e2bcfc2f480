#!/usr/bin/python3
"""reference.py — the community-1 clustering recipe in numpy/scipy (ours).

The comparison point for bench/cluster: the same stages as gpuflock's
diar/ (speaker counting, embedding filter, centroid AHC with scipy's
linkage/fcluster, x-vector transform + PLDA with scipy.linalg.eigh, VBx,
constrained assignment with linear_sum_assignment, reconstruction and
turns), written from the recipe's description with the libraries a Python
user would reach for. Prints one JSON line of stage timings on stderr and
writes RTTM.

usage: reference.py SEG.npy EMB.npy PLDA_DIR OUT.rttm [--uri NAME]
"""
import argparse
import json
import sys
import time

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.linalg import eigh
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.special import logsumexp, softmax

CHUNK_DUR, CHUNK_STEP = 10.0, 1.0
FR_DUR, FR_STEP = 0.0619375, 0.016875


def closest(t, start, dur, step):
    return int(np.rint((t - start - 0.5 * dur) / step))


def overlap_add(scores, average):
    """scores: chunks x frames x classes (NaN missing) -> total x classes f32."""
    n_c, n_f, n_k = scores.shape
    total = closest(CHUNK_DUR + (n_c - 1) * CHUNK_STEP + 0.5 * FR_DUR, 0.0, FR_DUR, FR_STEP) + 1
    acc = np.zeros((total, n_k), dtype=np.float32)
    cnt = np.zeros((total, n_k), dtype=np.float32)
    seen = np.zeros((total, n_k), dtype=bool)
    for c in range(n_c):
        o = closest(c * CHUNK_STEP + 0.5 * FR_DUR, 0.0, FR_DUR, FR_STEP)
        s = scores[c]
        m = ~np.isnan(s)
        acc[o:o + n_f] += np.where(m, s, 0.0)
        cnt[o:o + n_f] += m
        seen[o:o + n_f] |= m
    out = acc / np.maximum(cnt, np.float32(1e-12)) if average else acc
    out[~seen] = 0.0
    return out


def plda_model(d):
    x = np.load(f"{d}/xvec_transform.npz")
    p = np.load(f"{d}/plda.npz")
    tr, psi = p["tr"], p["psi"]
    within = np.linalg.inv(tr.T @ tr)
    between = np.linalg.inv((tr.T / psi) @ tr)
    w, v = eigh(between, within)
    return x["mean1"], x["mean2"], x["lda"], p["mu"], v.T[::-1], w[::-1]


def l2(m):
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def vbx(fea, phi, init, fa=0.07, fb=0.8, iters=20, smooth=7.0):
    n, d = fea.shape
    k = init.max() + 1
    gamma = softmax(np.eye(k)[init] * smooth, axis=1)
    pi = np.full(k, 1.0 / k)
    g = -0.5 * (np.sum(fea ** 2, axis=1, keepdims=True) + d * np.log(2 * np.pi))
    rho = fea * np.sqrt(phi)
    prev = None
    for it in range(iters):
        inv_l = 1.0 / (1 + fa / fb * gamma.sum(0, keepdims=True).T * phi)
        alpha = fa / fb * inv_l * (gamma.T @ rho)
        logp = fa * (rho @ alpha.T - 0.5 * (inv_l + alpha ** 2) @ phi + g)
        lpi = np.log(pi + 1e-8)
        lpx = logsumexp(logp + lpi, axis=-1)
        gamma = np.exp(logp + lpi - lpx[:, None])
        pi = gamma.sum(0) / gamma.sum()
        elbo = lpx.sum() + fb * 0.5 * np.sum(np.log(inv_l) - inv_l - alpha ** 2 + 1)
        if it > 0 and elbo - prev < 1e-4:
            break
        prev = elbo
    return gamma, pi


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("seg")
    ap.add_argument("emb")
    ap.add_argument("plda")
    ap.add_argument("out")
    ap.add_argument("--uri", default="file")
    a = ap.parse_args()
    seg = np.load(a.seg)
    emb = np.load(a.emb)
    n_c, n_f, n_s = seg.shape
    t = {}

    t0 = time.perf_counter()
    count = np.rint(overlap_add(seg.sum(axis=2, keepdims=True), True)).astype(np.uint8)[:, 0]
    t["count_s"] = time.perf_counter() - t0

    single = seg.sum(axis=2, keepdims=True) == 1
    clean = (seg * single).sum(axis=1)
    ci, si = np.where((clean >= 0.2 * n_f) & ~np.isnan(emb).any(axis=2))
    train = emb[ci, si]

    t0 = time.perf_counter()
    z = linkage(l2(train), method="centroid", metric="euclidean")
    ahc = fcluster(z, 0.6, criterion="distance") - 1
    _, ahc = np.unique(ahc, return_inverse=True)
    t["ahc_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    mean1, mean2, lda, mu, rot, phi = plda_model(a.plda)
    xv = np.sqrt(lda.shape[1]) * l2((np.sqrt(lda.shape[0]) * l2(train - mean1)) @ lda - mean2)
    fea = (xv - mu) @ rot.T
    t["plda_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    gamma, pi = vbx(fea, phi, ahc)
    t["vbx_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    w = gamma[:, pi > 1e-7]
    cent = (w.T @ train) / w.sum(0)[:, None]
    soft = 2 - cdist(emb.reshape(-1, emb.shape[2]), cent, metric="cosine").reshape(n_c, n_s, -1)
    inactive = seg.sum(axis=1) == 0
    soft[inactive] = soft.min() - 1.0
    soft = np.nan_to_num(soft, nan=np.nanmin(soft))
    hard = np.full((n_c, n_s), -2, dtype=np.int8)
    for c in range(n_c):
        rows, cols = linear_sum_assignment(soft[c], maximize=True)
        hard[c, rows] = cols
    hard[inactive] = -2
    t["assign_s"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    k = int(hard.max()) + 1
    cs = np.full((n_c, n_f, k), np.nan, dtype=np.float32)
    for c in range(n_c):
        for j in set(hard[c].tolist()) - {-2}:
            cs[c, :, j] = seg[c][:, hard[c] == j].max(axis=1)
    act = overlap_add(cs, False)
    width = max(k, int(count.max()))
    act = np.pad(act, ((0, 0), (0, width - k)))
    order = np.argsort(-act, axis=1, kind="stable")
    diar = np.zeros_like(act)
    for tt in range(act.shape[0]):
        diar[tt, order[tt, :count[tt]]] = 1.0
    mids = np.arange(diar.shape[0]) * FR_STEP + 0.5 * FR_DUR
    turns = []
    for j in range(width):
        col = diar[:, j]
        on = col[0] > 0.5
        start = mids[0]
        for i in range(1, len(col)):
            if on and col[i] < 0.5:
                turns.append((start, mids[i], j))
                on = False
            elif not on and col[i] > 0.5:
                start, on = mids[i], True
        if on:
            turns.append((start, mids[-1], j))
    turns.sort()
    names = {j: f"SPEAKER_{i:02d}" for i, j in enumerate(sorted({j for _, _, j in turns}))}
    t["reconstruct_s"] = time.perf_counter() - t0
    with open(a.out, "w") as f:
        for s, e, j in turns:
            f.write(f"SPEAKER {a.uri} 1 {s:.6f} {e - s:.6f} <NA> <NA> {names[j]} <NA> <NA>\n")
    t.update(windows=n_c, embeddings=int(len(train)), ahc_clusters=int(ahc.max() + 1),
             clusters=int(w.shape[1]), turns=len(turns))
    print(json.dumps(t), file=sys.stderr)


if __name__ == "__main__":
    main()
