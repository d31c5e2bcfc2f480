#!/bin/bash
# Workers started by hand (broker.spawn_workers: false) join the broker the
# same way, survive its restart, keep a job running across it (reclaim),
# and a second worker for one card is refused.
. tests/integration/lib/jobs.bash
write_config
sed -i 's/^broker:/broker:\n  spawn_workers: false/' "$CFG"
WK="$(cd "$BUILD/bin" && pwd)/gpuflock-worker"
"$GFD" --config "$CFG" --foreground 2>>"$T/broker.log" &
BROKER_PID=$!
for _ in $(seq 100); do gf queue >/dev/null 2>&1 && break; sleep 0.05; done
[ "$(gf workers | grep -c ' offline ')" = 2 ] || fail "workers should be offline: $(gf workers)"
"$WK" --device 0 --config "$CFG" 2>>"$T/w0.log" &
W0=$!
"$WK" --device 1 --config "$CFG" 2>>"$T/w1.log" &
W1=$!
for _ in $(seq 200); do [ "$(gf workers | grep -c ' idle ')" = 2 ] && break; sleep 0.05; done
[ "$(gf workers | grep -c ' idle ')" = 2 ] || fail "hand-started workers did not join: $(gf workers)"
# a second worker for card 0 is refused
"$WK" --device 0 --config "$CFG" 2>"$T/dup.err"; rc=$?
[ "$rc" = 69 ] && grep -q "already has a worker" "$T/dup.err" || fail "second worker: rc $rc $(cat "$T/dup.err")"
"$WK" --device 7 --config "$CFG" 2>"$T/nodev.err"; [ $? = 78 ] || fail "worker for an unknown card"
# a job keeps running across a broker crash and is reclaimed
j=$(gf submit --gpu 1 -- sh -c "echo s >> $T/runs; sleep 2; echo e >> $T/runs")
for _ in $(seq 100); do [ -s "$T/runs" ] && break; sleep 0.05; done
kill -KILL "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null
restart_broker || fail restart
gf wait "$j" || fail "job across the restart: $(job_field "$j" reason)"
[ "$(tr '\n' ' ' < "$T/runs")" = "s e " ] || fail "runs: $(cat "$T/runs")"
[ "$(job_field "$j" attempts)" = 1 ] || fail "attempts $(job_field "$j" attempts)"
grep -q "job $j reclaimed" "$T/broker.log" || fail "not reclaimed"
# the broker stops: hand-started workers stay, and join the next broker
stop_broker
kill -0 "$W0" && kill -0 "$W1" || fail "hand-started workers died with the broker"
"$GFD" --config "$CFG" --foreground 2>>"$T/broker.log" &
BROKER_PID=$!
for _ in $(seq 200); do [ "$(gf workers 2>/dev/null | grep -c ' idle ')" = 2 ] && break; sleep 0.05; done
[ "$(gf workers | grep -c ' idle ')" = 2 ] || fail "workers did not rejoin: $(gf workers)"
k=$(gf submit -- true); gf wait "$k" || fail "job after the rejoin"
kill -TERM "$W0" "$W1"; wait "$W0" "$W1"
echo "ok: hand-started workers join, refuse duplicates, keep jobs across a broker crash, rejoin"
