#!/bin/bash
# The gpuflock SPANK plugin on a real single-node Slurm (slurmctld, slurmd
# and munge from Debian, started here as root, fake gpu gres): a step holds
# the card lock of each card Slurm gave it, so a hand-run flock(1) or
# `gpuflock exec` and a Slurm step respect each other in both orders; a
# busy card makes the step wait (said on its stderr) up to the plugin's
# wait= and then fail with 75; `gpuflock locks` names the Slurm job;
# --gpuflock=shared, --gpuflock-proof, a bad option value, a card Slurm
# hands out that the configuration lacks, a lock file that is a symlink, a
# step cancelled while it waits, a batch job's inner step on its card, a
# step of another user (nobody), bad plugin arguments. First, without the
# plugin, a step ignores a flock(1) holder (what the plugin is for).
# Skipped (77) where Slurm is not installed or the plugin was not built.
. tests/integration/lib/locktest.sh
. tests/integration/lib/slurm.bash

SO="$PWD/$BUILD/lib/slurm/gpuflock_spank.so"
slurm_available || { echo "skip: slurm_spank: Slurm is not installed (slurm-wlm slurmctld slurmd munge: tools/setup-deps)"; exit 77; }
[ -f "$SO" ] || { echo "skip: slurm_spank: $SO was not built (needs <slurm/spank.h>: libslurm-dev)"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "skip: slurm_spank: a private Slurm needs root"; exit 77; }

S="$T/slurm"
stop_slurm() { slurm_stop "$S"; }
trap 'stop_slurm; cleanup' EXIT
chmod 755 "$T"   # the job's user (root here) reads the lock files through it

# start_with PLUGSTACK_LINE: (re)start the private Slurm, 3 gpus declared
# (the configuration has cards 0 and 1 only: the third is a card Slurm hands
# out that gpuflock does not know).
start_with() {
    slurm_stop "$S"
    rm -rf "$S"
    mkdir -p "$S"
    if [ -n "$1" ]; then
        echo "$1" >"$S/plugstack.conf"
    else
        : >"$S/plugstack.conf"
    fi
    SLURM_EXTRA="PlugStackConfig=$S/plugstack.conf" slurm_start "$S" 3
    case $? in
    0) ;;
    77) echo "skip: slurm_spank: no fake gpu devices can be made here (mknod)"; exit 77 ;;
    *) fail "the private Slurm did not start: $(tail -5 "$S"/*.log 2>/dev/null)" ;;
    esac
}

# wait_step_holds FILE: until a slurmstepd holds FILE (per /proc/locks).
wait_step_holds() {
    local f=$1 ino pid
    ino=$(stat -c %i "$f")
    for _ in $(seq 200); do
        for pid in $(awk -v ino="$ino" '$2 == "FLOCK" && $6 ~ (":" ino "$") { print $5 }' /proc/locks); do
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ] && return 0
        done
        sleep 0.05
    done
    fail "no slurmstepd came to hold $f"
}

# ---- without the plugin: Slurm alone does not see the card lock --------------
start_with ""
bg flock "$L0" sleep 600
wait_holder "$L0" "$BGPID"
flock_pid=$BGPID
timeout 20 srun --gres=gpu:1 true 2>"$T/err" || fail "a plain step failed: $(cat "$T/err")"
kill_tree "$flock_pid"

# ---- with the plugin ----------------------------------------------------------
start_with "required $SO config=$CFG wait=3"

# A flock(1) holder first: the step waits, says who holds the card, gives up.
bg flock "$L0" sleep 600
flock_pid=$BGPID
wait_holder "$L0" "$flock_pid"
expect_status 75 timeout 30 srun --gres=gpu:1 true 2>"$T/err"
grep -q "card 0 ($L0) is held by pid $flock_pid (exclusive, flock: flock $L0 sleep 600); waiting up to 3 s" "$T/err" ||
    fail "the wait was not said: $(cat "$T/err")"
