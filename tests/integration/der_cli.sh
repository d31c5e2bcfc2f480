#!/bin/bash
# der_cli — `gpuflock der` from the command line: a perfect hypothesis, a
# relabelled one (mapping), the table and JSON forms, and its errors with
# their exit statuses and messages.
set -u
BUILD=${BUILD:-build}
G=$BUILD/bin/gpuflock
tmp=$(mktemp -d --suffix=.gf_der_cli)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

SAMPLE=../shared/data/audio/sample.rttm
if [ -r "$SAMPLE" ]; then
    cp "$SAMPLE" "$tmp/ref.rttm"
else
    printf 'SPEAKER s 1 0.5 2.0 <NA> <NA> spk1 <NA> <NA>\nSPEAKER s 1 2.0 3.0 <NA> <NA> spk2 <NA> <NA>\n' >"$tmp/ref.rttm"
fi
# The same turns under other names: DER 0 through the mapping.
awk '$1 == "SPEAKER" { $8 = "hyp_" $8 } { print }' "$tmp/ref.rttm" >"$tmp/hyp.rttm"

out=$("$G" der "$tmp/ref.rttm" "$tmp/hyp.rttm") || fail "der exited $?"
echo "$out"
echo "$out" | grep -q '^TOTAL .* 0\.00$' || fail "relabelled hypothesis should give DER 0.00"

json=$("$G" der "$tmp/ref.rttm" "$tmp/hyp.rttm" --json --collar 0.5 --skip-overlap) || fail "der --json exited $?"
/usr/bin/python3 - "$json" <<'PY' || fail "JSON output"
import json, sys
d = json.loads(sys.argv[1])
assert d["collar"] == 0.5 and d["skip_overlap"] is True, d
f = d["files"][0]
assert f["der"] == 0 and f["total"] > 0, f
assert all(v == k[len("hyp_"):] for k, v in f["mapping"].items()), f["mapping"]
assert d["all"]["der"] == 0
PY

# Half the hypothesis missing: DER > 0.
head -n 3 "$tmp/hyp.rttm" >"$tmp/part.rttm"
"$G" der "$tmp/ref.rttm" "$tmp/part.rttm" | grep -q '^TOTAL .* 0\.00$' && fail "partial hypothesis gave DER 0"

expect_status() {  # STATUS PATTERN ARGS...
    local want=$1 pat=$2; shift 2
    "$G" der "$@" >"$tmp/o" 2>"$tmp/e"
    local rc=$?
    [ "$rc" -eq "$want" ] || fail "der $* exited $rc, expected $want ($(cat "$tmp/e"))"
    grep -q -- "$pat" "$tmp/e" "$tmp/o" || fail "der $*: no '$pat' in: $(cat "$tmp/e")"
}
expect_status 0 "usage" --help
expect_status 64 "usage" "$tmp/ref.rttm"
expect_status 64 "collar" "$tmp/ref.rttm" "$tmp/hyp.rttm" --collar -1
expect_status 64 "unknown option" "$tmp/ref.rttm" "$tmp/hyp.rttm" --colar 1
expect_status 66 "missing.rttm" "$tmp/ref.rttm" "$tmp/missing.rttm"
printf 'SPEAKER f 1 0.0 1.0 <NA> <NA> a <NA> <NA>\nSPEAKER f 1 x 1.0 <NA> <NA> a <NA> <NA>\n' >"$tmp/bad.rttm"
expect_status 65 "bad.rttm:2: start 'x'" "$tmp/ref.rttm" "$tmp/bad.rttm"
printf 'SPEAKER f 1 0.0\n' >"$tmp/short.rttm"
expect_status 65 "short.rttm:1: SPEAKER line with 4 fields" "$tmp/short.rttm" "$tmp/hyp.rttm"
printf 'SPEAKER f 1 0.0 -2 <NA> <NA> a <NA> <NA>\n' >"$tmp/neg.rttm"
expect_status 65 "neg.rttm:1: negative duration" "$tmp/neg.rttm" "$tmp/hyp.rttm"
printf 'other 1 0 10\n' >"$tmp/u.uem"
expect_status 65 "no UEM span" "$tmp/ref.rttm" "$tmp/hyp.rttm" --uem "$tmp/u.uem"
printf 'other 1 0\n' >"$tmp/u2.uem"
expect_status 65 "u2.uem:1: UEM line has 3 fields" "$tmp/ref.rttm" "$tmp/hyp.rttm" --uem "$tmp/u2.uem"
echo "der cli: ok"
