#!/bin/bash
# plan_cli — `gpuflock evidence check` and `gpuflock plan` from the outside:
# exit statuses, messages naming file and line, text and JSON plans for a
# described card, force-library; and `gpuflock version`, which the front
# answers itself, saying what the full program says.
set -u
BUILD=${BUILD:-build}
GF=$BUILD/bin/gpuflock
fail() { echo "FAIL: $*"; exit 1; }

v=$("$GF" version) || fail "version"
[ "$v" = "$("$BUILD/bin/gpuflock-cli" version)" ] || fail "version: front '$v' against the full CLI's"
echo "$v" | grep -qE "^gpuflock [0-9]+\.[0-9]+\.[0-9]+ \(protocol [0-9]+\)$" || fail "version: $v"

"$GF" evidence check evidence/ >/dev/null || fail "the project's evidence/ is rejected"
"$GF" evidence check /nonexistent/evidence 2>/dev/null; [ $? -eq 66 ] || fail "missing dir not 66"

dir=$("$BUILD/tests/helpers/evidence_fixture") || fail "fixture"
trap 'rm -rf "$dir"' EXIT
out=$("$GF" evidence check "$dir") || fail "fixture evidence rejected"
echo "$out" | grep -q "1 binding, 1 proof (1 measured)" || fail "summary: $out"

# A broken table: exit 65, the problem names file, line and binding.
sed -i 's/batch: 32/batch: 16/' "$dir/bindings/lstm.yaml"
err=$("$GF" evidence check "$dir" 2>&1 >/dev/null); rc=$?
[ $rc -eq 65 ] || fail "broken evidence: exit $rc"
echo "$err" | grep -qE "bindings/lstm.yaml:[0-9]+: binding 'lstm-h200': proof: batch 16" ||
    fail "message: $err"
"$GF" plan --card "NVIDIA H200:9.0:132" --evidence "$dir" >/dev/null 2>&1
[ $? -eq 65 ] || fail "plan on rejected evidence must fail with 65"
sed -i 's/batch: 16/batch: 32/' "$dir/bindings/lstm.yaml"

# The plan of a described card: one line per boundary x batch x math.
n_boundaries=47
plan=$("$GF" plan --card "NVIDIA H200:9.0:132" --evidence "$dir") || fail "plan"
lines=$(echo "$plan" | grep -cE "^[a-z].* (1|8|32) (fp32|tf32) ")
[ "$lines" -eq $((n_boundaries * 6)) ] || fail "plan has $lines routes"
# This build embeds no lstm module with the binding's (made-up) hash: library, and
# it says why (no lstm module at all without nvcc; another hash with it).
echo "$plan" | grep -E "^lstm.stack +32 fp32" | grep -qE "no-module|module-mismatch" ||
    fail "lstm reason: $(echo "$plan" | grep -E '^lstm.stack')"
echo "$plan" | grep -E "^lstm.stack +8 fp32" | grep -q "no-proof" || fail "lstm batch 8"
"$GF" plan --card "NVIDIA H200:9.0:114" --evidence "$dir" | grep -E "^lstm.stack +32 fp32" |
    grep -q "no-binding" || fail "another SM count is another card"

GPUFLOCK_FORCE_LIBRARY=1 "$GF" plan --card "NVIDIA H200:9.0:132" --evidence "$dir" --json \
    >"$dir/plan.json" || fail "plan --json"
/usr/bin/python3 - "$dir/plan.json" "$n_boundaries" <<'PY' || fail "json plan"
import json, sys
p = json.load(open(sys.argv[1]))
routes = p["routes"]
assert len(routes) == int(sys.argv[2]) * 6, len(routes)
assert p["force_library"] is True and p["card"]["sms"] == 132 and p["card"]["described"]
assert all(r["route"] == "library" and r["why"] == "force-library" for r in routes)
PY

"$GF" plan --card "NVIDIA H200" 2>/dev/null; [ $? -eq 64 ] || fail "bad --card not 64"
"$GF" plan --gpu 0 --card "NVIDIA H200:9.0:132" 2>/dev/null; [ $? -eq 64 ] || fail "both not 64"
"$GF" plan --card "NVIDIA H200:9.0:132" --evidence /nonexistent 2>/dev/null
[ $? -eq 66 ] || fail "missing evidence not 66"
# A configured card: CPU cards are planned too, all on the library route.
cpu=$("$GF" plan --gpu 1 --config config/cpu2.yaml) || fail "plan --gpu 1 (cpu card)"
echo "$cpu" | grep -q "^card: *cpu" || fail "cpu card: $cpu"
[ "$(echo "$cpu" | grep -c " not-cuda ")" -eq $((n_boundaries * 6)) ] || fail "cpu routes"
"$GF" plan --gpu 7 --config config/cpu2.yaml 2>/dev/null; [ $? -eq 69 ] || fail "no card 7 not 69"
"$GF" plan --gpu 0 --config /nonexistent.yaml 2>/dev/null; [ $? -eq 78 ] || fail "bad config not 78"
echo "ok"
