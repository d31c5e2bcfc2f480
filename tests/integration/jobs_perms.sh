#!/bin/bash
# Nobody reads what is not theirs (issue 21): with a real second user, the
# job store (jobs.db and its -wal and -shm, which hold every user's
# environment), another user's spool files and the folders gpuflockd keeps
# are closed to them; the worker socket takes no connection from them (a
# worker gets every user's commands); each file has the mode of the table
# in docs/operations.md; the files and folders an older gpuflockd left with
# looser modes are tightened when the broker starts, and it says so. Needs
# root (creates two users with useradd when they are missing).
. tests/integration/lib/jobs.bash
need_users gfjobuser1 gfjobuser2
write_config
start_broker || exit 1
as() { local u=$1; shift; (cd /tmp && runuser -u "$u" -- "$@"); }
gfas() { local u=$1; shift; as "$u" "$GF" "$1" --config "$CFG" "${@:2}"; }
mode() { stat -c '%a %U' "$1"; }
want() {  # PATH "MODE OWNER"
    [ "$(mode "$1")" = "$2" ] || fail "$1: mode and owner '$(mode "$1")', want '$2'"
}

secret="hunter2-$$-$RANDOM"
# the secret travels in the job's environment, which the store keeps
j=$(cd /tmp && runuser -u gfjobuser1 -- env GF_TEST_SECRET="$secret" \
    "$GF" submit --config "$CFG" --gpu 0 -- sh -c 'echo "out $GF_TEST_SECRET"; echo "err $GF_TEST_SECRET" >&2') ||
    fail "submit as user 1"
gfas gfjobuser1 wait "$j" || fail "user 1's job: $(job_field "$j" reason)"
out=$(job_field "$j" stdout); err=$(job_field "$j" stderr)
# it is in the store (the broker wrote it there)...
grep -aqs "$secret" "$T"/state/jobs.db* || fail "the secret is not in the store: the test proves nothing"

# ... and the modes of the table in docs/operations.md
want "$T/state" "711 root"
for f in "$T"/state/jobs.db "$T"/state/jobs.db-wal "$T"/state/jobs.db-shm; do
    [ -e "$f" ] || fail "$f missing"
    want "$f" "600 root"
done
want "$T/state/spool" "711 root"
want "$out" "600 gfjobuser1"
want "$err" "600 gfjobuser1"
want "$T/run" "711 root"
want "$T/run/gpuflockd.pid" "644 root"
want "$T/run/worker0.pid" "600 root"
want "$T/run/worker1.pid" "600 root"
want "$T/run/client.sock" "666 root"
want "$T/run/worker.sock" "600 root"

# user 2 reads none of it
for f in "$T"/state/jobs.db "$T"/state/jobs.db-wal "$T"/state/jobs.db-shm "$out" "$err"; do
    as gfjobuser2 cat "$f" >/dev/null 2>&1 && fail "user 2 read $f"
done
as gfjobuser2 sh -c "grep -a '$secret' '$T'/state/jobs.db* '$T'/state/spool/* 2>/dev/null" &&
    fail "user 2 found user 1's secret with grep"
as gfjobuser2 ls "$T/state" >/dev/null 2>&1 && fail "user 2 listed state_dir"
as gfjobuser2 ls "$T/state/spool" >/dev/null 2>&1 && fail "user 2 listed the spool"
as gfjobuser2 ls "$T/run" >/dev/null 2>&1 && fail "user 2 listed run_dir"
gfas gfjobuser2 logs "$j" >/dev/null 2>&1 && fail "user 2 read user 1's log through the broker"
gfas gfjobuser2 show "$j" --json | grep -q "$secret" && fail "user 2 saw the secret in show"
gfas gfjobuser2 queue --all --json | grep -q "$secret" && fail "user 2 saw the secret in queue"
# nor can user 2 connect to the worker socket and pose as a worker
as gfjobuser2 /usr/bin/python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except PermissionError:
    sys.exit(3)
