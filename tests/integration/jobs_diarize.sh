#!/bin/bash
# Diarize jobs through the broker, on two declared CPU cards, weight-free
# (the configured models directory is empty): one job per recording (a DIR
# expands to its audio files), RTTMs beside the inputs or in --out, the same
# turns as --local; a bad file fails with a message naming it while the
# others succeed; `show` reports weight-free mode and progress 100%; the
# worker keeps its pipeline between jobs; a running job holds its card's
# lock shared, is requeued when its worker dies, and a cancel stops it at a
# window boundary without an RTTM;
# the output belongs to the submitter (as root: to a second user; else
# reported skipped, "skip: ..."); with no
# broker the command says so and points at --local.
# Inputs are copies in the test's folder: nothing is written beside ../shared.
. tests/integration/lib/jobs.bash
write_config
echo "models_dir: $T/models" >>"$CFG"
SAMPLE=../shared/data/audio/sample.wav
[ -f "$SAMPLE" ] || { echo "skip: no $SAMPLE"; exit 77; }
mkdir -p "$T/rec"
cp "$SAMPLE" "$T/rec/a.wav"
cp "$SAMPLE" "$T/rec/b.wav"
echo "these are not samples" >"$T/rec/bad.wav"
start_broker || exit 1

# three recordings from a DIR: two RTTMs, one clear failure, exit 65
gf diarize "$T/rec" >"$T/out1" 2>"$T/err1"; rc=$?
[ "$rc" = 65 ] || fail "diarize of a folder with a bad file: status $rc; $(cat "$T/err1")"
[ -s "$T/rec/a.rttm" ] && [ -s "$T/rec/b.rttm" ] || fail "RTTMs missing: $(ls "$T/rec"); $(cat "$T/err1")"
[ -e "$T/rec/bad.rttm" ] && fail "an RTTM for the bad file"
ls "$T/rec" | grep -q tmp && fail "temporary files left: $(ls "$T/rec")"
grep -q "bad.wav.*failed.*unsupported or unrecognised format" "$T/err1" || fail "bad file message: $(cat "$T/err1")"
grep -q "a.wav: .* turns, .* speakers.* (weight-free mode)" "$T/out1" || fail "summary of a.wav: $(cat "$T/out1")"
grep -q "weight-free mode" "$T/err1" || fail "no weight-free notice: $(cat "$T/err1")"
grep -q "all recordings: 100% (3 of 3 ended)" "$T/err1" || fail "no overall progress lines: $(cat "$T/err1")"
awk '$1 != "SPEAKER" || NF != 10 { bad = 1 } END { exit bad }' "$T/rec/a.rttm" || fail "a.rttm is not RTTM"
# the worker's turns are those of the pipeline run here
gf diarize --local --out "$T/local" "$T/rec/a.wav" >/dev/null 2>&1 || fail "--local run"
cmp -s "$T/local/a.rttm" "$T/rec/a.rttm" || fail "broker and --local RTTMs differ"

# the job records: mode, progress, statistics; the failure's reason
ja=$(sed -n 's|^.*/a.wav: job \([0-9]*\)$|\1|p' "$T/err1")
jbad=$(sed -n 's|^.*/bad.wav: job \([0-9]*\)$|\1|p' "$T/err1")
[ -n "$ja" ] && [ -n "$jbad" ] || fail "job ids not printed: $(cat "$T/err1")"
gf show "$ja" >"$T/show"
grep -q "^mode: *weight-free" "$T/show" || fail "show: mode: $(cat "$T/show")"
grep -q "^recipe: *clustering.threshold 0.6, Fa 0.07, Fb 0.8, min_duration_off 0 s, embedding_exclude_overlap on" \
    "$T/show" || fail "show: recipe: $(cat "$T/show")"
