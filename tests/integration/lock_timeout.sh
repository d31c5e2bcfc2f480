#!/bin/bash
# --timeout: 75 when it runs out before the lock is had (the command never
# runs); a wait that ends in time runs the command; the holder is named on
# stderr once, however long the wait.
. tests/integration/lib/locktest.sh

flock_holder "$L1" -x
f=$BGPID
expect_status 75 "$GF" exec --config "$CFG" --gpu 1 --timeout 0 -- true 2>/dev/null
expect_status 75 "$GF" exec --config "$CFG" --gpu 1 --timeout 0.3 -- touch "$T/ran" 2>"$T/err"
[ ! -e "$T/ran" ] || fail "the command ran without the lock"
grep -q "timed out after 0.3 s" "$T/err" || fail "no timeout message: $(cat "$T/err")"

# A waiter with a long deadline gets the card when the holder goes.
bg "$GF" exec --config "$CFG" --gpu 1 --timeout 300 -- sh -c 'echo "$GPUFLOCK_DEVICE" > "$0"' \
    "$T/got" 2>"$T/werr"
w=$BGPID
poll_until "the waiter to name the holder" grep -q "is held by pid $f" "$T/werr"
sleep 0.3   # room for a repeated message, were there one (not a timing assertion)
kill "$f"; wait "$f" 2>/dev/null
wait "$w"
rc=$?
[ "$rc" -eq 0 ] || fail "waiter exited $rc"
[ "$(cat "$T/got")" = 1 ] || fail "waiter ran with GPUFLOCK_DEVICE=$(cat "$T/got")"
n=$(grep -c "is held by" "$T/werr")
[ "$n" -eq 1 ] || fail "holder named $n times: $(cat "$T/werr")"
echo "timeout gives 75; a timely wait runs the command; holder named once"
