#!/bin/bash
# Shared diarize jobs that share their card's network batches
# (worker.batch_jobs, diar/batcher.h), on the CPU networks with random
# weights and the community-1 PLDA: four recordings of different lengths
# submitted at once to one card with shared_slots 4 and batches of 4
# windows, so that batches carry the windows of several jobs cut at
# different places; each job's RTTM is byte for byte the one `--local`
# gives for the recording alone, the worker says it loaded the networks
# once for all of them, and the same holds with worker.batch_jobs false
# (each job its own pipeline). Skips (77) without torch or the PLDA.
. tests/integration/lib/jobs.bash
need_random_models
"$PY" tests/ref/gpu_models.py "$T/models" 3 >/dev/null || fail "gpu_models.py"
cp -r "$P" "$T/models/plda"
mkdir -p "$T/rec"
i=0
for len in 12 20 14 17; do   # 3, 11, 5 and 8 windows
    sox "$A/sample.wav" "$T/rec/r$i.wav" trim $((i * 3)) "$len" || fail "sox"
    i=$((i + 1))
done
config() {   # BATCH_JOBS
    SLOTS=4 write_config
    printf 'models_dir: %s\nworker:\n  cpu_threads: 1\n  batch_size: 4\n  batch_jobs: %s\n' \
        "$T/models" "$1" >>"$CFG"
}
config true
gf diarize --local --out "$T/local" "$T/rec" >/dev/null 2>"$T/local.err" || fail "--local: $(cat "$T/local.err")"
[ "$(ls "$T/local"/*.rttm | wc -l)" = 4 ] || fail "--local RTTMs: $(ls "$T/local")"

for mode in true false; do
    config "$mode"
    : >"$T/broker.log"
    start_broker || exit 1
    gf diarize --gpu 0 --out "$T/b-$mode" "$T/rec" >/dev/null 2>"$T/err-$mode" \
        || fail "batch_jobs $mode: $(cat "$T/err-$mode")"
    for f in "$T/local"/*.rttm; do
        cmp -s "$f" "$T/b-$mode/$(basename "$f")" \
            || fail "batch_jobs $mode: $(basename "$f") differs from --local: $(diff "$f" "$T/b-$mode/$(basename "$f")" | head -5)"
    done
    n=$(grep -c "diarize jobs share one copy of the networks of $T/models (on the CPU), batches of up to 4 windows" "$T/broker.log")
    if [ "$mode" = true ]; then
        [ "$n" = 1 ] || fail "batch_jobs true: the networks loaded $n times, not once: $(grep -i network "$T/broker.log" | head)"
    else
        [ "$n" = 0 ] || fail "batch_jobs false: a batcher was made"
    fi
    stop_broker
    echo "ok: batch_jobs $mode: four jobs at once on one card, each RTTM that of --local"
done
echo "PASS"