grep -q "^stat diarize.segmentation.min_duration_off: 0" "$T/show" || fail "show: the values used: $(cat "$T/show")"
grep -qE "^progress: *100% \(([0-9]+)/\1 windows\)" "$T/show" || fail "show: progress: $(cat "$T/show")"
grep -q "^request: *any card, shared" "$T/show" || fail "show: not shared: $(cat "$T/show")"
grep -q "^stat diarize.windows: [1-9]" "$T/show" || fail "show: statistics: $(cat "$T/show")"
grep -q "^stat devstats.fbank.cpu.unavailable: [1-9]" "$T/show" || fail "show: devstats: $(cat "$T/show")"
[ "$(job_field "$jbad" state)" = failed ] || fail "bad file job: $(job_field "$jbad" state)"
job_field "$jbad" reason | grep -q "bad.wav: unsupported or unrecognised format" || fail "bad file reason: $(job_field "$jbad" reason)"
gf logs "$ja" | grep -q "a.wav: .* turns" || fail "job stdout: $(gf logs "$ja")"

# segmentation_step through the broker: the worker's windows 0.5 s apart, its
# turns those of --local at the same step, show's recipe line says it
gf diarize --out "$T/step" --json --segmentation-step 0.05 "$T/rec/a.wav" >/dev/null 2>"$T/err-step" ||
    fail "--segmentation-step through the broker: $(cat "$T/err-step")"
gf diarize --local --out "$T/step-local" --segmentation-step 0.05 "$T/rec/a.wav" >/dev/null 2>&1 ||
    fail "--segmentation-step --local"
cmp -s "$T/step/a.rttm" "$T/step-local/a.rttm" || fail "step 0.05: broker and --local RTTMs differ"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["parameters"]["segmentation"]["step"] == 0.05 and d["windows"] == 41, (d["parameters"], d["windows"])' \
    "$T/step/a.json" || fail "step 0.05: JSON $(head -c 400 "$T/step/a.json")"
js=$(sed -n 's|^.*/a.wav: job \([0-9]*\)$|\1|p' "$T/err-step")
gf show "$js" | grep -q "^recipe: .*segmentation_step 0.05" || fail "show: step: $(gf show "$js")"

# --out, --json, a speaker constraint, intermediates, on card 0 twice: the second job finds the pipeline loaded
gf diarize --gpu 0 --out "$T/out" --json --num-speakers 2 --min-duration-off 0.25 --save-intermediates "$T/inter" "$T/rec/a.wav" >/dev/null 2>"$T/err2" || fail "--out --json: $(cat "$T/err2")"
/usr/bin/python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["parameters"]; assert p["segmentation"]["min_duration_off"] == 0.25 and p["num_speakers"] == 2, p' \
    "$T/out/a.json" || fail "the knobs did not reach the worker: $(head -c 600 "$T/out/a.json")"
[ -s "$T/inter/segmentations.npy" ] && [ -s "$T/inter/embeddings.npy" ] || fail "--save-intermediates: $(ls "$T/inter" 2>&1)"
gf diarize --gpu 0 --out "$T/out" "$T/rec/b.wav" >/dev/null 2>"$T/err3" || fail "second job on card 0: $(cat "$T/err3")"
[ -s "$T/out/a.rttm" ] && [ -s "$T/out/b.rttm" ] || fail "--out RTTMs: $(ls "$T/out")"
grep -q '"mode":"weight-free"' "$T/out/a.json" || fail "--json: $(head -c 300 "$T/out/a.json")"
[ "$(awk '{ print $8 }' "$T/out/a.rttm" | sort -u | wc -l)" = 2 ] || fail "--num-speakers 2 not applied"
jb=$(sed -n 's|^.*/b.wav: job \([0-9]*\)$|\1|p' "$T/err3")
gf show "$jb" | grep -q "^stat diarize.pipeline_reused: 1" || fail "pipeline not kept between jobs: $(gf show "$jb")"
[ "$(gf diarize --models relative/dir --out "$T/relm" "$T/rec/a.wav" 2>&1 >/dev/null | grep -c 'job ')" -ge 1 ] || fail "relative --models not made absolute"

# a long recording: requeued when its worker dies; the running job holds card 1 shared; cancel stops it
/usr/bin/python3 - "$SAMPLE" "$T/long.wav" <<'PY' || fail "cannot make the long recording"
import sys, wave
src = wave.open(sys.argv[1], "rb"); frames = src.readframes(src.getnframes())
dst = wave.open(sys.argv[2], "wb"); dst.setparams(src.getparams())
for _ in range(30):
    dst.writeframes(frames)
