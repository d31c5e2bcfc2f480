#!/bin/bash
# Selections, history and cancel by selection, with the real broker and
# workers and real users (docs/operations.md, "History"):
#  1. queue --all and history take --user (names, uids, lists), --state,
#     --name (exact, a hostile name too), --since, --card, applied by the
#     broker; every user sees every user's jobs, as queue always did;
#  2. history's columns (sacct's), its exit status as STATUS:SIGNAL, no
#     control byte of a name on the terminal; --csv read back with Python's
#     csv module gives each job's fields, its name byte for byte;
#  3. cancel --user/--name/--state: your own jobs (root: anyone's), says how
#     many; another user's by --user refused (77); ended states refused;
#     through the static front and gpuflock-cli alike.
# The user parts need root (useradd, runuser); without, they are skipped.
. tests/integration/lib/jobs.bash
write_config
start_broker || exit 1
CLI="$(dirname "$GF")/gpuflock-cli"
users=no
make_users gfhistu1 gfhistu2 && users=yes
as() { local u=$1; shift; (cd /tmp && runuser -u "$u" -- "$GF" "$1" --config "$CFG" "${@:2}"); }
if [ $users = no ]; then
    as() { shift; gf "$@"; }   # everything as the one user there is
    echo "skip: the parts with other users (1, 3): needs root, useradd and runuser"
fi
u1=gfhistu1 u2=gfhistu2
[ $users = yes ] || u1=$(id -un) u2=$(id -un)
uid1=$(id -u "$u1")
ids() { awk 'NR > 1 {print $1}' | tr '\n' ' ' | sed 's/ $//'; }   # a table's id column
csv_ids() { /usr/bin/python3 -c 'import csv,sys; r=list(csv.reader(sys.stdin)); print(" ".join(x[0] for x in r[1:]))'; }

# ---- the jobs ----------------------------------------------------------------
HOSTILE=$(printf 'x,"y"\nz\033[2J')     # a comma, quotes, a line break, an escape
t1=$(as $u1 submit --gpu 0 --name train -- true) || fail "submit t1"
t2=$(as $u1 submit --gpu 0 --name train -- sh -c 'exit 3') || fail "submit t2"
h1=$(as $u2 submit --gpu 1 --name "$HOSTILE" -- true) || fail "submit h1"
as $u1 wait "$t1" || fail "t1"
as $u1 wait "$t2"; [ $? = 3 ] || fail "t2's status"
as $u2 wait "$h1" || fail "h1"
sleep 1.1
mark=$(date +%s)    # a second after the three ended
r1=$(as $u1 submit --gpu 1 --name long -- sleep 60) || fail "submit r1"
p1=$(gf submit --hold --name later -- true) || fail "submit p1 (root's, held)"
for _ in $(seq 100); do [ "$(job_field "$r1" state)" = running ] && break; sleep 0.05; done

# ---- 1. selections --------------------------------------------------------------
q() { gf queue --all "$@" | ids; }
[ "$(q)" = "$t1 $t2 $h1 $r1 $p1" ] || fail "queue --all: $(q)"
if [ $users = yes ]; then
    [ "$(q --user $u1)" = "$t1 $t2 $r1" ] || fail "--user $u1: $(q --user $u1)"
    [ "$(q --user "$uid1")" = "$t1 $t2 $r1" ] || fail "--user $uid1 (a uid): $(q --user "$uid1")"
    [ "$(q --user $u2,root)" = "$h1 $p1" ] || fail "--user $u2,root: $(q --user $u2,root)"
    # every user sees every user's jobs
    [ "$(as $u2 queue --all --user $u1 | ids)" = "$t1 $t2 $r1" ] || fail "$u2 listing $u1's jobs"
    [ "$(as $u2 history --user $u1 | ids)" = "$t1 $t2 $r1" ] || fail "$u2's history of $u1"
fi
[ "$(q --state failed)" = "$t2" ] || fail "--state failed: $(q --state failed)"
[ "$(q --state pending,done)" = "$t1 $h1 $p1" ] || fail "--state pending,done: $(q --state pending,done)"
[ "$(gf queue --state running | ids)" = "$r1" ] || fail "queue --state running: $(gf queue --state running)"
[ "$(gf queue --state failed | ids)" = "$t2" ] || fail "queue --state failed (no --all): $(gf queue --state failed)"
[ "$(q --name train)" = "$t1 $t2" ] || fail "--name train: $(q --name train)"
[ "$(q --name tra)" = "" ] || fail "--name is exact: $(q --name tra)"
[ "$(q --name "$HOSTILE")" = "$h1" ] || fail "--name with a hostile name: $(q --name "$HOSTILE")"
[ "$(q --card 1)" = "$h1 $r1" ] || fail "--card 1: $(q --card 1)"
[ "$(q --card 0,1 --state done)" = "$t1 $h1" ] || fail "--card 0,1 --state done"
[ "$(q --since @$mark)" = "$r1 $p1" ] || fail "--since: $(q --since @$mark)"
[ "$(q --since now-1h)" = "$t1 $t2 $h1 $r1 $p1" ] || fail "--since now-1h"
[ "$(q --name train --state done --card 0 --since now-1h)" = "$t1" ] || fail "every condition"
# through gpuflock-cli too
[ "$("$CLI" history --config "$CFG" --state failed | ids)" = "$t2" ] || fail "gpuflock-cli history"
gf queue --all --json --name train | grep -c '"id":' | grep -qx 2 || fail "queue --json --name"
gf queue --all --state finished 2>"$T/err"; [ $? = 64 ] && grep -q "unknown state 'finished'" "$T/err" ||
    fail "--state finished: $(cat "$T/err")"
