#!/bin/bash
# jobs_yield_diarize — a proof suite takes a card from four running diarize
# jobs, through the real broker and workers (two declared CPU cards,
# shared_slots 4, sched.yield_after_s 1, weight-free mode): the four jobs
# share card 0; an exclusive --proof job for card 0 waits; after a second
# each diarize job checkpoints at its next batch boundary and gives the card
# back ("yielded to job N"); the proof job runs alone on the card (its
# probe finds the card's lock busy, i.e. held by it alone) while the four
# wait; then they resume from their checkpoints and end with RTTMs and
# --save-intermediates arrays byte for byte those of an uninterrupted run
# (--local), their statistics showing the yielded run's checkpoint and the
# resumed run's restore; and a worker stopped with SIGTERM mid-job has its diarize job
# yield and resume on the restarted worker, identical. Prints the time from the proof job's submit to its start (the
# figure in bench/RESULTS.md; not asserted).
. tests/integration/lib/jobs.bash
fail() { echo "FAIL: $*"; tail -30 "$T/broker.log"; exit 1; }
SAMPLE=../shared/data/audio/sample.wav
[ -f "$SAMPLE" ] || { echo "skip: no $SAMPLE"; exit 77; }
SLOTS=4 write_config
cat >>"$CFG" <<YAML
models_dir: $T/models
sched:
  yield_after_s: 1
worker:
  checkpoint_s: 0
