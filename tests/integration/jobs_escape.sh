#!/bin/bash
# jobs_escape.sh — no process of a job outlives it (issue 21). Four ways a
# job used to get away: (a) its guard killed with SIGKILL (the submitter may:
# the guard runs as them), (b) a child that calls setsid and outlives the
# main command, (c) --time on a job with such a child, (d) cancel of it.
# In every case the job's final state is recorded, no process of it is left
# at that moment (found by a unique sleep argument), and the next job on the
# card starts within 1 s of its end. With cgroups also: (e) the job cannot
# write its cgroup's cgroup.procs, (f) a job with a setsid child dies whole
# with its worker.
#
# Run with a cgroup per job (where cgroup v2 is writable: root) and with the
# process-group fallback (worker.cgroups: false), each as root and as an
# unprivileged submitter made with useradd (root only): in the fallback a
# process that calls setsid escapes, as docs/operations.md says; that is
# checked as the documented limit (and `workers` must say so), not hidden.
# As the unprivileged submitter, the job cannot write its cgroup's
# cgroup.procs (nor its parents'). What cannot run here (the cgroup cases
# without a writable cgroup v2, the unprivileged submitter's cases without
# root) is reported skipped, a "skip: ..." line each (tests/run-tests).
. tests/integration/lib/jobs.bash
U=gfescape1
HAVE_USER=0
make_users "$U" && HAVE_USER=1
SUB=root                # who submits (and kills the guard, and cancels)
as_sub() {              # run a command as the submitter
    if [ "$SUB" = root ]; then "$@"; else (cd /tmp && runuser -u "$SUB" -- "$@"); fi
}
sub_gf() { as_sub "$GF" "$1" --config "$CFG" "${@:2}"; }
K=0
new_mark() { K=$((K + 1)); M="9$$$K$RANDOM"; }   # a sleep argument nothing else uses
alive() { pgrep -f "sleep $1" | tr '\n' ' '; }
wait_alive() {          # MARK COUNT: until COUNT processes carry the mark
    for _ in $(seq 200); do [ "$(pgrep -fc "sleep $1")" -ge "$2" ] && return 0; sleep 0.025; done
    fail "the job's processes ($2 with 'sleep $1') did not start: $(pgrep -af "sleep $1")"
}

# JOB STATE REASON_RE NEXT: the job ended in STATE with a reason matching
# REASON_RE, none of its processes left the moment it was recorded, and
# job NEXT (submitted right after the job was ended or hit) ran on the card
# within 1 s of that end.
check_end() {
    local j=$1 state=$2 re=$3 n=$4 what=$5
    gf wait --timeout 20 "$j" >/dev/null 2>&1
    local left; left=$(alive "$M")
    [ -z "$left" ] || fail "$what: processes of job $j left when it was recorded ended: $(pgrep -af "sleep $M")"
    [ "$(job_field "$j" state)" = "$state" ] || fail "$what: state $(job_field "$j" state), want $state"
    [ -z "$re" ] || job_field "$j" reason | grep -Eq "$re" || fail "$what: reason '$(job_field "$j" reason)', want /$re/"
    gf wait --timeout 10 "$n" >/dev/null 2>&1 || fail "$what: the next job on the card did not run: $(gf queue)"
    local gap=$(( $(job_field "$n" started_ms) - $(job_field "$j" ended_ms) ))
    [ "$gap" -le 1000 ] || fail "$what: the next job started $gap ms after the end"
    echo "  $what: $state, nothing left, next job $gap ms after"
}

# The guard of the job whose shell carries mark M: its shell's parent.
guard_of() {
    local sh; sh=$(pgrep -o -f "^sh -c .*sleep $1")
    local g; g=$(ps -o ppid= -p "$sh" | tr -d ' ')
    [ "$(ps -o comm= -p "$g")" = gpuflock-guard ] || fail "parent $g of the job's shell is $(ps -o comm= -p "$g")"
    echo "$g"
}

start_with() {          # CGROUPS(true|false)
    stop_broker
    write_config
    printf 'worker:\n  cgroups: %s\n' "$1" >> "$CFG"
    start_broker || exit 1
}

