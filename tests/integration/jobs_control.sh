#!/bin/bash
# --after ordering and failure propagation, --time limits, cancel of a
# pending and of a running job (its whole process group goes), run's exit
# status and streaming, the environment of a job, --proof scrubbing, a job
# handed to its worker ahead of a busy card.
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1

# --after: B starts only once A ended successfully
a=$(gf submit -- sh -c "sleep 0.3; echo A >> $T/order")
b=$(gf submit --after "$a" -- sh -c "echo B >> $T/order")
gf wait "$b" || fail "B after A"
[ "$(tr '\n' ' ' < "$T/order")" = "A B " ] || fail "order: $(cat "$T/order")"
[ "$(job_field "$b" started_ms)" -ge "$(job_field "$a" ended_ms)" ] || fail "B started before A ended"
# a failed dependency fails its dependants
a=$(gf submit -- false)
b=$(gf submit --after "$a" -- sh -c "echo never >> $T/never")
gf wait "$b"; [ $? -ne 0 ] || fail "dependant of a failed job succeeded"
[ "$(job_field "$b" state)" = failed ] || fail "dependant not failed"
job_field "$b" reason | grep -q "dependency $a failed" || fail "reason: $(job_field "$b" reason)"
[ ! -e "$T/never" ] || fail "dependant ran"
gf submit --after 999999 -- true 2>"$T/err"; [ $? = 64 ] || fail "unknown --after accepted"
grep -q "no job 999999" "$T/err" || fail "unknown --after message"

# --time: SIGTERM at the limit, then SIGKILL after kill_grace_s (1 s)
t=$(gf submit --time 1 -- sh -c 'trap "" TERM; sleep 30')
gf wait "$t"; rc=$?
[ "$(job_field "$t" state)" = failed ] || fail "time limit: state"
job_field "$t" reason | grep -q "time limit of 1 s" || fail "time limit reason: $(job_field "$t" reason)"
[ "$rc" = 137 ] || fail "time-limited job that ignores TERM: wait gave $rc, want 137 (SIGKILL)"

# cancel a running job: its whole process group goes
c=$(gf submit -- sh -c "sleep 300 & echo \$! > $T/child; echo \$\$ > $T/parent; wait")
for _ in $(seq 100); do [ -s "$T/child" ] && break; sleep 0.05; done
[ -s "$T/child" ] || fail "job did not start"
gf cancel "$c" || fail "cancel"
gf wait "$c"; [ $? -ne 0 ] || fail "cancelled job succeeded"
[ "$(job_field "$c" state)" = cancelled ] || fail "state after cancel: $(job_field "$c" state)"
for p in $(cat "$T/child") $(cat "$T/parent"); do
    for _ in $(seq 60); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$p" 2>/dev/null && fail "process $p of the cancelled job still lives"
done
# cancel a pending job; cancel an ended one
p1=$(gf submit --gpu 0 -- sleep 3)
p2=$(gf submit --gpu 0 -- sleep 1)
gf cancel "$p2" || fail "cancel pending"
[ "$(job_field "$p2" state)" = cancelled ] || fail "pending not cancelled"
gf wait "$p1" || fail "p1"
gf cancel "$p1" 2>"$T/err"; [ $? = 1 ] && grep -q "already ended" "$T/err" || fail "cancel ended job"
gf cancel 999999 2>"$T/err"; grep -q "no such job" "$T/err" || fail "cancel unknown"

# run: streams output, exits with the job's status
out=$(gf run --gpu 1 -- sh -c 'echo out-$GPUFLOCK_DEVICE; echo err >&2; exit 5' 2>"$T/run.err"); rc=$?
[ "$rc" = 5 ] || fail "run exit status $rc"
[ "$out" = "out-1" ] || fail "run stdout: $out"
grep -qx err "$T/run.err" || fail "run stderr"

# the job's environment: the submitter's plus gpuflock's
export GF_TEST_MARK=hello CUDA_LAUNCH_BLOCKING=1
unset OPENBLAS_THREAD_TIMEOUT GPUFLOCK_BLAS_SPIN_SET
mkdir -p "$T/wd"
e=$(cd "$T/wd" && gf submit --gpu 1 -- sh -c 'pwd; env')
gf wait "$e" || fail env
gf logs "$e" > "$T/env"
head -1 "$T/env" | grep -qx "$T/wd" || fail "cwd: $(head -1 "$T/env")"
for v in GF_TEST_MARK=hello CUDA_VISIBLE_DEVICES=1 CUDA_DEVICE_ORDER=PCI_BUS_ID GPUFLOCK_DEVICE=1 \
         "GPUFLOCK_LOCK_FILE=$T/lock/gpu1.lock" "GPUFLOCK_JOB_ID=$e" CUDA_LAUNCH_BLOCKING=1; do
    grep -qx "$v" "$T/env" || fail "missing $v in the job's environment"
