#!/bin/bash
# demo.sh — tools/demo (what `make demo` runs) end to end: it makes its
# two-voice recording, diarizes it, prints the turns and a DER, and leaves
# nothing behind in its temporary folder. Skips without espeak-ng or sox.
set -u
BUILD=${BUILD:-build}
for t in espeak-ng sox soxi; do
    command -v "$t" >/dev/null || { echo "skip: $t not installed (tools/setup-deps)"; exit 77; }
done
# the demo's work folder lands in $TMPDIR: give it an empty one to watch
export TMPDIR=$(mktemp -d --suffix=.gf-demo-test)
trap 'rm -rf "$TMPDIR"' EXIT
out=$(BUILD="$BUILD" tools/demo 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: tools/demo exited $rc"; exit 1; }
echo "$out" | grep -q "== turns found" || { echo "FAIL: no turns printed"; exit 1; }
echo "$out" | grep -A3 "== DER" | grep -q "DER\|TOTAL" || { echo "FAIL: no DER printed"; exit 1; }
n=$(echo "$out" | sed -n '/== turns found/,/== reference turns/p' | grep -c SPEAKER_)
[ "$n" -gt 0 ] || { echo "FAIL: no hypothesis turns"; exit 1; }
# pulse-*: libpulse's runtime folder, made by espeak-ng where XDG_RUNTIME_DIR
# is unset and kept for the next client (not the demo's to remove)
left=$(ls -A "$TMPDIR" | grep -v '^pulse-' | wc -l)
[ "$left" = 0 ] || { echo "FAIL: the demo left its work directory: $(ls -A "$TMPDIR")"; exit 1; }
echo "ok: demo ran, $n turns, DER printed"
