#!/bin/bash
# Random bytes, wrong versions, unknown operations, truncated and oversized
# messages on both broker sockets: error replies or dropped frames, and the
# broker keeps serving (its workers too).
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
# a client op on the worker socket and a worker op from a stranger are refused
id=$(gf submit -- sh -c 'echo still serving') || fail "submit after the garbage"
gf wait "$id" || fail "job after the garbage"
[ "$(gf logs "$id")" = "still serving" ] || fail "output after the garbage"
[ "$(gf workers | grep -c ' idle ')" = 2 ] || fail "workers lost: $(gf workers)"
# tcp:// without CURVE keys: refused at start, with status 78
stop_broker
sed -i 's|^broker:|broker:\n  client_endpoint: tcp://127.0.0.1:45999|' "$CFG"
"$GFD" --config "$CFG" --foreground 2>"$T/tcp.err"; rc=$?
[ "$rc" = 78 ] || fail "tcp:// without keys: status $rc"
grep -q "tcp:// is refused without" "$T/tcp.err" || fail "tcp:// message: $(cat "$T/tcp.err")"
echo "ok: garbage refused, broker serving; tcp:// without CURVE refused"
