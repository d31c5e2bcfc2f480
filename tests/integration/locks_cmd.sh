#!/bin/bash
# gpuflock locks: one row per card; a flock(1) holder shown with its pid as
# someone else's flock, a gpuflock exec holder as gpuflock, a Slurm step's
# slurmstepd by its job and step; --json too.
. tests/integration/lib/locktest.sh

out=$("$GF" locks --config "$CFG") || fail "locks failed"
echo "$out"
echo "$out" | grep -Eq "^0 +cpu +cpu +$L0 +free$" || fail "card 0 row wrong"
echo "$out" | grep -Eq "^1 +cpu +cpu +$L1 +free$" || fail "card 1 row wrong"

flock_holder "$L1" -x
f=$BGPID
exec_holder -s --gpu 0
g=$BGPID
wait_holder "$L0" "$g"
out=$("$GF" locks --config "$CFG") || fail "locks failed"
echo "$out"
echo "$out" | grep -Eq "^1 .*pid $f exclusive flock: sleep 600$" || fail "flock(1) holder not shown"
echo "$out" | grep -Eq "^0 .*pid $g shared gpuflock: .*gpuflock exec --config" ||
    fail "gpuflock holder not shown"

"$GF" locks --json --config "$CFG" >"$T/locks.json" || fail "locks --json failed"
/usr/bin/python3 - "$T/locks.json" "$f" "$g" "$L0" "$L1" <<'PY' || fail "JSON wrong: $(cat "$T/locks.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
f, g, l0, l1 = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
cards = {c["index"]: c for c in doc["cards"]}
assert set(cards) == {0, 1}
assert cards[0]["lock"] == l0 and cards[1]["lock"] == l1 and cards[0]["kind"] == "cpu"
h1 = cards[1]["holders"]
assert [(h["pid"], h["mode"], h["holder"]) for h in h1] == [(f, "exclusive", "flock")], h1
assert h1[0]["command"] == "sleep 600"
h0 = cards[0]["holders"]
assert [(h["pid"], h["mode"], h["holder"]) for h in h0] == [(g, "shared", "gpuflock")], h0
assert doc["bench_lock"]["holders"] == []
PY
# An exclusive exec waiting for card 0 (held shared) is announced at the
# card's fairness gate: locks lists it as a waiter.
exec_holder -x --gpu 0
w=$BGPID
poll_until "exec $w announced at the gate" holds "$L0.gate" "$w"
out=$("$GF" locks --config "$CFG") || fail "locks failed"
echo "$out"
echo "$out" | grep -Eq "^ +waiting: pid $w exclusive gpuflock: .*gpuflock exec --config .* -x --gpu 0 .*announced at the gate" ||
    fail "the announced exclusive waiter is not shown"
"$GF" locks --json --config "$CFG" | /usr/bin/python3 -c '
import json, sys
c = {c["index"]: c for c in json.load(sys.stdin)["cards"]}
w = c[0]["waiters"]
assert [(x["pid"], x["mode"]) for x in w] == [('"$w"', "exclusive")], w
assert c[1]["waiters"] == []' || fail "JSON waiters wrong"
kill_tree "$w"

# A Slurm step's slurmstepd (the SPANK plugin holds its cards there) is named
# by the job and step of its title: here a copy of flock(1) under that name
# and title stands for one (tests/integration/slurm_spank.sh has the real one).
kill_tree "$f"   # card 1 free again
cp "$(command -v flock)" "$T/slurmstepd"
bg bash -c 'exec -a "slurmstepd: [4242.7]" "$0" "$1" sleep 600' "$T/slurmstepd" "$L1"
s=$BGPID
wait_holder "$L1" "$s"
"$GF" locks --config "$CFG" | grep -q "pid $s exclusive slurm: job 4242 step 7 (slurmstepd: \[4242.7\]" ||
    fail "the Slurm step is not named: $("$GF" locks --config "$CFG")"
"$GF" locks --json --config "$CFG" | /usr/bin/python3 -c '
import json, sys
h = {c["index"]: c for c in json.load(sys.stdin)["cards"]}[1]["holders"][0]
assert h["holder"] == "slurm" and h["slurm"] == {"job": 4242, "step": "7"}, h' || fail "JSON slurm holder wrong"
expect_status 75 "$GF" exec --config "$CFG" --gpu 1 --timeout 0.2 -- true 2>"$T/err"
grep -q "held by pid $s (exclusive, Slurm job 4242 step 7: slurmstepd: \[4242.7\]" "$T/err" ||
    fail "exec does not name the Slurm step: $(cat "$T/err")"
kill_tree "$s"

expect_status 64 "$GF" locks --config "$CFG" extra 2>/dev/null
expect_status 78 "$GF" locks --config "$T/missing.yaml" 2>/dev/null
echo "locks shows flock(1) and gpuflock holders with their pids"
