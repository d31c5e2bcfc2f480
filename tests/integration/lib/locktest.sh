# locktest.sh — shared set-up of the card-lock integration tests (sourced).
#
# Each test gets its own folder from mktemp -d with a configuration of two
# declared CPU cards whose lock files live there (never under /run), the
# gpuflock binary in $GF, the lock_probe helper in $PROBE, and a clean-up
# that kills every background process it started. Readiness is polled with
# generous deadlines; nothing here asserts how long anything took.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/users.sh"

BUILD=${BUILD:-build}
GF="$PWD/$BUILD/bin/gpuflock"
PROBE="$PWD/$BUILD/tests/helpers/lock_probe"
T=$(mktemp -d --suffix=.gf-it)
CFG="$T/gpuflock.yaml"
L0="$T/locks/gpu0.lock"
L1="$T/locks/gpu1.lock"
BENCH="$T/locks/bench.lock"
BG_PIDS=()

cat >"$CFG" <<YAML
bench_lock: $BENCH
proof:
  scrub_env: [GPUFLOCK_FORCE_LIBRARY, CUDA_LAUNCH_BLOCKING]
devices:
  - {index: 0, kind: cpu, lock: $L0}
  - {index: 1, kind: cpu, lock: $L1}
YAML
mkdir -p "$T/locks"
touch "$L0" "$L1" "$BENCH"

# A process and everything below it (a gpuflock exec's command runs in a
# process group of its own, so killing the exec alone would leave it).
kill_tree() {
    local c
    for c in $(pgrep -P "$1"); do
        kill_tree "$c"
    done
    kill -KILL "$1" 2>/dev/null
}

cleanup() {
    local p
    for p in "${BG_PIDS[@]}"; do
        kill_tree "$p"
    done
    for p in "${BG_PIDS[@]}"; do
        wait "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# Remember a background pid for clean-up: bg CMD... ; then $BGPID.
bg() {
    "$@" &
    BGPID=$!
    BG_PIDS+=("$BGPID")
}

# expect_status WANT CMD...: run CMD, fail unless it exits with WANT.
expect_status() {
    local want=$1 got
    shift
    "$@"
    got=$?
    [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
}

# holds FILE PID: does PID hold a flock(2) lock on FILE (per /proc/locks)?
holds() {
    local ino
    ino=$(stat -c %i "$1") || return 1
    awk -v ino="$ino" -v pid="$2" \
        '$2 != "->" && $2 == "FLOCK" && $5 == pid && $6 ~ (":" ino "$") { found = 1 }
         END { exit !found }' /proc/locks
}

# poll_until DESCRIPTION CMD...: retry CMD until it succeeds (deadline 30 s).
poll_until() {
    local what=$1 i
    shift
    for i in $(seq 1 3000); do
        "$@" && return 0
        sleep 0.01
    done
    fail "gave up waiting for: $what"
}

wait_holder() {
    poll_until "pid $2 to hold $1" holds "$1" "$2"
}

# flock(1) holding FILE in MODE (-x|-s), no fork: its pid is the holder.
flock_holder() {
    bg flock -F "$2" "$1" sleep 600
    wait_holder "$1" "$BGPID"
}

# gpuflock exec holding card(s) with extra options, running `sleep 600`.
exec_holder() {
    bg "$GF" exec --config "$CFG" "$@" -- sleep 600
}

# The child of a gpuflock exec (the command it runs).
child_of() {
    local c
    for _ in $(seq 1 3000); do
        c=$(pgrep -P "$1" | head -1)
        [ -n "$c" ] && { echo "$c"; return 0; }
        sleep 0.01
    done
    return 1
}
