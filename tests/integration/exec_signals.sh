#!/bin/bash
# SIGINT, SIGTERM and SIGHUP sent to gpuflock exec reach every process of
# the command's process group; the command's fate decides the exit status.
. tests/integration/lib/locktest.sh
set -m   # job control: background jobs keep SIGINT (bash ignores it otherwise)

for sig in INT TERM HUP; do
    rm -f "$T/ready" "$T/got"
    # The command's background child traps the signal and records it; the
    # command itself ignores it (from its first line), waits for that child
    # and exits 40. (A script's background job starts with SIGINT ignored,
    # hence env --default-signal.)
    "$GF" exec --config "$CFG" --gpu 0 -- sh -c '
        cd "$0"
        trap "" "$1"
        env --default-signal sh -c "trap \"echo $1 > got; exit 0\" $1; touch ready;
                                    while :; do sleep 0.05; done" &
        wait
        exit 40' "$T" "$sig" &
    g=$!
    BG_PIDS+=("$g")
    poll_until "the command's child to be ready" test -e "$T/ready"
    kill -"$sig" "$g"
    wait "$g"
    rc=$?
    [ "$rc" -eq 40 ] || fail "SIG$sig: exec exited $rc, expected the command's 40"
    [ "$(cat "$T/got" 2>/dev/null)" = "$sig" ] || fail "SIG$sig did not reach the command's child"
done

# A command killed by the forwarded signal: 128+N.
for pair in TERM:143 HUP:129 INT:130; do
    sig=${pair%%:*} want=${pair##*:}
    "$GF" exec --config "$CFG" --gpu 0 -- sleep 600 &
    g=$!
    BG_PIDS+=("$g")
    c=$(child_of "$g") || fail "no command under exec"
    poll_until "sleep to be exec'd" sh -c "grep -q '^sleep' /proc/$c/comm 2>/dev/null"
    kill -"$sig" "$g"
    wait "$g"
    rc=$?
    [ "$rc" -eq "$want" ] || fail "SIG$sig: exec exited $rc, expected $want"
done
# Lock released when it ends.
expect_status 0 flock -n -x "$L0" true
echo "signals passed on to the command's group; deaths by signal give 128+N"
