#!/bin/bash
# Descriptors: libzmq aborts a process whose ipc:// listener cannot accept a
# connection for want of descriptors (src/ipc_listener.cpp, accept: EMFILE
# is not among the errors it takes), and any local user may connect to the
# client socket. So gpuflockd raises its soft RLIMIT_NOFILE to the hard one
# at start. Shown: a broker started with a soft limit of 128 (hard 4096)
# takes 600 idle connections and still answers, and its workers run with
# the 128 it was started with. (Past the hard limit libzmq still aborts it:
# docs/protocol.md.)
. tests/integration/lib/jobs.bash
command -v prlimit >/dev/null || { echo "skip: needs prlimit (util-linux)"; exit 77; }
write_config
prlimit --nofile=128:4096 "$GFD" --config "$CFG" --foreground 2>>"$T/broker.log" &
BROKER_PID=$!
for _ in $(seq 200); do
    [ "$(gf workers 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && break
    sleep 0.05
done
[ "$(gf workers | grep -cE ' (idle|busy) ')" = 2 ] || fail "broker or workers did not come up"
# 600 idle connections, more than the limit the broker was started with
/usr/bin/python3 - "$T/run/client.sock" "$T/flood.ready" "$T/flood.stop" <<'PY' &
import os, resource, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
socks = []
for _ in range(600):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    socks.append(s)
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
PY
flood=$!
for _ in $(seq 200); do [ -f "$T/flood.ready" ] && break; sleep 0.05; done
[ -f "$T/flood.ready" ] || fail "the flood did not connect"
sleep 0.5
kill -0 "$BROKER_PID" 2>/dev/null || fail "the broker died under 600 connections"
j=$(gf submit -- true) || fail "submit under 600 idle connections"
gf wait "$j" || fail "job $j: $(job_field "$j" reason)"
n=$(ls "/proc/$BROKER_PID/fd" | wc -l)
touch "$T/flood.stop"
wait "$flood"
[ "$n" -gt 600 ] || fail "the broker held only $n descriptors: the flood did not reach it"
w=$(cat "$T/run/worker0.pid")
soft=$(awk '/Max open files/ {print $4}' "/proc/$BROKER_PID/limits")
[ "$soft" = 4096 ] || fail "the broker's soft descriptor limit is $soft, not raised to 4096"
[ "$(awk '/Max open files/ {print $4}' "/proc/$w/limits")" = 128 ] ||
    fail "the worker's soft limit: $(grep 'Max open files' "/proc/$w/limits")"
echo "ok: a broker started at 128 descriptors held $n with 600 idle connections and served; workers at 128"