grep -q "gave up after 3 s waiting for its cards" "$T/err" || fail "the give-up was not said: $(cat "$T/err")"
# ... and the step runs once the holder lets go within the limit.
(sleep 1; kill_tree "$flock_pid") &
timeout 30 srun --gres=gpu:1 sh -c '[ "$GPUFLOCK_DEVICE" = 0 ] && [ "$GPUFLOCK_LOCK_FILE" = "$1" ]' sh "$L0" \
    2>"$T/err" || fail "the step did not run after the holder left: $(cat "$T/err")"
wait

# A gpuflock exec holder first: the same.
bg "$GF" exec --config "$CFG" --gpu 0 -- sleep 600
exec_pid=$BGPID
wait_holder "$L0" "$exec_pid"
expect_status 75 timeout 30 srun --gres=gpu:1 true 2>"$T/err"
grep -q "card 0 ($L0) is held by pid $exec_pid (exclusive, gpuflock:" "$T/err" || fail "$(cat "$T/err")"
kill_tree "$exec_pid"

# The Slurm step first: flock(1) and gpuflock exec wait for it, and
# `gpuflock locks` names its job.
timeout 60 srun --gres=gpu:1 sleep 600 2>"$T/step.err" &
srun_pid=$!
BG_PIDS+=("$srun_pid")
wait_step_holds "$L0"
job=$(squeue -h -o %A -t R | head -1)
[ -n "$job" ] || fail "no running job in squeue"
expect_status 1 flock -w 0.3 "$L0" true
expect_status 75 "$GF" exec --config "$CFG" --gpu 0 --timeout 0.3 -- true 2>"$T/err"
grep -q "Slurm job $job step 0" "$T/err" || fail "gpuflock exec did not name the Slurm step: $(cat "$T/err")"
"$GF" locks --config "$CFG" >"$T/locks.out" || fail "gpuflock locks failed"
grep -q "exclusive slurm: job $job step 0 (slurmstepd: \[$job.0\])" "$T/locks.out" ||
    fail "gpuflock locks does not name the Slurm job: $(cat "$T/locks.out")"
"$GF" locks --config "$CFG" --json | grep -q "\"job\": *$job" || fail "locks --json lacks the job"
# The other card is free for everyone meanwhile.
expect_status 0 "$GF" exec --config "$CFG" --gpu 1 --timeout 0 -- true
scancel "$job"
wait "$srun_pid" 2>/dev/null
for _ in $(seq 100); do flock -n "$L0" true && break; sleep 0.1; done
expect_status 0 flock -n "$L0" true

# Shared: a shared step beside a shared flock(1) holder; an exclusive one waits.
bg flock -s "$L0" sleep 600
flock_pid=$BGPID
wait_holder "$L0" "$flock_pid"
timeout 30 srun --gres=gpu:1 --gpuflock=shared true 2>"$T/err" || fail "a shared step failed: $(cat "$T/err")"
expect_status 75 timeout 30 srun --gres=gpu:1 --gpuflock=exclusive true 2>/dev/null
kill_tree "$flock_pid"

# A bad mode is refused by srun before anything runs.
timeout 30 srun --gpuflock=sharde true 2>"$T/err" && fail "--gpuflock=sharde accepted"
grep -q "'sharde' is not a lock mode (shared or exclusive)" "$T/err" || fail "$(cat "$T/err")"

# --gpuflock-proof: the bench lock held by the step, the scrubbed variable gone.
CUDA_LAUNCH_BLOCKING=1 KEEP_ME=yes timeout 30 srun --gres=gpu:1 --gpuflock-proof sh -c '
    [ -z "${CUDA_LAUNCH_BLOCKING+set}" ] || exit 10
    [ "$KEEP_ME" = yes ] || exit 11
    flock -n "$1" true && exit 12
    exit 0' sh "$BENCH" 2>"$T/err" || fail "the proof step failed ($?): $(cat "$T/err")"
grep -q "removed from the environment: CUDA_LAUNCH_BLOCKING" "$T/err" || fail "$(cat "$T/err")"
expect_status 0 flock -n "$BENCH" true

