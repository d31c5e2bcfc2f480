#!/bin/bash
# jobs_checkpoint_full.sh — a full disk during a checkpoint write leaves the
# previous checkpoint good: the spool is a small tmpfs (root only: exit 77
# otherwise); once the job's first checkpoint is there, a filler file takes
# every page left, so the next write cannot fit beside it. The worker logs
# the failed write ("checkpoint not written ... No space left on device"),
# no temporary file is left behind, the job goes on; killed with SIGKILL
# and the filler removed, its next attempt resumes from the older
# checkpoint, and its RTTM and intermediates are byte for byte those of
# `gpuflock diarize --local`. Nothing here depends on this machine's speed
# but that a 20-minute weight-free job outlasts two checkpoint periods.
[ "$(id -u)" = 0 ] || { echo "skip: not root (the spool is a tmpfs mounted here)"; exit 77; }
command -v mount >/dev/null && command -v umount >/dev/null || { echo "skip: no mount"; exit 77; }
. tests/integration/lib/jobs.bash
write_config
cat >>"$CFG" <<YAML
models_dir: $T/models
worker:
  checkpoint_s: 1
YAML
SAMPLE=../shared/data/audio/sample.wav
[ -f "$SAMPLE" ] || { echo "skip: no $SAMPLE"; exit 77; }
SPOOL="$T/state/spool"
unmount() { mountpoint -q "$SPOOL" && umount "$SPOOL"; }
trap 'stop_broker; kill_workers; unmount; cleanup' EXIT
mkdir -p "$T/models" "$SPOOL"
/usr/bin/python3 - "$SAMPLE" "$T/long.wav" <<'PY' || fail "cannot make the recording"
import sys, wave
src = wave.open(sys.argv[1], "rb"); frames = src.readframes(src.getnframes())
dst = wave.open(sys.argv[2], "wb"); dst.setparams(src.getparams())
for _ in range(40):
    dst.writeframes(frames)
dst.close()
PY

# the reference
gf diarize --local --models "$T/models" --out "$T/ref" --save-intermediates "$T/ref/inter" \
    "$T/long.wav" >/dev/null 2>&1 || fail "--local run"
mount -t tmpfs -o "size=32m,mode=0711" gf-spool "$SPOOL" || { echo "skip: cannot mount a tmpfs"; exit 77; }

start_broker || exit 1
mkdir -p "$T/got"
gf diarize --out "$T/got" --save-intermediates "$T/got/inter" "$T/long.wav" >"$T/cli.out" 2>"$T/cli.err" &
cli=$!
for _ in $(seq 200); do
    id=$(sed -n 's|^.*: job \([0-9]*\)$|\1|p' "$T/cli.err"); [ -n "$id" ] && break; sleep 0.05
done
[ -n "$id" ] || fail "no job id: $(cat "$T/cli.err")"
# the first checkpoint in place, fill the spool to its last page
for _ in $(seq 1000); do
    [ -s "$SPOOL/$id.ckpt" ] && break
    grep -q "job $id: .*(weight-free mode)" "$T/cli.out" && break
    sleep 0.01
done
[ -s "$SPOOL/$id.ckpt" ] || fail "no first checkpoint: $(grep "job $id" "$T/broker.log"; ls -la "$SPOOL")"
dd if=/dev/zero of="$SPOOL/filler" bs=64k 2>/dev/null
dd if=/dev/zero of="$SPOOL/filler" bs=4k oflag=append conv=notrunc 2>/dev/null
for _ in $(seq 1000); do
    grep -q "job $id: checkpoint not written (.*No space left on device" "$T/broker.log" && break
    grep -q "job $id: .*(weight-free mode)" "$T/cli.out" && break
    sleep 0.01
done
grep -q "job $id: checkpoint not written (.*ckpt.tmp: write: No space left on device); the previous one, if any, stays" "$T/broker.log" \
    || fail "no failed checkpoint write: $(grep "job $id" "$T/broker.log"; df -k "$SPOOL")"
[ -s "$SPOOL/$id.ckpt" ] || fail "no earlier checkpoint beside the failed write: $(ls -la "$SPOOL")"
card=$(gf show "$id" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["cards"][0])')
kill -KILL "$(cat "$T/run/worker$card.pid")"
rm -f "$SPOOL/filler"
wait "$cli" || fail "job $id after the kill: $(cat "$T/cli.err"; tail -20 "$T/broker.log")"
grep -q "job $id: resumed from its checkpoint at window [1-9]" "$T/broker.log" \
    || fail "not resumed from the older checkpoint: $(grep "job $id" "$T/broker.log")"
cmp "$T/ref/long.rttm" "$T/got/long.rttm" || fail "RTTM differs from --local's"
for a in segmentations.npy embeddings.npy; do
    cmp "$T/ref/inter/$a" "$T/got/inter/$a" || fail "$a differs from --local's"
done
ls "$SPOOL" | grep -q 'ckpt' && fail "checkpoint files left in the spool: $(ls "$SPOOL")"
echo "ok: a full spool fails a checkpoint write, the older one stays good and is resumed from; identical"
