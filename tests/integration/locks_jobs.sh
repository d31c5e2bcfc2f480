#!/bin/bash
# locks_jobs — `gpuflock locks` names the broker job behind a worker's lock:
# the real broker and workers, real jobs. /proc/locks names the worker (it
# takes each job's locks); locks asks the broker which job that is (id,
# user, command). Two shared jobs on one card are two holders, one job each;
# a two-card proof job is named on both cards and on the bench lock, held by
# one worker; without a broker locks says nothing of one and names the
# holders as /proc/locks does.
. tests/integration/lib/jobs.bash
write_config
me=$(id -un)
BG=()   # holders started here, and their children, ended with the test
trap 'for p in "${BG[@]}"; do pkill -KILL -P "$p"; kill -KILL "$p"; done 2>/dev/null; cleanup' EXIT

# running JOB...: until each is running
running() {
    local j
    for _ in $(seq 200); do
        for j in "$@"; do [ "$(job_field "$j" state)" = running ] || { sleep 0.05; continue 2; }; done
        return 0
    done
    fail "jobs $* not running: $(gf queue)"
}

# no broker: nothing said of one
mkdir -p "$T/lock"
flock -F -x "$T/lock/gpu1.lock" sleep 600 &
f=$!
BG+=("$f")
for _ in $(seq 100); do grep -q " $f " /proc/locks && break; sleep 0.05; done
gf locks >"$T/out" 2>"$T/err" || fail "locks without a broker: $(cat "$T/err")"
[ -s "$T/err" ] && fail "locks without a broker said: $(cat "$T/err")"
grep -Eq "^1 .*pid $f exclusive flock: sleep 600$" "$T/out" || fail "flock holder: $(cat "$T/out")"
kill "$f"; wait "$f" 2>/dev/null

start_broker || exit 1
a=$(gf submit -s --gpu 0 -- sleep 600) || fail "submit a"
b=$(gf submit -s --gpu 0 -- sh -c 'sleep 600; echo b') || fail "submit b"
running "$a" "$b"
wpid=$(gf workers --json | /usr/bin/python3 -c '
import json, sys
print([w["pid"] for w in json.load(sys.stdin) if w["device"] == 0][0])')
gf locks >"$T/out" 2>"$T/err" || fail "locks: $(cat "$T/err")"
cat "$T/out"
[ -s "$T/err" ] && fail "locks said: $(cat "$T/err")"
for j in "$a" "$b"; do
    [ "$(grep -c "job $j " "$T/out")" = 1 ] || fail "job $j not named once: $(cat "$T/out")"
done
grep -Eq "pid $wpid shared gpuflock: job $a \(user $me\): sleep 600 \(held by the worker of card 0\)$" \
    "$T/out" || fail "job $a: $(cat "$T/out")"
grep -Eq "pid $wpid shared gpuflock: job $b \(user $me\): sh -c sleep 600; echo b \(held by the worker of card 0\)$" \
    "$T/out" || fail "job $b: $(cat "$T/out")"
gf locks --json | /usr/bin/python3 -c '
import json, sys
doc, a, b, w, me = json.load(sys.stdin), int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
c = {c["index"]: c for c in doc["cards"]}
h = c[0]["holders"]
assert sorted(x["job"]["id"] for x in h) == [a, b], h
assert all(x["pid"] == w and x["job"]["user"] == me and x["job"]["worker_card"] == 0 for x in h), h
assert {x["job"]["id"]: x["job"]["command"] for x in h}[a] == "sleep 600", h
assert c[1]["holders"] == [] and c[0]["waiters"] == [], c
' "$a" "$b" "$wpid" "$me" || fail "JSON: $(gf locks --json)"
gf cancel "$a" "$b" || fail "cancel"
gf wait "$a" "$b" 2>/dev/null

# one job on both cards and the bench lock, all taken by one worker
p=$(gf submit --gpus 2 --proof -- sleep 600) || fail "submit --gpus 2 --proof"
running "$p"
gf locks >"$T/out" 2>"$T/err" || fail "locks: $(cat "$T/err")"
cat "$T/out"
for row in "^0 " "^1 " "^bench lock "; do
    grep -Eq "${row}.* exclusive gpuflock: job $p \(user $me\): sleep 600 \(held by the worker of card [01]\)$" \
        "$T/out" || fail "job $p not named on '$row': $(cat "$T/out")"
done
[ "$(grep -o "held by the worker of card [01]" "$T/out" | sort -u | wc -l)" = 1 ] ||
    fail "one worker holds the three: $(cat "$T/out")"
gf locks --json | /usr/bin/python3 -c '
import json, sys
doc, p = json.load(sys.stdin), int(sys.argv[1])
rows = doc["cards"] + [doc["bench_lock"]]
assert all([x["job"]["id"] for x in r["holders"]] == [p] for r in rows), rows
' "$p" || fail "JSON: $(gf locks --json)"

# a holder the broker does not know stays as /proc/locks has it
gf cancel "$p"
gf wait "$p" 2>/dev/null
"$GF" exec --config "$CFG" -s --gpu 1 -- sleep 600 &
exec_pid=$!
BG+=("$exec_pid")
for _ in $(seq 100); do grep -q " $exec_pid " /proc/locks && break; sleep 0.05; done
gf locks >"$T/out" || fail "locks"
grep -Eq "^1 .*pid $exec_pid shared gpuflock: .*gpuflock exec --config" "$T/out" ||
    fail "exec holder: $(cat "$T/out")"
gf locks --json | /usr/bin/python3 -c '
import json, sys
h = {c["index"]: c for c in json.load(sys.stdin)["cards"]}[1]["holders"]
assert [x["job"] for x in h] == [None], h' || fail "exec holder in JSON"
echo "ok: locks names the broker job behind a worker's lock (shared, multi-card, bench), quietly without a broker"
