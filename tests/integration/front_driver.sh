#!/bin/bash
# front_driver — which program serves `exec` and `locks`. gpuflock runs them
# itself on declared cpu cards; where it is the static (musl) front, it hands
# them to gpuflock-exec, beside it, when the CUDA driver is needed (a card of
# kind cuda, or no cards declared), and that one says plainly when the
# driver is missing. Shown from the outside: in a copy of the programs
# without gpuflock-exec, only the driver's cases fail, naming the program
# they looked for. The job commands never need it.
set -u
BUILD=${BUILD:-build}
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d --suffix=.gf-front)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/lock"
cp "$BUILD/bin/gpuflock" "$BUILD/bin/gpuflock-exec" "$T/bin/"
GF=$T/bin/gpuflock
printf 'run_dir: %s/run\nstate_dir: %s/state\nbench_lock: %s/lock/bench.lock\ndevices:\n  - {index: 0, kind: cpu, lock: %s/lock/c0.lock}\n' \
    "$T" "$T" "$T" "$T" > "$T/cpu.yaml"
printf 'run_dir: %s/run\nstate_dir: %s/state\nbench_lock: %s/lock/bench.lock\ndevices:\n  - {index: 0, kind: cuda, lock: %s/lock/g0.lock}\n' \
    "$T" "$T" "$T" "$T" > "$T/cuda.yaml"
printf 'run_dir: %s/run\nstate_dir: %s/state\nbench_lock: %s/lock/bench.lock\n' "$T" "$T" "$T" > "$T/found.yaml"
static=no
ldd "$GF" >/dev/null 2>&1 || static=yes
echo "gpuflock: $( [ $static = yes ] && echo static || echo dynamic )"

# Both programs present: cpu cards run; a cuda card without a driver is a
# clear 69 (this machine has no CUDA driver, or no card 0 of kind cuda that
# matches; either way not a crash and no command run).
out=$("$GF" exec --config "$T/cpu.yaml" --gpu 0 -- sh -c 'echo ran:$CUDA_VISIBLE_DEVICES' 2>&1) || fail "exec on a cpu card: $out"
[ "$out" = "ran:0" ] || fail "exec on a cpu card printed '$out'"
"$GF" locks --config "$T/cpu.yaml" | grep -q "c0.lock" || fail "locks on a cpu card"
if ! [ -e /dev/nvidiactl ]; then
    out=$("$GF" exec --config "$T/cuda.yaml" --gpu 0 -- touch "$T/ran" 2>&1); rc=$?
    [ $rc -eq 69 ] || fail "exec on a cuda card without a driver: exit $rc ($out)"
    echo "$out" | grep -q "CUDA driver" || fail "exec on a cuda card: no word of the driver: $out"
    [ -e "$T/ran" ] && fail "the command ran without its card"
    "$GF" locks --config "$T/cuda.yaml" | grep -q "unknown: CUDA driver" || fail "locks on a cuda card"
else
    echo "skip: exec and locks on a cuda card without a driver: this machine has one (/dev/nvidiactl)"
fi

# Without gpuflock-exec: what the front serves itself still works.
rm "$T/bin/gpuflock-exec"
out=$("$GF" exec --config "$T/cpu.yaml" --gpu 0 -- echo ran 2>&1) || fail "exec on a cpu card needed gpuflock-exec: $out"
"$GF" locks --config "$T/cpu.yaml" >/dev/null || fail "locks on a cpu card needed gpuflock-exec"
"$GF" submit --config "$T/found.yaml" -- true >/dev/null 2>"$T/err"; rc=$?
[ $rc -eq 69 ] && grep -q "no broker is running" "$T/err" || fail "submit with cards left to be found: exit $rc, $(cat "$T/err")"
if [ $static = yes ]; then
    for cfg in cuda found; do
        out=$("$GF" exec --config "$T/$cfg.yaml" --gpu 0 -- touch "$T/ran" 2>&1) && fail "exec ($cfg) ran without gpuflock-exec"
        echo "$out" | grep -q "gpuflock-exec" || fail "exec ($cfg): the message does not name gpuflock-exec: $out"
        out=$("$GF" locks --config "$T/$cfg.yaml" 2>&1) && fail "locks ($cfg) ran without gpuflock-exec"
        echo "$out" | grep -q "gpuflock-exec" || fail "locks ($cfg): $out"
    done
    [ -e "$T/ran" ] && fail "a command ran"
fi
echo "ok: exec and locks served by the right program (front static: $static)"
