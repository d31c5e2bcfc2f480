#!/bin/bash
# --proof: the bench lock is taken exclusively, the proof.scrub_env variables
# are gone from the command's environment (stderr says which were removed),
# and inside the command a fresh open + non-blocking try of its card's lock
# file (and of the bench lock) reports "would block".
. tests/integration/lib/locktest.sh

CUDA_LAUNCH_BLOCKING=1 GPUFLOCK_FORCE_LIBRARY=ref KEEP_ME=yes \
    "$GF" exec --config "$CFG" --proof --gpu 1 -- sh -c '
        [ -z "${CUDA_LAUNCH_BLOCKING+set}" ] || { echo "CUDA_LAUNCH_BLOCKING still set"; exit 10; }
        [ -z "${GPUFLOCK_FORCE_LIBRARY+set}" ] || { echo "GPUFLOCK_FORCE_LIBRARY still set"; exit 11; }
        [ "$KEEP_ME" = yes ] || { echo "KEEP_ME lost"; exit 12; }
        "$0" "$GPUFLOCK_LOCK_FILE" "$1"
        [ $? -eq 1 ] || exit 13
        "$0" -s "$GPUFLOCK_LOCK_FILE"
        [ $? -eq 1 ] || exit 14
    ' "$PROBE" "$BENCH" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] || fail "proof command failed ($rc): $(cat "$T/out" "$T/err")"
grep -q "$L1: would block" "$T/out" || fail "card lock not reported busy: $(cat "$T/out")"
grep -q "$BENCH: would block" "$T/out" || fail "bench lock not reported busy: $(cat "$T/out")"
grep -q "removed from the environment: GPUFLOCK_FORCE_LIBRARY,CUDA_LAUNCH_BLOCKING" "$T/err" ||
    fail "removed variables not named: $(cat "$T/err")"

# Nothing to remove: said so.
env -u CUDA_LAUNCH_BLOCKING -u GPUFLOCK_FORCE_LIBRARY \
    "$GF" exec --config "$CFG" --proof --gpu 0 -- true 2>"$T/err" || fail "plain proof failed"
grep -q "removed from the environment: nothing" "$T/err" || fail "$(cat "$T/err")"

# Without --proof the variables pass through and the bench lock is free.
CUDA_LAUNCH_BLOCKING=1 "$GF" exec --config "$CFG" --gpu 0 -- sh -c \
    '[ "$CUDA_LAUNCH_BLOCKING" = 1 ] && "$0" "$1" >/dev/null' "$PROBE" "$BENCH" ||
    fail "non-proof exec changed the environment or held the bench lock"

# Two proof runs never overlap, even on different cards.
bg "$GF" exec --config "$CFG" --proof --gpu 0 -- sleep 600 2>/dev/null
p=$BGPID
wait_holder "$BENCH" "$p"
expect_status 75 "$GF" exec --config "$CFG" --proof --gpu 1 --timeout 0.2 -- true 2>"$T/err"
grep -q "bench lock ($BENCH) is held by pid $p" "$T/err" || fail "$(cat "$T/err")"
expect_status 0 "$GF" exec --config "$CFG" --gpu 1 --timeout 0 -- true   # non-proof: fine
echo "proof jobs hold the bench lock, lose the scrubbed variables, see their lock busy"