YAML
mkdir -p "$T/models"
/usr/bin/python3 - "$SAMPLE" "$T/long.wav" 600 <<'PY' || fail "audio"
import sys, wave
src = wave.open(sys.argv[1], "rb"); frames = src.readframes(src.getnframes())
p = src.getparams(); want = int(sys.argv[3]) * p.framerate * p.sampwidth * p.nchannels
dst = wave.open(sys.argv[2], "wb"); dst.setparams(p)
dst.writeframes((frames * (want // len(frames) + 1))[:want]); dst.close()
PY
for i in 1 2 3 4; do cp "$T/long.wav" "$T/rec$i.wav"; done
"$GF" diarize --local --config "$CFG" --out "$T/ref" --save-intermediates "$T/ref/inter" \
    "$T/rec1.wav" >/dev/null 2>&1 || fail "the uninterrupted run"
start_broker || fail "start"

field() { gf show "$1" --json | /usr/bin/python3 -c "import json,sys; v=json.load(sys.stdin).get('$2'); print('' if v is None else v)"; }
for i in 1 2 3 4; do
    mkdir -p "$T/out$i"
    gf diarize --gpu 0 --out "$T/out$i" --save-intermediates "$T/out$i/inter" "$T/rec$i.wav" \
        >"$T/cli$i.out" 2>"$T/cli$i.err" &
    eval "cli$i=$!"
done
ids=()
for i in 1 2 3 4; do
    for _ in $(seq 200); do
        id=$(sed -n 's|^.*: job \([0-9]*\)$|\1|p' "$T/cli$i.err")
        [ -n "$id" ] && break
        sleep 0.05
    done
    [ -n "$id" ] || fail "no job id: $(cat "$T/cli$i.err")"
    ids+=("$id")
done
# all four running, past their first windows
for id in "${ids[@]}"; do
    for _ in $(seq 400); do
        [ "$(field "$id" progress_done)" != "" ] && [ "$(field "$id" progress_done)" -gt 40 ] 2>/dev/null && break
        sleep 0.05
    done
done
asked=$(date +%s.%N)
PROBE="$PWD/$BUILD/tests/helpers/lock_probe"
proof=$(gf submit --proof -x --gpu 0 -- sh -c "date +%s.%N >'$T/proof'; '$PROBE' -s '$T/lock/gpu0.lock' >'$T/probe' 2>&1; sleep 1") ||
    fail "submit the proof job"
gf wait "$proof" >/dev/null || fail "the proof job failed: $(gf show "$proof")"
echo "the proof job started $(echo "$(cat "$T/proof") - $asked" | bc) s after its submit (sched.yield_after_s 1)"
grep -q "would block" "$T/probe" || fail "the probe inside the proof job: $(cat "$T/probe")"
for id in "${ids[@]}"; do
    st=$(field "$id" state)
    [ "$st" = pending ] || [ "$st" = running ] || [ "$st" = done ] || fail "job $id: $st"
done
for i in 1 2 3 4; do
    eval "wait \$cli$i" || fail "diarize $i: $(cat "$T/cli$i.err")"
done
for i in 1 2 3 4; do
    id=${ids[$((i - 1))]}
    [ "$(field "$id" yields)" = 1 ] || fail "job $id yielded $(field "$id" yields) times, not once"
    grep -q "job $id back in the queue: yielded to job $proof" "$T/broker.log" || fail "job $id: no yield in the log"
    grep -q "job $id: resumed from its checkpoint at window [1-9]" "$T/broker.log" ||
        fail "job $id did not resume from its checkpoint: $(grep "job $id" "$T/broker.log" | tail -5)"
    cmp "$T/ref/rec1.rttm" <(sed "s/rec$i/rec1/" "$T/out$i/rec$i.rttm") || fail "job $id: the RTTM differs"
    # its statistics tell both runs: the yielded one's capture, this one's restore
    gf show "$id" >"$T/show$i"
    grep -q '^stat checkpoint.written: 1$' "$T/show$i" || fail "job $id: $(grep checkpoint "$T/show$i")"
    grep -q '^stat devstats.checkpoint.capture.cpu.unavailable: 1$' "$T/show$i" &&
        grep -q '^stat devstats.checkpoint.restore.cpu.unavailable: 1$' "$T/show$i" ||
        fail "job $id: the capture and restore rows: $(grep checkpoint "$T/show$i")"
    for a in segmentations.npy embeddings.npy; do
        cmp "$T/ref/inter/$a" "$T/out$i/inter/$a" || fail "job $id: $a differs"
    done
done
# card 0's sums: each of the four captured once (yielding) and restored once
gf workers --json | /usr/bin/python3 -c '
import json, sys
ws = json.load(sys.stdin)
ws = ws["workers"] if isinstance(ws, dict) else ws
ck = [w for w in ws if w["device"] == 0][0]["checkpoint_stats"]
want = {"checkpoint.written": 4, "devstats.checkpoint.capture.cpu.unavailable": 4,
        "devstats.checkpoint.restore.cpu.unavailable": 4}
bad = {k: ck.get(k) for k in want if ck.get(k) != want[k]}
sys.exit("card 0 checkpoint_stats: %s" % bad if bad else 0)' || fail "the card's checkpoint sums"
# the proof job ran while none of them did
for id in "${ids[@]}"; do
    s=$(gf show "$id" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["started_ms"])')
    [ "$(echo "$s / 1000 > $(cat "$T/proof")" | bc)" = 1 ] || fail "job $id's last run started before the proof job"
done
# A worker stopped with SIGTERM mid-job: its diarize job yields (checkpoint
# kept), runs again on the restarted worker, resumes and ends identical.
mkdir -p "$T/out5"
cp "$T/long.wav" "$T/rec5.wav"
gf diarize --gpu 1 --out "$T/out5" --save-intermediates "$T/out5/inter" "$T/rec5.wav" \
    >"$T/cli5.out" 2>"$T/cli5.err" &
cli5=$!
for _ in $(seq 200); do
    id5=$(sed -n 's|^.*: job \([0-9]*\)$|\1|p' "$T/cli5.err"); [ -n "$id5" ] && break; sleep 0.05
done
for _ in $(seq 400); do
    [ "$(field "$id5" progress_done)" != "" ] && [ "$(field "$id5" progress_done)" -gt 60 ] 2>/dev/null && break
    sleep 0.05
done
kill -TERM "$(cat "$T/run/worker1.pid")"
wait "$cli5" || fail "diarize after the worker's SIGTERM: $(cat "$T/cli5.err")"
grep -q "job $id5: resumed from its checkpoint at window [1-9]" "$T/broker.log" ||
    fail "job $id5 did not resume after its worker's SIGTERM: $(grep "job $id5" "$T/broker.log" | tail -5)"
cmp "$T/ref/rec1.rttm" <(sed "s/rec5/rec1/" "$T/out5/rec5.rttm") || fail "job $id5: the RTTM differs"
cmp "$T/ref/inter/embeddings.npy" "$T/out5/inter/embeddings.npy" || fail "job $id5: embeddings differ"
echo ok
