#!/bin/bash
# jobs_longjobs — long jobs on a shared box, through the real broker and
# workers on two declared CPU cards (docs/operations.md, "Long jobs"):
#  1. hold / release / submit --hold: a held job stays pending ("held by
#     USER") while later jobs pass it, and runs once released; a running job
#     cannot be held;
#  2. requeue of a command job that cannot checkpoint: stopped, back in the
#     queue, run again from its start (GPUFLOCK_RESTART_COUNT 0 then 1);
#  3. yield: a --yieldable=USR1@5 job sharing card 0, and an exclusive job
#     for card 0 that waits sched.yield_after_s (1 s): the yieldable job gets
#     SIGUSR1, writes its state into $GPUFLOCK_CHECKPOINT_DIR and exits 85;
#     it waits "yielded to job N" while the exclusive job runs, then resumes
#     with its state (restart count 1) and ends done; its folder is removed;
#     a job that is not yieldable beside it is never interrupted;
#     cancel --checkpoint: it saves its state and waits held, release resumes it;
#     cancelled while held, its checkpoint folder goes;
#  4. drain / resume: nothing starts on a drained card (its reason shown by
#     workers and by the waiting job), it stays drained (and a held job
#     held) across a broker restart, and runs its queue once resumed;
#  5. the scheduler's promise (issue: a --priority 10 job handed ahead to a
#     busy card while another card freed and ran priority-0 jobs): the
#     priority job is moved to the card that freed and starts before the
#     priority-0 jobs.
# As root, the operator's rules with a real user: another user cannot hold,
# release or requeue a job, nor drain a card.
. tests/integration/lib/jobs.bash
fail() { echo "FAIL: $*"; tail -30 "$T/broker.log"; exit 1; }
write_config
cat >>"$CFG" <<YAML
sched:
  yield_after_s: 1
YAML
start_broker || fail "start"

field() {  # ID KEY: a field of show --json
    gf show "$1" --json | /usr/bin/python3 -c "import json,sys; v=json.load(sys.stdin).get('$2'); print('' if v is None else v)"
}
until_state() {  # ID STATE [tries]
    for _ in $(seq "${3:-400}"); do
        [ "$(field "$1" state)" = "$2" ] && return 0
        sleep 0.05
    done
    fail "job $1 is $(field "$1" state), not $2: $(gf show "$1")"
}

# 1. hold and release
h=$(gf submit --hold --gpu 1 -- true) || fail "submit --hold"
o=$(gf submit --gpu 1 -- true) || fail "submit"
gf wait "$o" >/dev/null || fail "the job after the held one did not run"
[ "$(field "$h" state)" = pending ] || fail "the held job ran"
gf queue | grep "^ *$h " | grep -q "held by root" || fail "queue: $(gf queue)"
gf release "$h" || fail "release"
gf wait "$h" >/dev/null || fail "the released job did not run"
gf release "$h" 2>/dev/null && fail "release of an ended job succeeded"
r=$(gf submit --gpu 1 -- sleep 30) || fail "submit"
until_state "$r" running
gf hold "$r" 2>"$T/e"; [ $? -eq 1 ] && grep -q "not pending" "$T/e" || fail "hold of a running job: $(cat "$T/e")"
p=$(gf submit --gpu 1 -- true) || fail "submit"
gf hold "$p" || fail "hold of a pending job"
gf cancel "$r" >/dev/null
until_state "$r" cancelled
sleep 0.5
[ "$(field "$p" state)" = pending ] || fail "a held job started"
gf cancel "$p" >/dev/null

# 2. requeue of a job that cannot checkpoint: it runs again from its start
q=$(gf submit --gpu 1 -- sh -c "echo run \$GPUFLOCK_RESTART_COUNT >>'$T/q'; sleep 30") || fail "submit"
for _ in $(seq 200); do [ -s "$T/q" ] && break; sleep 0.05; done
gf requeue "$q" || fail "requeue"
for _ in $(seq 300); do [ "$(wc -l <"$T/q")" -ge 2 ] && break; sleep 0.05; done
[ "$(cat "$T/q" | tr '\n' ' ')" = "run 0 run 1 " ] || fail "requeued runs: $(cat "$T/q")"
grep -q "job $q back in the queue: requeued by root" "$T/broker.log" || fail "the log does not say why"
[ "$(field "$q" yields)" = 1 ] || fail "yields: $(field "$q" yields)"
gf cancel "$q" >/dev/null
until_state "$q" cancelled

