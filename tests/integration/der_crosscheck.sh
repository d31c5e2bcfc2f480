#!/bin/bash
# der_crosscheck — `gpuflock der` against an independent brute-force scorer
# (tests/ref/der_crosscheck.py: frame grid, every one-to-one mapping tried)
# on random RTTMs with random collar, skip-overlap and UEM options.
set -u
BUILD=${BUILD:-build}
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "skip: $PY not found"; exit 77; }
tmp=$(mktemp -d --suffix=.gf_der_cross)
trap 'rm -rf "$tmp"' EXIT
"$PY" tests/ref/der_crosscheck.py "$BUILD/bin/gpuflock" "$tmp" 150
