#!/bin/bash
# An exclusive holder excludes both ways: a flock(1) holder blocks gpuflock
# exec (which says who holds the card), a gpuflock exec holder blocks flock(1).
. tests/integration/lib/locktest.sh

flock_holder "$L0" -x
f=$BGPID
expect_status 75 "$GF" exec --config "$CFG" --gpu 0 --timeout 0.2 -- true 2>"$T/err"
grep -q "card 0 ($L0) is held by pid $f (exclusive, flock: sleep 600); waiting" "$T/err" ||
    fail "no holder line: $(cat "$T/err")"
expect_status 75 "$GF" exec --config "$CFG" -s --gpu 0 --timeout 0 -- true 2>/dev/null
# The other card is not affected.
expect_status 0 "$GF" exec --config "$CFG" --gpu 1 --timeout 0 -- true
kill "$f"; wait "$f" 2>/dev/null

exec_holder -x --gpu 0
g=$BGPID
wait_holder "$L0" "$g"
expect_status 1 flock -n -x "$L0" true
expect_status 1 flock -n -s "$L0" true
expect_status 1 flock -w 0.2 -x "$L0" true
expect_status 75 "$GF" exec --config "$CFG" -s --gpu 0 --timeout 0 -- true 2>"$T/err"
grep -q "is held by pid $g (exclusive, gpuflock: " "$T/err" ||
    fail "exec holder not named as gpuflock: $(cat "$T/err")"
echo "exclusive excludes flock(1) and gpuflock exec, both ways"
