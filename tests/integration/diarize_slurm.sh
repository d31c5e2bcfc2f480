#!/bin/bash
# gpuflock diarize --slurm on a private single-node Slurm (tests/integration/
# lib/slurm.bash; weight-free mode, no model files): a folder of recordings
# (a subfolder too, with -r) diarized by one job array gives RTTMs
# byte-identical to --local's, under the same names; the job id is printed
# and each file's completion followed. With the gpuflock SPANK plugin
# loaded, the tasks wait for their cards, held here by flock(1); one task
# cancelled by scancel meanwhile leaves its files, which the command names
# (exit 65); a re-run with --skip-existing completes the set; a task
# requeued (scontrol requeue) goes on from its checkpoint. Bad values of
# the Slurm options are refused before anything is submitted.
# Skipped (77) where Slurm is not installed, or not as root.
set -uo pipefail
. tests/integration/lib/slurm.bash
BUILD=${BUILD:-build}
G="$PWD/$BUILD/bin/gpuflock"
SO="$PWD/$BUILD/lib/slurm/gpuflock_spank.so"
A=../shared/data/audio
slurm_available || { echo "skip: diarize_slurm: Slurm is not installed (tools/setup-deps)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "skip: diarize_slurm: a private Slurm needs root"; exit 77; }
[ -f "$A/sample.wav" ] || { echo "skip: diarize_slurm: no $A/sample.wav"; exit 77; }
T=$(mktemp -d --suffix=.gf-it)
chmod 755 "$T"
S="$T/slurm"
HOLD=()
cleanup() {
    [ ${#HOLD[@]} -gt 0 ] && kill "${HOLD[@]}" 2>/dev/null
    slurm_stop "$S"
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# the Slurm job id a --slurm run in the background prints into $T/NAME.out
# (20 s at most)
job_id_in() {
    local id
    for _ in $(seq 200); do
        id=$(sed -n 's/^Slurm job \([0-9]*\): .*/\1/p' "$T/$1.out" | head -1)
        [ -n "$id" ] && { echo "$id"; return 0; }
        sleep 0.1
    done
    return 1
}

mkdir -p "$T/in/sub" "$T/no-models" "$T/locks"
for n in a b c d; do cp "$A/sample.wav" "$T/in/$n.wav"; done
sox "$A/sample.wav" "$T/in/sub/e.wav" trim 0 20 2>/dev/null || cp "$A/sample.wav" "$T/in/sub/e.wav"
cat >"$T/gf.yaml" <<YAML
bench_lock: $T/locks/bench.lock
devices:
  - {index: 0, kind: cpu, lock: $T/locks/gpu0.lock}
  - {index: 1, kind: cpu, lock: $T/locks/gpu1.lock}
  - {index: 2, kind: cpu, lock: $T/locks/gpu2.lock}
YAML
touch "$T/locks/gpu0.lock" "$T/locks/gpu1.lock" "$T/locks/gpu2.lock"
OPTS=(--config "$T/gf.yaml" --models "$T/no-models" -r --max-speakers 4 --clustering-threshold 0.55)

# The reference: --local.
"$G" diarize --local "${OPTS[@]}" --out "$T/ref" "$T/in" >/dev/null 2>"$T/ref.err" ||
    fail "--local failed: $(cat "$T/ref.err")"
[ "$(find "$T/ref" -name '*.rttm' | wc -l)" -eq 5 ] || fail "--local did not write 5 RTTMs"

# Bad values, refused before Slurm is asked (no Slurm runs yet).
bad() {
    "$G" diarize --slurm "${OPTS[@]}" --out "$T/bad" "$@" "$T/in" >/dev/null 2>"$T/bad.err"
    [ $? -eq 64 ] || fail "diarize --slurm $* was not refused with 64: $(cat "$T/bad.err")"
}
bad --partition 'a;b'
bad --time '1 hour'
bad --tasks 0
bad --gpus-per-task -1
bad --gpu 0
"$G" diarize --slurm "${OPTS[@]}" "$T/in" >/dev/null 2>"$T/bad.err"
[ $? -eq 64 ] && grep -q "needs --out DIR" "$T/bad.err" || fail "--slurm without --out: $(cat "$T/bad.err")"
"$G" diarize --local --tasks 2 "${OPTS[@]}" --out "$T/bad" "$T/in" >/dev/null 2>&1
[ $? -eq 64 ] || fail "--tasks without --slurm accepted"
[ ! -e "$T/bad" ] || fail "a refused call made its --out"

# The private Slurm, three fake gpus, the plugin loaded.
mkdir -p "$S"
if [ -f "$SO" ]; then
    echo "required $SO config=$T/gf.yaml wait=60" >"$S/plugstack.conf"
else
    : >"$S/plugstack.conf"
    echo "skip: diarize_slurm: the tasks' card locks: $SO was not built"
fi
SLURM_EXTRA="PlugStackConfig=$S/plugstack.conf" slurm_start "$S" 3
case $? in
0) ;;
77) echo "skip: diarize_slurm: no fake gpu devices can be made here (mknod)"; exit 77 ;;
*) fail "the private Slurm did not start: $(tail -5 "$S"/*.log 2>/dev/null)" ;;
esac

# One array, two tasks: the same RTTMs as --local.
timeout 300 "$G" diarize --slurm --tasks 2 "${OPTS[@]}" --out "$T/sl" "$T/in" >"$T/sl.out" 2>"$T/sl.err" ||
    fail "--slurm failed ($?): $(cat "$T/sl.out" "$T/sl.err")"
grep -Eq '^Slurm job [0-9]+: 5 files in 2 tasks \(array 0-1\)' "$T/sl.out" || fail "no job id line: $(cat "$T/sl.out")"
grep -q "Slurm job [0-9]*: 5/5 files done (100%)" "$T/sl.out" || fail "no overall progress: $(cat "$T/sl.out")"
grep -q "$T/in/sub/e.wav -> $T/sl/sub/e.rttm" "$T/sl.out" || fail "no per-file line: $(cat "$T/sl.out")"
for f in a b c d sub/e; do
    cmp -s "$T/ref/$f.rttm" "$T/sl/$f.rttm" || fail "$f.rttm differs from --local's"
done
args=$(cat "$T"/sl/.gpuflock-slurm/run-*/args)
for o in --config --models --max-speakers --clustering-threshold --skip-existing; do
    grep -qx -- "$o" <<<"$args" || fail "the tasks were not given $o: $args"
done
grep -qx -- "-r\|--recursive\|--out\|--slurm\|--tasks" <<<"$args" && fail "the tasks were given the call's own options: $args"

# Outputs there: refused as everywhere else (73), before submitting.
"$G" diarize --slurm "${OPTS[@]}" --out "$T/sl" "$T/in" >/dev/null 2>"$T/again.err"
[ $? -eq 73 ] || fail "--slurm over existing outputs was not refused: $(cat "$T/again.err")"

# The tasks wait for their cards (flock(1) holds all three); task 1 is
# cancelled meanwhile; the others finish once the cards are free.
for k in 0 1 2; do
    flock -o "$T/locks/gpu$k.lock" sleep 600 &   # -o: flock alone holds it
    HOLD+=($!)
done
for _ in $(seq 100); do [ "$(grep -c FLOCK /proc/locks)" -ge 3 ] && break; sleep 0.05; done
timeout 300 "$G" diarize --slurm --tasks 3 "${OPTS[@]}" --out "$T/cx" "$T/in" >"$T/cx.out" 2>"$T/cx.err" &
cx=$!
job=$(job_id_in cx) || fail "no job id printed: $(cat "$T/cx.out" "$T/cx.err")"
sleep 1
scancel "${job}_1"
sleep 1
kill "${HOLD[@]}"
HOLD=()
wait "$cx"
rc=$?
[ "$rc" -eq 65 ] || fail "a cancelled task: exit $rc, not 65: $(cat "$T/cx.out" "$T/cx.err")"
# task 1 of 3 had the second and fifth recordings (b and sub/e, in order)
grep -q "$T/in/b.wav: not diarized: task 1 ended" "$T/cx.err" &&
    grep -q "$T/in/sub/e.wav: not diarized: task 1 ended" "$T/cx.err" ||
    fail "the cancelled task's file was not named: $(cat "$T/cx.err")"
[ ! -e "$T/cx/b.rttm" ] && [ ! -e "$T/cx/sub/e.rttm" ] && [ -e "$T/cx/a.rttm" ] && [ -e "$T/cx/c.rttm" ] ||
    fail "the wrong files are missing: $(find "$T/cx" -name '*.rttm')"
timeout 300 "$G" diarize --slurm --skip-existing "${OPTS[@]}" --out "$T/cx" "$T/in" >"$T/re.out" 2>"$T/re.err" ||
    fail "the re-run failed: $(cat "$T/re.out" "$T/re.err")"
grep -Eq '^Slurm job [0-9]+: 2 files in 2 tasks' "$T/re.out" || fail "the re-run did not take the two left: $(cat "$T/re.out")"
for f in a b c d sub/e; do
    cmp -s "$T/ref/$f.rttm" "$T/cx/$f.rttm" || fail "after the re-run, $f.rttm differs from --local's"
done

# --no-wait: the id, and nothing followed.
timeout 60 "$G" diarize --slurm --no-wait --gpus-per-task 0 "${OPTS[@]}" --out "$T/nw" "$T/in" >"$T/nw.out" 2>&1 ||
    fail "--no-wait failed: $(cat "$T/nw.out")"
[ "$(wc -l <"$T/nw.out")" -eq 1 ] && grep -q '^Slurm job [0-9]*: 5 files in 5 tasks' "$T/nw.out" ||
    fail "--no-wait printed: $(cat "$T/nw.out")"
for _ in $(seq 300); do [ -z "$(squeue -h)" ] && break; sleep 0.2; done

# A requeued task (scontrol requeue, as after a node failure) goes on from
# its recording's checkpoint: ten minutes of audio, a checkpoint every
# second, requeued once the first is on disk; the RTTM is --local's.
mkdir -p "$T/long"
sox $(for _ in $(seq 20); do echo "$A/sample.wav"; done) "$T/long/ten.wav" || fail "sox: the long recording"
"$G" diarize --local "${OPTS[@]}" --out "$T/ref-long" "$T/long" >/dev/null 2>&1 || fail "--local, the long recording"
timeout 300 "$G" diarize --slurm --tasks 1 --checkpoint-s 1 "${OPTS[@]}" --out "$T/rq" "$T/long" \
    >"$T/rq.out" 2>"$T/rq.err" &
rq=$!
job=$(job_id_in rq) || fail "requeue: no job id printed: $(cat "$T/rq.out" "$T/rq.err")"
for _ in $(seq 600); do
    ls "$T"/rq/.gpuflock-slurm/run-*/ckpt/*.ckpt >/dev/null 2>&1 && break
    sleep 0.05
done
ls "$T"/rq/.gpuflock-slurm/run-*/ckpt/*.ckpt >/dev/null 2>&1 || fail "requeue: no checkpoint was written"
scontrol requeue "${job}_0" || fail "scontrol requeue ${job}_0"
wait "$rq" || fail "requeue: the command failed ($?): $(cat "$T/rq.out" "$T/rq.err")"
cmp -s "$T/ref-long/ten.rttm" "$T/rq/ten.rttm" || fail "requeue: ten.rttm differs from --local's"
grep -q "went on from its checkpoint at window" "$T"/rq/.gpuflock-slurm/run-*/task-0.log ||
    fail "requeue: the task did not go on from its checkpoint: $(cat "$T"/rq/.gpuflock-slurm/run-*/task-0.log)"
ls "$T"/rq/.gpuflock-slurm/run-*/ckpt/*.ckpt >/dev/null 2>&1 && fail "requeue: the checkpoint outlived its recording"
echo "diarize --slurm: RTTMs as --local's, a cancelled task named and picked up by --skip-existing, a requeued task going on from its checkpoint"
