#!/bin/bash
# submit --notify CMD with the real broker, workers and users
# (docs/operations.md, "History"): CMD runs, run by the broker, once the job
# has ended, however it ended (done, failed, cancelled while pending, a
# failed dependency: no worker involved), as the submitter (uid, gid,
# supplementary groups; root's own job as root), in the job's folder, with
# the job's id, state and exit status in an environment of its own (not
# the broker's, not the job's); the job's name reaches it as a variable
# only; its output is discarded; a CMD that hangs holds nothing up (the
# broker answers, other users' notifications run, the broker stops). Needs
# root (users with useradd, a group with groupadd).
. tests/integration/lib/jobs.bash
need_users gfnotu1 gfnotu2
command -v groupadd >/dev/null && command -v usermod >/dev/null ||
    { echo "skip: needs groupadd and usermod"; exit 77; }
getent group gfnotgrp >/dev/null || groupadd --system gfnotgrp || fail "groupadd"
id -nG gfnotu1 | grep -qw gfnotgrp || usermod -aG gfnotgrp gfnotu1 || fail "usermod"
write_config
export GF_BROKER_SECRET=broker-s3cret   # in the broker's environment: must not reach CMD
start_broker || exit 1
unset GF_BROKER_SECRET
as() { local u=$1; shift; (cd "$DIR1" && JOB_SECRET=job-s3cret runuser -u "$u" -- "$GF" "$1" --config "$CFG" "${@:2}"); }
DIR1=$T/u1 DIR2=$T/u2
mkdir -p "$DIR1" "$DIR2" && chown gfnotu1 "$DIR1" && chown gfnotu2 "$DIR2" && chmod 700 "$DIR1" "$DIR2"
# CMD: what it saw, into a file of the submitter's (written whole, then renamed,
# so a reader never sees half of it); its own stdout too
SEEN='{ echo "id=$1 state=$2 exit=[$3]"; echo "env_id=$GPUFLOCK_JOB_ID $GPUFLOCK_JOB_STATE [$GPUFLOCK_JOB_EXIT] sig=$GPUFLOCK_JOB_SIGNAL"; echo "uid=$(id -u) gid=$(id -g) groups=$(id -G)"; echo "pwd=$PWD"; echo "name=$GPUFLOCK_JOB_NAME"; env | cut -d= -f1 | sort | tr "\n" " "; echo; } > .seen.$GPUFLOCK_JOB_ID && mv .seen.$GPUFLOCK_JOB_ID seen.$GPUFLOCK_JOB_ID; echo to-stdout; echo to-stderr >&2'
# until FILE exists (10 s at most)
wait_file() { for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

# ---- done, failed, cancelled while pending, a failed dependency ------------
ok=$(as gfnotu1 submit --name 'n; $(touch /tmp/gf-notify-pwned)' --notify "$SEEN" -- true) || fail "submit ok"
bad=$(as gfnotu1 submit --notify "$SEEN" -- sh -c 'exit 3') || fail "submit bad"
held=$(as gfnotu1 submit --hold --notify "$SEEN" -- true) || fail "submit held"
dep=$(as gfnotu1 submit --after "$bad" --notify "$SEEN" -- true) || fail "submit dep"
as gfnotu1 cancel "$held" || fail "cancel held"
for j in $ok $bad $held $dep; do wait_file "$DIR1/seen.$j" || fail "no notification for job $j: $(ls "$DIR1")"; done
s=$(cat "$DIR1/seen.$ok")
echo "$s" | grep -qx "id=$ok state=done exit=\[0\]" || fail "done: $s"
echo "$s" | grep -qx "env_id=$ok done \[0\] sig=0" || fail "done's environment: $s"
echo "$s" | grep -qx "uid=$(id -u gfnotu1) gid=$(id -g gfnotu1) groups=$(id -G gfnotu1)" ||
    fail "identity: $(echo "$s" | grep uid=) vs $(id gfnotu1)"
echo "$s" | grep -qw "$(getent group gfnotgrp | cut -d: -f3)" || fail "the supplementary group is missing"
echo "$s" | grep -qx "pwd=$DIR1" || fail "folder: $s"
echo "$s" | grep -qxF 'name=n; $(touch /tmp/gf-notify-pwned)' || fail "name: $s"
[ ! -e /tmp/gf-notify-pwned ] || { rm -f /tmp/gf-notify-pwned; fail "the job's name was run"; }
envs=$(echo "$s" | tail -1)
for v in GPUFLOCK_JOB_ID GPUFLOCK_JOB_STATE GPUFLOCK_JOB_EXIT HOME PATH USER; do
    echo " $envs" | grep -q " $v " || fail "no $v in: $envs"
done
echo "$envs" | grep -q "GF_BROKER_SECRET" && fail "the broker's environment reached CMD: $envs"
echo "$envs" | grep -q "JOB_SECRET" && fail "the job's environment reached CMD: $envs"
grep -qx "id=$bad state=failed exit=\[3\]" "$DIR1/seen.$bad" || fail "failed: $(cat "$DIR1/seen.$bad")"
grep -qx "id=$held state=cancelled exit=\[\]" "$DIR1/seen.$held" ||
    fail "cancelled while pending: $(cat "$DIR1/seen.$held")"
grep -qx "id=$dep state=failed exit=\[\]" "$DIR1/seen.$dep" || fail "failed dependency: $(cat "$DIR1/seen.$dep")"
# its output went nowhere: not the job's spool, not the broker's log
! grep -q "to-stdout\|to-stderr" "$T/broker.log" "$(job_field "$ok" stdout)" "$(job_field "$ok" stderr)" ||
    fail "the notification's output was kept"
grep -q "job $ok: notify command started as gfnotu1 (uid $(id -u gfnotu1)" "$T/broker.log" ||
    fail "the broker's log does not say it"

# ---- a running job cancelled, and root's own job -----------------------------
run=$(as gfnotu1 submit --notify "$SEEN" -- sleep 60) || fail "submit run"
for _ in $(seq 100); do [ "$(job_field "$run" state)" = running ] && break; sleep 0.05; done
as gfnotu1 cancel "$run" || fail "cancel run"
wait_file "$DIR1/seen.$run" || fail "no notification for the cancelled running job"
grep -q "state=cancelled" "$DIR1/seen.$run" || fail "running cancelled: $(cat "$DIR1/seen.$run")"
r=$(cd "$T" && gf submit --notify "$SEEN" -- true) || fail "submit root's"
wait_file "$T/seen.$r" || fail "no notification for root's job"
grep -q "^uid=0 " "$T/seen.$r" || fail "root's job notified as $(grep uid= "$T/seen.$r")"

# ---- a folder the user cannot enter: their home, else / ------------------------
gone=$(as gfnotu2 submit --notify 'pwd > /tmp/gf-notify-pwd.$GPUFLOCK_JOB_ID' -- true) ||
    fail "submit gone"
wait_file "/tmp/gf-notify-pwd.$gone" || fail "no notification from a folder gfnotu2 cannot enter"
[ "$(cat "/tmp/gf-notify-pwd.$gone")" = "$(getent passwd gfnotu2 | cut -d: -f6 | sed 's|^$|/|')" ] ||
    [ "$(cat "/tmp/gf-notify-pwd.$gone")" = / ] || fail "ran in $(cat "/tmp/gf-notify-pwd.$gone")"
rm -f "/tmp/gf-notify-pwd.$gone"

# ---- CMDs that hang hold nothing up -------------------------------------------
HANG='echo $$ > hang.$GPUFLOCK_JOB_ID; exec sleep 300'
hangs=""
for i in 1 2 3 4 5; do
    h=$(cd "$DIR2" && runuser -u gfnotu2 -- "$GF" submit --config "$CFG" --notify "$HANG" -- true) ||
        fail "submit hang $i"
    hangs="$hangs $h"
done
for h in $(echo $hangs | cut -d' ' -f1-4); do wait_file "$DIR2/hang.$h" || fail "hang $h did not start"; done
# gfnotu2's fifth waits (4 at a time per user); gfnotu1's runs at once
late=$(as gfnotu1 submit --notify "$SEEN" -- true) || fail "submit late"
wait_file "$DIR1/seen.$late" || fail "gfnotu1's notification waited behind gfnotu2's hanging ones"
sleep 0.3
[ ! -e "$DIR2/hang.$(echo $hangs | cut -d' ' -f5)" ] || fail "a fifth notification of one user ran"
t0=$(date +%s%N)
gf queue >/dev/null || fail "queue while notifications hang"
[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 2000 ] || fail "queue took over 2 s while notifications hang"
a=$(as gfnotu1 submit -- true) && as gfnotu1 wait "$a" || fail "a job while notifications hang"
# the broker stops without waiting for them
t0=$(date +%s)
stop_broker
[ $(( $(date +%s) - t0 )) -lt 10 ] || fail "the broker waited for the notifications to stop"
for f in "$DIR2"/hang.*; do kill -KILL -- "-$(cat "$f")" 2>/dev/null; done
echo "ok: notify after done, failed, cancelled (pending, running), a failed dependency; as the submitter with its groups (root as root), in the job's folder, an environment of its own, the name as a variable; output discarded; hanging ones hold nothing up"
