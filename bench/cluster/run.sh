#!/bin/bash
# run.sh — clustering benchmark: `gpuflock cluster` against the same recipe
# in numpy/scipy (reference.py, ours), side by side on synthetic inputs of
# growing length, in one run. Reports per-stage seconds (AHC, VBx, ...),
# wall time and peak memory (/usr/bin/time -v), whether both RTTMs agree,
# and ratios. Runs whose centroid-AHC distance matrix cannot fit in memory
# (n(n-1)/2 doubles for gpuflock; twice that for scipy, which keeps pdist's
# output and a working copy) are skipped and reported as such.
#
# usage: bench/cluster/run.sh [HOURS...]     (default: 1 2 4 8 16)
# from the repository root, after `make`.
set -u
cd "$(dirname "$0")/../.."
HOURS=${*:-1 2 4 8 16}
OUT=${BENCH_OUT:-bench/out/cluster}
PLDA=../shared/data/community-1/plda
PY=/usr/bin/python3
mkdir -p "$OUT"
avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
printf '%-6s %-8s %-8s %-5s | %-8s %-8s %-8s %-8s | %-8s %-8s %-8s %-8s | %-6s %-6s %s\n' \
    hours windows embs clus gf_ahc gf_vbx gf_wall gf_MB py_ahc py_vbx py_wall py_MB \
    ahc_x wall_x same_rttm
for h in $HOURS; do
    d="$OUT/${h}h"
    [ -f "$d/meta.json" ] || $PY bench/cluster/gen.py "$h" "$d" >/dev/null
    kept=$($PY -c "import json; print(json.load(open('$d/meta.json'))['kept'])")
    win=$($PY -c "import json; print(json.load(open('$d/meta.json'))['windows'])")
    need_kb=$(( kept * (kept - 1) / 2 * 8 / 1024 ))
    gf="skip"; py="skip"
    if [ $(( need_kb + 1048576 )) -lt "$avail_kb" ]; then
        /usr/bin/time -v build/bin/gpuflock cluster --segmentations "$d/seg.npy" \
            --embeddings "$d/emb.npy" --plda "$PLDA" --uri file --timings -o "$d/gf.rttm" \
            2>"$d/gf.log" && gf="ok"
    fi
    if [ $(( 2 * need_kb + 1048576 )) -lt "$avail_kb" ]; then
        /usr/bin/time -v $PY bench/cluster/reference.py "$d/seg.npy" "$d/emb.npy" "$PLDA" \
            "$d/py.rttm" --uri file 2>"$d/py.log" && py="ok"
    fi
    $PY - "$d" "$gf" "$py" "$h" "$win" "$kept" "$need_kb" "$avail_kb" <<'PYEOF'
import json, re, sys, filecmp
d, gf, py, h, win, kept, need_kb, avail_kb = sys.argv[1:]
def parse(path):
    t = json.loads([l for l in open(path) if l.startswith("{")][-1])
    txt = open(path).read()
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", txt)
    parts = [float(p) for p in m.group(1).split(":")]
    w = 0.0
    for p in parts:
        w = w * 60 + p
    t["wall"] = w
    t["mb"] = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", txt).group(1)) / 1024
    return t
g = parse(f"{d}/gf.log") if gf == "ok" else None
p = parse(f"{d}/py.log") if py == "ok" else None
f = lambda t, k, fmt="%.2f": (fmt % t[k]) if t else "-"
same = "-"
if g and p:
    same = "yes" if filecmp.cmp(f"{d}/gf.rttm", f"{d}/py.rttm", shallow=False) else "NO"
clus = g["clusters"] if g else (p["clusters"] if p else "-")
ratio = lambda k: "%.2f" % (p[k] / g[k]) if g and p and g[k] > 0 else "-"
print("%-6s %-8s %-8s %-5s | %-8s %-8s %-8s %-8s | %-8s %-8s %-8s %-8s | %-6s %-6s %s" % (
    h, win, kept, clus, f(g, "ahc_s"), f(g, "vbx_s", "%.3f"), f(g, "wall"), f(g, "mb", "%.0f"),
    f(p, "ahc_s"), f(p, "vbx_s", "%.3f"), f(p, "wall"), f(p, "mb", "%.0f"),
    ratio("ahc_s"), ratio("wall"), same))
if not g or not p:
    print("       (%s: condensed distance matrix %.1f GB; gpuflock needs 1x, scipy 2x; "
          "MemAvailable %.1f GB)" % ("skipped" if not (g or p) else "partly skipped",
                                     int(need_kb) * 1024 / 1e9, int(avail_kb) * 1024 / 1e9))
PYEOF
done
