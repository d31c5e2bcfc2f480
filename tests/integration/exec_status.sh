#!/bin/bash
# gpuflock exec: exit statuses (the command's own, 128+N, 64 usage, 78
# config, 127 not found), the environment naming the cards, --any, and the
# lock living as long as any process of the job.
. tests/integration/lib/locktest.sh
X=("$GF" exec --config "$CFG")

expect_status 0 "${X[@]}" -- true
expect_status 3 "${X[@]}" -- sh -c 'exit 3'
expect_status 137 "${X[@]}" -- sh -c 'kill -KILL $$'
expect_status 127 "${X[@]}" -- gf-no-such-command 2>/dev/null

# Usage errors: 64.
expect_status 64 "${X[@]}" 2>/dev/null
expect_status 64 "${X[@]}" --gpu 0 2>/dev/null
expect_status 64 "${X[@]}" --gpu 0,x -- true 2>/dev/null
expect_status 64 "${X[@]}" --gpu 0,0 -- true 2>/dev/null
expect_status 64 "${X[@]}" --gpu 7 -- true 2>/dev/null
expect_status 64 "${X[@]}" -x -s -- true 2>/dev/null
expect_status 64 "${X[@]}" --gpu 0 --any -- true 2>/dev/null
expect_status 64 "${X[@]}" --timeout soon -- true 2>/dev/null
expect_status 64 "${X[@]}" --no-such-option -- true 2>/dev/null
expect_status 0 "${X[@]}" --help >/dev/null

# Configuration errors: 78, naming file, line and key.
printf 'devices:\n  - {index: 0, kind: cpu, lock: %s}\n  - {index: 0, kind: cpu, lock: %s}\n' \
    "$L0" "$L1" >"$T/dup.yaml"
expect_status 78 "$GF" exec --config "$T/dup.yaml" -- true 2>"$T/err"
grep -q "$T/dup.yaml:3: key 'devices\[1\].index': duplicate device index 0" "$T/err" ||
    fail "config error not named: $(cat "$T/err")"
printf 'run_dir: /tmp\nrundir: /tmp\n' >"$T/unknown.yaml"
GPUFLOCK_CONFIG="$T/unknown.yaml" expect_status 78 "$GF" exec -- true 2>"$T/err"
grep -q "unknown.yaml:2: key 'rundir': unknown key" "$T/err" || fail "$(cat "$T/err")"
expect_status 78 "$GF" exec --config "$T/missing.yaml" -- true 2>/dev/null
printf 'devices: []\n' >"$T/nocards.yaml"   # no card at all: nothing --any could take
expect_status 78 "$GF" exec --config "$T/nocards.yaml" -- true 2>/dev/null
# $GPUFLOCK_CONFIG is used when --config is absent.
GPUFLOCK_CONFIG="$CFG" expect_status 0 "$GF" exec --gpu 1 -- sh -c '[ "$GPUFLOCK_LOCK_FILE" = "$0" ]' "$L1"

# The environment: one card, then two.
"${X[@]}" --gpu 1 -- env >"$T/env1"
grep -qx "CUDA_VISIBLE_DEVICES=1" "$T/env1" || fail "CUDA_VISIBLE_DEVICES: $(grep CUDA "$T/env1")"
grep -qx "CUDA_DEVICE_ORDER=PCI_BUS_ID" "$T/env1" || fail "CUDA_DEVICE_ORDER missing"
grep -qx "GPUFLOCK_DEVICE=1" "$T/env1" || fail "GPUFLOCK_DEVICE missing"
grep -qx "GPUFLOCK_LOCK_FILE=$L1" "$T/env1" || fail "GPUFLOCK_LOCK_FILE missing"
"${X[@]}" -s --gpu 1,0 -- env >"$T/env2"
grep -qx "CUDA_VISIBLE_DEVICES=0,1" "$T/env2" || fail "two cards: $(grep CUDA "$T/env2")"
grep -qx "GPUFLOCK_LOCK_FILE=$L0,$L1" "$T/env2" || fail "two lock files: $(grep GPUFLOCK "$T/env2")"

# --any (also the default): the first free card, else whichever frees first.
flock_holder "$L0" -x
f0=$BGPID
[ "$("${X[@]}" --any -- sh -c 'echo $GPUFLOCK_DEVICE')" = 1 ] || fail "--any did not skip busy card 0"
[ "$("${X[@]}" -- sh -c 'echo $GPUFLOCK_DEVICE')" = 1 ] || fail "default is not --any"
flock_holder "$L1" -x
f1=$BGPID
bg "${X[@]}" --any -- sh -c 'echo $GPUFLOCK_DEVICE > "$0"' "$T/any" 2>"$T/anyerr"
w=$BGPID
poll_until "the --any waiter to name both holders" \
    sh -c "grep -q 'card 0 .* held by pid $f0' '$T/anyerr' && grep -q 'card 1 .* held by pid $f1' '$T/anyerr'"
kill "$f1"; wait "$f1" 2>/dev/null
wait "$w" || fail "--any waiter failed"
[ "$(cat "$T/any")" = 1 ] || fail "--any took card $(cat "$T/any"), expected the freed card 1"
kill "$f0"; wait "$f0" 2>/dev/null

# The lock lives as long as any process of the job: a background child that
# outlives the command still holds the card.
"${X[@]}" --gpu 0 -- sh -c 'sleep 600 >/dev/null 2>&1 & echo $! > "$0"' "$T/orphan" ||
    fail "exec with a background child failed"
o=$(cat "$T/orphan")
BG_PIDS+=("$o")
expect_status 1 flock -n -s "$L0" true
kill -KILL "$o"
poll_until "the orphan to die and free the card" flock -n -x "$L0" true
echo "exit statuses, environment, --any and inherited locks as documented"
