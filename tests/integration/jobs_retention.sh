#!/bin/bash
# The job store's retention with the real broker and workers
# (docs/operations.md, "History"):
#  1. history.keep_jobs: the oldest ended jobs past it leave the store, with
#     their spool files and leftovers (<id>.ckpt, <id>.outs, <id>.ckdir); the
#     most recent stay, with their logs;
#  2. a job a pending job waits for (--after) keeps its record until that
#     one has been decided, then goes; a purged job is no job for --after;
#  3. history.keep_days: jobs that ended longer ago go, at the broker's
#     start (their end times moved back in the store while it was down);
#  4. `gpuflock purge [--before DATE]`: root only (77 for another user,
#     where users can be made); live jobs never go; the environments no job
#     uses go with the last job; a few at a time: no pass removes more than
#     64 rows (the broker's debug lines), over many passes, the broker
#     answering meanwhile.
. tests/integration/lib/jobs.bash
GF_TEST_LOG=debug write_config
cat >>"$CFG" <<YAML
history:
  keep_days: 0
  keep_jobs: 5
YAML
start_broker || exit 1
SPOOL=$T/state/spool
DB=$T/state/jobs.db
sql() { /usr/bin/python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); r=c.execute(sys.argv[2]).fetchall(); c.commit(); print('\n'.join('|'.join(map(str,x)) for x in r))" "$DB" "$1"; }
exists() { gf show "$1" >/dev/null 2>&1; }
# until CMD succeeds (10 s at most)
until_ok() { for _ in $(seq 200); do eval "$1" && return 0; sleep 0.05; done; return 1; }

# ---- 1. keep_jobs -------------------------------------------------------
first=$(gf submit --hold --array 12 -- sh -c 'echo out-$GPUFLOCK_ARRAY_INDEX; echo err >&2' |
    head -1) || fail "submit 12"
last=$((first + 11))
# leftovers of a job's runs in the spool, as a worker that died would leave them
mkdir "$SPOOL/$first.ckdir" && echo state >"$SPOOL/$first.ckdir/state"
echo ckpt >"$SPOOL/$first.ckpt"
echo outs >"$SPOOL/$first.outs"
gf release $(seq "$first" "$last") || fail "release the 12"
gf wait $(seq "$first" "$last") || fail "the 12 jobs"
until_ok "! exists $((last - 5))" || fail "job $((last - 5)) still there: $(gf queue --all)"
for id in $(seq "$first" $((last - 5))); do
    exists "$id" && fail "job $id, past keep_jobs, is still in the store"
    ls "$SPOOL/$id".* >/dev/null 2>&1 && fail "job $id's spool files are still there: $(ls "$SPOOL/$id".*)"
done
for id in $(seq $((last - 4)) "$last"); do
    exists "$id" || fail "job $id, among the 5 most recent, is gone"
done
[ "$(gf logs "$last")" = out-11 ] || fail "the logs of a job kept: $(gf logs "$last")"
[ "$(gf queue --all | grep -c ' done ')" = 5 ] || fail "queue --all: $(gf queue --all)"

# ---- 2. --after keeps a job's record until its dependant is decided -------
dep=$(gf submit --name dep -- true) || fail "submit dep"
gf wait "$dep" || fail "dep"
waiter=$(gf submit --hold --after "$dep" -- true) || fail "submit the waiter"
more=$(gf submit --array 8 -- true | tail -1) || fail "submit 8 more"
gf wait $(seq $((more - 7)) "$more") || fail "the 8 more"
until_ok "! exists $((more - 7))" || fail "job $((more - 7)) still there: $(gf queue --all)"
exists "$dep" || fail "job $dep, waited for by the pending $waiter, was removed"
gf release "$waiter" || fail "release"
gf wait "$waiter" || fail "the waiter ran: $(gf show "$waiter")"
# decided: the dependency may go now (the waiter's end woke the retention)
until_ok "! exists $dep" || fail "job $dep stays after its dependant was decided: $(gf queue --all)"
gf submit --after "$dep" -- true 2>"$T/err"; [ $? = 64 ] && grep -q "no job $dep" "$T/err" ||
    fail "--after a removed job: $(cat "$T/err")"