# 3. yield: a checkpointing command job gives card 0 to an exclusive job
cat >"$T/yjob.sh" <<'SH'
#!/bin/sh
# counts to 40 in steps of 0.1 s; on SIGUSR1 saves where it is and exits 85
n=0
[ -f "$GPUFLOCK_CHECKPOINT_DIR/n" ] && n=$(cat "$GPUFLOCK_CHECKPOINT_DIR/n")
echo "start at $n (restart $GPUFLOCK_RESTART_COUNT) in $GPUFLOCK_CHECKPOINT_DIR" >>"$OUT"
trap 'echo $n >"$GPUFLOCK_CHECKPOINT_DIR/n"; echo "saved $n" >>"$OUT"; exit 85' USR1
while [ "$n" -lt 40 ]; do n=$((n + 1)); sleep 0.1; done
echo "done at $n" >>"$OUT"
SH
chmod +x "$T/yjob.sh"
y=$(OUT="$T/y" gf submit -s --gpu 0 --yieldable=USR1@5 -- "$T/yjob.sh") || fail "submit --yieldable"
z=$(gf submit -s --gpu 0 -- sh -c "sleep 2; echo plain >>'$T/z'") || fail "submit"
until_state "$y" running
until_state "$z" running
sleep 0.5
x=$(gf submit -x --gpu 0 -- sh -c "date +%s.%N >'$T/x'; sleep 1") || fail "submit exclusive"
for _ in $(seq 200); do grep -q saved "$T/y" 2>/dev/null && break; sleep 0.05; done
grep -q saved "$T/y" || fail "the yieldable job was not asked to yield: $(cat "$T/y"; gf queue)"
for _ in $(seq 100); do gf queue | grep "^ *$y " | grep -q "yielded to job $x" && break; sleep 0.05; done
gf queue | grep "^ *$y " | grep -q "yielded to job $x" || fail "reason: $(gf queue)"
gf wait "$x" >/dev/null || fail "the exclusive job failed"
gf wait "$y" >/dev/null || fail "the yielded job did not finish: $(gf show "$y")"
gf wait "$z" >/dev/null || fail "the plain shared job"
[ "$(cat "$T/z")" = plain ] || fail "the job that is not yieldable was interrupted"
saved=$(awk '/^saved/ {print $2}' "$T/y")
grep -q "^start at $saved (restart 1)" "$T/y" || fail "it did not resume from its state: $(cat "$T/y")"
grep -q "^done at 40" "$T/y" || fail "it did not finish: $(cat "$T/y")"
ck=$(awk '/^start at 0/ {print $NF}' "$T/y")
[ -n "$ck" ] && [ ! -e "$ck" ] || fail "checkpoint folder $ck left behind"
[ "$(field "$y" yields)" = 1 ] || fail "yields of $y: $(field "$y" yields)"

# cancel --checkpoint: it saves its state and waits, held; released, it resumes
: >"$T/c"
c=$(OUT="$T/c" gf submit -s --gpu 0 --yieldable -- "$T/yjob.sh") || fail "submit"
for _ in $(seq 200); do grep -q "^start at 0" "$T/c" && break; sleep 0.05; done
sleep 0.5
gf cancel --checkpoint "$c" || fail "cancel --checkpoint"
for _ in $(seq 200); do gf queue | grep "^ *$c " | grep -q "held by root" && break; sleep 0.05; done
gf queue | grep "^ *$c " | grep -q "held by root" || fail "not held after cancel --checkpoint: $(gf queue)"
grep -q "^saved" "$T/c" || fail "it did not save its state: $(cat "$T/c")"
gf release "$c" || fail "release"
gf wait "$c" >/dev/null || fail "the released job: $(gf show "$c")"
grep -q "^start at $(awk '/^saved/ {print $2}' "$T/c") (restart 1)" "$T/c" && grep -q "^done at 40" "$T/c" ||
    fail "it did not resume: $(cat "$T/c")"

