#!/bin/bash
# Shared holders coexist: gpuflock exec -s beside gpuflock exec -s and beside
# flock(1) -s; any shared holder keeps an exclusive one out.
. tests/integration/lib/locktest.sh

exec_holder -s --gpu 0
a=$BGPID
wait_holder "$L0" "$a"
flock_holder "$L0" -s
f=$BGPID

# A second shared exec gets in at once, while both others hold.
expect_status 0 "$GF" exec --config "$CFG" -s --gpu 0 --timeout 0 -- true
expect_status 0 flock -n -s "$L0" true
# Exclusive is kept out, for gpuflock and for flock(1).
expect_status 75 "$GF" exec --config "$CFG" -x --gpu 0 --timeout 0 -- true 2>/dev/null
expect_status 1 flock -n -x "$L0" true

kill "$a"; wait "$a" 2>/dev/null
expect_status 75 "$GF" exec --config "$CFG" -x --gpu 0 --timeout 0 -- true 2>/dev/null
kill "$f"; wait "$f" 2>/dev/null
expect_status 0 "$GF" exec --config "$CFG" -x --gpu 0 --timeout 0 -- true
echo "shared holders coexist; exclusive waits for all of them"
