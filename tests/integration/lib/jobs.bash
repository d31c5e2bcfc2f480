# jobs.bash — shared by the job-runner integration tests (sourced, not run).
# A fresh folder with a config of two declared CPU cards; run_dir, state_dir
# and the lock files all live inside it. start_broker / stop_broker run the
# real gpuflockd, which starts the real workers.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/users.sh"
BUILD=${BUILD:-build}
GF="$(cd "$BUILD/bin" && pwd)/gpuflock"
GFD="$(cd "$BUILD/bin" && pwd)/gpuflockd"
T=$(mktemp -d --suffix=.gf-jobs)
chmod 755 "$T"
CFG="$T/gpuflock.yaml"
BROKER_PID=

write_config() {   # [extra YAML lines appended under broker:]
    cat >"$CFG" <<YAML
run_dir: $T/run
state_dir: $T/state
bench_lock: $T/lock/bench.lock
log_level: ${GF_TEST_LOG:-info}
devices:
  - {index: 0, kind: cpu, lock: $T/lock/gpu0.lock, shared_slots: ${SLOTS:-2}}
  - {index: 1, kind: cpu, lock: $T/lock/gpu1.lock, shared_slots: ${SLOTS:-2}}
broker:
  heartbeat_interval_ms: ${HB_MS:-200}
  heartbeat_liveness: 3
  kill_grace_s: 1
  shutdown_deadline_s: 5
  max_attempts: 3
YAML
}

gf() { "$GF" "$1" --config "$CFG" "${@:2}"; }

# Start the broker and wait until both workers are ready.
start_broker() {
    "$GFD" --config "$CFG" --foreground 2>>"$T/broker.log" &
    BROKER_PID=$!
    for _ in $(seq 200); do
        if [ "$(gf workers 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ]; then
            return 0
        fi
        sleep 0.05
    done
    echo "broker or workers did not come up"; tail -30 "$T/broker.log"; return 1
}

# Start the broker again (after a crash) and wait until it answers.
restart_broker() {
    "$GFD" --config "$CFG" --foreground 2>>"$T/broker.log" &
    BROKER_PID=$!
    for _ in $(seq 200); do
        gf queue >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    echo "broker did not come back"; return 1
}

stop_broker() {
    [ -n "$BROKER_PID" ] || return 0
    kill -TERM "$BROKER_PID" 2>/dev/null
    wait "$BROKER_PID" 2>/dev/null
    BROKER_PID=
}

# Kill every worker left (orphans of a killed broker hold their pid files).
kill_workers() {
    for f in "$T"/run/worker*.pid; do
        [ -f "$f" ] || continue
        p=$(cat "$f" 2>/dev/null)
        [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
    done
}

cleanup() {
    stop_broker
    kill_workers
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*"
    echo "--- broker log (tail)"; tail -40 "$T/broker.log" 2>/dev/null
    exit 1
}

# Field of a job from `show --json`.
job_field() {  # ID FIELD
    gf show "$1" --json | /usr/bin/python3 -c "import json,sys; v=json.load(sys.stdin)['$2']; print('' if v is None else v)"
}

# need_random_models: the shared sample, the community-1 PLDA and a python
# that runs tests/ref/gpu_models.py (random-weight networks), or skip (77)
# saying which is missing. Sets PY, A (the audio folder) and P (the PLDA).
need_random_models() {
    PY=/usr/bin/python3
    A=../shared/data/audio
    P=../shared/data/community-1/plda
    [ -f "$A/sample.wav" ] || { echo "skip: no $A/sample.wav"; exit 77; }
    "$PY" -c 'import torch, numpy' 2>/dev/null || { echo "skip: $PY cannot import torch and numpy (tests/ref/gpu_models.py writes the models)"; exit 77; }
    [ -d "$P" ] || { echo "skip: no PLDA at $P"; exit 77; }
}
