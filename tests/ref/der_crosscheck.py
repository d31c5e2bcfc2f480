#!/usr/bin/python3
"""Cross-check `gpuflock der` on random RTTMs with an independent scorer.

    der_crosscheck.py GPUFLOCK TMPDIR [CASES]

Each case draws 1-3 files of random turns on a 0.1 s grid (a speaker's own
turns never overlap; different speakers do), random options (collar 0, 0.25
or 0.5 s, skip-overlap, sometimes a UEM), writes REF/HYP RTTMs (and the UEM),
runs `GPUFLOCK der --json`, and scores the same files here in another way:
on a grid of 1/40 s frames (every boundary, collar edge included, falls on
it) with the speaker mapping found by trying every one-to-one assignment.
The definitions are pyannote.metrics' (docs/der.md). Exit 1 on any mismatch
beyond 1e-6 s."""
import itertools
import json
import random
import subprocess
import sys

TICKS = 40  # frames per second


def write_rttm(path, turns):
    with open(path, "w") as f:
        for uri, spk, s, e in turns:
            f.write(f"SPEAKER {uri} 1 {s / TICKS:.3f} {(e - s) / TICKS:.3f} <NA> <NA> {spk} <NA> <NA>\n")


def random_turns(rng, uri, prefix, n_spk, length):
    turns = []
    for k in range(n_spk):
        t = rng.randrange(0, 40) * 4
        while True:
            s = t + rng.randrange(0, 30) * 4
            e = s + rng.randrange(1, 50) * 4
            if e > length:
                break
            turns.append((uri, f"{prefix}{k}", s, e))
            t = e
    rng.shuffle(turns)
    return turns


def best_mapping(cooc, hyps, refs):
    best, best_map = -1, {}
    for k in range(0, min(len(hyps), len(refs)) + 1):
        for hs in itertools.combinations(hyps, k):
            for rs in itertools.permutations(refs, k):
                v = sum(cooc.get((h, r), 0) for h, r in zip(hs, rs))
                if v > best:
                    best, best_map = v, dict(zip(hs, rs))
    # pyannote keeps only pairs that co-occur
    return {h: r for h, r in best_map.items() if cooc.get((h, r), 0) > 0}


def score_file(ref, hyp, uem, collar_ticks_half, skip_overlap):
    ends = [e for _, _, _, e in ref + hyp] + [e for _, e in (uem or [])] + [1]
    n = max(ends) + collar_ticks_half + 2
    scored = [False] * n
    if uem is not None:
        for s, e in uem:
            for i in range(max(s, 0), e):
                scored[i] = True
    elif ref or hyp:
        lo = min(s for _, _, s, _ in ref + hyp)
        hi = max(e for _, _, _, e in ref + hyp)
        for i in range(lo, hi):
            scored[i] = True
    for _, _, s, e in ref:
        for b in (s, e):
            for i in range(max(b - collar_ticks_half, 0), b + collar_ticks_half):
                scored[i] = False
    rc = [dict() for _ in range(n)]
    hc = [dict() for _ in range(n)]
    for _, spk, s, e in ref:
        for i in range(s, e):
            rc[i][spk] = rc[i].get(spk, 0) + 1
    for _, spk, s, e in hyp:
        for i in range(s, e):
            hc[i][spk] = hc[i].get(spk, 0) + 1
    if skip_overlap:
        for i in range(n):
            if sum(rc[i].values()) >= 2:
                scored[i] = False
    cooc = {}
    for i in range(n):
        if scored[i]:
            for h, a in hc[i].items():
                for r, b in rc[i].items():
                    cooc[(h, r)] = cooc.get((h, r), 0) + a * b
    refs = sorted({t[1] for t in ref})
    hyps = sorted({t[1] for t in hyp})
    m = best_mapping(cooc, hyps, refs)
    tot = miss = fa = conf = 0
    for i in range(n):
        if not scored[i]:
            continue
        nr, nh = sum(rc[i].values()), sum(hc[i].values())
        ok = sum(min(a, rc[i].get(m[h], 0)) for h, a in hc[i].items() if h in m)
        tot += nr
        miss += max(0, nr - nh)
        fa += max(0, nh - nr)
        conf += min(nr, nh) - ok
    return [x / TICKS for x in (tot, miss, fa, conf)]


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: der_crosscheck.py GPUFLOCK TMPDIR [CASES]")
    exe, tmp = argv[0], argv[1]
    cases = int(argv[2]) if len(argv) > 2 else 150
    rng = random.Random(20261130)
    fails = 0
    for case in range(cases):
        ref, hyp, uem = [], [], {}
        uris = [f"rec{k}" for k in range(rng.randint(1, 3))]
        for uri in uris:
            length = rng.randint(40, 160) * 4
            ref += random_turns(rng, uri, "R", rng.randint(0 if case % 17 == 0 else 1, 4), length)
            hyp += random_turns(rng, uri, "h", rng.randint(0 if case % 13 == 0 else 1, 5), length)
        collar = rng.choice([0.0, 0.0, 0.25, 0.5])
        skip = rng.random() < 0.3
        use_uem = rng.random() < 0.3
        present = sorted({t[0] for t in ref + hyp})
        if use_uem:
            for uri in present:
                spans = []
                for _ in range(rng.randint(1, 2)):
                    s = rng.randint(0, 100) * 4
                    spans.append((s, s + rng.randint(1, 100) * 4))
                uem[uri] = spans
        rpath, hpath, upath = f"{tmp}/ref{case}.rttm", f"{tmp}/hyp{case}.rttm", f"{tmp}/u{case}.uem"
        write_rttm(rpath, ref)
        write_rttm(hpath, hyp)
        cmd = [exe, "der", rpath, hpath, "--json", "--collar", str(collar)]
        if skip:
            cmd.append("--skip-overlap")
        if use_uem:
            with open(upath, "w") as f:
                for uri, spans in uem.items():
                    for s, e in spans:
                        f.write(f"{uri} 1 {s / TICKS:.3f} {e / TICKS:.3f}\n")
            cmd += ["--uem", upath]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"case {case}: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
            fails += 1
            continue
        got = {f["uri"]: f for f in json.loads(p.stdout)["files"]}
        if set(got) != set(present):
            print(f"case {case}: files {sorted(got)} != {present}")
            fails += 1
            continue
        half = int(round(collar * TICKS / 2))
        for uri in present:
            want = score_file([t for t in ref if t[0] == uri], [t for t in hyp if t[0] == uri],
                              uem.get(uri) if use_uem else None, half, skip)
            g = got[uri]
            have = [g["total"], g["missed_speech"], g["false_alarm"], g["confusion"]]
            if case < 4:
                print(f"case {case} {uri}: collar {collar} skip {skip} uem {use_uem}: {have}")
            if any(abs(a - b) > 1e-6 for a, b in zip(have, want)):
                print(f"case {case} file {uri} (collar {collar}, skip {skip}, uem {use_uem}): "
                      f"gpuflock total/miss/fa/conf {have}, expected {want}")
                fails += 1
    print(f"der cross-check: {cases} random cases, {fails} mismatches")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
