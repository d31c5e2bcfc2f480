#!/bin/bash
# jobs_checkpoint.sh — diarize jobs checkpoint and resume, through the real
# broker and workers (two declared CPU cards, worker.checkpoint_s 1):
#  1. weight-free, a 40-minute recording: the worker running the job is
#     killed with SIGKILL five times, each time at a random instant after the
#     attempt wrote a checkpoint of its own; every later attempt resumes from
#     the last checkpoint (the worker log says where), and the RTTM and the
#     --save-intermediates arrays are byte for byte those of a run never
#     interrupted; the checkpoint is gone at the end;
#  2. the same with the neural pipeline on random-weight model files (a
#     36-window recording, batches of 4, three kills): RTTM, logits,
#     segmentations and embeddings identical (needs /usr/bin/python3 with
#     torch for tools that write the models, and the PLDA; else reported
#     skipped, "skip: part 2 ...");
#  3. on a 10-minute recording (the broker's run identical to --local's):
#     gpuflockd killed with SIGKILL mid-job and restarted: the job is
#     reclaimed and ends identical; gpuflockd and the job's worker killed
#     together: the job runs again, resumes from its checkpoint, identical;
#     the same with the checkpoint damaged meanwhile: not reused (said in the
#     job's stderr and the log), started again, identical;
#  4. (as root) another user's job: its checkpoint in the root-owned 0711
#     spool belongs to them, mode 0600; killed, it resumes (also with the
#     spool closed to them, 0700), identical (not root: "skip: part 4 ...").
# Kills: 5 + 3 + 2 + 1; about two minutes on two busy cores. Random
# instants come from $RANDOM, seeded and printed (GF_CKPT_SEED to replay).
. tests/integration/lib/jobs.bash
write_config
sed -i 's/max_attempts: 3/max_attempts: 20/' "$CFG"
cat >>"$CFG" <<YAML
models_dir: $T/models
worker:
  checkpoint_s: 1
  batch_size: 4
YAML
SAMPLE=../shared/data/audio/sample.wav
[ -f "$SAMPLE" ] || { echo "skip: no $SAMPLE"; exit 77; }
SEED=${GF_CKPT_SEED:-$$}
RANDOM=$SEED
echo "seed $SEED"
mkdir -p "$T/models"

# SECONDS of audio: the 30 s sample again and again
make_audio() {  # OUT SECONDS
    /usr/bin/python3 - "$SAMPLE" "$1" "$2" <<'PY' || fail "cannot make $1"
import sys, wave
src = wave.open(sys.argv[1], "rb"); frames = src.readframes(src.getnframes())
p = src.getparams(); want = int(sys.argv[3]) * p.framerate * p.sampwidth * p.nchannels
dst = wave.open(sys.argv[2], "wb"); dst.setparams(p)
data = frames * (want // len(frames) + 1)
dst.writeframes(data[:want])
dst.close()
PY
}

# state attempts card progress_done of a job, in one call
job_line() {
    gf show "$1" --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j["state"], j["attempts"], (j["cards"] or [-1])[0], j.get("progress_done") or 0)'
}

inode_of() { stat -c %i "$1" 2>/dev/null || echo none; }

same_outputs() {  # WANT_DIR GOT_DIR NAME ARRAYS...
    local want=$1 got=$2 name=$3; shift 3
    cmp "$want/$name.rttm" "$got/$name.rttm" || fail "$name: the RTTM differs from the uninterrupted run's"
    for a in "$@"; do
        cmp "$want/inter/$a" "$got/inter/$a" || fail "$name: $a differs from the uninterrupted run's"
    done
}

# Submit (the CLI waits in the background: $cli), and print the job id.
submit_job() {  # AUDIO OUTDIR
    mkdir -p "$2"
    gf diarize --out "$2" --save-intermediates "$2/inter" "$1" >"$2/cli.out" 2>"$2/cli.err" &
    cli=$!
    for _ in $(seq 200); do
        id=$(sed -n 's|^.*: job \([0-9]*\)$|\1|p' "$2/cli.err")
        [ -n "$id" ] && return 0
        sleep 0.05
    done
    fail "no job id: $(cat "$2/cli.err")"
}