gf history --user no-such-user-gf 2>"$T/err"; [ $? = 64 ] || fail "--user no-such-user-gf"

# ---- 2. history's columns and its CSV ------------------------------------------
gf history >"$T/hist" || fail "history"
head -1 "$T/hist" | grep -Eq '^ +ID +NAME +USER +STATE +EXIT +CARD +SUBMITTED +STARTED +ENDED +ELAPSED +CPU +MAXRSS$' ||
    fail "history's header: $(head -1 "$T/hist")"
grep -E "^ *$t2 +train +$u1 +failed +3:0 +0 " "$T/hist" >/dev/null || fail "t2's row: $(grep "^ *$t2 " "$T/hist")"
grep -E "^ *$t1 +train .* done +0:0 " "$T/hist" >/dev/null || fail "t1's row"
grep -E "^ *$p1 .* pending +- +- " "$T/hist" >/dev/null || fail "p1's row: $(grep "^ *$p1 " "$T/hist")"
! grep -q $'\033' "$T/hist" || fail "an escape byte reached the table"
[ "$(wc -l <"$T/hist")" = 6 ] || fail "a name broke a row in two: $(cat "$T/hist")"
gf history --csv >"$T/csv" || fail "history --csv"
[ "$(head -1 "$T/csv")" = $'id,name,user,uid,state,exit,signal,cards,submitted,started,ended,elapsed_s,cpu_s,maxrss_kb,reason\r' ] ||
    fail "csv header: $(head -1 "$T/csv" | od -c | head -3)"
/usr/bin/python3 - "$T/csv" "$HOSTILE" "$t2" "$h1" "$u1" <<'PY' || fail "the CSV did not read back"
import csv, sys
path, hostile, t2, h1, u1 = sys.argv[1:]
with open(path, newline='', encoding='utf-8') as f:
    rows = list(csv.reader(f))
head, body = rows[0], rows[1:]
assert len(body) == 5, body
assert all(len(r) == len(head) for r in rows), [len(r) for r in rows]
row = {r[0]: dict(zip(head, r)) for r in body}
assert row[h1]['name'] == hostile, repr(row[h1]['name'])
assert row[h1]['cards'] == '1', row[h1]
assert row[t2]['state'] == 'failed' and row[t2]['exit'] == '3' and row[t2]['signal'] == '0', row[t2]
assert row[t2]['user'] == u1 and row[t2]['reason'] == 'exit status 3', row[t2]
assert row[t2]['ended'] >= row[t2]['started'] >= row[t2]['submitted'] > '2025', row[t2]
assert float(row[t2]['elapsed_s']) >= 0 and row[t2]['submitted'][-6] in '+-', row[t2]
PY
[ "$(gf history --csv --state failed | csv_ids)" = "$t2" ] || fail "history --csv --state failed"

# ---- 3. cancel by selection -----------------------------------------------------
b1=$(as $u1 submit --hold --name batch -- true) && b2=$(as $u1 submit --hold --name batch -- true) &&
    b3=$(as $u1 submit --hold --name batch -- true) || fail "submit the batch"
if [ $users = yes ]; then
    o1=$(as $u2 submit --hold --name batch -- true) || fail "submit $u2's batch job"
    # another user's jobs: refused by --user, untouched by --name
    as $u2 cancel --user $u1 2>"$T/err"; rc=$?
    [ $rc = 77 ] && grep -q "only root may cancel another user's jobs" "$T/err" ||
        fail "$u2 cancel --user $u1: rc $rc $(cat "$T/err")"
    [ "$(as $u2 cancel --name batch)" = "cancelled 1 job" ] || fail "$u2 cancel --name batch"
    [ "$(job_field "$o1" state)" = cancelled ] || fail "$u2's batch job"
    [ "$(job_field "$b1" state)" = pending ] || fail "$u2 cancelled $u1's job"
fi
out=$(as $u1 cancel --name batch) || fail "cancel --name batch"
[ "$out" = "cancelled 3 jobs" ] || fail "cancel --name batch said: $out"
for b in $b1 $b2 $b3; do [ "$(job_field "$b" state)" = cancelled ] || fail "batch job $b"; done
[ "$(as $u1 cancel --name batch)" = "cancelled 0 jobs" ] || fail "cancel again"
gf cancel --state done 2>"$T/err"; [ $? = 64 ] && grep -q "only pending and running" "$T/err" ||
    fail "cancel --state done: $(cat "$T/err")"
gf cancel --name batch "$b1" 2>"$T/err"; [ $? = 64 ] || fail "cancel with ids and a selection"
# root: anyone's, narrowed by --user and --state
out=$("$CLI" cancel --config "$CFG" --user "$u1" --state running) || fail "root cancel --user --state"
[ "$out" = "cancelled 1 job" ] || fail "root's cancel said: $out"
gf wait "$r1" 2>/dev/null
[ "$(job_field "$r1" state)" = cancelled ] || fail "r1: $(job_field "$r1" state)"
[ "$(job_field "$p1" state)" = pending ] || fail "root's own pending job was cancelled by --user $u1"
gf cancel --name later | grep -qx "cancelled 1 job" || fail "root cancel --name later"
echo "ok: queue/history selections in the broker (user, state, exact name, since, card), every user sees all; history's columns and RFC 4180 CSV read back; cancel by selection: own jobs, root any, counted"