done
# the BLAS spin the broker sets for its workers (common/blasenv.h) stays ours;
# one the user set reaches the job, also when the full CLI submits (as the
# front execs it, with the spin set for it)
grep -q "^OPENBLAS_THREAD_TIMEOUT=\|^GPUFLOCK_BLAS_SPIN_SET=" "$T/env" && fail "the BLAS spin leaked into a job"
u=$(OPENBLAS_THREAD_TIMEOUT=7 gf submit -- env)
gf wait "$u" || fail "env with the user's spin"
gf logs "$u" | grep -qx OPENBLAS_THREAD_TIMEOUT=7 || fail "the user's OPENBLAS_THREAD_TIMEOUT did not reach the job"
c=$(OPENBLAS_THREAD_TIMEOUT=20 GPUFLOCK_BLAS_SPIN_SET=1 "$GF-cli" submit --config "$CFG" -- env)
gf wait "$c" || fail "env through gpuflock-cli"
gf logs "$c" | grep -q "^OPENBLAS_THREAD_TIMEOUT=\|^GPUFLOCK_BLAS_SPIN_SET=" && fail "gpuflock-cli passed its BLAS spin on to a job"
# --proof: scrubbed variables gone, said so; the card lock is held (a fresh try would block)
p=$(gf submit --proof --gpu 0 -- sh -c "env; flock -n $T/lock/gpu0.lock true && echo FREE || echo BLOCKED; flock -n $T/lock/bench.lock true && echo BENCHFREE || echo BENCHBLOCKED")
gf wait "$p" || fail proof
gf logs "$p" > "$T/penv"
grep -q '^CUDA_LAUNCH_BLOCKING=' "$T/penv" && fail "--proof kept CUDA_LAUNCH_BLOCKING"
grep -qx BLOCKED "$T/penv" || fail "card lock not held during the job"
grep -qx BENCHBLOCKED "$T/penv" || fail "bench lock not held during the proof job"
gf logs --stderr "$p" | grep -q 'removed CUDA_LAUNCH_BLOCKING' || fail "--proof did not say what it removed"
gf show "$p" | grep -q 'proof.scrubbed.CUDA_LAUNCH_BLOCKING' || fail "job record lacks the scrubbed list"
# a card held by someone outside gpuflock (flock(1)) is waited for, visibly
mkdir -p "$T/lock"
flock -x "$T/lock/gpu0.lock" sh -c "echo held > $T/held; while [ ! -e $T/release ]; do sleep 0.05; done" &
holder=$!
for _ in $(seq 100); do [ -s "$T/held" ] && break; sleep 0.05; done
w=$(gf submit --gpu 0 -- sh -c "echo ran > $T/ranafter; echo first >> $T/outside_order")
# the next job for the card goes to the worker ahead; it must not overtake
# the first when the outside holder leaves
w2=$(gf submit --gpu 0 -- sh -c "echo second >> $T/outside_order")
for _ in $(seq 100); do gf queue | grep -q "held outside gpuflock" && break; sleep 0.05; done
gf queue | grep "^ *$w " | grep -q "waiting for card 0: held outside gpuflock by pid $holder" || fail "queue does not show the outside holder: $(gf queue)"
[ ! -e "$T/ranafter" ] || fail "job ran while flock(1) held the card"
touch "$T/release"; wait "$holder"
gf wait "$w" || fail "job after the outside holder left"
gf wait "$w2" || fail "the job ahead after the outside holder left"
[ "$(cat "$T/outside_order")" = "$(printf 'first\nsecond')" ] || fail "order after the outside holder: $(cat "$T/outside_order")"

# a job handed to a busy card's worker ahead: shown as next, cancelled
# without disturbing the holder, and the one after it starts right after
h=$(gf submit --gpu 0 -- sh -c "sleep 1; echo holder > $T/h.out") || fail "submit holder"
n1=$(gf submit --gpu 0 -- sh -c "echo n1 > $T/n1.out") || fail "submit n1"
n2=$(gf submit --gpu 0 -- sh -c "echo n2 > $T/n2.out") || fail "submit n2"
for _ in $(seq 100); do gf queue | grep -q "next on card 0, after job $h" && break; sleep 0.05; done
gf queue | grep "^ *$n1 " | grep -q "next on card 0, after job $h" || fail "n1 not shown as next: $(gf queue)"
gf queue | grep "^ *$n2 " | grep -q "pending" || fail "n2 not pending: $(gf queue)"
gf cancel "$n1" || fail "cancel the job ahead"
gf wait "$h" || fail "the holder after the cancel of the job ahead"
gf wait "$n2" || fail "n2 after the holder"
[ -e "$T/h.out" ] && [ -e "$T/n2.out" ] && [ ! -e "$T/n1.out" ] || fail "holder, cancelled and next outputs"
gf show "$n1" | grep -q "cancelled" || fail "n1 not cancelled: $(gf show "$n1")"
echo "ok: after, time, cancel, run, env, proof, outside holder, job ahead"