# Kill the worker running job $id, KILLS times, spread over its WINDOWS:
# kill k once the job is past a random window near k/(KILLS+2) of them (the
# last leaves room for a checkpoint after it, which may come later than
# checkpoint_s when writing one takes long: docs/diarization.md) and
# the attempt has written a checkpoint of its own since (a new inode at
# <spool>/<id>.ckpt), after a random 0-0.6 s more. Then wait for its end.
kill_at_random() {  # KILLS WINDOWS
    local ck="$T/state/spool/$id.ckpt" kills=$1 windows=$2 k before target
    for k in $(seq "$kills"); do
        target=$((k * windows / (kills + 2) + RANDOM % (windows / (4 * kills + 8) + 1)))
        for _ in $(seq 2400); do
            read -r st at card done_w <<<"$(job_line "$id")"
            [ "$st" = running ] && [ "$at" = "$k" ] && [ "$done_w" -ge "$target" ] && break
            [ "$st" = done ] && fail "job $id ended before kill $k ($(tail -3 "$T/broker.log"))"
            sleep 0.05
        done
        before=$(inode_of "$ck")
        for _ in $(seq 1200); do
            read -r st at card done_w <<<"$(job_line "$id")"
            [ "$st" = running ] && [ "$at" = "$k" ] && [ "$(inode_of "$ck")" != "$before" ] \
                && [ "$(inode_of "$ck")" != none ] && break
            [ "$st" = done ] && fail "job $id ended before kill $k ($(tail -3 "$T/broker.log"))"
            sleep 0.05
        done
        [ "$st" = running ] && [ "$at" = "$k" ] || fail "kill $k: job $id is '$st' at attempt $at"
        sleep "0.$((RANDOM % 5))"
        read -r st at card done_w <<<"$(job_line "$id")"
        [ "$st" = running ] && [ "$at" = "$k" ] || fail "kill $k: job $id is '$st' at attempt $at"
        kill -KILL "$(cat "$T/run/worker$card.pid")"
        echo "kill $k: worker of card $card at window $done_w (past $target)"
        for _ in $(seq 400); do
            read -r st at card done_w <<<"$(job_line "$id")"
            [ "$at" -gt "$k" ] && break
            sleep 0.05
        done
        [ "$at" -gt "$k" ] || fail "kill $k: job $id not run again ($st, attempt $at)"
    done
    wait "$cli" || fail "job $id: $(cat "$OUT/cli.err"; tail -20 "$T/broker.log")"
    [ "$(job_field "$id" attempts)" = $((kills + 1)) ] || fail "job $id: $(job_field "$id" attempts) attempts, want $((kills + 1))"
    [ -e "$T/state/spool/$id.ckpt" ] && fail "job $id is done but its checkpoint is still there"
    local resumes
    resumes=$(grep -c "job $id: resumed from its checkpoint at window [1-9]" "$T/broker.log")
    [ "$resumes" = "$kills" ] || fail "job $id: $resumes resumes in the log, want $kills: $(grep "job $id:" "$T/broker.log")"
    grep "job $id: resumed" "$T/broker.log" | sed 's/.*job/job/'
}

start_broker || exit 1

# ---- 1. weight-free, forty minutes, five kills
# (a checkpoint a second and the 160 windows a second of weight-free mode
# here: five kills, each after a checkpoint of its own attempt, need the
# length)
make_audio "$T/long.wav" 2400     # 2391 windows
OUT="$T/wf-ref"
submit_job "$T/long.wav" "$OUT"
wait "$cli" || fail "uninterrupted run: $(cat "$OUT/cli.err")"
OUT="$T/wf-killed"
submit_job "$T/long.wav" "$OUT"
kill_at_random 5 2391
same_outputs "$T/wf-ref" "$OUT" long segmentations.npy embeddings.npy
gf show "$id" | grep -q "^stat checkpoint.resumed_at: [1-9]" || fail "show: no checkpoint.resumed_at: $(gf show "$id")"
gf show "$id" | grep -q "^stat devstats.checkpoint.restore.cpu.bytes: [1-9]" || fail "show: no restore row: $(gf show "$id")"
gf show "$id" | grep -q "^stat devstats.checkpoint.capture.cpu.unavailable: [1-9]" || fail "show: no capture row"
echo "ok: weight-free, 40 minutes, 5 kills: identical RTTM and intermediates"

# ---- 3. the broker killed (alone, then with the job's worker)
wait_for_ckpt() {
    for _ in $(seq 400); do [ -s "$T/state/spool/$id.ckpt" ] && return 0; sleep 0.05; done
    fail "job $id wrote no checkpoint"
}
make_audio "$T/ten.wav" 600       # 591 windows
OUT="$T/ten-ref"
submit_job "$T/ten.wav" "$OUT"
wait "$cli" || fail "uninterrupted run: $(cat "$OUT/cli.err")"
gf diarize --local --models "$T/models" --out "$T/ten-local" --save-intermediates "$T/ten-local/inter" \
    "$T/ten.wav" >/dev/null 2>&1 || fail "--local run"
same_outputs "$T/ten-local" "$T/ten-ref" ten segmentations.npy embeddings.npy
OUT="$T/brk1"
submit_job "$T/ten.wav" "$OUT"
wait_for_ckpt
kill -KILL "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=
restart_broker || fail "restart"
wait "$cli" || fail "job $id across a broker restart: $(cat "$OUT/cli.err")"
same_outputs "$T/ten-ref" "$OUT" ten segmentations.npy embeddings.npy
[ "$(job_field "$id" attempts)" = 1 ] || fail "job $id ran again after a broker restart alone"
echo "ok: gpuflockd killed mid-job: reclaimed, identical"

for damage in no yes; do
    OUT="$T/brk-$damage"
    submit_job "$T/ten.wav" "$OUT"
    wait_for_ckpt
    read -r st at card done_w <<<"$(job_line "$id")"
    kill -KILL "$BROKER_PID" "$(cat "$T/run/worker$card.pid")"; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=
    if [ "$damage" = yes ]; then
        /usr/bin/python3 - "$T/state/spool/$id.ckpt" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)