# A card Slurm hands out that the configuration does not have: refused (64).
expect_status 64 timeout 30 srun --gres=gpu:3 true 2>"$T/err"
grep -q "SLURM_STEP_GPUS names card 2, which $CFG does not configure" "$T/err" || fail "$(cat "$T/err")"

# A lock file that is a symlink is not used (the configuration is refused:
# 78), and nothing is held.
mv "$L1" "$T/real1"
ln -s "$T/real1" "$L1"
expect_status 78 timeout 30 srun --gres=gpu:2 true 2>"$T/err"
grep -q "the step fails (exit status 78)" "$T/err" || fail "$(cat "$T/err")"
grep -q "lock file '$L1' is a symlink" "$T/err" || fail "the symlink was not named: $(cat "$T/err")"
expect_status 0 flock -n "$L0" true
rm -f "$L1"
mv "$T/real1" "$L1"

# A step cancelled while it waits: it ends, and holds nothing afterwards.
bg flock "$L0" sleep 600
flock_pid=$BGPID
wait_holder "$L0" "$flock_pid"
timeout 60 srun --gres=gpu:1 sleep 600 2>/dev/null &
srun_pid=$!
BG_PIDS+=("$srun_pid")
for _ in $(seq 100); do job=$(squeue -h -o %A | head -1); [ -n "$job" ] && break; sleep 0.1; done
sleep 0.5
scancel "$job"
wait "$srun_pid" 2>/dev/null && fail "a cancelled step exited 0"
kill_tree "$flock_pid"
for _ in $(seq 100); do [ -z "$(squeue -h)" ] && break; sleep 0.1; done
expect_status 0 flock -n "$L0" true

# A step of another user (slurmstepd waits as the job's user): it holds its
# card as well, and waits for a flock(1) holder the same way.
if getent passwd nobody >/dev/null; then
    (cd / && timeout 60 srun --uid=nobody --gres=gpu:1 sleep 600) 2>/dev/null &
    srun_pid=$!
    BG_PIDS+=("$srun_pid")
    wait_step_holds "$L0"
    expect_status 1 flock -w 0.3 "$L0" true
    scancel -u nobody
    wait "$srun_pid" 2>/dev/null
    for _ in $(seq 100); do flock -n "$L0" true && break; sleep 0.1; done
    bg flock "$L0" sleep 600
    flock_pid=$BGPID
    wait_holder "$L0" "$flock_pid"
    (cd / && expect_status 75 timeout 30 srun --uid=nobody --gres=gpu:1 true 2>"$T/err")
    grep -q "is held by pid $flock_pid" "$T/err" || fail "nobody's step: $(cat "$T/err")"
    kill_tree "$flock_pid"
else
    echo "skip: slurm_spank: another user's step: no user nobody"
fi

# A batch job holds its card in its batch step; an srun step inside it asking
# for the same card does not wait for its own job.
timeout 60 sbatch -W --gres=gpu:1 -o "$T/batch.out" \
    --wrap 'srun --gres=gpu:1 sh -c "echo inner \$GPUFLOCK_DEVICE"' >/dev/null ||
    fail "a batch job with an inner step failed: $(cat "$T/batch.out")"
grep -qx "inner 0" "$T/batch.out" || fail "the inner step did not run: $(cat "$T/batch.out")"
grep -q "waiting" "$T/batch.out" && fail "the inner step waited for its own job: $(cat "$T/batch.out")"

# Bad plugin arguments (plugstack.conf is read again by each srun and step):
# srun refuses to run anything.
echo "required $SO config=$CFG wait=soon" >"$S/plugstack.conf"
timeout 30 srun true 2>"$T/err" && fail "wait=soon accepted"
grep -q "wait=soon is not a number of seconds" "$T/err" || fail "$(cat "$T/err")"
echo "required $SO conf=$CFG" >"$S/plugstack.conf"
timeout 30 srun true 2>"$T/err" && fail "conf= accepted"
grep -q "unknown argument 'conf=$CFG'" "$T/err" || fail "$(cat "$T/err")"
echo "Slurm steps and hand-run flock/gpuflock exec holders respect each other's card locks"
