#!/usr/bin/python3
"""Compare our features with the float32 reference, and both with the same
reference computed in float64.

    f32_compare.py NAME OURS.f32 REF.f32 REF64.f64 COLS TOL

Passes when every element is within TOL of the float32 reference. The
float64 run is printed beside it as the yardstick: how far each float32
computation (ours, the reference's) is from exact.
Prints the largest differences and where; exit 1 on failure."""
import sys

import numpy as np


def main(argv):
    if len(argv) != 6:
        sys.exit("usage: f32_compare.py NAME OURS.f32 REF.f32 REF64.f64 COLS TOL")
    name, cols, tol = argv[0], int(argv[4]), float(argv[5])
    a = np.fromfile(argv[1], dtype="<f4").astype(np.float64)
    b = np.fromfile(argv[2], dtype="<f4").astype(np.float64)
    c = np.fromfile(argv[3], dtype="<f8")
    if not (a.size == b.size == c.size) or a.size % cols:
        print(f"{name}: FAIL sizes differ: ours {a.size}, ref32 {b.size}, ref64 {c.size} values")
        return 1
    a, b, c = a.reshape(-1, cols), b.reshape(-1, cols), c.reshape(-1, cols)
    d32, d64, r = np.abs(a - b), np.abs(a - c), np.abs(b - c)
    bad = d32 > tol
    i = np.unravel_index(np.argmax(d32), d32.shape)
    ok = not bad.any()
    print(f"{name}: {'ok' if ok else 'FAIL'} {a.shape[0]} frames; max |ours-ref32| {d32.max():.2e} "
          f"at frame {i[0]} bin {i[1]} (ref32 vs ref64 there {r[i]:.2e}); max |ours-ref64| "
          f"{d64.max():.2e}; max |ref32-ref64| {r.max():.2e}; elements over {tol:g} vs ref32: "
          f"{int(bad.sum())} of {d32.size}")
    if not ok:
        j = np.argwhere(bad)[:5]
        for f, k in j:
            print(f"  frame {f} bin {k}: ours {a[f, k]:.6f} ref32 {b[f, k]:.6f} ref64 {c[f, k]:.6f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
