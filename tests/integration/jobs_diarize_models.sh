#!/bin/bash
# The models directories a worker keeps loaded (worker/diarpool.h), through
# the real broker and workers: a models folder only root may read, loaded by
# root's job, is refused to another user's job naming it (before, the
# loaded pipeline served them); a network file replaced in it is loaded
# again for the next job, whose RTTM is --local's with the new file; and with
# worker.model_sets 1 a worker given jobs naming three folders in turn drops
# the idle one each time, saying so. CPU networks with random weights (skips,
# 77, without torch or the PLDA); the user part skips without root.
. tests/integration/lib/jobs.bash
need_random_models
for s in 3 5; do
    "$PY" tests/ref/gpu_models.py "$T/m$s" "$s" >/dev/null || fail "gpu_models.py $s"
done
mkdir -p "$T/priv" "$T/rec" "$T/wf1" "$T/wf2" "$T/wf3"
cp "$T/m3"/*.safetensors "$T/priv/"
cp -r "$P" "$T/priv/plda"
chmod 700 "$T/priv"
sox "$A/sample.wav" "$T/rec/a.wav" trim 0 12 || fail "sox"
chmod -R a+rX "$T/rec"
config() {   # MODEL_SETS
    SLOTS=1 write_config
    printf 'models_dir: %s\nworker:\n  cpu_threads: 1\n  batch_size: 4\n  model_sets: %s\n' \
        "$T/priv" "$1" >>"$CFG"
}
config 2
start_broker || exit 1
gf diarize --gpu 0 --models "$T/priv" --out "$T/o1" "$T/rec/a.wav" >/dev/null 2>"$T/err1" \
    || fail "root's job: $(cat "$T/err1")"

u=gfmodeluser1
if make_users "$u"; then
    mkdir -p "$T/mine"; cp "$T/rec/a.wav" "$T/mine/"; chown -R "$u" "$T/mine"
    (cd /tmp && runuser -u "$u" -- "$GF" diarize --config "$CFG" --gpu 0 --models "$T/priv" \
        --out "$T/mine/out" "$T/mine/a.wav") >/dev/null 2>"$T/err2" \
        && fail "$u diarized with the networks of a folder only root may read"
    grep -q "priv/.*cannot read: Permission denied" "$T/err2" \
        || fail "no clear message for an unreadable models folder: $(cat "$T/err2")"
    [ -e "$T/mine/out/a.rttm" ] && fail "the refused job wrote an RTTM"
    echo "ok: another user's job naming a loaded folder they may not read is refused"
else
    echo "skip: another user's job naming a loaded folder: cannot make the user $u (needs root, useradd and runuser)"
fi

# the embedding replaced in place: loaded again, the RTTM that of the new file
cp "$T/m5/embedding.safetensors" "$T/priv/embedding.safetensors"
gf diarize --gpu 0 --models "$T/priv" --out "$T/o2" "$T/rec/a.wav" >/dev/null 2>"$T/err3" \
    || fail "the job after the change: $(cat "$T/err3")"
grep -q "dropped the pipelines of $T/priv (its files changed since they were loaded)" "$T/broker.log" \
    || fail "no reload after the change: $(grep -i "pipelines\|networks" "$T/broker.log" | head)"
gf diarize --local --models "$T/priv" --out "$T/l2" "$T/rec/a.wav" >/dev/null 2>"$T/err4" \
    || fail "--local: $(cat "$T/err4")"
cmp -s "$T/l2/a.rttm" "$T/o2/a.rttm" \
    || fail "after the change the job's RTTM is not --local's: $(diff "$T/l2/a.rttm" "$T/o2/a.rttm" | head -5)"
echo "ok: a replaced network file is loaded again, the RTTM that of --local"
stop_broker

# one idle folder kept: three folders in turn, each drops the one before
config 1
: >"$T/broker.log"
start_broker || exit 1
i=0
for d in wf1 wf2 wf3 wf1; do
    i=$((i + 1))
    gf diarize --gpu 0 --models "$T/$d" --out "$T/o$i-$d" "$T/rec/a.wav" >/dev/null 2>"$T/err-$i" \
        || fail "job on $d: $(cat "$T/err-$i")"
done
n=$(grep -c "dropped the pipelines of .* (more models directories loaded than worker.model_sets)" "$T/broker.log")
[ "$n" = 3 ] || fail "worker.model_sets 1, four jobs on three folders: $n dropped, not 3: $(grep -i dropped "$T/broker.log")"
n=$(grep -c "weight-free mode: no model files in $T/wf1 " "$T/broker.log")
[ "$n" = 2 ] || fail "wf1 was loaded $n times, not twice (dropped between)"
cmp -s "$T/o1-wf1/a.rttm" "$T/o4-wf1/a.rttm" || fail "wf1 loaded again gave another RTTM"
stop_broker
echo "ok: worker.model_sets 1 keeps one idle folder loaded"
echo "PASS"
