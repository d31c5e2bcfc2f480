#!/bin/bash
# A broker on tcp:// with CURVE keys: the light `gpuflock` front (whose own
# client speaks ZMTP on ipc:// only) hands the job commands to gpuflock-cli,
# whose libzmq client does CURVE; workers and queue work
# as on ipc:// (submitting needs ipc://: the broker learns the user from the
# socket). A client with another server key gets no answer, and says so: the
# CURVE handshake fails, exit 69, a message naming the handshake and the key,
# at once (not after the request's timeout, nor never for `wait`).
. tests/integration/lib/jobs.bash
read -r PUB SEC < <("$BUILD/tests/helpers/curve_keys") || fail "no CURVE key pair"
PORT=$((20000 + RANDOM % 20000))
write_config
# broker: is the file's last section, so these lines land in it (Z85 keys
# hold & and |, hence no sed)
printf "  client_endpoint: tcp://127.0.0.1:%s\n  curve_public_key: '%s'\n  curve_secret_key: '%s'\n" \
    "$PORT" "$PUB" "$SEC" >> "$CFG"
"$GFD" --config "$CFG" --foreground 2>>"$T/broker.log" &
BROKER_PID=$!
for _ in $(seq 200); do
    [ "$(gf workers 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && break
    sleep 0.05
done
[ "$(gf workers | grep -cE ' (idle|busy) ')" = 2 ] || fail "workers over tcp: $(gf workers 2>&1; tail -5 "$T/broker.log")"
gf queue --all > "$T/q" || fail "queue over tcp"
head -1 "$T/q" | grep -q "STATE" || fail "queue header over tcp: $(cat "$T/q")"
# submitting needs the caller's credentials, which only ipc:// carries: a
# plain refusal, nothing queued
gf submit -- true > "$T/sub" 2>&1; rc=$?
[ "$rc" != 0 ] || fail "submit over tcp was accepted"
grep -q "needs a local ipc:// connection" "$T/sub" || fail "submit over tcp: $(cat "$T/sub")"
[ "$(gf queue --all | wc -l)" = 1 ] || fail "something was queued: $(gf queue --all)"
# the server's public key wrong in the client's config: no answer, a clear
# error (queue would wait its 30 s, wait for ever: timeout 20 is the guard)
read -r OTHER _ < <("$BUILD/tests/helpers/curve_keys")
grep -v curve_public_key "$CFG" > "$T/wrong.yaml"
printf "  curve_public_key: '%s'\n" "$OTHER" >> "$T/wrong.yaml"
for cmd in queue "wait 1"; do
    # shellcheck disable=SC2086
    timeout 20 "$GF" $cmd --config "$T/wrong.yaml" > "$T/wrong.out" 2> "$T/wrong.err"; rc=$?
    [ "$rc" = 69 ] || fail "$cmd with the wrong server key: exit $rc, want 69: $(cat "$T/wrong.out" "$T/wrong.err")"
    [ ! -s "$T/wrong.out" ] || fail "$cmd with the wrong server key printed: $(cat "$T/wrong.out")"
    grep -q "no CURVE handshake with the broker at tcp://127.0.0.1:$PORT: the broker closed the connection during the handshake" "$T/wrong.err" &&
        grep -q "broker.curve_public_key the broker's public key?" "$T/wrong.err" ||
        fail "$cmd with the wrong server key: the message names no handshake or key: $(cat "$T/wrong.err")"
done
echo "ok: tcp:// with CURVE through gpuflock-cli: workers, queue; submit refused plainly; a wrong server key unanswered, said at once (69)"