PY
    fi
    restart_broker || fail "restart"
    wait "$cli" || fail "job $id after broker and worker died: $(cat "$OUT/cli.err")"
    same_outputs "$T/ten-ref" "$OUT" ten segmentations.npy embeddings.npy
    if [ "$damage" = yes ]; then
        grep -q "job $id: checkpoint not reused: damaged (its SHA-256 does not match its contents)" "$T/broker.log" \
            || fail "damaged checkpoint not reported: $(grep "job $id" "$T/broker.log")"
        gf logs --stderr "$id" 2>&1 | grep -q "checkpoint not reused: damaged" || fail "not on the job's stderr: $(gf logs --stderr "$id" 2>&1)"
    else
        grep -q "job $id: resumed from its checkpoint at window [1-9]" "$T/broker.log" \
            || fail "job $id did not resume: $(grep "job $id" "$T/broker.log")"
    fi
done
echo "ok: gpuflockd and the worker killed: resumed (or, damaged, started again), identical"

# ---- 4. another user's job: its checkpoint is theirs (0600) in the root-owned
# spool, written by the worker, read back for them on the next attempt
u=gfjobuser1
if make_users "$u"; then
    mkdir -p "$T/mine"
    cp "$T/ten.wav" "$T/mine/u.wav"
    chown -R "$u" "$T/mine"
    (cd /tmp && runuser -u "$u" -- "$GF" diarize --config "$CFG" --save-intermediates "$T/mine/inter" \
        "$T/mine/u.wav") >"$T/u.out" 2>"$T/u.err" &
    cli=$!
    for _ in $(seq 200); do
        id=$(sed -n 's|^.*: job \([0-9]*\)$|\1|p' "$T/u.err"); [ -n "$id" ] && break; sleep 0.05
    done
    [ -n "$id" ] || fail "no job id for $u: $(cat "$T/u.err")"
    wait_for_ckpt
    [ "$(stat -c '%U %a' "$T/state/spool/$id.ckpt")" = "$u 600" ] \
        || fail "checkpoint of $u's job: $(stat -c '%U %a' "$T/state/spool/$id.ckpt")"
    [ "$(stat -c '%U %a' "$T/state/spool")" = "root 711" ] || fail "spool: $(stat -c '%U %a' "$T/state/spool")"
    # closed to others altogether: the worker opens the checkpoint, not the user
    chmod 0700 "$T/state/spool"
    read -r st at card done_w <<<"$(job_line "$id")"
    kill -KILL "$(cat "$T/run/worker$card.pid")"
    wait "$cli" || fail "$u's job after its worker died: $(cat "$T/u.err")"
    chmod 0711 "$T/state/spool"
    grep -q "job $id: resumed from its checkpoint at window [1-9]" "$T/broker.log" \
        || fail "$u's job did not resume: $(grep "job $id" "$T/broker.log")"
    [ "$(stat -c %U "$T/mine/u.rttm")" = "$u" ] || fail "RTTM not $u's"
    sed 's/^SPEAKER u /SPEAKER ten /' "$T/mine/u.rttm" | cmp - "$T/ten-ref/ten.rttm" || fail "$u's RTTM differs"
    for a in segmentations.npy embeddings.npy; do
        cmp "$T/mine/inter/$a" "$T/ten-ref/inter/$a" || fail "$u's $a differs"
    done
    echo "ok: another user's job: its checkpoint is theirs, 0600, resumed, identical"
else
    echo "skip: part 4 (another user's job and its checkpoint): cannot make the user $u (needs root, useradd and runuser)"
fi

# ---- 2. neural, random weights, three kills
why=""
/usr/bin/python3 -c 'import torch, numpy' 2>/dev/null ||
    why="/usr/bin/python3 cannot import torch and numpy (tests/ref/gpu_models.py writes the models)"
[ -d ../shared/data/community-1/plda ] || why="${why:+$why; }no PLDA at ../shared/data/community-1/plda"
if [ -n "$why" ]; then
    echo "skip: part 2 (neural checkpoints and resume, random weights, three kills): $why"
    exit 0
fi
stop_broker
kill_workers
rm -rf "$T/models"
/usr/bin/python3 tests/ref/gpu_models.py "$T/models" 3 >/dev/null || fail "gpu_models.py"
cp -r ../shared/data/community-1/plda "$T/models/plda"
start_broker || exit 1
make_audio "$T/nn.wav" 45         # 36 windows, 9 batches of 4
OUT="$T/nn-ref"
submit_job "$T/nn.wav" "$OUT"
wait "$cli" || fail "uninterrupted neural run: $(cat "$OUT/cli.err")"
grep -q "weight-free" "$OUT/cli.err" && fail "the neural run says weight-free"
OUT="$T/nn-killed"
submit_job "$T/nn.wav" "$OUT"
kill_at_random 3 36
same_outputs "$T/nn-ref" "$OUT" nn segmentation_logits.npy segmentations.npy embeddings.npy
echo "ok: neural (random weights), 3 kills: identical RTTM, logits, segmentations, embeddings"
