#!/bin/bash
# front_broker — the static front's own ZMTP client (net/zmtp.c) against
# the real broker, whose endpoints are libzmq's ROUTER. The front is copied
# alone into a folder without gpuflock-cli, so a command it handed over
# instead of running itself would fail: every job command here runs in the
# front. Shown: each job command (submit, run, queue, show, wait, logs,
# cancel, workers, history, purge) works; the broker names the front's user from the socket
# (another user's job, where the test runs as root with useradd); a command
# the front cannot serve (a tcp:// broker) is handed to gpuflock-cli and
# fails plainly without it.
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1
mkdir -p "$T/bin"
cp "$GF" "$T/bin/gpuflock"
chmod 755 "$T/bin" "$T/bin/gpuflock"
LONE="$T/bin/gpuflock"
static=dynamic
ldd "$LONE" >/dev/null 2>&1 || static=static
echo "front: $static ($(file -b "$LONE" 2>/dev/null | cut -d, -f1-2))"
lone() { "$LONE" "$1" --config "$CFG" "${@:2}"; }

out=$(lone workers) || fail "workers through the lone front: $out"
[ "$(echo "$out" | grep -cE ' (idle|busy) ')" = 2 ] || fail "workers listed: $out"
j=$(lone submit --gpu 0 -- sh -c 'echo out-$GPUFLOCK_JOB_ID; echo err >&2') || fail "submit"
lone wait "$j" || fail "wait: $(job_field "$j" reason)"
[ "$(lone logs "$j")" = "out-$j" ] || fail "logs: $(lone logs "$j")"
[ "$(lone logs --stderr "$j")" = err ] || fail "logs --stderr: $(lone logs --stderr "$j")"
lone show "$j" | grep -q done || fail "show: $(lone show "$j")"
lone queue --all | grep -q "^ *$j " || fail "queue --all: $(lone queue --all)"
[ "$(lone run --gpu 1 -- sh -c 'exit 7'; echo $?)" = 7 ] || fail "run: exit status not passed on"
s=$(lone submit -- sleep 30) || fail "submit sleep"
lone cancel "$s" || fail "cancel"
lone wait "$s" 2>/dev/null
[ "$(job_field "$s" state)" = cancelled ] || fail "cancelled job is $(job_field "$s" state)"
lone queue --all --state cancelled | grep -q "^ *$s " || fail "queue --state: $(lone queue --all --state cancelled)"
lone history --csv | grep -q "^$j,,$(id -un),$(id -u),done," || fail "history --csv: $(lone history --csv)"
c=$(lone submit --hold --name front-sel -- true) || fail "submit held"
[ "$(lone cancel --name front-sel)" = "cancelled 1 job" ] || fail "cancel --name"
lone purge --before now-1d | grep -q "ended jobs to remove" || fail "purge: $(lone purge --before now-1d 2>&1)"

# the broker's ROUTER names the front's user from the socket
if make_users gfjobuser1; then
    u=$(cd /tmp && runuser -u gfjobuser1 -- "$LONE" submit --config "$CFG" -- id -u) ||
        fail "submit as gfjobuser1"
    lone wait "$u" || fail "gfjobuser1's job: $(job_field "$u" reason)"
    [ "$(job_field "$u" user)" = gfjobuser1 ] || fail "job of gfjobuser1 recorded as $(job_field "$u" user)"
    [ "$(lone logs "$u")" = "$(id -u gfjobuser1)" ] || fail "job ran as uid $(lone logs "$u")"
    echo "gfjobuser1's submit through the front: recorded and run as gfjobuser1"
else
    echo "(no second user: not root or no useradd; the user check was not run)"
fi

# tcp:// is not the front's: it hands the command over, here to nothing
sed 's|^broker:|broker:\n  client_endpoint: tcp://127.0.0.1:1|' "$CFG" > "$T/tcp.yaml"
"$LONE" queue --config "$T/tcp.yaml" > "$T/tcp.out" 2>&1 && fail "a tcp:// queue ran in the front"
grep -q "gpuflock-cli" "$T/tcp.out" || fail "tcp:// hand-over: $(cat "$T/tcp.out")"
echo "ok: the $static front's job commands against the broker's libzmq ROUTER, its user from the socket"