# ---- 3. keep_days, at the broker's start ------------------------------------
stop_broker
kept=$(sql "SELECT id FROM jobs WHERE state = 'done' ORDER BY id" | tr '\n' ' ')
old1=$(echo "$kept" | awk '{print $1}') old2=$(echo "$kept" | awk '{print $2}')
sql "UPDATE jobs SET ended_ms = ended_ms - 40 * 86400000 WHERE id IN ($old1, $old2)" >/dev/null
sed -i 's/^  keep_days: 0/  keep_days: 30/; s/^  keep_jobs: 5/  keep_jobs: 0/' "$CFG"
start_broker || exit 1
until_ok "! exists $old2" || fail "jobs $old1 $old2, ended 40 days ago, are still there"
exists "$old1" && fail "job $old1 is still there"
for id in $kept; do
    [ "$id" = "$old1" ] || [ "$id" = "$old2" ] || exists "$id" || fail "job $id, recent, is gone"
done

# ---- 4. purge ------------------------------------------------------------------
if [ "$(id -u)" != 0 ]; then
    gf purge 2>"$T/err"; rc=$?
    [ $rc = 77 ] && grep -q "only root" "$T/err" || fail "purge as a user: rc $rc $(cat "$T/err")"
    echo "skip: part 4 (purge): only root may purge, and this test does not run as root"
    echo "ok: keep_jobs and keep_days remove old jobs and their spool files, --after keeps a dependency until decided, purge refused to a user"
    exit 0
fi
if make_users gfretuser1; then
    (cd /tmp && runuser -u gfretuser1 -- "$GF" purge --config "$CFG") 2>"$T/err"; rc=$?
    [ $rc = 77 ] && grep -q "only root" "$T/err" || fail "purge as a user: rc $rc $(cat "$T/err")"
else
    echo "skip: part 4 (purge refused to a user): needs useradd and runuser"
fi
held=$(gf submit --hold -- true) || fail "submit a held job"
run=$(gf submit -- sleep 30) || fail "submit a running job"
big=$(head -c 4096 /dev/zero | tr '\0' e)
b_last=$(BIG=$big gf submit --array 300 -- true | tail -1) || fail "submit 300"
b_first=$((b_last - 299))
gf wait $(seq "$b_first" "$b_last") >/dev/null || fail "the 300 jobs"
[ "$(sql "SELECT COUNT(*) FROM envs")" -ge 1 ] || fail "no environment stored"
before=$(date -d @$(( $(date +%s) + 3600 )) +%Y-%m-%dT%H:%M)
out=$(gf purge --before "$before") || fail "purge --before $before"
echo "$out" | grep -Eq "^[0-9]+ ended jobs to remove" || fail "purge said: $out"
until_ok "! exists $b_last" || fail "purge left job $b_last: $(gf queue --all | tail -3)"
gf queue >/dev/null || fail "the broker does not answer after the purge"
exists "$held" || fail "the held (pending) job was purged"
exists "$run" || fail "the running job was purged"
[ "$(job_field "$run" state)" = running ] || fail "the running job: $(gf show "$run")"
gf cancel "$run" "$held" >/dev/null && gf wait "$run" "$held" 2>/dev/null
gf purge >/dev/null || fail "purge (all)"
until_ok "! exists $run && ! exists $held" || fail "purge left $run or $held"
[ -z "$(ls "$SPOOL")" ] || fail "spool files left: $(ls "$SPOOL" | head)"
[ "$(sql "SELECT COUNT(*) FROM jobs")" = 0 ] || fail "rows left: $(sql "SELECT id, state FROM jobs")"
[ "$(sql "SELECT COUNT(*) FROM envs")" = 0 ] || fail "environments left with no job"
# a few at a time: each pass removed at most 64 rows, and there were many
grep -o 'history: [0-9]* ended jobs removed from the job store' "$T/broker.log" |
    awk '{print $2}' >"$T/passes"
[ "$(sort -n "$T/passes" | tail -1)" -le 64 ] || fail "a pass removed $(sort -n "$T/passes" | tail -1) rows"
[ "$(wc -l <"$T/passes")" -ge 5 ] || fail "only $(wc -l <"$T/passes") passes: $(tr '\n' ' ' <"$T/passes")"
grep -q "purge: done" "$T/broker.log" || fail "no 'purge: done' in the broker's log"
# ids are never handed out again
n=$(gf submit -- true) || fail "submit after the purge"
[ "$n" -gt "$b_last" ] || fail "a new job got id $n, not above $b_last"
echo "ok: keep_jobs and keep_days remove old jobs and their spool files, --after keeps a dependency until decided, purge (root only) a few rows at a time ($(wc -l <"$T/passes") passes, at most $(sort -n "$T/passes" | tail -1) rows each)"