# a job cancelled while it waits with its checkpoint (held after cancel
# --checkpoint): no worker runs it any more, so the broker removes its folder
: >"$T/k"
k=$(OUT="$T/k" gf submit -s --gpu 0 --yieldable -- "$T/yjob.sh") || fail "submit"
for _ in $(seq 200); do grep -q "^start at 0" "$T/k" && break; sleep 0.05; done
sleep 0.5
gf cancel --checkpoint "$k" || fail "cancel --checkpoint"
for _ in $(seq 200); do gf queue | grep "^ *$k " | grep -q "held by root" && break; sleep 0.05; done
kd=$(awk '/^start at 0/ {print $NF}' "$T/k")
[ -n "$kd" ] && [ -f "$kd/n" ] || fail "no saved state in its folder: $(cat "$T/k")"
gf cancel "$k" || fail "cancel the held job"
for _ in $(seq 100); do [ "$(field "$k" state)" = cancelled ] && break; sleep 0.05; done
[ "$(field "$k" state)" = cancelled ] || fail "the held job: $(field "$k" state)"
for _ in $(seq 100); do [ -e "$kd" ] || break; sleep 0.05; done   # removed off the broker's turn
[ ! -e "$kd" ] || fail "checkpoint folder $kd of a job cancelled while held left behind"

# 4. drain and resume
gf drain 0 --reason "fan replaced" | grep -q "card 0: drained" || fail "drain"
gf workers | grep -q "drained by the operator: fan replaced" || fail "workers: $(gf workers)"
d=$(gf submit --gpu 0 -- true) || fail "submit to a drained card"
sleep 0.5
[ "$(field "$d" state)" = pending ] || fail "a job ran on a drained card"
gf queue | grep "^ *$d " | grep -q "card 0 drained: fan replaced" || fail "queue: $(gf queue)"
a=$(gf submit --any -- true) || fail "submit --any"
gf wait "$a" >/dev/null || fail "an --any job did not run on the other card"
[ "$(field "$a" cards)" = "[1]" ] || fail "the --any job ran on $(field "$a" cards)"
hk=$(gf submit --hold --gpu 1 -- true) || fail "submit --hold"
stop_broker
restart_broker || fail "restart"
for _ in $(seq 100); do gf workers | grep -q "drained by the operator" && break; sleep 0.05; done
gf queue | grep "^ *$hk " | grep -q "held by root" || fail "the hold did not survive a restart: $(gf queue)"
gf release "$hk" && gf wait "$hk" >/dev/null || fail "the held job after the restart"
gf workers | grep -q "drained by the operator: fan replaced" || fail "the drain did not survive a restart"
gf resume 0 | grep -q "card 0: in service" || fail "resume"
gf wait "$d" >/dev/null || fail "the job did not run after resume"

# 5. a priority job handed ahead to a busy card moves to the card that frees
s1=$(gf submit -s --gpu 0 -- sleep 2) || fail "submit"
l1=$(gf submit -x --gpu 1 -- sleep 20) || fail "submit"
until_state "$s1" running
until_state "$l1" running
hp=$(gf submit -x --any --priority 10 -- sh -c "date +%s.%N >'$T/hp'") || fail "submit"
for _ in $(seq 100); do gf queue | grep "^ *$hp " | grep -q "next on card 1" && break; sleep 0.05; done
p1=$(gf submit -x --any -- sh -c "date +%s.%N >'$T/p1'") || fail "submit"
p2=$(gf submit -x --any -- sh -c "date +%s.%N >'$T/p2'") || fail "submit"
gf wait "$s1" >/dev/null
gf wait "$hp" "$p1" "$p2" >/dev/null || fail "the jobs did not run"
[ "$(echo "$(cat "$T/hp") < $(cat "$T/p1")" | bc)" = 1 ] || fail "a priority-0 job started before the priority-10 one"
[ "$(field "$hp" cards)" = "[0]" ] || fail "the priority job ran on $(field "$hp" cards), not card 0"
[ "$(field "$l1" state)" = running ] || fail "the long job is no longer running: it should still be"
gf cancel "$l1" >/dev/null

# The operator's rules with a real user
if make_users gfbob; then
    as_bob() { (cd /tmp && runuser -u gfbob -- "$GF" "$1" --config "$CFG" "${@:2}"); }
    k=$(gf submit --hold -- true) || fail "submit"
    as_bob release "$k" 2>/dev/null; [ $? -eq 77 ] || fail "another user released root's job"
    as_bob drain 1 2>"$T/e"; [ $? -eq 77 ] && grep -q "only root" "$T/e" || fail "a user drained a card: $(cat "$T/e")"
    b=$(as_bob submit --hold -- true) || fail "bob's submit"
    as_bob release "$b" || fail "bob could not release his own job"
    gf wait "$b" >/dev/null || fail "bob's job"
    gf cancel "$k" >/dev/null
else
    echo "skip: the operator's rules with a real user: cannot make the user gfbob (needs root, useradd and runuser)"
fi
echo ok
