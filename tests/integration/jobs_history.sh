#!/bin/bash
# Ended jobs leave the broker's memory (the store keeps them): show, wait,
# logs, cancel, queue --all and --after must read them from the store, in
# the same run and after a restart, when the broker no longer holds them at
# all; and the broker's memory must not grow with the jobs it has run (not
# judged under AddressSanitizer, which keeps freed memory: reported skipped).
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1

ok=$(gf submit --name ok -- sh -c 'echo out-of-ok; echo err-of-ok >&2') || fail "submit ok"
bad=$(gf submit --name bad -- sh -c 'exit 3') || fail "submit bad"
gf wait "$ok" || fail "ok job: $(gf show "$ok")"
gf wait "$bad"; [ $? = 3 ] || fail "bad job status"
sleep 0.2   # a turn later: both retired

check_history() {   # WHEN
    [ "$(job_field "$ok" state)" = done ] || fail "$1: show of an ended job: $(gf show "$ok" 2>&1)"
    [ "$(job_field "$bad" exit_status)" = 3 ] || fail "$1: show exit status: $(gf show "$bad" 2>&1)"
    gf wait "$ok" || fail "$1: wait on an ended job"
    gf wait "$bad"; [ $? = 3 ] || fail "$1: wait on an ended failed job"
    [ "$(gf logs "$ok")" = out-of-ok ] || fail "$1: logs of an ended job"
    [ "$(gf logs --stderr "$ok")" = err-of-ok ] || fail "$1: stderr of an ended job"
    gf cancel "$ok" 2>"$T/err"; [ $? != 0 ] && grep -qi "ended\|already" "$T/err" ||
        fail "$1: cancel of an ended job: $(cat "$T/err")"
    gf queue --all | grep -qE "^ *$ok .*ok" || fail "$1: queue --all lacks job $ok: $(gf queue --all)"
    gf queue | grep -qE "^ *$ok " && fail "$1: queue lists an ended job"
    a=$(gf submit --after "$ok" -- true) || fail "$1: --after an ended job refused"
    gf wait "$a" || fail "$1: --after a done job: $(gf show "$a")"
    b=$(gf submit --after "$bad" -- true) || fail "$1: --after a failed job refused"
    gf wait "$b"; [ $? != 0 ] || fail "$1: --after a failed job ran"
    job_field "$b" reason | grep -q "dependency $bad failed" || fail "$1: reason: $(job_field "$b" reason)"
    gf submit --after 999999 -- true 2>"$T/err"; [ $? != 0 ] && grep -q "no job 999999" "$T/err" ||
        fail "$1: --after an unknown job: $(cat "$T/err")"
    gf show 999999 2>/dev/null && fail "$1: show of an unknown job"
}
check_history "same run"
stop_broker
start_broker || exit 1
check_history "after a restart"

# memory stays flat while jobs come and go: 2,000 jobs with a 16 KiB
# environment each, in batches of 100, would keep about 32 MiB if ended jobs
# stayed in memory
big=$(head -c 16384 /dev/zero | tr '\0' x)
rss() { awk '/^VmRSS/ {print $2}' "/proc/$BROKER_PID/status"; }
batch() { local last; last=$(BIG=$big gf submit --array 100 -- true | tail -1); gf wait "$last" >/dev/null 2>&1; }
for _ in 1 2 3 4 5; do batch; done
sleep 0.3
before=$(rss)
for _ in $(seq 20); do batch; done
sleep 0.3
after=$(rss)
asan=no
ldd "$GFD" 2>/dev/null | grep -q libasan && asan=yes
if [ $asan = yes ]; then
    echo "skip: broker RSS over 2,000 ended jobs: an AddressSanitizer build (freed memory is quarantined): $before -> $after KiB not judged"
else
    [ $((after - before)) -lt 8192 ] || fail "broker RSS grew from $before to $after KiB over 2,000 ended jobs"
fi

# pending jobs keep their environment in the store only: 2,000 waiting jobs
# with a 16 KiB environment would hold 32 MiB of copies; each still gets it
# when it starts
long=$(gf submit -- sleep 30) || fail "submit the long job"
p_before=$(rss)
first=$(BIG=$big gf submit --array 2000 --after "$long" -- sh -c 'printf %s "$BIG" | wc -c' | head -1) ||
    fail "submit 2,000 waiting jobs"
sleep 0.3
p_after=$(rss)
[ "$(job_field "$first" state)" = pending ] || fail "the waiting job: $(gf show "$first")"
if [ $asan = yes ]; then
    echo "skip: broker RSS with 2,000 waiting jobs: an AddressSanitizer build: $p_before -> $p_after KiB not judged"
else
    [ $((p_after - p_before)) -lt 8192 ] ||
        fail "broker RSS grew from $p_before to $p_after KiB with 2,000 waiting jobs"
fi
one=$(BIG=$big gf submit -- sh -c 'printf %s "$BIG" | wc -c') || fail "submit one"
gf cancel "$long" >/dev/null || fail "cancel the long job"
gf wait "$one" || fail "the job with a stored environment: $(gf show "$one")"
[ "$(gf logs "$one")" = 16384 ] || fail "environment at the start: $(gf logs "$one")"
echo "ok: ended jobs from the store (show, wait, logs, cancel, queue --all, --after), after a restart too; broker RSS $before -> $after KiB over 2,000 jobs, $p_before -> $p_after KiB with 2,000 waiting"
