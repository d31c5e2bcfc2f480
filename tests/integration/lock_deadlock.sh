#!/bin/bash
# Two cards asked for as {0,1} and {1,0} by many execs at once never
# deadlock: every set is taken in ascending index order. A deadlock would
# show as the whole run hanging; `timeout` turns that into a failure.
. tests/integration/lib/locktest.sh

worker() {
    local order=$1 i
    for i in $(seq 1 25); do
        "$GF" exec --config "$CFG" --gpu "$order" -- sh -c ':' || return 1
    done
}
export -f worker
export GF CFG
pids=()
for k in 1 2 3 4; do
    timeout 300 bash -c "worker 0,1" & pids+=($!)
    timeout 300 bash -c "worker 1,0" & pids+=($!)
done
for p in "${pids[@]}"; do
    wait "$p" || fail "a worker failed or hung (exit $?)"
done
# Shared and exclusive mixed, both orders.
pids=()
for k in 1 2; do
    timeout 300 "$GF" exec --config "$CFG" -s --gpu 1,0 -- sh -c ':' & pids+=($!)
    timeout 300 "$GF" exec --config "$CFG" -x --gpu 0,1 -- sh -c ':' & pids+=($!)
done
for p in "${pids[@]}"; do
    wait "$p" || fail "a mixed exec failed or hung (exit $?)"
done
echo "200 crossed two-card execs finished without deadlock"