# --- the four cases where every process of the job is in its cgroup
cgroup_cases() {
    echo "cgroup per job, submitter $SUB:"
    local sup; sup=$(gf workers --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[0]['supervision'])")
    case "$sup" in "cgroup /"*) ;; *) fail "workers say '$sup', want a cgroup";; esac
    gf workers | grep -q "supervision: cgroup /" || fail "workers does not show the cgroup: $(gf workers)"
    local folder=${sup#cgroup }
    # (a) the guard killed by the submitter
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "sleep $M & sleep $M") || fail "submit (a)"
    wait_alive "$M" 3
    g=$(guard_of "$M")
    p=$(pgrep -n -f "sleep $M")
    # the job's processes in a cgroup of its own in the worker's folder, owned by root
    local cg; cg=$(sed -n 's/^0:://p' "/proc/$p/cgroup")
    case "$folder" in *"$(dirname "$cg")") ;; *) fail "(a) not in a cgroup of the worker's folder $folder: $cg";; esac
    local dir="$folder/$(basename "$cg")"
    [ "$(pgrep -f "sleep $M" | sort)" = "$(sort "$dir/cgroup.procs" | grep -xFf <(pgrep -f "sleep $M"))" ] || fail "(a) not all of the job in $dir"
    [ "$(stat -c '%U %a' "$dir/cgroup.procs") $(stat -c '%U %a' "$dir")" = "root 644 root 755" ] || fail "(a) $dir: $(stat -c '%U %a' "$dir/cgroup.procs" "$dir")"
    if [ "$SUB" != root ]; then
        # neither the submitter nor the job may move a process in or out
        runuser -u "$SUB" -- sh -c "echo $p > $dir/cgroup.procs" 2>/dev/null && fail "(a) the submitter wrote the job's cgroup.procs"
        runuser -u "$SUB" -- sh -c "echo $p > $folder/cgroup.procs" 2>/dev/null && fail "(a) the submitter moved a job process out"
    fi
    as_sub kill -9 "$g"
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" failed "guard was killed by signal 9; its [0-9]+ remaining processes were killed" "$n" "(a) guard killed"
    [ -z "$(cat "$dir/cgroup.procs" 2>/dev/null)" ] || fail "(a) the job's cgroup is not empty"
    # (b) a child that left the session, the main command done
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "setsid sleep $M & sleep 0.3; exit 0") || fail "submit (b)"
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" done "" "$n" "(b) setsid child"
    # (c) the time limit: everything ignores SIGTERM, SIGKILL after kill_grace_s
    new_mark
    j=$(sub_gf submit --gpu 0 --time 2 -- sh -c "trap '' TERM; setsid sleep $M & sleep $M") || fail "submit (c)"
    wait_alive "$M" 3
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" failed "time limit of 2 s reached" "$n" "(c) --time 2"
    # (d) cancel: the main command obeys SIGTERM, the child that left does not
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "setsid sh -c 'trap \"\" TERM; exec sleep $M' & sleep $M") || fail "submit (d)"
    wait_alive "$M" 3
    sub_gf cancel "$j" || fail "(d) cancel"
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" cancelled "" "$n" "(d) cancel"
    if [ "$SUB" = root ]; then
        # (f) its worker killed: every process of the job dies with it, the one that left too
        new_mark
        j=$(sub_gf submit --gpu 0 --no-requeue -- sh -c "setsid sleep $M & sleep $M") || fail "submit (f)"
        wait_alive "$M" 3
        kill -9 "$(cat "$T/run/worker0.pid")"
        for _ in $(seq 100); do [ -z "$(alive "$M")" ] && break; sleep 0.02; done
        [ -z "$(alive "$M")" ] || fail "(f) processes of the job outlived its worker: $(pgrep -af "sleep $M")"
        gf wait --timeout 20 "$j" >/dev/null 2>&1
        [ "$(job_field "$j" state)" = failed ] || fail "(f) state $(job_field "$j" state)"
        for _ in $(seq 200); do [ "$(gf workers 2>/dev/null | grep -cE ' (idle|busy) ')" = 2 ] && break; sleep 0.05; done
        echo "  (f) worker killed: the job died with it, its setsid child too"
    fi
    if [ "$SUB" != root ]; then
        # (e) from inside: the job cannot move itself out, nor within
        mnt=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
        j=$(sub_gf submit --gpu 0 -- sh -c "cg=\$(sed -n 's/^0:://p' /proc/self/cgroup); for d in \"\$cg\" \"\$cg/..\" \"\$cg/../..\"; do if echo \$\$ > \"$mnt\$d/cgroup.procs\"; then echo moved; else echo refused; fi; done 2>/dev/null")
        gf wait "$j" || fail "(e) $(job_field "$j" reason)"
        [ "$(gf logs "$j" | tr '\n' ' ')" = "refused refused refused " ] || fail "(e) the job moved itself: $(gf logs "$j")"
        echo "  (e) the job could not write its cgroup's cgroup.procs, nor its parents'"
    fi
}