dst.close()
PY
gf diarize --gpu 1 --out "$T/cancel" "$T/long.wav" >"$T/out4" 2>"$T/err4" &
cli=$!
for _ in $(seq 400); do
    jl=$(sed -n 's|^.*/long.wav: job \([0-9]*\)$|\1|p' "$T/err4")
    [ -n "$jl" ] && [ "$(job_field "$jl" progress_done)" -gt 0 ] 2>/dev/null && break
    sleep 0.05
done
[ -n "$jl" ] && [ "$(job_field "$jl" progress_done)" -gt 0 ] || fail "long job shows no progress: $(gf show "$jl")"
# its worker dies: the job goes back to the queue and starts again from its first window
kill -KILL "$(cat "$T/run/worker1.pid")"
for _ in $(seq 400); do
    [ "$(job_field "$jl" attempts)" = 2 ] && [ "$(job_field "$jl" progress_done)" -gt 0 ] 2>/dev/null && break
    sleep 0.05
done
[ "$(job_field "$jl" attempts)" = 2 ] && [ "$(job_field "$jl" state)" = running ] \
    || fail "diarize job not requeued after its worker died: $(gf show "$jl")"
gf queue | grep -E "^ *$jl .*running .*%" >/dev/null || fail "queue shows no percent: $(gf queue)"
flock -n -s "$T/lock/gpu1.lock" true || fail "card 1 not shareable during a diarize job"
flock -n -x "$T/lock/gpu1.lock" true && fail "card 1 not locked during a diarize job"
gf cancel "$jl" || fail "cancel"
wait "$cli"; rc=$?
[ "$rc" = 1 ] || fail "cancelled diarize: status $rc; $(cat "$T/err4")"
[ "$(job_field "$jl" state)" = cancelled ] || fail "state after cancel: $(job_field "$jl" state)"
[ -e "$T/cancel/long.rttm" ] && fail "a cancelled job wrote its RTTM"
grep -q "long.wav: cancelled" "$T/err4" || fail "cancel not reported: $(cat "$T/err4")"
done_w=$(job_field "$jl" progress_done); total_w=$(job_field "$jl" progress_total)
[ "$done_w" -lt "$total_w" ] || fail "the cancelled job ran to the end ($done_w/$total_w)"
for _ in $(seq 100); do flock -n -x "$T/lock/gpu1.lock" true && break; sleep 0.05; done
flock -n -x "$T/lock/gpu1.lock" true || fail "card 1 still locked after the cancel"

# another user's job: the RTTM is theirs; a folder they may not write gives a clear failure
u=gfjobuser1
if make_users "$u"; then
    mkdir -p "$T/mine" "$T/closed"; cp "$SAMPLE" "$T/mine/u.wav"; chown -R "$u" "$T/mine"; chmod 755 "$T/closed"
    (cd /tmp && runuser -u "$u" -- "$GF" diarize --config "$CFG" "$T/mine/u.wav") >/dev/null 2>"$T/err5" || fail "diarize as $u: $(cat "$T/err5")"
    [ "$(stat -c %U "$T/mine/u.rttm")" = "$u" ] || fail "RTTM owned by $(stat -c %U "$T/mine/u.rttm"), not $u"
    (cd /tmp && runuser -u "$u" -- "$GF" diarize --config "$CFG" --out "$T/closed" "$T/mine/u.wav") >/dev/null 2>"$T/err6" && fail "wrote into a folder $u may not write"
    grep -q "closed/u.rttm.*Permission denied" "$T/err6" || fail "no clear message for an unwritable output: $(cat "$T/err6")"
else
    echo "skip: another user's diarize job (its RTTM, a folder it may not write): cannot make the user $u (needs root, useradd and runuser)"
fi

# no broker: said plainly, with --local and gpuflockd as the ways out
stop_broker
gf diarize --out "$T/nobroker" "$T/rec/a.wav" 2>"$T/err7"; rc=$?
[ "$rc" = 69 ] || fail "no broker: status $rc"
grep -q "no broker is running" "$T/err7" && grep -q -- "--local" "$T/err7" && grep -q "gpuflockd" "$T/err7" \
    || fail "no-broker message: $(cat "$T/err7")"
echo "ok: diarize jobs through the broker (weight-free), progress, bad file, cancel, ownership, no broker"
