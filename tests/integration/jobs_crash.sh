#!/bin/bash
# Crashes: a worker stopped with SIGTERM mid-job stops its job gracefully;
# a worker killed with SIGKILL mid-job (the job runs again and
# completes), its whole process group with it; --no-requeue fails at once instead; the broker killed with
# SIGKILL while jobs are queued and running, then restarted: no job lost,
# none run twice at the same time, and running jobs are reclaimed.
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1
worker_pid() { cat "$T/run/worker$1.pid"; }

# worker SIGTERM mid-job: a graceful stop, twice (the signal may
# land on any of the worker's threads, OpenBLAS's included): the job gets
# SIGTERM from its worker (its trap runs), not the SIGKILL of a worker that
# died of the signal; the broker starts the worker again
for round in 1 2; do
    rm -f "$T/trap"
    g=$(gf submit --gpu 1 --no-requeue -- sh -c "trap 'echo term > $T/trap; exit 3' TERM; echo up > $T/up$round; while :; do sleep 0.05; done")
    for _ in $(seq 100); do [ -s "$T/up$round" ] && break; sleep 0.05; done
    [ -s "$T/up$round" ] || fail "round $round: job did not start"
    old=$(worker_pid 1)
    kill -TERM "$old"
    for _ in $(seq 100); do [ -s "$T/trap" ] && break; sleep 0.05; done
    [ "$(cat "$T/trap" 2>/dev/null)" = term ] || fail "round $round: the job did not get SIGTERM from a stopping worker"
    for _ in $(seq 200); do [ "$(gf workers 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && [ "$(worker_pid 1)" != "$old" ] && break; sleep 0.05; done
    [ "$(worker_pid 1)" != "$old" ] || fail "round $round: worker 1 not restarted"
    gf wait "$g" >/dev/null 2>&1
done

# worker SIGKILL mid-job → requeued, runs again, completes
j=$(gf submit --gpu 0 -- sh -c "echo run >> $T/runs; sleep 1; echo finished >> $T/runs")
for _ in $(seq 100); do [ -s "$T/runs" ] && break; sleep 0.05; done
[ -s "$T/runs" ] || fail "job did not start"
kill -KILL "$(worker_pid 0)"
gf wait "$j" || fail "job after a worker crash did not complete: $(job_field "$j" reason)"
[ "$(grep -c '^run$' "$T/runs")" = 2 ] || fail "expected 2 runs: $(cat "$T/runs")"
[ "$(job_field "$j" attempts)" = 2 ] || fail "attempts $(job_field "$j" attempts)"
# the worker was restarted
for _ in $(seq 100); do [ "$(gf workers | grep -c ' idle ')" = 2 ] && break; sleep 0.05; done
[ "$(gf workers | grep -c ' idle ')" = 2 ] || fail "worker not restarted: $(gf workers)"

# --no-requeue: fails at once when its worker dies
n=$(gf submit --no-requeue --gpu 1 -- sh -c "echo x > $T/nr; sleep 5")
for _ in $(seq 100); do [ -s "$T/nr" ] && break; sleep 0.05; done
kill -KILL "$(worker_pid 1)"
gf wait "$n"; [ $? -ne 0 ] || fail "--no-requeue job succeeded"
[ "$(job_field "$n" state)" = failed ] || fail "--no-requeue state"
job_field "$n" reason | grep -q 'no-requeue' || fail "--no-requeue reason: $(job_field "$n" reason)"
for _ in $(seq 100); do [ "$(gf workers | grep -c ' idle ')" = 2 ] && break; sleep 0.05; done

# the whole job dies with its worker, not only its first process: a child in
# the background (holding the card's lock descriptor too) goes as well
g=$(gf submit --no-requeue --gpu 1 -- sh -c "sleep 300 & echo \$! > $T/bg; wait")
for _ in $(seq 100); do [ -s "$T/bg" ] && break; sleep 0.05; done
[ -s "$T/bg" ] || fail "background job did not start"
bg=$(cat "$T/bg")
kill -0 "$bg" 2>/dev/null || fail "background child not running"
kill -KILL "$(worker_pid 1)"
for _ in $(seq 100); do kill -0 "$bg" 2>/dev/null || break; sleep 0.05; done
kill -0 "$bg" 2>/dev/null && fail "the job's background child outlived its worker"
gf wait "$g"; [ $? -ne 0 ] || fail "job of a killed worker succeeded"
for _ in $(seq 100); do [ "$(gf workers | grep -c ' idle ')" = 2 ] && break; sleep 0.05; done

# broker SIGKILL with jobs queued and running; restart
EV="$T/events"
ids=$(gf submit --array 12 -- sh -c "echo start \$GPUFLOCK_JOB_ID \$(date +%s%N) >> $EV; sleep 0.6; echo end \$GPUFLOCK_JOB_ID \$(date +%s%N) >> $EV") || fail submit
for _ in $(seq 100); do [ "$(cat "$EV" 2>/dev/null | grep -c start)" -ge 2 ] && break; sleep 0.05; done
# a `gpuflock wait` that is waiting when the broker dies asks the next one again
gf wait $ids > "$T/wait.out" 2>&1 &
waiter=$!
sleep 0.2
kill -KILL "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=
restart_broker || fail "restart"
wait "$waiter" || fail "the wait across the restart: $(cat "$T/wait.out")"
gf wait $ids || fail "jobs after a broker crash"
/usr/bin/python3 - "$EV" $ids <<'PY' || fail "runs overlap or missing"
import sys
ev = [l.split() for l in open(sys.argv[1])]
ids = sys.argv[2:]
for i in ids:
    mine = sorted((int(t), k) for k, j, t in ev if j == i)
    assert mine, "job %s never ran" % i
    depth = 0
    for t, k in mine:
        depth += 1 if k == 'start' else -1
        assert depth <= 1, "job %s ran twice at the same time" % i
    assert depth == 0 and mine[-1][1] == 'end', "job %s did not finish" % i
print("ok", len(ids), "jobs,", sum(1 for e in ev if e[0] == 'start'), "starts")
PY
grep -q 'reclaimed by the worker' "$T/broker.log" || fail "no job was reclaimed after the restart"

# broker and worker both killed while a job runs: the next broker's fresh
# worker comes back without the job, which runs again and completes
z=$(gf submit --gpu 0 -- sh -c "echo run >> $T/zruns; sleep 0.5")
for _ in $(seq 100); do [ -s "$T/zruns" ] && break; sleep 0.05; done
kill -KILL "$BROKER_PID" "$(cat "$T/run/worker0.pid")"; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=
sleep 0.6     # the job's own sleep (an orphan holding the card) ends too
restart_broker || fail "restart 2"
gf wait "$z" || fail "job lost with its worker and broker: $(job_field "$z" reason)"
[ "$(grep -c run "$T/zruns")" = 2 ] || fail "expected a second run: $(cat "$T/zruns")"
grep -q "came back without it" "$T/broker.log" || fail "not requeued at the worker's registration"
echo "ok: worker crash, no-requeue, broker crash"
