#!/bin/bash
# Users: the broker learns the submitter from the ipc connection; a job runs
# with the submitter's uid, gid and groups (root's own jobs as root); a user
# may cancel and read only their own jobs, root any. Needs root (creates
# two users with useradd when they are missing).
. tests/integration/lib/jobs.bash
need_users gfjobuser1 gfjobuser2
write_config
start_broker || exit 1
as() { local u=$1; shift; (cd /tmp && runuser -u "$u" -- "$GF" "$1" --config "$CFG" "${@:2}"); }
uid1=$(id -u gfjobuser1)

# a job of user 1 runs as user 1, with its groups
j=$(as gfjobuser1 submit --gpu 0 -- sh -c 'id -u; id -g; id -G; touch /tmp/gf-user-probe-$$; stat -c %U /tmp/gf-user-probe-$$; rm -f /tmp/gf-user-probe-$$') || fail "submit as user 1"
as gfjobuser1 wait "$j" || fail "user 1 job: $(job_field "$j" reason)"
out=$(as gfjobuser1 logs "$j")
[ "$(echo "$out" | sed -n 1p)" = "$uid1" ] || fail "job ran as uid $(echo "$out" | sed -n 1p), want $uid1"
[ "$(echo "$out" | sed -n 2p)" = "$(id -g gfjobuser1)" ] || fail "job gid"
[ "$(echo "$out" | sed -n 3p)" = "$(id -G gfjobuser1)" ] || fail "job groups: $(echo "$out" | sed -n 3p) vs $(id -G gfjobuser1)"
[ "$(echo "$out" | sed -n 4p)" = gfjobuser1 ] || fail "files made by the job belong to $(echo "$out" | sed -n 4p)"
[ "$(stat -c %U "$(job_field "$j" stdout)")" = gfjobuser1 ] || fail "spool not owned by the user"
[ "$(job_field "$j" user)" = gfjobuser1 ] || fail "job record user"

# root's own job runs as root
r=$(gf submit --gpu 1 -- sh -c 'id -u; sleep 30')
for _ in $(seq 100); do [ "$(gf logs "$r")" = 0 ] && break; sleep 0.05; done
[ "$(gf logs "$r")" = 0 ] || fail "root's job not as root"
# user 1 cannot cancel root's job, nor read its output
as gfjobuser1 cancel "$r" 2>"$T/err"; rc=$?
[ "$rc" = 77 ] && grep -q "not your job" "$T/err" || fail "user 1 cancelling root's job: rc $rc $(cat "$T/err")"
[ "$(job_field "$r" state)" = running ] || fail "root's job stopped"
as gfjobuser1 logs "$r" 2>"$T/err"; [ $? = 77 ] || fail "user 1 read root's logs"
# user 2 cannot cancel user 1's job; user 1 can; root can cancel anyone's
u=$(as gfjobuser1 submit --gpu 0 -- sleep 30)
as gfjobuser2 cancel "$u" 2>"$T/err"; [ $? = 77 ] || fail "user 2 cancelled user 1's job"
as gfjobuser1 cancel "$u" || fail "user 1 could not cancel its own job"
# a running job ends cancelled once its processes have ended: wait for it
as gfjobuser1 wait "$u" 2>/dev/null
[ "$(job_field "$u" state)" = cancelled ] || fail "user 1's job not cancelled"
gf cancel "$r" || fail "root could not cancel"
gf wait "$r"; [ "$(job_field "$r" state)" = cancelled ] || fail "root's job not cancelled"
echo "ok: jobs run as their submitters; cancel and logs only for the owner or root"