# --- the same four under the process-group fallback
pgroup_cases() {
    echo "process group (worker.cgroups: false), submitter $SUB:"
    local sup; sup=$(gf workers --json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[0]['supervision'])")
    [ "$sup" = "process group: a process that calls setsid escapes" ] || fail "workers say '$sup'"
    gf workers | grep -q "supervision: process group: a process that calls setsid escapes" || fail "workers: $(gf workers)"
    grep -q "job supervision: by process group only (worker.cgroups is false)" "$T/broker.log" || fail "no warning in the worker's log"
    # (a) the guard killed: what is left of its group goes
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "sleep $M & sleep $M") || fail "submit (a)"
    wait_alive "$M" 3
    as_sub kill -9 "$(guard_of "$M")"
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" failed "guard was killed by signal 9; what was left of its process group was killed" "$n" "(a) guard killed"
    # (b) a child left in the group when the main command ends goes with it
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "sleep $M & sleep 0.3; exit 0") || fail "submit (b)"
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" done "" "$n" "(b) child in the group"
    # (b') the documented limit: a child that called setsid escapes and keeps the card
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "setsid sleep $M & sleep 0.3; exit 0") || fail "submit (b')"
    gf wait "$j" || fail "(b') $(job_field "$j" reason)"
    n=$(sub_gf submit --gpu 0 -- true)
    sleep 1
    [ -n "$(alive "$M")" ] || fail "(b') the setsid child did not escape: the fallback's documented limit is out of date"
    [ "$(job_field "$n" started_ms)" = "" ] || fail "(b') the next job ran while the escaped child held the card"
    pkill -f "sleep $M"
    gf wait --timeout 10 "$n" >/dev/null || fail "(b') the next job after the escaped child was killed"
    echo "  (b') setsid child: escaped and kept the card, as documented"
    # (c) the time limit on a group that ignores SIGTERM
    new_mark
    j=$(sub_gf submit --gpu 0 --time 2 -- sh -c "trap '' TERM; sleep $M & sleep $M") || fail "submit (c)"
    wait_alive "$M" 3
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" failed "time limit of 2 s reached" "$n" "(c) --time 2"
    # (d) cancel, a child in the group ignoring SIGTERM
    new_mark
    j=$(sub_gf submit --gpu 0 -- sh -c "sh -c 'trap \"\" TERM; exec sleep $M' & sleep $M") || fail "submit (d)"
    wait_alive "$M" 3
    sub_gf cancel "$j" || fail "(d) cancel"
    n=$(sub_gf submit --gpu 0 -- true)
    check_end "$j" cancelled "" "$n" "(d) cancel"
}

cleanup_marks() { pkill -f "sleep 9$$" 2>/dev/null; cleanup; }
trap cleanup_marks EXIT

[ "$HAVE_USER" = 1 ] ||
    echo "skip: the unprivileged submitter's cases (process group and cgroup): cannot make the user $U (needs root, useradd and runuser)"

start_with false
for SUB in root $([ "$HAVE_USER" = 1 ] && echo "$U"); do pgroup_cases; done
echo "ok: the process-group fallback kills its group and says what escapes it"

start_with true
if ! gf workers --json | grep -q '"supervision":"cgroup '; then
    why=$(grep -m1 "job supervision" "$T/broker.log" | sed 's/.*job supervision: //')
    echo "skip: the cgroup cases (a)-(f) with a cgroup per job: no writable cgroup v2 here: $why"
    exit 0
fi
for SUB in root $([ "$HAVE_USER" = 1 ] && echo "$U"); do cgroup_cases; done
echo "ok: no process of a job outlives it (cgroup per job)"
