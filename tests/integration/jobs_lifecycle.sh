#!/bin/bash
# Broker lifecycle: one broker per run_dir; a job on K cards holds all of
# them; SIGTERM lets a running job finish, refuses new submits, stops the
# workers; a job left running past the deadline is requeued and runs after
# the next start; with no broker, job commands say how to start one; the
# command is found through the submitter's PATH.
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1

# each worker's READY carries its route plan, made once at its start: every
# route of `gpuflock plan --gpu N` for its card, with its reason
gf workers --json >"$T/workers.json" || fail "workers --json"
gf plan --gpu 0 --json >"$T/plan0.json" || fail "plan --gpu 0"
/usr/bin/python3 - "$T/workers.json" "$T/plan0.json" <<'PY' || fail "READY's plan is another"
import json, sys
workers = json.load(open(sys.argv[1]))
plan = json.load(open(sys.argv[2]))
w = [w for w in workers if w["device"] == 0][0]["plan"]
key = lambda r: (r["boundary"], r["batch"], r["math"], r["route"], r["why"], r["detail"])
assert [key(r) for r in w["routes"]] == [key(r) for r in plan["routes"]], "routes differ"
assert w["own"] + w["library"] == len(plan["routes"]) and w["other_batches"] == "library", \
    (w["own"], w["library"], w.get("other_batches"))
PY

# the command is looked up in the submitter's PATH; a missing one fails with 127
mkdir -p "$T/mybin" && printf '#!/bin/sh\necho found in my PATH\n' > "$T/mybin/mytool"
chmod +x "$T/mybin/mytool"
id=$(PATH="$T/mybin:$PATH" gf submit -- mytool) || fail "submit mytool"
gf wait "$id" || fail "mytool through the submitter's PATH: $(gf show "$id")"
[ "$(gf logs "$id")" = "found in my PATH" ] || fail "mytool output"
id=$(gf submit -- no-such-command-here) || fail "submit a missing command"
gf wait "$id"; rc=$?
[ "$rc" = 127 ] || fail "a missing command: status $rc"
grep -q "cannot run no-such-command-here" "$T/state/spool/$id.err" || fail "missing command message"

# a second broker on the same run_dir is refused
"$GFD" --config "$CFG" --foreground 2>"$T/second.err"; rc=$?
[ "$rc" = 69 ] || fail "second broker: status $rc"
grep -q "already serves" "$T/second.err" || fail "second broker message: $(cat "$T/second.err")"

# --gpus 2: both cards, both locks held by the job, all or none
k=$(gf submit --gpus 2 -- sh -c "echo \$GPUFLOCK_DEVICE \$CUDA_VISIBLE_DEVICES; echo \$GPUFLOCK_LOCK_FILE; for c in 0 1; do flock -n $T/lock/gpu\$c.lock true && echo free\$c || echo held\$c; done")
gf wait "$k" || fail "--gpus 2 job"
out=$(gf logs "$k")
[ "$(echo "$out" | sed -n 1p)" = "0,1 0,1" ] || fail "--gpus 2 devices: $out"
[ "$(echo "$out" | sed -n 2p)" = "$T/lock/gpu0.lock,$T/lock/gpu1.lock" ] || fail "--gpus 2 lock files: $out"
echo "$out" | grep -qx held0 && echo "$out" | grep -qx held1 || fail "--gpus 2 did not hold both locks: $out"
gf submit --gpus 3 -- true 2>"$T/err"; [ $? = 64 ] || fail "--gpus 3 on two cards accepted"

# SIGTERM: the running job finishes, a new submit is refused, workers stop
r=$(gf submit --gpu 0 -- sh -c "sleep 1; echo finished > $T/finished")
for _ in $(seq 100); do [ "$(job_field "$r" state)" = running ] && break; sleep 0.05; done
w0=$(cat "$T/run/worker0.pid")
kill -TERM "$BROKER_PID"
sleep 0.2
gf submit -- true 2>"$T/err"; rc=$?
[ "$rc" != 0 ] && grep -q "shutting down" "$T/err" || fail "submit during shutdown: rc $rc $(cat "$T/err")"
wait "$BROKER_PID"; rc=$?; BROKER_PID=
[ "$rc" = 0 ] || fail "broker exit status $rc"
[ -s "$T/finished" ] || fail "the running job did not finish before the broker stopped"
kill -0 "$w0" 2>/dev/null && fail "worker still alive after the broker stopped"

# no broker: the job commands say so, with how to start one, status 69
gf queue 2>"$T/err"; rc=$?
[ "$rc" = 69 ] && grep -q "no broker is running" "$T/err" && grep -q "gpuflockd --config $CFG" "$T/err" \
    || fail "no-broker message: rc $rc $(cat "$T/err")"

# a job still running at the shutdown deadline goes back to pending and runs after a restart
sed -i 's/shutdown_deadline_s: 5/shutdown_deadline_s: 1/' "$CFG"
start_broker || exit 1
l=$(gf submit --gpu 1 -- sh -c "echo run >> $T/long; sleep 30")
for _ in $(seq 100); do [ -s "$T/long" ] && break; sleep 0.05; done
stop_broker
kill_workers
start_broker || exit 1
for _ in $(seq 200); do [ "$(wc -l < "$T/long")" = 2 ] && break; sleep 0.05; done
[ "$(wc -l < "$T/long")" = 2 ] || fail "the requeued job did not run again after the restart"
gf show "$l" | grep -q "running" || fail "requeued job not running: $(gf show "$l")"
gf cancel "$l"
echo "ok: one broker per run_dir, --gpus, graceful stop, no-broker message, requeue at shutdown"
