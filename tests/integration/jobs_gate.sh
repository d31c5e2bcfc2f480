#!/bin/bash
# jobs_gate — the broker and its workers on the lock's hostile-box rules:
#   - gpuflockd makes every configured card's lock file and fairness gate at
#     start, mode 0644 (docs/locking.md);
#   - a worker honours the gate: while a `gpuflock exec -x` outside the
#     broker waits for a card held shared by a hand-run flock(1), a shared
#     broker job for that card does not start ahead of it, and its pending
#     reason says why; once the exec has had the card, the job runs;
#   - a job for a card whose lock folder someone else owns fails with a
#     reason naming the folder and its owner (root only: it makes a user;
#     else reported skipped, "skip: ...").
source "$(dirname "$0")/lib/jobs.bash"
fail() { echo "FAIL: $*"; tail -20 "$T/broker.log" 2>/dev/null; exit 1; }

write_config
start_broker || fail "start"
for f in gpu0.lock gpu0.lock.gate gpu1.lock gpu1.lock.gate bench.lock; do
    [ "$(stat -c %a "$T/lock/$f" 2>/dev/null)" = 644 ] || fail "$f: mode $(stat -c %a "$T/lock/$f" 2>&1)"
done

# A hand-run shared holder, and an exclusive exec waiting behind it.
flock -F -s "$T/lock/gpu0.lock" sleep 600 &
holder=$!
for _ in $(seq 200); do grep -q " FLOCK .* READ .* $holder " /proc/locks && break; sleep 0.01; done
"$GF" exec --config "$CFG" -x --gpu 0 -- sh -c "date +%s.%N >'$T/excl'" 2>"$T/exec.err" &
ex=$!
for _ in $(seq 300); do grep -q "is held by" "$T/exec.err" && break; sleep 0.01; done
grep -q "is held by" "$T/exec.err" || fail "the exec did not wait: $(cat "$T/exec.err")"

id=$(gf submit -s --gpu 0 -- sh -c "date +%s.%N >'$T/job'") || fail "submit"
for _ in $(seq 200); do gf queue | grep -q "ahead at its gate" && break; sleep 0.05; done
gf queue | grep "^ *$id " | grep -q "waiting for card 0: an exclusive waiter outside the broker is ahead at its gate" ||
    fail "the shared job's reason: $(gf queue)"
[ -e "$T/job" ] && fail "the shared job started ahead of the announced exclusive waiter"
kill "$holder"
wait "$ex" || fail "the exclusive exec failed: $(cat "$T/exec.err")"
gf wait "$id" >/dev/null || fail "the shared job did not finish"
[ "$(echo "$(cat "$T/excl") < $(cat "$T/job")" | bc)" = 1 ] || fail "the job ran before the exec"

# A lock folder owned by another user: the job fails, naming it.
if make_users gfmallory; then
    chown gfmallory "$T/lock"
    id=$(gf submit --gpu 1 -- true) || fail "submit 2"
    gf wait "$id" >/dev/null && fail "a job ran in a folder gfmallory owns"
    gf show "$id" | grep -q "folder $T/lock belongs to gfmallory" || fail "reason: $(gf show "$id")"
    chown root "$T/lock"
else
    echo "skip: a lock folder another user owns: cannot make the user gfmallory (needs root, useradd and runuser)"
fi
echo ok
