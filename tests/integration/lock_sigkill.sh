#!/bin/bash
# A SIGKILLed holder frees the card at once (the kernel drops its lock when
# it dies: no stale lock, no clean-up step). A job's card stays locked while
# any process of the job lives, even when gpuflock exec itself is killed.
. tests/integration/lib/locktest.sh

# flock(1) holder, SIGKILL: free as soon as it is reaped, no retry needed.
flock_holder "$L0" -x
f=$BGPID
kill -KILL "$f"; wait "$f" 2>/dev/null
expect_status 0 "$GF" exec --config "$CFG" --gpu 0 --timeout 0 -- true

# gpuflock exec holder whose command is SIGKILLed: exec reports 137 and the
# card is free.
exec_holder --gpu 0
g=$BGPID
wait_holder "$L0" "$g"
c=$(child_of "$g") || fail "no command under exec $g"
kill -KILL "$c"
wait "$g"
rc=$?
[ "$rc" -eq 137 ] || fail "exec of a SIGKILLed command exited $rc, expected 137"
expect_status 0 "$GF" exec --config "$CFG" --gpu 0 --timeout 0 -- true

# gpuflock exec itself SIGKILLed: its command inherited the lock and holds on.
exec_holder --gpu 0
g=$BGPID
wait_holder "$L0" "$g"
c=$(child_of "$g") || fail "no command under exec $g"
kill -KILL "$g"; wait "$g" 2>/dev/null
expect_status 1 "$PROBE" "$L0" >/dev/null
"$GF" locks --config "$CFG" | grep -q "pid $g exclusive (exited" ||
    fail "locks does not show the exited taker: $("$GF" locks --config "$CFG")"
kill -KILL "$c"
poll_until "the orphaned command to die and free the card" flock -n -x "$L0" true
echo "SIGKILLed holders free the card at once; inherited locks live with the job"
