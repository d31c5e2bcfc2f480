#!/bin/bash
# Random bytes, wrong versions, unknown operations, truncated and oversized
# messages on both broker sockets: error replies or dropped frames, and the
# broker keeps serving (its workers too). A client op on the worker socket (a
# valid submit) and a worker op from a stranger (a result for a running job)
# are refused: nothing comes of them. (From a registered worker, client ops
# are errors naming the op: tests/unit/test_server.c.)
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1
POKE="$BUILD/tests/helpers/zmq_poke"
for ep in "ipc://$T/run/client.sock" "ipc://$T/run/worker.sock"; do
    "$POKE" "$ep" random 300 > "$T/poke" || fail "poke random $ep"
    grep -q '^reply error' "$T/poke" || fail "no error replies to random bytes on $ep"
    "$POKE" "$ep" version > "$T/poke"
    grep -q 'reply error .*unsupported protocol version 99' "$T/poke" || fail "version on $ep: $(cat "$T/poke")"
    "$POKE" "$ep" unknown-op > "$T/poke"
    grep -q "unknown operation 'format-disk'" "$T/poke" || fail "unknown op on $ep"
    "$POKE" "$ep" truncated > "$T/poke"
    grep -q "truncated" "$T/poke" || fail "truncated on $ep: $(cat "$T/poke")"
    "$POKE" "$ep" oversize-string > "$T/poke"
    grep -q "over the limit" "$T/poke" || fail "oversize string on $ep: $(cat "$T/poke")"
    "$POKE" "$ep" huge-array > "$T/poke"
    grep -q "over the limit" "$T/poke" || fail "huge array on $ep: $(cat "$T/poke")"
    "$POKE" "$ep" multipart > "$T/poke"
    grep -q "more than one body frame" "$T/poke" || fail "multipart on $ep: $(cat "$T/poke")"
    "$POKE" "$ep" huge-frame > "$T/poke" || fail "huge frame on $ep"
    kill -0 "$BROKER_PID" || fail "broker died"
done
# a client op on the worker socket, from a peer that is no registered worker:
# it is told to register, and the submit never becomes a job
W="ipc://$T/run/worker.sock"
"$POKE" "$W" submit "$T/poked" > "$T/poke" || fail "poke submit"
grep -q '^reply disconnect 0 not registered' "$T/poke" || fail "client op on the worker socket: $(cat "$T/poke")"
# a worker op from a stranger: a result for a running job leaves it running
long=$(gf submit -- sleep 30) || fail "submit the long job"
for _ in $(seq 100); do [ "$(job_field "$long" state)" = running ] && break; sleep 0.05; done
[ "$(job_field "$long" state)" = running ] || fail "the long job did not start: $(gf show "$long")"
"$POKE" "$W" result "$long" > "$T/poke" || fail "poke result"
grep -q '^reply disconnect 0 not registered' "$T/poke" || fail "a stranger's result: $(cat "$T/poke")"
[ "$(job_field "$long" state)" = running ] || fail "a stranger's result ended job $long: $(gf show "$long")"
gf cancel "$long" >/dev/null || fail "cancel the long job"
id=$(gf submit -- sh -c 'echo still serving') || fail "submit after the garbage"
gf wait "$id" || fail "job after the garbage"
[ "$(gf logs "$id")" = "still serving" ] || fail "output after the garbage"
[ "$(gf workers | grep -c ' idle ')" = 2 ] || fail "workers lost: $(gf workers)"
[ ! -e "$T/poked" ] || fail "the submit sent on the worker socket ran"
n=$(gf queue --all --json | /usr/bin/python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')
[ "$n" = 2 ] || fail "jobs: $n, want 2 (the long one and the one after the garbage): $(gf queue --all)"
# tcp:// without CURVE keys: refused at start, with status 78
stop_broker
sed -i 's|^broker:|broker:\n  client_endpoint: tcp://127.0.0.1:45999|' "$CFG"
"$GFD" --config "$CFG" --foreground 2>"$T/tcp.err"; rc=$?
[ "$rc" = 78 ] || fail "tcp:// without keys: status $rc"
grep -q "tcp:// is refused without" "$T/tcp.err" || fail "tcp:// message: $(cat "$T/tcp.err")"
echo "ok: garbage refused, a client op on the worker socket and a stranger's result refused, broker serving; tcp:// without CURVE refused"