sys.exit(0)" "$T/run/worker.sock"
[ $? = 3 ] || fail "user 2 could connect to the worker socket"
# and were the socket opened to all by hand, the broker still takes no
# worker but root and its own user: user 2's registration is refused
POKE="$(cd "$BUILD/tests/helpers" && pwd)/zmq_poke"
pids=$(gf workers --json | /usr/bin/python3 -c "import json,sys; print(sorted(w['pid'] for w in json.load(sys.stdin)))")
chmod 666 "$T/run/worker.sock"
as gfjobuser2 "$POKE" "ipc://$T/run/worker.sock" ready > "$T/poke"
chmod 600 "$T/run/worker.sock"
grep -q "reply error .* uid $(id -u gfjobuser2) may not act as a worker" "$T/poke" ||
    fail "user 2's registration as a worker: $(cat "$T/poke")"
[ "$(gf workers --json | /usr/bin/python3 -c "import json,sys; print(sorted(w['pid'] for w in json.load(sys.stdin)))")" = "$pids" ] ||
    fail "the workers changed after user 2's registration"

# user 1 still reaches its own output, by path and through the broker;
# user 2 still uses the broker
[ "$(as gfjobuser1 cat "$out")" = "out $secret" ] || fail "user 1 cannot read its spool file by path"
[ "$(gfas gfjobuser1 logs "$j")" = "out $secret" ] || fail "user 1's logs"
k=$(gfas gfjobuser2 submit -- true) || fail "user 2 cannot submit"
gfas gfjobuser2 wait "$k" || fail "user 2's job"
gfas gfjobuser2 queue >/dev/null || fail "user 2's queue"

# an older gpuflockd's modes: every file and folder as it made them, the
# broker killed so that the store's -wal and -shm stay
kill -KILL "$BROKER_PID"; wait "$BROKER_PID" 2>/dev/null; BROKER_PID=
kill_workers
sleep 0.3
[ -e "$T/state/jobs.db-wal" ] || fail "no -wal after a SIGKILL"
chmod 755 "$T/state" "$T/state/spool" "$T/run"
chmod 644 "$T"/state/jobs.db* "$T"/run/worker*.pid
start_broker || fail "broker after the loose modes"
want "$T/state" "711 root"
for f in "$T"/state/jobs.db "$T"/state/jobs.db-wal "$T"/state/jobs.db-shm; do want "$f" "600 root"; done
want "$T/state/spool" "711 root"
want "$T/run" "711 root"
want "$T/run/worker0.pid" "600 root"
grep -q "state_dir $T/state: mode 0755 tightened to 0711" "$T/broker.log" || fail "no word of the tightened state_dir"
grep -q "job store $T/state/jobs.db: mode 0644 tightened to 0600" "$T/broker.log" || fail "no word of the tightened store"
as gfjobuser2 cat "$T/state/jobs.db" >/dev/null 2>&1 && fail "user 2 read the store after the restart"
[ "$(job_field "$j" state)" = done ] || fail "user 1's job after the restart"
# a user holding a lock on the readable pid file cannot stop a broker from
# starting (it once did: the broker's own lock was on that file)
want "$T/run/gpuflockd.lock" "600 root"
stop_broker
kill_workers
(cd /tmp && runuser -u gfjobuser2 -- flock -s "$T/run/gpuflockd.pid" sleep 600) &
squatter=$!
for _ in $(seq 200); do grep -q " FLOCK .* READ " /proc/locks && pgrep -u gfjobuser2 -x sleep >/dev/null && break; sleep 0.02; done
start_broker || fail "a user's flock on gpuflockd.pid kept the broker from starting"
gf queue >/dev/null || fail "the CLI does not see the broker behind the user's old pid file lock"
kill "$squatter" 2>/dev/null; pkill -u gfjobuser2 -x sleep
echo "ok: the store, the spool and the worker socket are closed to other users; old modes tightened"
